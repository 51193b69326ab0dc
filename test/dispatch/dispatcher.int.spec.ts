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
import { DispatchHandOver } from '../../src/dispatch/dispatch-hand-over.js';
import type { DispatchMessage } from '../../src/dispatch/dispatch-message.js';
import { UnclaimedDispatches } from '../../src/dispatch/infrastructure/unclaimed-dispatches.js';
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

  async function startDispatcher(options: DispatcherOptions = {}, bus: Bus = f.bus, handOver?: DispatchHandOver) {
    const dispatcher = await createDispatcher(
      { store: f.store, bus, sql: f.sql, clock: f.clock, logger: f.logger, handOver },
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
    // The first attempt was claimed before the dispatcher read it: nothing to send for it.
    expect(sentFor(dispatched, [execution])).toEqual([]);

    // Restarted while the retry waits: the held-back dispatch survives in the schedule table.
    await dispatcher.stop();
    await startDispatcher();
    f.clock.advance(60_001);
    await eventually(() => expect(sentFor(dispatched, [execution]).map((m) => m.attemptId)).toEqual([retryId]));
    expect(sentFor(dispatched, [execution])[0]).toMatchObject({ attemptNumber: 2, executionId, messageId: uuidV5(`${retryId}:dispatch`) });
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
    // (The first attempt is sent too unless the dispatcher read its claim in the same batch.)
    await eventually(() => expect(sentFor(dispatched, [execution]).map((m) => m.attemptNumber)).toContain(2), { timeoutMs: 20_000 });
    await dispatched.stop();
  });
  describe('handing dispatches to a worker of its own process', () => {
    /** A worker of this process as the dispatcher sees it: it takes what `takes` accepts, and runs nothing. */
    function workerThatTakes(takes: (message: DispatchMessage) => boolean) {
      const handOver = new DispatchHandOver();
      const taken: DispatchMessage[] = [];
      handOver.attach({
        take: (message) => {
          if (!takes(message)) return false;
          taken.push(message);
          return true;
        },
      });
      return { handOver, taken };
    }

    it('hands over what the worker takes and sends on the bus what it refuses', async () => {
      const dispatched = await recordTopic(f.bus, TOPICS.dispatch);
      const [kept, refused] = [await f.startExecution(), await f.startExecution()];
      const worker = workerThatTakes((m) => m.executionId === kept.executionId);
      await startDispatcher({}, f.bus, worker.handOver);
      await eventually(() => expect(sentFor(dispatched, [refused])).toHaveLength(1));
      expect(worker.taken.filter((m) => m.executionId === kept.executionId).map((m) => m.attemptId)).toEqual([kept.attemptId]);
      expect(sentFor(dispatched, [kept])).toHaveLength(0);
      await dispatched.stop();
    });

    it('keeps its checkpoint before a dispatch handed over until the attempt is claimed', async () => {
      const execution = await f.startExecution();
      // Earlier tests' executions are on the shared log, never claimed: they go on the bus.
      const ours = new Set<string>([execution.executionId]);
      const worker = workerThatTakes((m) => ours.has(m.executionId));
      await startDispatcher({}, f.bus, worker.handOver);
      await eventually(() => expect(worker.taken.map((m) => m.attemptId)).toContain(execution.attemptId));
      // Later events go by, and the dispatcher would store a position after them, but not past the
      // dispatch only this process's memory holds.
      const later = await Promise.all([f.startExecution(), f.startExecution()]);
      for (const e of later) ours.add(e.executionId);
      await eventually(() => expect(worker.taken.map((m) => m.attemptId)).toContain(later[1].attemptId));
      // A dispatch the worker refuses goes on the bus, and the dispatcher stores its checkpoint
      // at once: the position of the event just before the oldest one handed over.
      const dispatched = await recordTopic(f.bus, TOPICS.dispatch);
      const refused = await f.startExecution();
      await eventually(() => expect(sentFor(dispatched, [refused])).toHaveLength(1));
      const events = await f.events(execution.executionId);
      const scheduled = events.findIndex((e) => e.type === 'AttemptScheduled');
      await eventually(async () => expect(await checkpoints.load(name)).toBe(events[scheduled - 1].position));
      await dispatched.stop();

      for (const e of [execution, ...later]) await f.claim(e.executionId, e.attemptId);
      await caughtUp();
      await f.claim(refused.executionId, refused.attemptId);
    });

    it('sends again, after a crash, a dispatch it handed over that was never claimed', async () => {
      const dispatched = await recordTopic(f.bus, TOPICS.dispatch);
      const lost = await f.startExecution();
      const worker = workerThatTakes((m) => m.executionId === lost.executionId);
      const crashed = await startDispatcher({}, f.bus, worker.handOver);
      await eventually(() => expect(worker.taken.map((m) => m.attemptId)).toContain(lost.attemptId));
      // The process dies with the dispatch in its worker's memory: neither ran it.
      await crashed.stop();
      expect(sentFor(dispatched, [lost])).toHaveLength(0);

      await startDispatcher();
      await caughtUp();
      await eventually(() => expect(sentFor(dispatched, [lost]).map((m) => m.attemptId)).toEqual([lost.attemptId]));
      await dispatched.stop();
    });

    it('makes a dispatch durable when it is still unclaimed after handOverSpillMs', async () => {
      const stuck = await f.startExecution();
      const worker = workerThatTakes((m) => m.executionId === stuck.executionId);
      // A bus whose acknowledged messages outlive the dispatcher (Kafka), and the in-process one.
      const durable = flakyBus(f.bus, () => null).bus;
      for (const bus of [durable, f.bus]) {
        name = `dispatcher-${randomUUID()}`;
        const dispatched = await recordTopic(f.bus, TOPICS.dispatch);
        const takenBefore = worker.taken.length;
        const dispatcher = await startDispatcher({ handOverSpillMs: 5_000 }, bus, worker.handOver);
        await eventually(() => expect(worker.taken.slice(takenBefore).map((m) => m.attemptId)).toEqual([stuck.attemptId]));
        f.clock.advance(5_001);
        if (bus.durable) {
          await eventually(() => expect(sentFor(dispatched, [stuck]).map((m) => m.attemptId)).toEqual([stuck.attemptId]));
        } else {
          const unclaimed = await UnclaimedDispatches.open(f.sql);
          await eventually(async () => expect((await unclaimed.all()).map((m) => m.attemptId)).toContain(stuck.attemptId));
        }
        // Nothing holds the checkpoint back now: it reaches the head with the next batch.
        await f.startExecution();
        await caughtUp();
        await dispatcher.stop();
        await dispatched.stop();
      }
      // The in-process bus forgot it; the unclaimed table did not, and a restart sends it.
      const dispatched = await recordTopic(f.bus, TOPICS.dispatch);
      await startDispatcher();
      await eventually(() => expect(sentFor(dispatched, [stuck]).map((m) => m.attemptId)).toContain(stuck.attemptId));
      await f.claim(stuck.executionId, stuck.attemptId);
      await dispatched.stop();
    });

    it('sends nothing for an attempt claimed within the batch that schedules it', async () => {
      const dispatched = await recordTopic(f.bus, TOPICS.dispatch);
      const claimed = await f.startExecution();
      await f.claim(claimed.executionId, claimed.attemptId);
      const waiting = await f.startExecution();
      // One batch holds the whole log, so the claim is in the batch that schedules the attempt.
      await startDispatcher({ batchSize: 100_000 });
      await caughtUp();
      await eventually(() => expect(sentFor(dispatched, [waiting])).toHaveLength(1));
      expect(sentFor(dispatched, [claimed])).toHaveLength(0);
      await dispatched.stop();
    });
  });
});
