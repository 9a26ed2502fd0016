/**
 * moto's server (an AWS implementation: CloudFormation, DynamoDB, SQS, Lambda, IAM, ECS, S3...) on
 * a free loopback port, for the deployment check (test/deploy/) and `npm start` against an
 * external endpoint. Found through test/helpers/python-tools.ts; where absent the caller says so.
 *
 * The endpoint is `http://localhost:PORT`, not 127.0.0.1: moto's CloudFormation finds the bucket
 * of a TemplateURL (the CDK CLI uploads each template to its assets bucket) from the URL's path
 * only when the host says `localhost`, else from the host's first label ('127').
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { freePort } from '../../local/free-port.ts';
import { findPythonTool, type PythonTool } from './python-tools.ts';

export interface MotoServer {
  /** `http://localhost:PORT` */
  readonly endpoint: string;
  readonly port: number;
  /** What moto printed (its request log and warnings), for a failure's report. */
  output(): string;
  stop(): Promise<void>;
}

export const findMotoServer = (): PythonTool => findPythonTool('moto_server', { probe: ['--help'] });

/** Fake credentials and a region for every AWS client aimed at moto. */
export const MOTO_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'testing', AWS_SECRET_ACCESS_KEY: 'testing' } as const;
/** moto's default account. */
export const MOTO_ACCOUNT = '123456789012';

export async function startMotoServer(command: string, options: { readyTimeoutMs?: number } = {}): Promise<MotoServer> {
  const deadline = Date.now() + (options.readyTimeoutMs ?? 120_000);
  let lastError = '';
  // A port found free can be taken before moto binds it: try again with another.
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const child = spawn(command, ['-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-200_000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const endpoint = `http://localhost:${port}`;
    const ready = await waitReady(`http://127.0.0.1:${port}/moto-api/`, exited, deadline);
    if (ready === 'ready') {
      return { endpoint, port, output: () => output, stop: () => stopChild(child, exited) };
    }
    lastError =
      ready === 'exited' ? `moto_server exited: ${output.slice(-2000)}` : 'moto_server did not answer in time';
    await stopChild(child, exited);
    if (ready === 'timeout') break;
  }
  throw new Error(`Could not start ${command}: ${lastError}`);
}

async function waitReady(
  url: string,
  exited: Promise<number | null>,
  deadline: number,
): Promise<'ready' | 'exited' | 'timeout'> {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  while (Date.now() < deadline) {
    if (gone) return 'exited';
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
      if (response.ok) return 'ready';
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return 'timeout';
}

async function stopChild(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

export type { PythonTool };
