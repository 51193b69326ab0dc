import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { WorkflowSnapshot } from '../../src/executions/domain/execution.events.js';
import type { TimerService } from '../../src/timers/application/timer-service.js';
import { TimerTable } from '../../src/timers/infrastructure/timer-table.js';
import { createTimerService } from '../../src/timers/timers.module.js';
import { openProcessFixture, type ProcessFixture } from '../dispatch/support/process-fixture.js';
import { eventually } from '../support/eventually.js';
import { aWorkflow } from '../support/executions/execution-fixtures.js';
import { STORE_KINDS } from '../support/test-app.js';

const TIMERS = 60;
const HOUR = 3_600_000;

/** pause (a one-hour delay) → after. */
function delayed(): WorkflowSnapshot {
  const base = aWorkflow();
  return {
    ...base,
    graph: {
      ...base.graph,
      nodes: [
        { id: 'pause', type: 'delay', config: { ms: HOUR } },
        { id: 'after', type: 'noop' },
      ],
      edges: [{ from: 'pause', to: 'after' }],
    },
  };
}

describe.each(STORE_KINDS)('two timer processes racing on %s', (kind) => {
  let f: ProcessFixture;
  let services: TimerService[] = [];

  beforeAll(async () => {
    f = await openProcessFixture(kind);
  });
  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await f.close();
  });

  /** An execution suspended on its delay, as the worker and the ingestor leave it. */
  async function suspendedOnDelay(): Promise<string> {
    const { executionId, attemptId } = await f.startExecution(delayed());
    const fence = await f.claim(executionId, attemptId);
    const metadata = () => ({ now: f.clock.now(), actor: 'worker:worker-1' });
    await f.executions.handle(executionId, {
      type: 'RecordNodeResult',
      data: { ...fence, kind: 'node_waiting', nodeId: 'pause', wait: { kind: 'timer' } },
      metadata: metadata(),
    });
    await f.executions.handle(executionId, {
      type: 'CompleteAttempt',
      data: { ...fence, outcome: 'suspended', timers: ['pause'], nextAttemptId: randomUUID(), jitter: 0 },
      metadata: metadata(),
    });
    return executionId;
  }

  it('fires each timer once, and the executions go on', async () => {
    const ids: string[] = [];
    for (let i = 0; i < TIMERS; i++) ids.push(await suspendedOnDelay());
    // Two processes, each with its own subscription and loop, on one table; small batches and
    // short claims so that they interleave and re-claim each other's rows.
    const deps = { store: f.store, executions: f.executions, sql: f.sql, clock: f.clock, ids: f.ids, logger: f.logger };
    services = await Promise.all(
      ['timers-a', 'timers-b'].map((name) => createTimerService(deps, { name, dueBatchSize: 7, concurrency: 4, claimMs: 1, idleMs: 50 })),
    );
    for (const service of services) service.start();
    const table = await TimerTable.open(f.sql);
    await eventually(async () => expect((await Promise.all(ids.map((id) => table.of(id)))).flat()).toHaveLength(TIMERS), {
      what: 'every timer in the table',
    });

    f.clock.advance(HOUR + 1_000);
    await eventually(
      async () => {
        const fired = await Promise.all(ids.map(async (id) => (await f.types(id)).filter((t) => t === 'TimerFired').length));
        expect(fired).toEqual(ids.map(() => 1));
      },
      { what: 'every timer to fire' },
    );
    await eventually(async () => expect((await Promise.all(ids.map((id) => table.of(id)))).flat()).toEqual([]), {
      what: 'the table to empty',
    });
    for (const id of ids) {
      const types = await f.types(id);
      expect(types.filter((t) => t === 'TimerFired')).toHaveLength(1);
      expect(types.filter((t) => t === 'NodeSucceeded')).toHaveLength(1);
      expect(types.at(-1)).toBe('AttemptScheduled');
    }
  });
});
