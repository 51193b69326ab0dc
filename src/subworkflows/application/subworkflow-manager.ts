import { CatchUpRunner } from '../../core/catch-up-runner.js';
import type { Clock } from '../../core/clock.port.js';
import { NotFoundError } from '../../core/errors.js';
import type { EventStore, RecordedEvent } from '../../core/event-store.port.js';
import { uuidV5 } from '../../core/ids.js';
import type { Logger } from '../../core/logger.js';
import type { ExecutionStreams } from '../../executions/application/execution-streams.js';
import { executionStreamId, parseExecutionEvent } from '../../executions/domain/execution-event.parser.js';
import type { ExecutionError, ExecutionEventOf } from '../../executions/domain/execution.events.js';
import { isFinal, type StartedExecution } from '../../executions/domain/execution.state.js';
import { childLinkOf, rootOf } from '../../executions/domain/subworkflow-children.js';
import { type CheckpointStore, CheckpointThrottle } from '../../postgres/checkpoint-store.js';
import type { WorkflowQueries } from '../../workflows/application/workflow.queries.js';
import type { WorkspaceStreams } from '../../workspaces/application/workspace-streams.js';
import { refusal, treeExecutions } from '../domain/tree.decider.js';
import type { ChildLink, ChildLinks } from '../infrastructure/child-links.js';
import { ChildOutcomes, type Ending, SUBWORKFLOWS_ACTOR } from './child-outcomes.js';
import type { TreeStreams } from './tree-streams.js';

export { SUBWORKFLOWS_ACTOR };

/**
 * Fault injection for tests: awaited at the step named. A hook that never resolves stands for a
 * process stopped there; the next manager must finish the work.
 */
export interface SubworkflowHooks {
  /** The child has its place in its root's tree; its stream is not started yet. */
  afterPlaceTaken?(link: ChildLink): Promise<void> | void;
  /** The child's stream was started; the parent's checkpoint has not moved past its request. */
  afterChildStarted?(link: ChildLink): Promise<void> | void;
}

export interface SubworkflowManagerDeps {
  store: EventStore;
  executions: Pick<ExecutionStreams, 'handle' | 'load' | 'ids'>;
  workflows: Pick<WorkflowQueries, 'getRevision'>;
  checkpoints: CheckpointStore;
  links: ChildLinks;
  trees: TreeStreams;
  workspaces: Pick<WorkspaceStreams, 'settings'>;
  /** Executions a tree may hold where its workspace sets no `maxExecutionsPerTree`. */
  maxExecutionsPerTree: number;
  clock: Clock;
  logger: Logger;
}

export interface SubworkflowManagerOptions {
  /** Checkpoint name; managers with one name share their progress. */
  name?: string;
  batchSize?: number;
  hooks?: SubworkflowHooks;
}

type ChildRequest = ExecutionEventOf<'ChildExecutionStarted'>['data'] & { parentExecutionId: string; workspaceId: string };

const EXECUTION_PREFIX = executionStreamId('');
const ENDINGS = new Set(['ExecutionSucceeded', 'ExecutionFailed', 'ExecutionTimedOut', 'ExecutionCancelled']);
/** Commands a batch sends at once (each to its own execution stream, or retried on a conflict). */
const CONCURRENCY = 16;

/**
 * The process manager of sub-workflows (docs/architecture.md, "Sub-workflows"), run by the
 * dispatcher role. A checkpointed subscription of the execution streams:
 *
 * - `ChildExecutionStarted` on a parent: records the link, then starts the child's stream under
 *   its derived id (a second start is a replay), unless the parent no longer waits for it.
 * - An execution that ends and is an open child: records its end on the parent
 *   (`RecordChildResult`), then marks the link ended.
 * - `CancelRequested`, or any end, of an execution with open children: cancels them (each child's
 *   own cancel reaches its children the same way, level by level).
 * - `CancelRequested` of a root: closes its tree (`tree-<rootId>`) in one append, so that no child
 *   anywhere below it is admitted any more, whatever level its parent's cancel has reached.
 *
 * A child takes its place in its root's tree before it starts: beyond the tree's bound its node
 * fails `subworkflow_tree_limit_exceeded`, and in a closed tree it ends `cancelled` unstarted. In a
 * workspace with a concurrency bound it waits for a slot like any run (its parent, waiting only for
 * children, gave its own back: src/executions/domain/yield-slot.ts).
 *
 * Every step is idempotent and the links are written before the step that needs them, so a
 * crash anywhere is finished by reading the log again from the checkpoint, never done twice.
 */
export class SubworkflowManager {
  private readonly options: Required<Omit<SubworkflowManagerOptions, 'hooks'>> & { hooks: SubworkflowHooks };
  private readonly throttle = new CheckpointThrottle();
  /** Follows the log; its loop only stores, every second, a position skipped by batches that changed nothing. */
  private readonly runner: CatchUpRunner;
  /** What the manager records on parents and asks of children. */
  private readonly outcomes: ChildOutcomes;

