import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { Principal } from '../../src/auth/principal.js';
import { randomIds, uuidV5 } from '../../src/core/ids.js';
import { createLogger } from '../../src/core/logger.js';
import { workerActor } from '../../src/core/actors.js';
import { NotFoundError } from '../../src/core/errors.js';
import type { EventStore, RecordedEvent } from '../../src/core/event-store.port.js';
import { ExecutionStreams } from '../../src/executions/application/execution-streams.js';
import type { RecordNodeResult } from '../../src/executions/domain/execution.commands.js';
import { executionStreamId } from '../../src/executions/domain/execution-event.parser.js';
import type { WorkflowSnapshot } from '../../src/executions/domain/execution.events.js';
import { childExecutionIdOf } from '../../src/executions/domain/subworkflow-children.js';
import type { SubworkflowManager } from '../../src/subworkflows/application/subworkflow-manager.js';
import { createSubworkflowManager } from '../../src/subworkflows/subworkflows.module.js';
import { CheckpointStore } from '../../src/postgres/checkpoint-store.js';
import {
  parsePublishBody,
  PublishWorkflowCommand,
  PublishWorkflowHandler,
} from '../../src/workflows/application/publish-workflow.handler.js';
import { AdjustableClock } from '../support/adjustable-clock.js';
import {
  EXECUTION_ID,
  WORKER_A,
  WORKSPACE_ID,
  aWorkflow,
  claimAttempt,
  completeAttempt,
  requestCancel,
  startExecution,
  time,
} from '../support/executions/execution-fixtures.js';
import { openTestStore } from '../support/test-app.js';

/**
 * The subworkflow manager on a real store (Postgres) and its real tables, fed batches of the log by
 * hand: a parent cancelled after it asked for a child (`ChildExecutionStarted`) and before the
 * manager started that child never leaves the child `running` on the parent; and two managers on
 * one checkpoint name, as two dispatcher processes run them: whichever replica reads a child's end
 * (or its parent's cancel) acts on it, also when another replica wrote the child's link and then
 * stopped.
 */
const CHILD = childExecutionIdOf(EXECUTION_ID, 'bill', 1);
const CHILD_ATTEMPT = uuidV5(`${CHILD}:attempt:1`);
const editor: Principal = { subject: 'alice', workspaces: new Map([[WORKSPACE_ID, 'editor']]), global: new Set(), tokenId: 'test' };

function parentWorkflow(): WorkflowSnapshot {
  const base = aWorkflow();
  return { ...base, graph: { ...base.graph, nodes: [{ id: 'bill', type: 'subworkflow', config: { workflow: 'invoice' } }], edges: [] } };
}

const askForChild = (at: number): RecordNodeResult => ({
  type: 'RecordNodeResult',
  data: {
    attemptId: startExecution().data.attemptId,
    workerId: WORKER_A,
    fencingToken: 1,
    kind: 'node_waiting',
    nodeId: 'bill',
    wait: { kind: 'subworkflow', input: { customer: 'c-7' } },
  },
  metadata: { now: time(at), actor: workerActor(WORKER_A) },
});

