import { randomUUID } from 'node:crypto';
import type { WorkflowSnapshot } from '../../../src/executions/domain/execution.events.js';
import type { ProcessFixture } from '../../dispatch/support/process-fixture.js';
import { aWorkflow } from '../../support/executions/execution-fixtures.js';

export const HOUR = 3_600_000;

/** Each delay (one hour) → after. */
export function delayedWorkflow(delays: string[]): WorkflowSnapshot {
  const base = aWorkflow();
  return {
    ...base,
    graph: {
      ...base.graph,
      nodes: [...delays.map((id) => ({ id, type: 'delay', config: { ms: HOUR } })), { id: 'after', type: 'noop' }],
      edges: delays.map((id) => ({ from: id, to: 'after' })),
    },
  };
}

/** A new execution suspended on its delays (one hour each), as the worker and the ingestor leave it. */
export async function suspendedOnDelay(f: ProcessFixture, delays = ['pause']): Promise<string> {
  const { executionId, attemptId } = await f.startExecution(delayedWorkflow(delays));
  const fence = await f.claim(executionId, attemptId);
  const metadata = () => ({ now: f.clock.now(), actor: 'worker:worker-1' });
  for (const nodeId of delays) {
    await f.executions.handle(executionId, {
      type: 'RecordNodeResult',
      data: { ...fence, kind: 'node_waiting', nodeId, wait: { kind: 'timer' } },
      metadata: metadata(),
    });
  }
  await f.executions.handle(executionId, {
    type: 'CompleteAttempt',
    data: { ...fence, outcome: 'suspended', timers: delays, nextAttemptId: randomUUID(), jitter: 0 },
    metadata: metadata(),
  });
  return executionId;
}
