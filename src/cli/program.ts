import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError, Option } from 'commander';
import { ApiClient, segment } from './api-client.js';
import {
  FINAL_STATUSES,
  type ExecutionEvent,
  type ExecutionHistory,
  type ExecutionList,
  type ExecutionSummary,
  type ExecutionView,
  type PublishedWorkflow,
  type StartedExecution,
  type WorkflowList,
  type WorkflowRevision,
} from './api-types.js';
import {
  configPath,
  isSettingKey,
  normalizeUrl,
  readConfigFile,
  resolveSettings,
  SETTING_KEYS,
  writeConfigFile,
  type Settings,
  type SettingFlags,
} from './config.js';
import { CliError, EXIT, usageError, type ExitCode } from './errors.js';
import { describeEvent, eventLine, FINAL_EVENTS } from './events.js';
import { compact, fields, formatOf, json, table, when, type Io, type OutputFormat } from './output.js';
import { follow } from './sse.js';
import { readInput, readWorkflowFile } from './workflow-file.js';

/** What the commands run against: the terminal, the environment, and where their exit code goes. */
export interface CliContext {
  io: Io;
  /** The arguments, as given. */
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  /** Ends live streams (tests; Ctrl-C exits the process directly). */
  signal?: AbortSignal;
  /** The exit code the command decided on (0 unless it sets one). */
  exitCode: ExitCode;
}

interface GlobalOptions extends SettingFlags {
  output: OutputFormat;
}

function positiveInteger(what: string, max = Number.MAX_SAFE_INTEGER) {
  return (raw: string): number => {
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < 1 || value > max)
      throw new InvalidArgumentError(`${what} must be an integer from 1 to ${max}.`);
    return value;
  };
}

const ROOT_HELP = `
Settings (highest precedence first): the flag, the environment (FLOSTRA_URL, FLOSTRA_TOKEN,
FLOSTRA_WORKSPACE), the config file (--config, FLOSTRA_CONFIG, or ~/.config/flostra/config.json,
written by "flostra config set"), the default.

Exit codes: 0 ok, 1 failed (an execution that did not succeed), 2 usage or invalid input,
3 not found, 4 unauthenticated or forbidden, 5 conflict, 6 server unreachable or unavailable,
130 interrupted.`;