describe('subworkflow manager: a parent that stops waiting before its child started', () => {
  let opened: Awaited<ReturnType<typeof openTestStore>>;
  let store: EventStore;
  let executions: ExecutionStreams;
  let manager: SubworkflowManager;

  beforeEach(async () => {
    opened = await openTestStore('postgres');
    store = opened.store;
    const clock = new AdjustableClock();
    executions = new ExecutionStreams(store, clock, randomIds);
    manager = await createSubworkflowManager({ store, sql: opened.sql, executions, clock, logger: createLogger({ level: 'silent' }) });
  });
  afterEach(() => opened.close());

  const parentLog = () => store.readStream(executionStreamId(EXECUTION_ID));
  const childOnParent = async () => (await executions.load(EXECUTION_ID)).state.children?.[CHILD];

  async function parentAskedForChild(): Promise<void> {
    await executions.handle(EXECUTION_ID, startExecution({ workflow: parentWorkflow() }));
    await executions.handle(EXECUTION_ID, claimAttempt({ at: 1_000 }));
    await executions.handle(EXECUTION_ID, askForChild(2_000));
    expect(await childOnParent()).toMatchObject({ status: 'running' });
  }

  it('a cancel requested while the attempt runs: the child is not started and ends cancelled on the parent', async () => {
    await parentAskedForChild();
    await executions.handle(EXECUTION_ID, requestCancel({ at: 2_500 }));

    // The request and the cancel reach the manager in one batch.
    await manager.track(await parentLog());

    expect(await childOnParent()).toMatchObject({ status: 'cancelled' });
    await expect(executions.load(CHILD)).rejects.toThrow(NotFoundError);
    const types = (await parentLog()).map((e) => e.type);
    expect(types.filter((t) => t === 'ChildExecutionEnded')).toHaveLength(1);

    // Reading the same batch again appends nothing.
    const head = await store.headPosition();
    await manager.track(await parentLog());
    expect(await store.headPosition()).toBe(head);
  });

  it('a parent cancelled while suspended on its child, read batch by batch: the child ends cancelled on the parent', async () => {
    await parentAskedForChild();
    const suspend = completeAttempt({ at: 3_000, outcome: 'suspended' });
    // A suspension lists subworkflow nodes with task nodes.
    await executions.handle(EXECUTION_ID, { ...suspend, data: { ...suspend.data, tasks: ['bill'] } });
    const asked = await parentLog();
    await executions.handle(EXECUTION_ID, requestCancel({ at: 3_500 }));
    expect((await executions.load(EXECUTION_ID)).state.status).toBe('cancelled');

    // The manager reads the request only after the parent ended; the end comes in the next batch.
    await manager.track(asked);
    await manager.track((await parentLog()).slice(asked.length));

    expect(await childOnParent()).toMatchObject({ status: 'cancelled' });
    await expect(executions.load(CHILD)).rejects.toThrow(NotFoundError);
  });

  it('a child an earlier run of the manager started (it stopped before its checkpoint moved) is cancelled, and its end recorded', async () => {
    await parentAskedForChild();
    const start = startExecution({ at: 2_100 });
    await executions.handle(CHILD, {
      ...start,
      data: { ...start.data, executionId: CHILD, waitFor: null, parent: { executionId: EXECUTION_ID, nodeId: 'bill', depth: 1 } },
    });
    await executions.handle(EXECUTION_ID, requestCancel({ at: 2_500 }));

    await manager.track(await parentLog());
    await manager.track(await store.readStream(executionStreamId(CHILD)));

    expect((await executions.load(CHILD)).state.status).toBe('cancelled');
    expect(await childOnParent()).toMatchObject({ status: 'cancelled' });
  });
});

