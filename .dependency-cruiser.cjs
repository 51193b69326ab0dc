/**
 * The directions the folders promise (docs/architecture.md, Source layout), checked on every
 * import by `npm run lint`. A rule names what must never happen; each says why. The rules are
 * about production code: specs beside it may also import test/support.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A cycle makes two modules one: neither can be understood, tested or moved alone.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'core-imports-nothing-of-the-project',
      severity: 'error',
      comment: 'src/core holds the ports, typed errors and the generic command handler: everything depends on it, it on nothing.',
      from: { path: '^src/core/', pathNot: '\\.spec\\.ts$' },
      to: { path: '^(src/(?!core/)|projections/|test/|bench/)' },
    },
    {
      name: 'domain-is-pure',
      severity: 'error',
      comment: 'Deciders and events know no Nest, no I/O and no adapter: every rule is testable without them.',
      from: { path: '^src/[^/]+/domain/', pathNot: '\\.spec\\.ts$' },
      to: {
        path: [
          '^src/(app|config|http|auth|event-store|bus|postgres|projector|live|admin|dispatch|ingest|watchdog|admission)/',
          '^src/[^/]+/(application|infrastructure)/',
          '^projections/',
          '@nestjs/',
          '^(node:)?(fs|net|http|https|child_process|dgram|dns|tls)$',
          'node_modules/(pg|kafkajs|@electric-sql|@eventstore|undici|express)/',
        ],
      },
    },
    {
      name: 'only-main-imports-the-composition-root',
      severity: 'error',
      comment: 'src/app wires ports, roles and modules; modules below must not reach back up into it.',
      from: { path: '^(src|projections)/', pathNot: '^src/(app/|main\\.ts$)' },
      to: { path: '^src/app/' },
    },
    {
      name: 'the-projector-knows-no-domain',
      severity: 'error',
      comment: 'The projector runs any projection definition; the read models themselves live in projections/.',
      from: { path: '^src/projector/', pathNot: '\\.spec\\.ts$' },
      to: { path: '^(src/(executions|workflows|workspaces|dispatch|ingest|watchdog|admission|live|admin|worker)/|projections/)' },
    },
    {
      name: 'adapters-depend-on-ports-only',
      severity: 'error',
      comment: 'Event stores, buses and SQL clients implement ports of src/core (and the SQL port); they know no area above them.',
      from: { path: '^src/(event-store|bus|postgres)/', pathNot: '\\.spec\\.ts$' },
      to: {
        path: '^(src/(app|config|http|auth|executions|workflows|workspaces|projector|dispatch|ingest|watchdog|admission|live|admin|worker)/|projections/)',
      },
    },
    {
      name: 'the-worker-talks-to-the-control-plane-over-http-and-the-bus',
      severity: 'error',
      comment: "A worker process opens no store: it may share domain types, never the control plane's handlers, stores or read models.",
      from: { path: '^src/worker/', pathNot: '\\.spec\\.ts$' },
      to: {
        path: '^(src/(app|event-store|postgres|projector|live|admin|ingest|watchdog|admission|auth|http)/|src/[^/]+/(application|infrastructure)/|projections/)',
      },
    },
    {
      name: 'the-worker-sdk-stands-alone',
      severity: 'error',
      comment:
        "flostra/worker runs in users' own processes: it imports Node's built-ins only, never the server's code (no Nest, Kafka or Postgres) nor any package.",
      from: { path: '^src/sdk/', pathNot: '\\.spec\\.ts$' },
      to: { path: '^(src/(?!sdk/)|projections/|test/|bench/|node_modules/)' },
    },
    {
      name: 'application-does-not-import-controllers',
      severity: 'error',
      comment: 'Handlers serve any edge (HTTP today, a CLI tomorrow); controllers call them, never the other way round.',
      from: { path: '^src/[^/]+/application/' },
      to: { path: '/infrastructure/[^/]+\\.controller\\.ts$' },
    },
    {
      name: 'the-cli-is-a-client-only',
      severity: 'error',
      comment:
        "flostra (src/cli) talks to a server over HTTP only: none of the server's code (no Nest, Kafka or Postgres to load at its start), only its own modules, Node's and its libraries.",
      from: { path: '^src/cli/', pathNot: '\\.spec\\.ts$' },
      to: { pathNot: '^(src/cli/|node_modules/(commander|yaml|eventsource-parser)/)', dependencyTypesNot: ['core'] },
    },
    {
      name: 'the-console-imports-no-server-code',
      severity: 'error',
      comment: 'The web console is a browser bundle that talks to the API over HTTP only: server modules would drag Node into it.',
      from: { path: '^console/' },
      to: { path: '^(src|projections|test|bench)/' },
    },
    {
      name: 'the-server-imports-no-console-code',
      severity: 'error',
      comment: 'The console is built apart (Vite, into dist/console) and served as files; the server never loads its modules.',
      from: { path: '^(src|projections)/' },
      to: { path: '^console/' },
    },
    {
      name: 'production-code-imports-no-tests',
      severity: 'error',
      comment: 'Test helpers stay out of the production build and the image.',
      from: { path: '^(src|projections)/', pathNot: '\\.spec\\.ts$' },
      to: { path: '(^test/|\\.spec\\.ts$)' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // node_modules stays in the graph (not followed), so that rules can name packages.
    exclude: { path: '(^dist/|^\\.cache/)' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
