import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { logicalId, missingHandlers, synthesize } from './helpers.ts';

const missing = missingHandlers();

describe('Bundling (esbuild, no Docker)', () => {
  // The other stack tests skip bundling; this one builds every function as `cdk deploy` would.
  it('bundles every handler into an ESM bundle with a source map and sharp for linux-arm64 in the worker', () => {
    // Prepare: every entry the stack names must exist (a renamed handler fails here, loudly).
    expect(missing).toEqual([]);

    // Act
    const { stack, template, app } = synthesize({ bundle: true });

    // Assess
    const assembly = app.synth();
    const functions = [
      stack.api.handler,
      stack.scheduler.handler,
      ...stack.lambdaWorkers.functions,
      stack.redrive.handler,
      ...(stack.schedules ? [stack.schedules.handler] : []),
    ];
    const resources = template.toJSON().Resources;
    for (const wrapper of functions) {
      // Code.S3Key is `<asset hash>.zip`; the bundle is staged in `asset.<asset hash>`.
      const s3Key = resources[logicalId(stack, wrapper.function)].Properties.Code.S3Key as string;
      const assetDir = path.join(assembly.directory, `asset.${s3Key.replace(/\.zip$/, '')}`);
      const bundle = path.join(assetDir, 'index.mjs');
      expect(existsSync(bundle), wrapper.node.path).toBe(true);
      expect(existsSync(`${bundle}.map`), wrapper.node.path).toBe(true);
      const code = readFileSync(bundle, 'utf8');
      expect(code, wrapper.node.path).toMatch(/export\s*\{[^}]*\bhandler\b/);
      expect(code.startsWith("import { createRequire } from 'node:module';")).toBe(true);
      // Only the worker runs task types, so only it gets sharp, installed beside the bundle with
      // Lambda's (linux arm64) binary rather than the host's; the others stay small.
      const isWorker = stack.lambdaWorkers.functions.includes(wrapper);
      expect(existsSync(path.join(assetDir, 'node_modules/sharp/package.json')), wrapper.node.path).toBe(isWorker);
      expect(existsSync(path.join(assetDir, 'node_modules/@img/sharp-linux-arm64')), wrapper.node.path).toBe(isWorker);
    }

    // The Fargate image is built from the worker's bundle alone: the staged Docker context holds
    // the bundle, its map, the Dockerfile and sharp for linux-arm64, and no other package.
    const manifest = JSON.parse(
      readFileSync(path.join(assembly.directory, `${stack.artifactId}.assets.json`), 'utf8'),
    ) as { dockerImages: Record<string, { source: { directory: string } }> };
    const images = Object.values(manifest.dockerImages);
    expect(images).toHaveLength(1);
    const context = path.join(assembly.directory, images[0]!.source.directory);
    expect(readdirSync(context).sort()).toEqual([
      'Dockerfile',
      'index.mjs',
      'index.mjs.map',
      'node_modules',
      'package.json',
    ]);
    expect(readFileSync(path.join(context, 'Dockerfile'), 'utf8')).toMatch(/CMD \["node", "index\.mjs"\]/);
    expect(readFileSync(path.join(context, 'index.mjs'), 'utf8')).toContain('task worker started');
    const packages = readdirSync(path.join(context, 'node_modules')).filter((name) => !name.startsWith('.'));
    expect(packages).toContain('sharp');
    expect(packages).not.toContain('aws-cdk-lib');
    expect(packages).not.toContain('typescript');
    expect(existsSync(path.join(context, 'node_modules/@img/sharp-linux-arm64'))).toBe(true);
    console.log(`Fargate worker image context: ${(stack.fargateWorkers.imageContextBytes / 1e6).toFixed(1)} MB`);
  }, 300_000);
});