/** The `flostra` command line. */
export function buildProgram(ctx: CliContext): Command {
  const { io } = ctx;
  const program = new Command('flostra')
    .description('Command-line client of a Flostra server: publish workflows, run and watch executions.')
    .version(readVersion(), '-V, --version')
    .option('--url <url>', 'the Flostra server (default http://127.0.0.1:3000)')
    .option('--token <token>', 'the bearer token')
    .option('-w, --workspace <id>', 'the workspace (default dev)')
    .option('--config <file>', 'the config file')
    .addOption(new Option('-o, --output <format>', 'text for people, json for programs').choices(['text', 'json']).default('text'))
    .addHelpText('after', ROOT_HELP)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.out(text),
      writeErr: (text) => io.err(text),
      // With --output json, a usage error is one JSON document on stderr like any other error.
      outputError: (text, write) =>
        formatOf(ctx.argv) === 'json'
          ? write(`${JSON.stringify({ error: { title: text.replace(/^error: /, '').trim() }, exitCode: EXIT.usage })}\n`)
          : write(`${text}(run with --help for usage)\n`),
    });

  const globals = (command: Command) => command.optsWithGlobals<GlobalOptions>();
  const settingsOf = (command: Command): Settings => {
    const flags = globals(command);
    const path = configPath(flags, ctx.env);
    return resolveSettings(flags, ctx.env, readConfigFile(path), path);
  };
  const clientOf = (command: Command) => {
    const settings = settingsOf(command);
    return { settings, api: new ApiClient(settings.url, settings.token), format: globals(command).output };
  };
  const workspacePath = (settings: Settings) => `/v1/workspaces/${segment(settings.workspace)}`;

  // ---- config ----
  const config = program.command('config').description('show and change the config file');
  config
    .command('set')
    .description('store a setting in the config file: url, token or workspace')
    .argument('<key>', 'url, token or workspace')
    .argument('<value>')
    .action((key: string, value: string, _options, command: Command) => {
      if (!isSettingKey(key)) throw usageError(`unknown setting "${key}": one of ${SETTING_KEYS.join(', ')}`);
      const path = configPath(globals(command), ctx.env);
      const file = readConfigFile(path);
      file[key] = key === 'url' ? normalizeUrl(value) : value;
      writeConfigFile(path, file);
      if (globals(command).output === 'json') io.out(json({ configPath: path, key, set: true }));
      else io.out(`${key} set in ${path}\n`);
    });
  config
    .command('unset')
    .description('remove a setting from the config file')
    .argument('<key>', 'url, token or workspace')
    .action((key: string, _options, command: Command) => {
      if (!isSettingKey(key)) throw usageError(`unknown setting "${key}": one of ${SETTING_KEYS.join(', ')}`);
      const path = configPath(globals(command), ctx.env);
      const file = readConfigFile(path);
      delete file[key];
      writeConfigFile(path, file);
      if (globals(command).output === 'json') io.out(json({ configPath: path, key, set: false }));
      else io.out(`${key} removed from ${path}\n`);
    });
  config
    .command('show')
    .description('the settings in force and where each comes from (the token is not shown)')
    .action((_options, command: Command) => {
      const s = settingsOf(command);
      if (globals(command).output === 'json') {
        io.out(json({ url: s.url, workspace: s.workspace, tokenSet: s.token !== null, sources: s.sources, configPath: s.configPath }));
        return;
      }
      const from = (key: keyof Settings['sources']) => (s.sources[key] === null ? '' : ` (${s.sources[key]})`);
      io.out(
        fields([
          ['url', `${s.url}${from('url')}`],
          ['workspace', `${s.workspace}${from('workspace')}`],
          ['token', s.token === null ? 'not set' : `set${from('token')}`],
          ['config file', s.configPath],
        ]),
      );
    });

  // ---- workflows ----
  const workflows = program.command('workflows').description('publish and read workflows');
  workflows
    .command('publish')
    .description('publish a workflow from a JSON or YAML file (a new revision unless the graph is unchanged)')
    .argument('<file>', 'the workflow: { name?, nodes, edges, retry?, timeouts? } as .json, .yaml or .yml')
    .option('--name <name>', 'the workflow name (default: the file\'s "name", else the file name without its extension)')
    .action(async (file: string, options: { name?: string }, command: Command) => {
      const { settings, api, format } = clientOf(command);
      const workflow = await readWorkflowFile(file, options.name);
      const answer = await api.put<PublishedWorkflow>(`${workspacePath(settings)}/workflows/${segment(workflow.name)}`, workflow.graph);
      const created = answer.status === 201;
      if (format === 'json') return io.out(json({ ...answer.body, created }));
      const { name, revision, digest } = answer.body;
      io.out(
        created
          ? `published ${name} revision ${revision} (digest ${digest.slice(0, 12)})\n`
          : `${name} unchanged: revision ${revision} has the same graph (digest ${digest.slice(0, 12)})\n`,
      );
    });
  workflows
    .command('get')
    .description('a revision of a workflow: the latest, or --revision')
    .argument('<name>')
    .option('--revision <n>', 'a published revision', positiveInteger('--revision'))
    .action(async (name: string, options: { revision?: number }, command: Command) => {
      const { settings, api, format } = clientOf(command);
      const { body } = await api.get<WorkflowRevision>(`${workspacePath(settings)}/workflows/${segment(name)}`, {
        revision: options.revision,
      });
      if (format === 'json') return io.out(json(body));
      io.out(
        fields([
          ['workflow', body.name],
          ['revision', String(body.revision)],
          ['digest', body.digest],
          ['published', `${when(body.publishedAt)} by ${body.publishedBy}`],
        ]),
      );
      io.out(
        '\n' +
          table(body.graph.nodes, [
            { header: 'NODE', value: (n) => n.id },
            { header: 'TYPE', value: (n) => n.type },
            {
              header: 'AFTER',
              value: (n) =>
                body.graph.edges
                  .filter((e) => e.to === n.id)
                  .map((e) => e.from)
                  .join(', ') || '-',
            },
            { header: 'CONFIG', value: (n) => (n.config === undefined ? '-' : compact(n.config, 70)) },
          ]),
      );
    });
  workflows
    .command('list')
    .description('the published workflows of the workspace, each with its latest revision')
    .action(async (_options: unknown, command: Command) => {
      const { settings, api, format } = clientOf(command);
      const { body } = await api.get<WorkflowList>(`${workspacePath(settings)}/workflows`);
      const rows = [...body.items].sort((a, b) => a.name.localeCompare(b.name));
      if (format === 'json') return io.out(json({ workflows: rows }));
      if (rows.length === 0) io.out('no workflows published in this workspace yet\n');
      else
        io.out(
          table(rows, [
            { header: 'WORKFLOW', value: (r) => r.name },
            { header: 'REVISION', value: (r) => String(r.revision) },
            { header: 'PUBLISHED BY', value: (r) => r.publishedBy },
            { header: 'PUBLISHED', value: (r) => when(r.publishedAt) },
          ]),
        );
    });

  // ---- run ----
  program
    .command('run')
    .description('start an execution of a workflow; with --watch, follow it to its end')
    .argument('<workflow>', 'the workflow name')
    .option('--input <json>', 'the input: a JSON object, or @FILE (JSON or YAML)')
    .option('--revision <n>', 'run this revision instead of the latest', positiveInteger('--revision'))
    .option('--idempotency-key <key>', 'the same key and body start one execution however often sent')
    .option('--watch', 'follow the execution live and exit with its outcome')
    .action(
      async (
        workflow: string,
        options: { input?: string; revision?: number; idempotencyKey?: string; watch?: boolean },
        command: Command,
      ) => {
        const { settings, api, format } = clientOf(command);
        const input = await readInput(options.input);
        const headers = options.idempotencyKey === undefined ? undefined : { 'idempotency-key': options.idempotencyKey };
        const answer = await api.post<StartedExecution>(
          `${workspacePath(settings)}/workflows/${segment(workflow)}/executions`,
          { input, revision: options.revision },
          headers,
        );
        const { executionId, workflowRevision } = answer.body;
        const replayed = answer.status === 200;
        if (options.watch) {
          if (format === 'text')
            io.out(
              `${replayed ? 'execution already started with this key' : 'started execution'} ${executionId} (${workflow} revision ${workflowRevision})\n`,
            );
          ctx.exitCode = await watchExecution(ctx, api, executionId, format);
          return;
        }
        if (format === 'json') return io.out(json({ ...answer.body, replayed }));
        io.out(`${executionId}\n`);
        io.err(
          `${replayed ? 'already started with this key' : 'started'}: ${workflow} revision ${workflowRevision}; follow it with: flostra watch ${executionId}\n`,
        );
      },
    );

  // ---- executions ----
  const executions = program.command('executions').description('list, read, cancel, redrive, approve and signal executions');
  executions
    .command('list')
    .description("the workspace's executions, newest first")
    .option(
      '--status <statuses>',
      'one status or a comma list: queued, running, awaiting_approval, succeeded, failed, timed_out, cancelled',
    )
    .option('--workflow <name>', 'only this workflow')
    .option('--limit <n>', 'at most this many (1-200)', positiveInteger('--limit', 200))
    .option('--cursor <cursor>', 'the next page: the cursor a previous page printed')
    .action(async (options: { status?: string; workflow?: string; limit?: number; cursor?: string }, command: Command) => {
      const { settings, api, format } = clientOf(command);
      const { body } = await api.get<ExecutionList>(`${workspacePath(settings)}/executions`, {
        status: options.status,
        workflow: options.workflow,
        limit: options.limit,
        cursor: options.cursor,
      });
      if (format === 'json') return io.out(json(body));
      if (body.executions.length === 0) io.out('no executions\n');
      else io.out(table(body.executions, executionColumns));
      if (body.nextCursor !== null) io.out(`next page: --cursor ${body.nextCursor}\n`);
    });
  executions
    .command('get')
    .description('an execution: status, nodes, attempts, pending approval')
    .argument('<id>', 'the execution id')
    .action(async (id: string, _options, command: Command) => {
      const { api, format } = clientOf(command);
      const { body } = await api.get<ExecutionView>(`/v1/executions/${segment(id)}`);
      if (format === 'json') return io.out(json(body));
      io.out(describeExecution(body));
    });
  executions
    .command('cancel')
    .description('request cancellation (a running attempt stops at its next heartbeat)')
    .argument('<id>', 'the execution id')
    .option('--reason <text>', 'why, for the record')
    .action(async (id: string, options: { reason?: string }, command: Command) => {
      const { api, format } = clientOf(command);
      const { body } = await api.post<{ status: string }>(
        `/v1/executions/${segment(id)}/cancel`,
        options.reason === undefined ? {} : { reason: options.reason },
      );
      if (format === 'json') return io.out(json(body));
      io.out(`cancel requested for ${id}: now ${body.status}\n`);
    });
  executions
    .command('redrive')
    .description('run a failed, timed-out or cancelled execution again, reusing the nodes that succeeded')
    .argument('<id>', 'the execution id')
    .option('--idempotency-key <key>', 'makes a retried redrive safe (default: a new random key, printed)')
    .option('--reason <text>', 'why, for the record')
    .option('--watch', 'follow the execution live and exit with its outcome')
    .action(async (id: string, options: { idempotencyKey?: string; reason?: string; watch?: boolean }, command: Command) => {
      const { api, format } = clientOf(command);
      const key = options.idempotencyKey ?? crypto.randomUUID();
      const { body } = await api.post<{ redriveId: string; attemptNumber: number }>(
        `/v1/executions/${segment(id)}/redrive`,
        options.reason === undefined ? {} : { reason: options.reason },
        { 'idempotency-key': key },
      );
      if (options.watch) {
        if (format === 'text') io.out(`redrive of ${id} requested: attempt ${body.attemptNumber} (idempotency key ${key})\n`);
        ctx.exitCode = await watchExecution(ctx, api, id, format);
        return;
      }
      if (format === 'json') return io.out(json({ ...body, idempotencyKey: key }));
      io.out(`redrive of ${id} requested: attempt ${body.attemptNumber} (idempotency key ${key})\n`);
    });
  executions
    .command('approve')
    .description('decide the pending approval of a node: approve it, or --reject it')
    .argument('<id>', 'the execution id')
    .argument('<node>', 'the approval node')
    .option('--reject', 'reject instead: the execution fails with approval_rejected')
    .option('--digest <digest>', 'the action digest being decided (without it: shown, and asked for confirmation on a terminal)')
    .option('--comment <text>', 'a comment kept with the decision')
    .action(async (id: string, node: string, options: { reject?: boolean; digest?: string; comment?: string }, command: Command) => {
      const { api, format } = clientOf(command);
      const decision = options.reject ? 'reject' : 'approve';
      let digest = options.digest;
      if (digest === undefined) {
        const { body: view } = await api.get<ExecutionView>(`/v1/executions/${segment(id)}`);
        const pending = view.pendingApproval;
        if (pending === null || pending.nodeId !== node)
          throw new CliError(
            `execution ${id} has no pending approval of node ${node}${pending ? ` (the pending one is ${pending.nodeId})` : ''}; it is ${view.status}`,
            EXIT.conflict,
          );
        io.err(
          `pending approval of node ${node} in execution ${id}:\n${JSON.stringify(pending.action, null, 2)}\naction digest: ${pending.actionDigest}\n`,
        );
        if (!io.interactive)
          throw usageError(`not a terminal: nothing asked; to ${decision} exactly this action, add --digest ${pending.actionDigest}`);
        const answer = (await io.ask(`${decision} this action? [y/N] `)).trim().toLowerCase();
        if (answer !== 'y' && answer !== 'yes') throw new CliError('nothing decided', EXIT.failure);
        digest = pending.actionDigest;
      }
      const { body } = await api.post<{ status: string; decision: string }>(`/v1/executions/${segment(id)}/approvals/${segment(node)}`, {
        decision,
        actionDigest: digest,
        ...(options.comment === undefined ? {} : { comment: options.comment }),
      });
      if (format === 'json') return io.out(json(body));
      io.out(`${decision === 'approve' ? 'approved' : 'rejected'} ${node} of ${id}: now ${body.status}\n`);
    });

  executions
    .command('signal')
    .description('send a signal to an execution: the wait_signal node of that name takes it (or it is kept until one asks)')
    .argument('<id>', 'the execution id')
    .argument('<name>', 'the signal name')
    .option('--payload <json>', 'the payload, as JSON: the output of the node that takes it (default: null)')
    .option('--idempotency-key <key>', 'makes a retried send safe: the same key answers the same signal id')
    .action(async (id: string, name: string, options: { payload?: string; idempotencyKey?: string }, command: Command) => {
      const { api, format } = clientOf(command);
      let payload: unknown = undefined;
      if (options.payload !== undefined) {
        try {
          payload = JSON.parse(options.payload);
        } catch (error) {
          throw usageError(`--payload is not JSON: ${(error as Error).message}`);
        }
      }
      const { body } = await api.post<{ signalId: string }>(
        `/v1/executions/${segment(id)}/signals/${segment(name)}`,
        payload === undefined ? {} : { payload },
        options.idempotencyKey === undefined ? undefined : { 'idempotency-key': options.idempotencyKey },
      );
      if (format === 'json') return io.out(json(body));
      io.out(`signal ${name} sent to ${id}: ${body.signalId}\n`);
    });

  // ---- history, watch, tail ----
  program
    .command('history')
    .description("an execution's events, in log order")
    .argument('<id>', 'the execution id')
    .option('--after <position>', 'only the events after this position')
    .option('--limit <n>', 'at most this many events (default: all)', positiveInteger('--limit'))
    .action(async (id: string, options: { after?: string; limit?: number }, command: Command) => {
      const { api, format } = clientOf(command);
      const events: ExecutionEvent[] = [];
      let after = options.after;
      for (;;) {
        const limit = Math.min(1000, (options.limit ?? Infinity) - events.length);
        const { body } = await api.get<ExecutionHistory>(`/v1/executions/${segment(id)}/history`, { after, limit });
        events.push(...body.events);
        if (body.nextCursor === null || events.length >= (options.limit ?? Infinity)) break;
        after = body.nextCursor;
      }
      if (format === 'json') return io.out(json({ events }));
      io.out(
        table(events, [
          { header: 'RECORDED', value: (e) => when(e.recordedAt) },
          { header: 'EVENT', value: (e) => e.type },
          { header: 'DETAIL', value: (e) => describeEvent(e) ?? `lease until ${when(e.data.leaseExpiresAt as string)}` },
        ]),
      );
    });
  program
    .command('watch')
    .description('follow an execution live, from its first event to its end; exits with its outcome (0 succeeded, 1 otherwise)')
    .argument('<id>', 'the execution id')
    .action(async (id: string, _options, command: Command) => {
      const { api, format } = clientOf(command);
      ctx.exitCode = await watchExecution(ctx, api, id, format);
    });
  program
    .command('tail')
    .description('follow every execution event of the workspace live, from now on, until Ctrl-C (--output json: one event per line)')
    .option('--last-event-id <position>', 'resume after this event instead of starting now')
    .action(async (options: { lastEventId?: string }, command: Command) => {
      const { settings, api, format } = clientOf(command);
      if (format === 'text') io.err(`following workspace ${settings.workspace} (Ctrl-C to stop)\n`);
      await follow({
        url: api.url(`${workspacePath(settings)}/events`),
        token: settings.token,
        lastEventId: options.lastEventId,
        signal: ctx.signal,
        onReconnecting: (why) => io.err(`${why}; reconnecting\n`),
        onEvent: (message) => {
          const event = JSON.parse(message.data) as ExecutionEvent;
          if (format === 'json') return io.out(`${JSON.stringify(event)}\n`);
          const line = eventLine(event, `${(event.executionId ?? '').slice(0, 8)}  `);
          if (line !== null) io.out(line);
        },
      });
    });

  return program;
}

