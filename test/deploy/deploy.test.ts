/**
 * The deployment check (check-deploy.ts) inside `npm test`, where moto_server is installed
 * (pyenv's Python on CI's machines and this project's): `cdk bootstrap` and `cdk deploy` into
 * moto, then tasks end to end through the deployed stack. The smaller task set ('quick': every
 * path once); `npm run check:deploy` runs the full one. Elsewhere one line says it did not run.
 */
import { describe, expect, it } from 'vitest';
import { findMotoServer } from '../helpers/moto-server.ts';
import { notRunLine } from '../helpers/python-tools.ts';
import { plannedTasks, runDeployCheck } from './check-deploy.ts';

const moto = findMotoServer();

describe('cdk deploy into moto_server, then tasks end to end', () => {
  if (!moto.found) {
    console.log(notRunLine('deployment check (cdk bootstrap + cdk deploy into moto_server, tasks end to end)', moto));
    it('moto_server is not installed here, and the reason is one the locator gives', () => {
      // Not a skip: the line above says what did not run; this asserts the locator's answer.
      expect(moto.reason).toMatch(/no moto_server on PATH|failed \(/);
    });
    return;
  }
  const command = moto.command;

  // Bootstrap, a bundling synth and the tasks: minutes; more on a loaded machine.
  it('deploys the app and runs every kind of task to its expected end, each attempt once', {
    timeout: 40 * 60_000,
  }, async () => {
    // Act
    const report = await runDeployCheck({ motoCommand: command, size: 'quick' });

    // Assess
    expect(report.problems).toEqual([]);
    // The planned tasks, the cancelled delayed one and the nightly schedule's.
    expect(report.tasks).toHaveLength(plannedTasks('quick').length + 2);
    expect(report.tasks.filter((task) => !task.ok)).toEqual([]);
    expect(report.createdResources).toBeGreaterThan(0);
    expect(report.functions).toBeGreaterThanOrEqual(6);
    console.log(
      `deployment check: ${report.createdResources} of ${report.templateResources} resources created by moto, ${report.tasks.length} tasks as expected, ${report.seconds.total} s`,
    );
  });
});
