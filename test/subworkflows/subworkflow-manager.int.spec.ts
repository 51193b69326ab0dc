import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { randomIds } from '../../src/core/ids.js';
import { createLogger } from '../../src/core/logger.js';
import { workerActor } from '../../src/core/actors.js';
import { NotFoundError } from '../../src/core/errors.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { ExecutionStreams } from '../../src/executions/application/execution-streams.js';
import type { RecordNodeResult } from '../../src/executions/domain/execution.commands.js';
import { executionStreamId } from '../../src/executions/domain/execution-event.parser.js';
import type { WorkflowSnapshot } from '../../src/executions/domain/execution.events.js';
import { childExecutionIdOf } from '../../src/executions/domain/subworkflow-children.js';
import type { SubworkflowManager } from '../../src/subworkflows/application/subworkflow-manager.js';
import { createSubworkflowManager } from '../../src/subworkflows/subworkflows.module.js';
import { AdjustableClock } from '../support/adjustable-clock.js';
import {
  EXECUTION_ID,
  WORKER_A,
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
 * manager started that child never leaves the child `running` on the parent.
 */
const CHILD = childExecutionIdOf(EXECUTION_ID, 'bill', 1);

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