const executionColumns = [
  { header: 'EXECUTION', value: (e: ExecutionSummary) => e.executionId },
  { header: 'WORKFLOW', value: (e: ExecutionSummary) => `${e.workflow.name}@${e.workflow.revision}` },
  {
    header: 'STATUS',
    value: (e: ExecutionSummary) =>
      `${e.status}${e.waitingFor ? ` (${e.waitingFor})` : ''}${e.cancelRequested && e.endedAt === null ? ' (cancel requested)' : ''}`,
  },
  { header: 'ATTEMPTS', value: (e: ExecutionSummary) => String(e.attemptCount) },
  { header: 'STARTED', value: (e: ExecutionSummary) => when(e.startedAt) },
  { header: 'ENDED', value: (e: ExecutionSummary) => when(e.endedAt) },
];

/** An execution for people: its fields, its nodes, and what a pending approval asks. */
export function describeExecution(view: ExecutionView): string {
  const entries: [string, string][] = [
    ['execution', view.executionId],
    ['workflow', `${view.workflow.name} revision ${view.workflow.revision}`],
    [
      'status',
      `${view.status}${view.waitingFor ? ` (waiting for ${view.waitingFor})` : ''}${view.cancelRequested && view.endedAt === null ? ' (cancel requested)' : ''}`,
    ],
    ['started', when(view.startedAt)],
    ['ended', when(view.endedAt)],
    ['attempts', String(view.attempts.length)],
    ['input', compact(view.input)],
  ];
  if (view.parent) entries.push(['parent', `${view.parent.executionId} (node ${view.parent.nodeId}, depth ${view.parent.depth})`]);
  if (view.output !== null) entries.push(['output', compact(view.output)]);
  if (view.error !== null) entries.push(['error', `${view.error.code}: ${view.error.message}`]);
  let text = fields(entries);
  if (view.nodes.length > 0)
    text +=
      '\n' +
      table(view.nodes, [
        { header: 'NODE', value: (n) => n.nodeId },
        { header: 'STATUS', value: (n) => n.status },
        { header: 'STARTED', value: (n) => when(n.startedAt) },
        { header: 'ENDED', value: (n) => when(n.endedAt) },
        {
          header: 'RESULT',
          value: (n) => (n.error ? `${n.error.code}: ${n.error.message}` : n.output === null ? '-' : compact(n.output, 60)),
        },
      ]);
  const children = view.children ?? [];
  if (children.length > 0)
    text +=
      '\n' +
      table(children, [
        { header: 'CHILD', value: (c) => c.executionId },
        { header: 'NODE', value: (c) => c.nodeId },
        { header: 'WORKFLOW', value: (c) => c.workflow },
        { header: 'STATUS', value: (c) => c.status },
      ]);
  if (view.pendingApproval !== null) {
    const { nodeId, action, actionDigest } = view.pendingApproval;
    text += `\npending approval of ${nodeId} (digest ${actionDigest}):\n${JSON.stringify(action, null, 2)}\n`;
    text += `decide with: flostra executions approve ${view.executionId} ${nodeId} --digest ${actionDigest} [--reject]\n`;
  }
  return text;
}