  constructor(
    private readonly deps: SubworkflowManagerDeps,
    options: SubworkflowManagerOptions = {},
  ) {
    this.outcomes = new ChildOutcomes(deps);
    this.options = { name: options.name ?? 'subworkflows', batchSize: options.batchSize ?? 500, hooks: options.hooks ?? {} };
    // The feed's name, batchSize, store and checkpoints: the options and deps of those names.
    this.runner = new CatchUpRunner({
      feed: {
        ...this.options,
        ...deps,
        streamPrefixes: [EXECUTION_PREFIX],
        handle: (batch) => this.track(batch),
        throttle: this.throttle,
      },
      loop: {
        round: async () => 1_000,
        onError: (error) => deps.logger.warn('storing the subworkflow manager checkpoint failed', { err: error }),
        backoff: { initialMs: 1_000, maxMs: 5_000 },
      },
      logger: deps.logger,
    });
  }

  start(): void {
    this.runner.start();
  }

  async stop(): Promise<void> {
    await this.runner.stop();
  }

  /**
   * Acts on one batch. The open links of the executions that end or are cancelled in it are read
   * from `subworkflow_children` after the batch's starts, never from memory: another replica may
   * have written a child's link, and the checkpoint they share may already be past the request.
   */
  async track(batch: readonly RecordedEvent[]): Promise<void> {
    const requests: ChildRequest[] = [];
    const endings = new Map<string, Ending>();
    const cancels = new Set<string>();
    const requested: string[] = [];
    for (const recorded of batch) {
      const { type } = recorded;
      if (type !== 'ChildExecutionStarted' && type !== 'CancelRequested' && !ENDINGS.has(type)) continue;
      const executionId = recorded.streamId.slice(EXECUTION_PREFIX.length);
      const event = parseExecutionEvent(recorded);
      if (event.type === 'ChildExecutionStarted') {
        const workspaceId = String(recorded.metadata['workspaceId'] ?? '');
        requests.push({ ...event.data, parentExecutionId: executionId, workspaceId });
        continue;
      }
      cancels.add(executionId);
      if (event.type === 'CancelRequested') requested.push(executionId);
      else endings.set(executionId, event as Ending);
    }
    const last = batch[batch.length - 1];
    if (last === undefined) return;
    // A root's cancel closes its tree before any start of the batch: a child asked for anywhere
    // below it, even just before the cancel, is no longer started.
    await inChunks(requested, (executionId) => this.closeTreeOf(executionId));
    // Starts next: a cancel of the parent, or the child's end, read in the same batch then finds the link.
    await inChunks(requests, (request) => this.startChild(request));
    const open = await this.deps.links.openOf([...endings.keys()], [...cancels]);
    const cancelled = open.filter((link) => cancels.has(link.parentExecutionId));
    const ends = open.flatMap((link) => {
      const event = endings.get(link.childExecutionId);
      return event === undefined ? [] : [{ link, event }];
    });
    await inChunks(cancelled, (link) => this.outcomes.cancelChild(link));
    await inChunks(ends, ({ link, event }) => this.outcomes.recordEnd(link, event));
    const changed = requested.length + requests.length + ends.length + cancelled.length > 0;
    // The runner never stores a skipped position while a batch is in hand: this one is the newest.
    if (this.throttle.shouldSave(changed, last.position)) await this.deps.checkpoints.save(this.options.name, last.position);
  }

