/**
 * `tasks dashboard`: the web dashboard on localhost for a deployed API, signing its reads.
 */
import { startDashboardProxy } from '../../dashboard/proxy.ts';
import { type Command, integer, noPositionals, str } from '../command.ts';

export const dashboardCommand: Command = {
  summary: 'Serve the web dashboard for a deployed API on localhost (signing its reads)',
  usage: 'tasks dashboard --endpoint URL [--port P] [--host H]',
  help: `The deployed API requires SigV4 on every route, which a browser cannot sign. This serves the
dashboard page on localhost and answers its status reads through the signing client, with your
AWS credentials. Against the local runtime, open http://127.0.0.1:3000/ instead. Ctrl-C quits.

Options:
  --port P   local port (default 8080; 0 picks a free one)
  --host H   bind address (default 127.0.0.1)`,
  options: { port: { type: 'string' }, host: { type: 'string' } },
  async run(ctx) {
    noPositionals(ctx);
    const port = integer(ctx, 'port', 0, 65_535) ?? 8080;
    const proxy = await startDashboardProxy({
      client: ctx.client(),
      port,
      host: str(ctx, 'host') ?? '127.0.0.1',
    });
    ctx.print({ url: proxy.url }, () => `Dashboard at ${proxy.url} (Ctrl-C to stop)`);
    await new Promise<void>((resolve) => {
      if (!ctx.io.signal || ctx.io.signal.aborted) return resolve();
      ctx.io.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    await proxy.close();
    return 0;
  },
};