/**
 * Follows an execution's live events until it ends, each line printed once (text), and answers
 * the exit code of its outcome. A final event is confirmed by reading the execution at its
 * position: one redriven since is followed on.
 */
async function watchExecution(ctx: CliContext, api: ApiClient, executionId: string, format: OutputFormat): Promise<ExitCode> {
  const { io } = ctx;
  let final: ExecutionView | null = null;
  await follow({
    url: api.url(`/v1/executions/${segment(executionId)}/events`),
    token: api.token,
    signal: ctx.signal,
    onReconnecting: (why) => io.err(`${why}; reconnecting\n`),
    onEvent: async (message) => {
      const event = JSON.parse(message.data) as ExecutionEvent;
      if (format === 'text') {
        const line = eventLine(event);
        if (line !== null) io.out(line);
        if (event.type === 'NodeAwaitingApproval')
          io.out(
            `          decide with: flostra executions approve ${executionId} ${String(event.data.nodeId)} --digest ${String(event.data.actionDigest)} [--reject]\n`,
          );
      }
      if (!(event.type in FINAL_EVENTS)) return;
      const { body } = await api.get<ExecutionView>(`/v1/executions/${segment(executionId)}`, { minPosition: event.position });
      if (!FINAL_STATUSES.includes(body.status)) return;
      final = body;
      return 'stop';
    },
  });
  if (final === null) return EXIT.interrupted;
  const view: ExecutionView = final;
  if (format === 'json') io.out(json(view));
  return view.status === 'succeeded' ? EXIT.ok : EXIT.failure;
}

/** The version in the package.json of flostra above this module (src/cli in tests, dist/src/cli when built). */
function readVersion(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dirname(dir) !== dir; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
    if (manifest.name === 'flostra' && manifest.version) return manifest.version;
  }
  return 'unknown';
}
