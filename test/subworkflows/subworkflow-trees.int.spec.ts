import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { Principal } from '../../src/auth/principal.js';
import { workerActor } from '../../src/core/actors.js';
import { NotFoundError } from '../../src/core/errors.js';
import type { EventStore, RecordedEvent } from '../../src/core/event-store.port.js';
import { randomIds, uuidV5 } from '../../src/core/ids.js';
import { createLogger } from '../../src/core/logger.js';
import { ExecutionStreams } from '../../src/executions/application/execution-streams.js';
import type { RecordNodeResult } from '../../src/executions/domain/execution.commands.js';
import { executionStreamId } from '../../src/executions/domain/execution-event.parser.js';
import type { WorkflowSnapshot } from '../../src/executions/domain/execution.events.js';
import { childExecutionIdOf } from '../../src/executions/domain/subworkflow-children.js';
import type { SubworkflowManager } from '../../src/subworkflows/application/subworkflow-manager.js';
import { treeStreamId } from '../../src/subworkflows/domain/tree.events.js';
import { createSubworkflowManager } from '../../src/subworkflows/subworkflows.module.js';
import {
  parsePublishBody,
  PublishWorkflowCommand,
  PublishWorkflowHandler,
} from '../../src/workflows/application/publish-workflow.handler.js';
import { WorkspaceStreams } from '../../src/workspaces/application/workspace-streams.js';
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
 * The subworkflow manager on a real store (Postgres), fed batches of the log by hand: a child
 * takes a place in its root's tree before it starts (beyond the bound its node fails, not
 * retryable), in a bounded workspace it waits for a slot like any run, and a root's cancel closes
 * the whole tree at once: a grandchild asked for just before the cancel is never started.
 */
const editor: Principal = { subject: 'alice', workspaces: new Map([[WORKSPACE_ID, 'editor']]), global: new Set(), tokenId: 'test' };
const ROOT_ATTEMPT = startExecution().data.attemptId;

/** The root: `nodes` subworkflow nodes side by side, each running `workflow`. */
function rootWorkflow(workflow: string, nodes: string[]): WorkflowSnapshot {
  const base = aWorkflow();
  const graph = { ...base.graph, nodes: nodes.map((id) => ({ id, type: 'subworkflow', config: { workflow } })), edges: [] };
  return { ...base, graph };
}

const askFor = (o: { attemptId: string; nodeId: string; now: Date }): RecordNodeResult => ({
  type: 'RecordNodeResult',
  data: {
    attemptId: o.attemptId,
    workerId: WORKER_A,
    fencingToken: 1,
    kind: 'node_waiting',
    nodeId: o.nodeId,
    wait: { kind: 'subworkflow', input: { customer: 'c-7' } },
  },
  metadata: { now: o.now, actor: workerActor(WORKER_A) },
});

