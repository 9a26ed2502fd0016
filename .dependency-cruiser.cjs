/**
 * The layering, checked in `npm test` (`npm run deps`). README "Layout" and docs/architecture.md
 * say the same in prose; change them together.
 *
 * Type-only imports count (tsPreCompilationDeps): a type that points the wrong way is still a
 * wrong-way dependency, even when it is erased from the JavaScript.
 */

/** Everything that is not deployed: laptop runtime, client side, tools, their reports and tests. */
const NOT_DEPLOYED = '^(local|client|sim|bench|report|test)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'core-is-pure',
      comment:
        'runtime/core is the domain: it imports nothing of the project outside itself, and of npm only pure ' +
        'libraries (zod, cron-parser), never the AWS SDK or anything that does I/O.',
      severity: 'error',
      from: { path: '^runtime/core/' },
      // Node built-ins: only the computing ones (no fs, net, process, timers: time is passed in).
      to: { pathNot: ['^runtime/core/', '(^|/)node_modules/(zod|cron-parser)/', '^(node:)?(crypto|util|assert)$'] },
    },
    {
      name: 'deployed-code-stays-deployable',
      comment:
        'runtime/ is what a Lambda or the Fargate image bundles and lib/ is the stack that deploys it: neither ' +
        'imports the local runtime, the client side, the tools or the tests.',
      severity: 'error',
      from: { path: '^(runtime|lib)/' },
      to: { path: NOT_DEPLOYED },
    },
    {
      name: 'nothing-imports-tests',
      comment: 'Test code (helpers included) is imported only by tests.',
      severity: 'error',
      from: { pathNot: '^test/' },
      to: { path: '^test/' },
    },
    {
      name: 'sdk-sees-only-the-contract',
      comment:
        'The published client SDK knows the server only through the HTTP contract (runtime/api/contract.ts: the ' +
        "API's request and response types and the few constants a caller needs).",
      severity: 'error',
      from: { path: '^client/sdk/' },
      to: { path: '^(runtime|local|sim|bench|lib|bin)/', pathNot: '^runtime/api/contract\\.ts$' },
    },
    {
      name: 'client-without-opentelemetry',
      comment:
        'OpenTelemetry (runtime/telemetry/tracing.ts) is for the server side: the client SDK, and the contract it ' +
        'imports, never reach it, so a client-only install does not need it (the SDK sends a traceparent header).',
      severity: 'error',
      from: { path: '^(client/sdk/|runtime/api/contract\\.ts$)' },
      to: { path: '(^runtime/telemetry/|(^|/)node_modules/@opentelemetry/)' },
    },
    {
      name: 'dashboard-serves-anywhere',
      comment:
        'The dashboard page is served by the local HTTP server, the CLI proxy and (should the stack route it) the ' +
        'API Lambda: it depends on node:http, not on the local runtime.',
      severity: 'error',
      from: { path: '^client/dashboard/' },
      to: { path: '^local/' },
    },
    {
      name: 'report-is-a-leaf',
      comment:
        'report/ (the table formatter and the SVG charts) is shared by the CLI, sim and bench: it imports none of them.',
      severity: 'error',
      from: { path: '^report/' },
      to: { path: '^(runtime|local|client|sim|bench|lib|bin|test)/' },
    },
    {
      name: 'no-cycles-in-runtime',
      comment: 'Deployed modules form a directed graph: a cycle means two modules that cannot be read apart.',
      severity: 'error',
      from: { path: '^runtime/' },
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import that does not resolve is a broken path (tsc says the same; this catches .mjs/.cjs too).',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // examples/user-project is a project of its own that installs this package (test/packaging).
    exclude: { path: '^(cdk\\.out|\\.data|dist|coverage|examples/user-project)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    skipAnalysisNotInRules: true,
  },
};
