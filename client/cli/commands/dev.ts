/**
 * `tasks dev`: the whole local system (what `npm start` runs in this repository), from the
 * installed package, with the user's task modules beside the built-in types. The first run
 * installs what the local system needs and a client install does not have (../peers.ts).
 * The local runtime is loaded only here, so the other commands never load the emulators.
 */
import { START_HELP, START_OPTIONS, START_SUMMARY, startSynopsis } from '../../../local/start-options.ts';
import { type Command, UsageError } from '../command.ts';
import { installCommand, installPeers, LOCAL_RUNTIME_PEERS, missingPeers, peerSpecs, TRACING_PEERS } from '../peers.ts';

const { help: _help, ...options } = START_OPTIONS;

export const devCommand: Command = {
  summary: 'Run the whole scheduler locally with your own task types (--task-types PATH)',
  usage: startSynopsis('tasks dev'),
  help: `${START_SUMMARY}, with the task types of your modules beside the built-in ones.

${START_HELP}

The first run installs what the local system needs and a client install leaves out (the
emulators dynalite, fauxqs and level, the AWS SDK clients, cron-parser, the OpenTelemetry API;
the OpenTelemetry SDK too when OTEL_EXPORTER_OTLP_ENDPOINT is set) as devDependencies of this
project, with npm. TypeScript modules need a Node that strips types (22.18+, 23.6+, or
NODE_OPTIONS=--experimental-strip-types).`,
  options,
  async run(ctx) {
    const env = ctx.io.env ?? process.env;
    try {
      await import('node:sqlite');
    } catch {
      throw new UsageError(
        `tasks dev needs node:sqlite (for the SQS emulator): Node 22.13+ or 23.4+, this is ${process.version}; or set NODE_OPTIONS=--experimental-sqlite`,
        ctx.name,
      );
    }
    const tracing = Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
    const missing = missingPeers([...LOCAL_RUNTIME_PEERS, ...(tracing ? TRACING_PEERS : [])]);
    if (missing.length > 0) {
      const specs = peerSpecs(missing);
      ctx.io.stderr(`tasks dev: installing what the local system needs, once: ${installCommand(specs)}\n`);
      const code = await installPeers(specs, process.cwd());
      if (code !== 0) {
        ctx.io.stderr(`tasks dev: npm install failed (exit ${code}); run it yourself: ${installCommand(specs)}\n`);
        return 1;
      }
    }
    const [{ consoleLogger, logLevelFrom }, { runLocalSystem, startSettingsFrom }] = await Promise.all([
      import('../../../local/console-logger.ts'),
      import('../../../local/start.ts'),
    ]);
    const logger = consoleLogger({
      level: logLevelFrom(env.LOG_LEVEL),
      write: (line) => ctx.io.stdout(`${line}\n`),
    });
    const settings = await startSettingsFrom(
      {
        config: ctx.values.config as string | undefined,
        'task-types': ctx.values['task-types'] as unknown as string[] | undefined,
        port: ctx.values.port as string | undefined,
      },
      ctx.positionals,
      env as NodeJS.ProcessEnv,
      'tasks dev',
    );
    // Serves until Ctrl-C or SIGTERM, which stop the process (runLocalSystem).
    await runLocalSystem(settings, logger, 'tasks dev');
    return 0;
  },
};