describe('subworkflow manager: trees', () => {
  let opened: Awaited<ReturnType<typeof openTestStore>>;
  let store: EventStore;
  let executions: ExecutionStreams;
  let workspaces: WorkspaceStreams;
  let manager: SubworkflowManager;
  let clock: AdjustableClock;

  beforeEach(async () => {
    opened = await openTestStore('postgres');
    store = opened.store;
    clock = new AdjustableClock();
    const publish = new PublishWorkflowHandler(store, clock, randomIds);
    const graphOf = (body: unknown) => parsePublishBody(body);
    await publish.execute(new PublishWorkflowCommand(editor, WORKSPACE_ID, 'invoice', graphOf({ nodes: [{ id: 'only', type: 'noop' }] })));
    const middle = { nodes: [{ id: 'inner', type: 'subworkflow', config: { workflow: 'invoice' } }] };
    await publish.execute(new PublishWorkflowCommand(editor, WORKSPACE_ID, 'middle', graphOf(middle)));
    executions = new ExecutionStreams(store, clock, randomIds);
    workspaces = new WorkspaceStreams(store, clock, randomIds);
    const logger = createLogger({ level: 'silent' });
    manager = await createSubworkflowManager({ store, sql: opened.sql, executions, workspaces, maxExecutionsPerTree: 3, clock, logger });
  });
  afterEach(() => opened.close());

  const logAfter = (after: string | null): Promise<RecordedEvent[]> =>
    store.readAll({ after, maxCount: 1_000, streamPrefixes: [executionStreamId('')] });
  const exists = (executionId: string) =>
    executions.load(executionId).then(
      () => true,
      (error: unknown) => (error instanceof NotFoundError ? false : Promise.reject(error)),
    );

  /** The root asks for a child at each of `nodes` and suspends on them. */
  async function rootAskedFor(workflow: string, nodes: string[]): Promise<void> {
    await executions.handle(EXECUTION_ID, startExecution({ workflow: rootWorkflow(workflow, nodes) }));
    await executions.handle(EXECUTION_ID, claimAttempt({ at: 1_000 }));
    for (const nodeId of nodes) await executions.handle(EXECUTION_ID, askFor({ attemptId: ROOT_ATTEMPT, nodeId, now: time(2_000) }));
    const suspend = completeAttempt({ at: 3_000, outcome: 'suspended' });
    await executions.handle(EXECUTION_ID, { ...suspend, data: { ...suspend.data, tasks: nodes } });
  }

  it('starts children while the tree has room; beyond its bound the node fails, not retryable, and nothing starts', async () => {
    await rootAskedFor('invoice', ['a', 'b', 'c']);
    await manager.track(await logAfter(null));

    const children = ['a', 'b', 'c'].map((nodeId) => childExecutionIdOf(EXECUTION_ID, nodeId, 1));
    const present = await Promise.all(children.map(exists));
    // The root and two children: three, the bound. Which node lost the race for the last place is not fixed.
    expect(present.filter(Boolean)).toHaveLength(2);
    const refused = ['a', 'b', 'c'][present.indexOf(false)];
    const { state: root } = await executions.load(EXECUTION_ID);
    expect(root.nodes[refused]).toMatchObject({ status: 'failed', error: { code: 'subworkflow_tree_limit_exceeded', retryable: false } });
    expect(root.nodes[refused].error?.message).toContain('at most 3 run in one tree');
    const child = await executions.load(children[present.indexOf(true)]);
    expect(child.state.parent).toMatchObject({
      executionId: EXECUTION_ID,
      depth: 1,
      rootExecutionId: EXECUTION_ID,
      ancestors: ['nightly-export'],
    });
    const tree = await store.readStream(treeStreamId(EXECUTION_ID));
    expect(tree.map((e) => e.type)).toEqual(['TreeMemberAdmitted', 'TreeMemberAdmitted']);

    // The same batch again (a restart before the checkpoint moved) appends nothing.
    const head = await store.headPosition();
    await manager.track(await logAfter(null));
    expect(await store.headPosition()).toBe(head);
  });

  it("a manager stopped between a child's place and its start: the next one starts it once, in the same place", async () => {
    await rootAskedFor('invoice', ['a']);
    const logger = createLogger({ level: 'silent' });
    const stopped = new Error('stopped after the place was taken');
    const dying = await createSubworkflowManager(
      { store, sql: opened.sql, executions, workspaces, maxExecutionsPerTree: 3, clock, logger },
      { hooks: { afterPlaceTaken: () => Promise.reject(stopped) } },
    );
    await expect(dying.track(await logAfter(null))).rejects.toBe(stopped);
    const child = childExecutionIdOf(EXECUTION_ID, 'a', 1);
    expect(await exists(child)).toBe(false);

    await manager.track(await logAfter(null));
    await manager.track(await logAfter(null));
    expect(await exists(child)).toBe(true);
    const starts = (await store.readStream(executionStreamId(child))).filter((e) => e.type === 'ExecutionStarted');
    expect(starts).toHaveLength(1);
    expect((await store.readStream(treeStreamId(EXECUTION_ID))).map((e) => e.type)).toEqual(['TreeMemberAdmitted']);
  });

  it("takes the workspace's tree bound over the default, and a child of a bounded workspace waits for a slot", async () => {
    await workspaces.changeSettings(WORKSPACE_ID, { maxConcurrentExecutions: 1, maxExecutionsPerTree: 2 }, 'alice');
    await rootAskedFor('invoice', ['a', 'b']);
    await manager.track(await logAfter(null));

    const [a, b] = ['a', 'b'].map((nodeId) => childExecutionIdOf(EXECUTION_ID, nodeId, 1));
    const present = await Promise.all([exists(a), exists(b)]);
    expect(present.filter(Boolean)).toHaveLength(1);
    const { state: child } = await executions.load(present[0] ? a : b);
    // Counted by the quota like any run: it waits, its parent gave the slot back (or never held one).
    expect(child).toMatchObject({ status: 'queued', attempts: [], awaitingSlot: { reason: 'start', waitingFor: 'workspace_quota' } });
  });

  it("a grandchild asked for after the root's cancel, read before that cancel is, is never started", async () => {
    await rootAskedFor('middle', ['bill']);
    await manager.track(await logAfter(null));
    const middle = childExecutionIdOf(EXECUTION_ID, 'bill', 1);
    const middleAttempt = uuidV5(`${middle}:attempt:1`);
    const claim = claimAttempt({ attemptId: middleAttempt, at: 0 });
    await executions.handle(middle, { ...claim, metadata: { ...claim.metadata, now: clock.now() } });
    await executions.handle(EXECUTION_ID, requestCancel({ at: 4_000 }));
    await executions.handle(middle, askFor({ attemptId: middleAttempt, nodeId: 'inner', now: clock.now() }));

    // Another replica has the root's cancel in hand; this one reads only the middle child's request.
    const request = (await store.readStream(executionStreamId(middle))).filter((e) => e.type === 'ChildExecutionStarted');
    await manager.track(request);

    const grandchild = childExecutionIdOf(middle, 'inner', 1);
    expect(await exists(grandchild)).toBe(false);
    expect((await store.readStream(treeStreamId(EXECUTION_ID))).map((e) => e.type)).toEqual(['TreeMemberAdmitted', 'TreeClosed']);
    const { state } = await executions.load(middle);
    expect(state.children?.[grandchild]).toMatchObject({ status: 'cancelled' });
    expect(state.cancelRequest).toBeTruthy();
  });

  it("a root's cancel closes its tree at once: a grandchild asked for just before it is never started", async () => {
    await rootAskedFor('middle', ['bill']);
    await manager.track(await logAfter(null));
    const middle = childExecutionIdOf(EXECUTION_ID, 'bill', 1);
    const middleAttempt = uuidV5(`${middle}:attempt:1`);
    const after = await store.headPosition();

    // The middle child runs and asks for its own child; then the root is cancelled.
    const claim = claimAttempt({ attemptId: middleAttempt, at: 0 });
    await executions.handle(middle, { ...claim, metadata: { ...claim.metadata, now: clock.now() } });
    await executions.handle(middle, askFor({ attemptId: middleAttempt, nodeId: 'inner', now: clock.now() }));
    await executions.handle(EXECUTION_ID, requestCancel({ at: 4_000 }));

    // The request and the root's cancel reach the manager in one batch; the middle child is not cancelled yet.
    await manager.track(await logAfter(after));

    const grandchild = childExecutionIdOf(middle, 'inner', 1);
    expect(await exists(grandchild)).toBe(false);
    const { state } = await executions.load(middle);
    expect(state.children?.[grandchild]).toMatchObject({ status: 'cancelled' });
    const tree = await store.readStream(treeStreamId(EXECUTION_ID));
    expect(tree.map((e) => e.type)).toEqual(['TreeMemberAdmitted', 'TreeClosed']);
    // Level by level, the cancel still reaches the middle child.
    expect(state.cancelRequest).toBeTruthy();
  });
});
