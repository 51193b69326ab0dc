import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { Bus, OutgoingMessage } from '../../src/core/bus.port.js';
import { TOPICS } from '../../src/core/bus.port.js';
import { uuidV5 } from '../../src/core/ids.js';
import type { Dispatcher, DispatcherOptions } from '../../src/dispatch/application/dispatcher.js';
import { createDispatcher } from '../../src/dispatch/dispatch.module.js';
import { DispatchSchedule } from '../../src/dispatch/infrastructure/dispatch-schedule.js';
import { aWorkflow } from '../support/executions/execution-fixtures.js';
import { CheckpointStore } from '../../src/postgres/checkpoint-store.js';
import { STORE_KINDS } from '../support/test-app.js';
import { eventually } from '../support/eventually.js';
import { type ProcessFixture, openProcessFixture, recordTopic } from './support/process-fixture.js';

/** A Bus that forwards to another but answers `publish` with `fail()`'s error while it returns one. */
function flakyBus(inner: Bus, fail: (call: number) => Error | null, forwardFirst = false) {
  let calls = 0;
  const bus: Bus = {
    // A broker: what it acknowledged outlives the dispatchers these tests stop and start.
    durable: true,
    async publish(topic: string, messages: OutgoingMessage[]) {
      const error = fail(++calls);
      if (error && !forwardFirst) throw error;
      await inner.publish(topic, messages);
      if (error) throw error;
    },
    consume: (options) => inner.consume(options),
    endOffsets: (topic) => inner.endOffsets(topic),
    committedOffsets: (groupId, topic) => inner.committedOffsets(groupId, topic),
    ensureTopics: (topics) => inner.ensureTopics(topics),
    close: () => inner.close(),
  };
  return { bus, calls: () => calls };
}