describe('subworkflow manager replicas sharing one checkpoint', () => {
  let opened: Awaited<ReturnType<typeof openTestStore>>;
  let store: EventStore;
  let executions: ExecutionStreams;
  let checkpoints: CheckpointStore;
  let replicaA: SubworkflowManager;
  let replicaB: SubworkflowManager;
  let clock: AdjustableClock;

  beforeEach(async () => {
    opened = await openTestStore('postgres');
    store = opened.store;
    clock = new AdjustableClock();
    const graph = parsePublishBody({ nodes: [{ id: 'only', type: 'noop' }], edges: [] });
    await new PublishWorkflowHandler(store, clock, randomIds).execute(new PublishWorkflowCommand(editor, WORKSPACE_ID, 'invoice', graph));
    executions = new ExecutionStreams(store, clock, randomIds);
    checkpoints = await CheckpointStore.open(opened.sql);
    // Each replica has streams of its own, as another process would.
    const replica = () =>
      createSubworkflowManager({
        store,
        sql: opened.sql,
        executions: new ExecutionStreams(store, clock, randomIds),
        clock,
        logger: createLogger({ level: 'silent' }),
      });
    [replicaA, replicaB] = [await replica(), await replica()];
  });
  afterEach(() => opened.close());

  /** The execution streams' part of the log after a position: what a replica reads next. */
  const logAfter = (after: string | null): Promise<RecordedEvent[]> =>
    store.readAll({ after, maxCount: 1_000, streamPrefixes: [executionStreamId('')] });
  const childOnParent = async () => (await executions.load(EXECUTION_ID)).state.children?.[CHILD];

  /** The parent asks for its child and suspends on it. */
  async function parentWaitsForChild(): Promise<void> {
    await executions.handle(EXECUTION_ID, startExecution({ workflow: parentWorkflow() }));
    await executions.handle(EXECUTION_ID, claimAttempt({ at: 1_000 }));
    await executions.handle(EXECUTION_ID, askForChild(2_000));
    const suspend = completeAttempt({ at: 3_000, outcome: 'suspended' });
    await executions.handle(EXECUTION_ID, { ...suspend, data: { ...suspend.data, tasks: ['bill'] } });
  }

  /** Replica B reads the request and starts the child. */
  async function childStartedByB(): Promise<void> {
    await parentWaitsForChild();
    await replicaB.track(await logAfter(null));
    expect((await executions.load(CHILD)).state.status).toBe('queued');
  }

  /** Replica A reads everything so far in one batch; B restarts from the checkpoint A stored. */
  async function aReadsAllThenBRestarts(): Promise<void> {
    await replicaA.track(await logAfter(null));
    await replicaB.track(await logAfter(await checkpoints.load('subworkflows')));
  }

  it("a child's end read by the replica that did not start it is recorded on the parent", async () => {
    await childStartedByB();
    // B stops here. The child runs and succeeds (on the manager's clock, which started it).
    const now = { now: clock.now() };
    const claim = claimAttempt({ attemptId: CHILD_ATTEMPT, at: 0 });
    await executions.handle(CHILD, { ...claim, metadata: { ...claim.metadata, ...now } });
    const done = completeAttempt({ attemptId: CHILD_ATTEMPT, at: 0, outcome: 'succeeded', output: { total: 7 } });
    await executions.handle(CHILD, { ...done, metadata: { ...done.metadata, ...now } });

    await aReadsAllThenBRestarts();

    expect(await childOnParent()).toMatchObject({ status: 'succeeded' });
    expect((await executions.load(EXECUTION_ID)).state.status).not.toBe('waiting');
  });

  it('a parent cancelled after another replica started its child: the child is cancelled and its end recorded', async () => {
    await childStartedByB();
    // B stops here; the parent is cancelled.
    await executions.handle(EXECUTION_ID, requestCancel({ at: 4_000 }));

    await aReadsAllThenBRestarts();
    // The child's cancel is read by A, too.
    await replicaA.track(await logAfter(await checkpoints.load('subworkflows')));

    expect((await executions.load(CHILD)).state.status).toBe('cancelled');
    expect(await childOnParent()).toMatchObject({ status: 'cancelled' });
  });

  it('a parent cancelled while another replica starts its child (the cancel found no child yet): the child is never left running', async () => {
    await parentWaitsForChild();
    // Replica B loads the parent (still waiting) and is held there, before it writes the link.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let loaded!: () => void;
    const parentLoaded = new Promise<void>((resolve) => (loaded = resolve));
    const slowStreams = new ExecutionStreams(store, clock, randomIds);
    const load = slowStreams.load.bind(slowStreams);
    let first = true;
    slowStreams.load = async (id) => {
      const result = await load(id);
      if (id === EXECUTION_ID && first) {
        first = false;
        loaded();
        await held;
      }
      return result;
    };
    const logger = createLogger({ level: 'silent' });
    const slowB = await createSubworkflowManager({ store, sql: opened.sql, executions: slowStreams, clock, logger });
    const bReading = slowB.track(await logAfter(null));
    await parentLoaded;

    // Meanwhile the parent is cancelled, and replica A reads the request and the cancel.
    await executions.handle(EXECUTION_ID, requestCancel({ at: 4_000 }));
    await replicaA.track(await logAfter(null));
    expect(await childOnParent()).toMatchObject({ status: 'cancelled' });

    // B goes on with what it loaded. The parent is a root, whose cancel closed its tree: B finds no
    // place for the child and starts nothing (a parent deeper in a tree has its child started, then
    // cancelled as B loads the parent again).
    release();
    await bReading;
    await expect(executions.load(CHILD)).rejects.toThrow(NotFoundError);
    expect(await childOnParent()).toMatchObject({ status: 'cancelled' });
  });
});
