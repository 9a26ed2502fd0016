import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../client/cli/run.ts';
import { consoleLogger } from '../../local/console-logger.ts';
import { type LocalServer, startLocalServer } from '../../local/server.ts';
import { parseConfig } from '../../runtime/core/config.ts';

let api: LocalServer;
beforeAll(async () => {
  api = await startLocalServer({
    config: parseConfig({}),
    port: 0,
    examples: false,
    summaryEverySeconds: 0,
    logger: consoleLogger({ quiet: true }),
  });
});
afterAll(async () => {
  await api.stop();
});

describe('Command: tasks dashboard', () => {
  it('serves the page on localhost and answers its status reads through the client', async () => {
    // Prepare
    const stop = new AbortController();
    const out: string[] = [];
    const exit = runCli(['dashboard', '--endpoint', api.url, '--port', '0', '--json'], {
      stdout: (text) => out.push(text),
      stderr: (text) => out.push(text),
      signal: stop.signal,
    });
    while (out.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    const { url } = JSON.parse(out[0]!) as { url: string };

    // Act
    const page = await fetch(url);
    const status = await fetch(`${url}v1/status?recent=3`);
    const other = await fetch(`${url}v1/tasks`, { method: 'POST' });
    stop.abort();

    // Assess
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<title>Task scheduler');
    expect(status.status).toBe(200);
    expect(await status.json()).toMatchObject({ pools: expect.anything(), tiers: expect.anything() });
    expect(other.status).toBe(404);
    expect(await exit).toBe(0);
  });
});