describe.each(STORE_KINDS)('the dispatcher on %s', (kind) => {
  let f: ProcessFixture;
  let checkpoints: CheckpointStore;
  /** Tests share one store (opening PGlite is slow): each has its own checkpoint name and bus. */
  let name: string;
  const running: Dispatcher[] = [];

  beforeAll(async () => {
    f = await openProcessFixture(kind);
    checkpoints = await CheckpointStore.open(f.sql);
  });
  afterAll(() => f.close());
  beforeEach(async () => {
    name = `dispatcher-${randomUUID()}`;
    await f.renewBus();
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((d) => d.stop()));
  });

  async function startDispatcher(options: DispatcherOptions = {}, bus: Bus = f.bus) {
    const dispatcher = await createDispatcher(
      { store: f.store, bus, sql: f.sql, clock: f.clock, logger: f.logger },
      { name, idleMs: 20, ...options },
    );
    running.push(dispatcher);
    await dispatcher.start();
    return dispatcher;
  }

  /** The dispatcher has read the whole log: everything it will ever send for it was sent. */
  async function caughtUp() {
    const head = await f.store.headPosition();
    await eventually(async () => expect(await checkpoints.load(name)).toBe(head));
  }

  /** What was sent for these executions (earlier tests' executions are on the shared log too). */
  const sentFor = (recorded: { values(): Record<string, unknown>[] }, executions: { executionId: string }[]) =>
    recorded.values().filter((m) => executions.some((e) => e.executionId === m.executionId));

  it('sends one dispatch message per AttemptScheduled, keyed by executionId, with the attempt fields', async () => {
    const dispatched = await recordTopic(f.bus, TOPICS.dispatch);
    const started = [await f.startExecution(), await f.startExecution(), await f.startExecution()];
    await startDispatcher();
    await caughtUp();
    await eventually(() => expect(sentFor(dispatched, started)).toHaveLength(3));
    for (const { executionId, attemptId } of started) {
      const scheduled = (await f.events(executionId)).find((e) => e.type === 'AttemptScheduled')!.data as Record<string, unknown>;
      const message = dispatched.messages.find((m) => m.key === executionId)!;
      expect(JSON.parse(message.value)).toEqual({
        messageId: uuidV5(`${attemptId}:dispatch`),
        executionId,
        attemptId,
        attemptNumber: 1,
        workspaceId: 'ws-a',
        queueDeadline: scheduled.queueDeadline,
        notBefore: scheduled.notBefore,
      });
    }
    await dispatched.stop();
  });

  it('loses nothing when stopped between batches and started again', async () => {
    const dispatched = await recordTopic(f.bus, TOPICS.dispatch);
    const first = await Promise.all(Array.from({ length: 6 }, () => f.startExecution()));
    const before = await startDispatcher({ batchSize: 2 });
    await eventually(() => expect(sentFor(dispatched, first).length).toBeGreaterThanOrEqual(2));
    await before.stop();
    const second = await Promise.all(Array.from({ length: 4 }, () => f.startExecution()));
    await startDispatcher({ batchSize: 2 });
    await caughtUp();
    const sent = new Set(dispatched.values().map((m) => m.attemptId));
    for (const { attemptId } of [...first, ...second]) expect(sent).toContain(attemptId);
    await dispatched.stop();
  });

  it('sends again, and loses nothing, when the ack of a publish was lost before the checkpoint', async () => {
    const dispatched = await recordTopic(f.bus, TOPICS.dispatch);
    const started = await Promise.all(Array.from({ length: 3 }, () => f.startExecution()));
    // The broker stores the first batch but the dispatcher never hears the ack.
    const flaky = flakyBus(f.bus, (call) => (call === 1 ? new Error('ack lost') : null), true);
    await startDispatcher({}, flaky.bus);
    await caughtUp();
    await eventually(() => expect(sentFor(dispatched, started).length).toBeGreaterThan(started.length));
    const counts = new Map<unknown, number>();
    for (const m of sentFor(dispatched, started)) counts.set(m.attemptId, (counts.get(m.attemptId) ?? 0) + 1);
    for (const { attemptId } of started) expect(counts.get(attemptId)).toBeGreaterThanOrEqual(2);
    await dispatched.stop();
  });

  it('does not move its checkpoint while the broker refuses the publish', async () => {
    const started = [await f.startExecution()];
    const refusing = flakyBus(f.bus, () => new Error('broker unavailable'));
    const dispatcher = await startDispatcher({}, refusing.bus);
    await eventually(() => expect(refusing.calls()).toBeGreaterThanOrEqual(2));
    expect(await checkpoints.load(name)).toBeNull();
    await dispatcher.stop();

    const dispatched = await recordTopic(f.bus, TOPICS.dispatch);
    await startDispatcher();
    await caughtUp();
    await eventually(() => expect(sentFor(dispatched, started)).toHaveLength(1));
    await dispatched.stop();
  });

  it('holds a retry back until its notBefore, durably, then sends it', async () => {
    const dispatched = await recordTopic(f.bus, TOPICS.dispatch);
    const retry = { maxAttempts: 2, initialIntervalMs: 60_000, backoffCoefficient: 2, maxIntervalMs: 60_000, nonRetryable: [] };
    const execution = await f.startExecution(aWorkflow({ retry }));
    const { executionId, attemptId } = execution;
    const fence = await f.claim(executionId, attemptId);
    await f.executions.handle(executionId, {
      type: 'CompleteAttempt',
      data: { ...fence, outcome: 'failed', error: { code: 'boom', message: 'failed' }, nextAttemptId: f.ids.uuid(), jitter: 0 },
      metadata: { now: f.clock.now(), actor: fence.workerId },
    });
    const retryId = ((await f.events(executionId)).filter((e) => e.type === 'AttemptScheduled')[1].data as { attemptId: string }).attemptId;

    const dispatcher = await startDispatcher();
    await caughtUp();
    const schedule = await DispatchSchedule.open(f.sql);
    expect(await schedule.count()).toBe(1);
    expect(await dispatcher.publishDue()).toBe(0);
    expect(sentFor(dispatched, [execution]).map((m) => m.attemptId)).toEqual([attemptId]);

    // Restarted while the retry waits: the held-back dispatch survives in the schedule table.
    await dispatcher.stop();
    await startDispatcher();
    f.clock.advance(60_001);
    await eventually(() => expect(sentFor(dispatched, [execution]).map((m) => m.attemptId)).toEqual([attemptId, retryId]));
    expect(sentFor(dispatched, [execution])[1]).toMatchObject({ attemptNumber: 2, executionId, messageId: uuidV5(`${retryId}:dispatch`) });
    await eventually(async () => expect(await schedule.count()).toBe(0));
    await dispatched.stop();
  });

  it('sends a held-back retry when it falls due, not at its next idle look', async () => {
    const dispatched = await recordTopic(f.bus, TOPICS.dispatch);
    // Its loop looks on its own only every ten minutes: the retry it holds back must wake it.
    await startDispatcher({ idleMs: 600_000 });
    const retry = { maxAttempts: 2, initialIntervalMs: 300, backoffCoefficient: 2, maxIntervalMs: 300, nonRetryable: [] };
    const execution = await f.startExecution(aWorkflow({ retry }));
    const fence = await f.claim(execution.executionId, execution.attemptId);
    await f.executions.handle(execution.executionId, {
      type: 'CompleteAttempt',
      data: { ...fence, outcome: 'failed', error: { code: 'boom', message: 'failed' }, nextAttemptId: f.ids.uuid(), jitter: 0 },
      metadata: { now: f.clock.now(), actor: fence.workerId },
    });
    await eventually(() => expect(sentFor(dispatched, [execution]).map((m) => m.attemptNumber)).toEqual([1, 2]), { timeoutMs: 20_000 });
    await dispatched.stop();
  });
});
