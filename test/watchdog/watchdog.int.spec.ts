import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { RetryPolicy } from '../../src/executions/domain/execution.events.js';
import { LEASE_MS, QUEUE_MS, aWorkflow } from '../support/executions/execution-fixtures.js';
import { CheckpointStore } from '../../src/postgres/checkpoint-store.js';
import type { Watchdog } from '../../src/watchdog/application/watchdog.js';
import { DeadlineTable } from '../../src/watchdog/infrastructure/deadline-table.js';
import { createWatchdog } from '../../src/watchdog/watchdog.module.js';
import { STORE_KINDS } from '../support/test-app.js';
import { type ProcessFixture, openProcessFixture } from '../dispatch/support/process-fixture.js';
import { eventually } from '../support/eventually.js';

const ONE_RETRY: RetryPolicy = { maxAttempts: 2, initialIntervalMs: 0, backoffCoefficient: 2, maxIntervalMs: 0, nonRetryable: [] };

describe.each(STORE_KINDS)('the watchdog on %s', (kind) => {
  let f: ProcessFixture;
  let checkpoints: CheckpointStore;
  let deadlines: DeadlineTable;
  let watchdog: Watchdog;
  let name: string;

  // One store for the suite (opening PGlite is slow); each test has its own watchdog checkpoint.
  beforeAll(async () => {
    f = await openProcessFixture(kind);
    checkpoints = await CheckpointStore.open(f.sql);
    deadlines = await DeadlineTable.open(f.sql);
  });
  afterAll(() => f.close());
  beforeEach(async () => {
    name = `watchdog-${randomUUID()}`;
    watchdog = await createWatchdog(
      { store: f.store, executions: f.executions, sql: f.sql, clock: f.clock, ids: f.ids, logger: f.logger },
      { name, tickMs: 20, backoff: { initialMs: 50, maxMs: 200 } },
    );
    watchdog.start();
  });
  afterEach(() => watchdog.stop());

  /** The watchdog has tracked the whole log, so its deadlines reflect every event so far. */
  async function caughtUp() {
    const head = await f.store.headPosition();
    // Caught up once the checkpoint reached the head seen now (positions compare as strings);
    // the watchdog's own time-outs may move it further meanwhile.
    await eventually(async () => expect(((await checkpoints.load(name)) ?? '') >= (head ?? '')).toBe(true));
  }

  const attemptOf = async (executionId: string, n: number) =>
    ((await f.events(executionId)).filter((e) => e.type === 'AttemptScheduled')[n - 1].data as { attemptId: string }).attemptId;

  it('times out an expired lease and schedules the retry the policy allows', async () => {
    const { executionId, attemptId } = await f.startExecution(aWorkflow({ retry: ONE_RETRY }));
    await f.claim(executionId, attemptId);
    await caughtUp();
    f.clock.advance(LEASE_MS + 1);
    await eventually(async () => expect((await f.types(executionId)).slice(-2)).toEqual(['AttemptTimedOut', 'AttemptScheduled']));
    const events = await f.events(executionId);
    expect(events.at(-2)!.data).toMatchObject({ attemptId, reason: 'lease_expired' });
    expect(events.at(-1)!.data).toMatchObject({ attemptNumber: 2, reason: 'retry' });
    // The retry is watched in its turn: its queue deadline replaced the lease.
    const retryId = await attemptOf(executionId, 2);
    await eventually(async () =>
      expect(await deadlines.of(executionId)).toContainEqual(expect.objectContaining({ kind: 'attempt', attemptId: retryId })),
    );
  });

  it('ends the execution as timed out when no attempt is left', async () => {
    const { executionId, attemptId } = await f.startExecution();
    await f.claim(executionId, attemptId);
    await caughtUp();
    f.clock.advance(LEASE_MS + 1);
    await eventually(async () => expect((await f.types(executionId)).slice(-2)).toEqual(['AttemptTimedOut', 'ExecutionTimedOut']));
    await eventually(async () => expect(await deadlines.of(executionId)).toEqual([]));
  });

  it('times out a queued attempt nobody claimed before its queue deadline', async () => {
    const { executionId, attemptId } = await f.startExecution();
    await caughtUp();
    f.clock.advance(QUEUE_MS + 1);
    await eventually(async () => expect((await f.types(executionId)).slice(-2)).toEqual(['AttemptTimedOut', 'ExecutionTimedOut']));
    expect((await f.events(executionId)).at(-2)!.data).toMatchObject({ attemptId, reason: 'queue_deadline' });
  });

  it('keeps an attempt alive when a heartbeat extended its lease before the watchdog fired', async () => {
    const { executionId, attemptId } = await f.startExecution();
    const fence = await f.claim(executionId, attemptId);
    await caughtUp();
    const [tracked] = (await deadlines.of(executionId)).filter((d) => d.kind === 'attempt');
    // The heartbeat wins the race: the watchdog's table still holds the old lease deadline.
    await watchdog.stop();
    f.clock.advance(LEASE_MS - 1_000);
    const beat = await f.executions.handle(executionId, {
      type: 'Heartbeat',
      data: fence,
      metadata: { now: f.clock.now(), actor: fence.workerId },
    });
    const extendedTo = Date.parse((beat.events[0].data as { leaseExpiresAt: string }).leaseExpiresAt);
    f.clock.advance(2_000);
    expect(f.clock.now().getTime()).toBeGreaterThan(tracked.dueMs);
    expect(await watchdog.fireDue()).toBeGreaterThanOrEqual(1);
    expect(await f.types(executionId)).not.toContain('AttemptTimedOut');
    expect((await deadlines.of(executionId)).find((d) => d.kind === 'attempt')).toMatchObject({
      attemptId,
      dueMs: extendedTo,
      failures: 0,
    });
    // Past the extended lease, with no further heartbeat, it does time out.
    f.clock.advance(LEASE_MS);
    watchdog.start();
    await eventually(async () => expect((await f.types(executionId)).slice(-2)).toEqual(['AttemptTimedOut', 'ExecutionTimedOut']));
  });

  it('ends an execution that ran past timeouts.executionMs as timed out', async () => {
    const { executionId, attemptId } = await f.startExecution(aWorkflow({ retry: ONE_RETRY, timeouts: { executionMs: 5_000 } }));
    await f.claim(executionId, attemptId);
    await caughtUp();
    f.clock.advance(5_001);
    await eventually(async () => expect((await f.types(executionId)).slice(-2)).toEqual(['AttemptTimedOut', 'ExecutionTimedOut']));
    const events = await f.events(executionId);
    expect(events.at(-2)!.data).toMatchObject({ attemptId, reason: 'execution_deadline' });
    expect(events.at(-1)!.data).toMatchObject({ reason: 'execution deadline passed' });
    await eventually(async () => expect(await deadlines.of(executionId)).toEqual([]));
  });

  it('watches a redriven run against a deadline counted from the redrive', async () => {
    const { executionId, attemptId } = await f.startExecution(aWorkflow({ timeouts: { executionMs: 50_000 } }));
    const fence = await f.claim(executionId, attemptId);
    await f.executions.handle(executionId, {
      type: 'CompleteAttempt',
      data: { ...fence, outcome: 'failed', error: { code: 'boom', message: 'failed' }, nextAttemptId: f.ids.uuid(), jitter: 0 },
      metadata: { now: f.clock.now(), actor: fence.workerId },
    });
    await caughtUp();
    expect(await deadlines.of(executionId)).toEqual([]);
    f.clock.advance(100_000);
    const redrivenAt = f.clock.now();
    await f.executions.handle(executionId, {
      type: 'RequestRedrive',
      data: { redriveId: f.ids.uuid(), idempotencyKey: 'again', fingerprint: 'fp', attemptId: f.ids.uuid() },
      metadata: { now: redrivenAt, actor: 'operator' },
    });
    await caughtUp();
    expect(await deadlines.of(executionId)).toContainEqual(
      expect.objectContaining({ kind: 'execution', dueMs: redrivenAt.getTime() + 50_000 }),
    );
  });
});