  private async startChild(request: ChildRequest): Promise<void> {
    const link: ChildLink = {
      childExecutionId: request.childExecutionId,
      parentExecutionId: request.parentExecutionId,
      nodeId: request.nodeId,
      workspaceId: request.workspaceId,
    };
    const { state: parent } = await this.deps.executions.load(request.parentExecutionId);
    if (parent.children?.[request.childExecutionId]?.status !== 'running') return;
    if (isFinal(parent) || parent.cancelRequest) return this.abandonChild(link);
    await this.deps.links.add([link]);
    const input = request.input;
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      await this.outcomes.startFailed(link, 'the input of a child execution must be a JSON object');
      return;
    }
    let workflow;
    try {
      workflow = await this.deps.workflows.getRevision(request.workspaceId, request.workflow, request.revision ?? undefined);
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      await this.outcomes.startFailed(link, error.message);
      return;
    }
    const parentLink = childLinkOf(parent, request.nodeId);
    const rootExecutionId = rootOf(parent);
    const { settings } = (await this.deps.workspaces.settings(request.workspaceId)).state;
    // The root's cancel is in the log, but maybe not yet read in this manager's order: close its tree now.
    if (rootExecutionId !== parent.executionId) await this.rootStopped(rootExecutionId);
    if (!(await this.takePlace(link, rootExecutionId, settings.maxExecutionsPerTree ?? this.deps.maxExecutionsPerTree))) return;
    await this.options.hooks.afterPlaceTaken?.(link);
    const childId = request.childExecutionId;
    await this.deps.executions.handle(
      childId,
      {
        type: 'StartExecution',
        data: {
          executionId: childId,
          workspaceId: request.workspaceId,
          workflow: {
            workflowId: workflow.workflowId,
            name: workflow.name,
            revision: workflow.revision,
            digest: workflow.digest,
            graph: workflow.graph,
          },
          input: input as Record<string, unknown>,
          idempotency: null,
          attemptId: uuidV5(`${childId}:attempt:1`),
          // Counted by the workspace's quota like any run; its parent, waiting only for children, gave its slot back.
          waitFor: settings.maxConcurrentExecutions === null ? null : 'workspace_quota',
          parent: parentLink,
        },
        metadata: { now: this.deps.clock.now(), actor: SUBWORKFLOWS_ACTOR },
      },
      { eventIds: (index) => uuidV5(`${childId}:start:${index}`) },
    );
    // A cancel (or end) of the parent appended since it was loaded may have been read by another
    // replica before this child existed (its cancel found no stream): look again, now it does.
    // So for the root's tree: a child admitted just before the close is cancelled as it starts.
    const { state: now } = await this.deps.executions.load(request.parentExecutionId);
    const rootStopped = rootExecutionId !== parent.executionId && (await this.rootStopped(rootExecutionId));
    const { state: tree } = await this.deps.trees.read(rootExecutionId);
    if (isFinal(now) || now.cancelRequest || rootStopped || tree.closed) await this.outcomes.cancelChild(link);
    await this.options.hooks.afterChildStarted?.(link);
  }

  /**
   * Takes the child's place in its root's tree (the place it already has, when its start is
   * retried). Without one, the child is never started: beyond the bound its node fails, not
   * retryable; in a closed tree (the root was cancelled) it ends `cancelled` on its parent.
   */
  private async takePlace(link: ChildLink, rootExecutionId: string, bound: number): Promise<boolean> {
    const { state } = await this.deps.trees.admit({ ...link, rootExecutionId }, bound);
    const refused = refusal(state, link.childExecutionId);
    if (refused === null) return true;
    if (refused === 'closed') {
      // The parent is cancelled with its tree (its own cancel may still be on its way, level by
      // level) before the child's end is recorded, so that the never-started child fails nothing.
      const message = `the tree of execution ${rootExecutionId} was cancelled before the child started`;
      await this.outcomes.requestCancel(link.parentExecutionId, `the tree of execution ${rootExecutionId} was cancelled`);
      await this.outcomes.record(link, { outcome: 'cancelled', error: { code: 'execution_cancelled', message } });
      return false;
    }
    const nodeError: ExecutionError = {
      code: 'subworkflow_tree_limit_exceeded',
      message: `the sub-workflow tree of execution ${rootExecutionId} holds ${treeExecutions(state)} executions; at most ${bound} run in one tree`,
      retryable: false,
    };
    this.deps.logger.warn('a child execution was refused: its tree is full', { ...link, rootExecutionId, bound });
    await this.outcomes.record(link, { outcome: 'failed', error: nodeError, nodeError });
    return false;
  }

  /** Whether the root was cancelled or ended; if so its tree is closed (again: a no-op) before this answers. */
  private async rootStopped(rootExecutionId: string): Promise<boolean> {
    const root = await this.stateIfAny(rootExecutionId);
    if (root === null || (!isFinal(root) && !root.cancelRequest)) return false;
    await this.deps.trees.close(rootExecutionId, root.workspaceId, `execution ${rootExecutionId} was cancelled or ended`);
    return true;
  }

  /** A root was cancelled: its tree admits no child any more, at whatever level (a child's own cancel closes nothing). */
  private async closeTreeOf(executionId: string): Promise<void> {
    const state = await this.stateIfAny(executionId);
    if (state === null || rootOf(state) !== executionId) return;
    // A root that never asked for a child has no tree to close, and none can grow under it now:
    // a first child asked for after the cancel is abandoned by `startChild`.
    if (Object.keys(state.children ?? {}).length === 0) return;
    await this.deps.trees.close(executionId, state.workspaceId, `execution ${executionId} was cancelled`);
  }

  /** The execution's state; null once it is gone (deleted by retention). */
  private async stateIfAny(executionId: string): Promise<StartedExecution | null> {
    try {
      return (await this.deps.executions.load(executionId)).state;
    } catch (error) {
      if (error instanceof NotFoundError) return null;
      throw error;
    }
  }

  /**
   * The parent no longer waits for a child it asked for (a cancel came first, or it ended) and its
   * record of the child still says `running`: start nothing. A child that never started ends
   * `cancelled` on the parent; one an earlier run of the manager did start is cancelled, and its
   * end is recorded as it comes.
   */
  private async abandonChild(link: ChildLink): Promise<void> {
    const started = await this.deps.executions.load(link.childExecutionId).then(
      () => true,
      (error: unknown) => {
        if (error instanceof NotFoundError) return false;
        throw error;
      },
    );
    if (started) {
      await this.deps.links.add([link]);
      return this.outcomes.cancelChild(link);
    }
    const message = `parent execution ${link.parentExecutionId} was cancelled or ended before the child started`;
    await this.outcomes.record(link, { outcome: 'cancelled', error: { code: 'execution_cancelled', message } });
  }
}

async function inChunks<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += CONCURRENCY) await Promise.all(items.slice(i, i + CONCURRENCY).map(work));
}
