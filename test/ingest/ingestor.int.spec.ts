import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { TOPICS } from '../../src/core/bus.port.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { ExecutionStreams } from '../../src/executions/application/execution-streams.js';
import { LEASE_MS } from '../support/executions/execution-fixtures.js';
import { Ingestor } from '../../src/ingest/application/ingestor.js';
import { ResultIngestor } from '../../src/ingest/application/result-ingestor.js';
import { STORE_KINDS } from '../support/test-app.js';
import { type ProcessFixture, openProcessFixture, recordTopic } from '../dispatch/support/process-fixture.js';
import { eventually } from '../support/eventually.js';

type Fence = { attemptId: string; workerId: string; fencingToken: number };

describe.each(STORE_KINDS)('the ingestor on %s', (kind) => {
  let f: ProcessFixture;
  let ingestor: Ingestor;
  let dlq: Awaited<ReturnType<typeof recordTopic>>;

  async function startIngestor(store: EventStore = f.store) {
    const executions = new ExecutionStreams(store, f.clock, f.ids);
    const results = new ResultIngestor(
      { executions, bus: f.bus, clock: f.clock, ids: f.ids, logger: f.logger },
      { retry: { attempts: 2, initialMs: 10, maxMs: 20 } },
    );
    ingestor = new Ingestor({ bus: f.bus, results, logger: f.logger }, { restart: { initialMs: 20, maxMs: 100 } });
    await ingestor.start();
  }

  // One store for the suite (opening PGlite is slow); every test gets a fresh bus.
  beforeAll(async () => {
    f = await openProcessFixture(kind);
  });
  afterAll(() => f.close());
  beforeEach(async () => {
    await f.renewBus();
    dlq = await recordTopic(f.bus, TOPICS.resultsDlq);
  });
  afterEach(async () => {
    await ingestor?.stop();
    await dlq.stop();
  });

  async function running() {
    const { executionId, attemptId } = await f.startExecution();
    return { executionId, fence: await f.claim(executionId, attemptId) };
  }

  let sequence = 0;
  const result = (executionId: string, fence: Fence, kind: string, extra: Record<string, unknown> = {}) => ({
    messageId: randomUUID(),
    executionId,
    ...fence,
    sequence: sequence++,
    kind,
    ...extra,
  });
  const send = (executionId: string, ...values: (object | string)[]) =>
    f.bus.publish(
      TOPICS.results,
      values.map((v) => ({ key: executionId, value: typeof v === 'string' ? v : JSON.stringify(v) })),
    );

  it('records node and attempt results as facts on the execution stream', async () => {
    await startIngestor();
    const { executionId, fence } = await running();
    await send(
      executionId,
      result(executionId, fence, 'node_started', { nodeId: 'extract' }),
      result(executionId, fence, 'node_succeeded', { nodeId: 'extract', output: { rows: 3 } }),
      result(executionId, fence, 'node_skipped', { nodeId: 'load', reason: 'nothing to load' }),
      result(executionId, fence, 'attempt_succeeded', { output: { ok: true } }),
    );
    await eventually(async () => expect((await f.types(executionId)).at(-1)).toBe('ExecutionSucceeded'));
    const events = await f.events(executionId);
    expect(events.slice(3).map((e) => [e.type, e.data])).toEqual([
      ['NodeStarted', expect.objectContaining({ nodeId: 'extract', attemptId: fence.attemptId })],
      ['NodeSucceeded', expect.objectContaining({ nodeId: 'extract', output: { rows: 3 } })],
      ['NodeSkipped', expect.objectContaining({ nodeId: 'load', reason: 'nothing to load' })],
      ['AttemptSucceeded', expect.objectContaining({ output: { ok: true } })],
      ['ExecutionSucceeded', expect.objectContaining({ output: { ok: true } })],
    ]);
    expect(dlq.messages).toEqual([]);
  });

  it('records a failed attempt with its error, and the retry policy decides what follows', async () => {
    await startIngestor();
    const { executionId, fence } = await running();
    await send(executionId, result(executionId, fence, 'attempt_failed', { error: { code: 'upstream_down', message: '503' } }));
    await eventually(async () => expect((await f.types(executionId)).slice(-2)).toEqual(['AttemptFailed', 'ExecutionFailed']));
  });

  it('records one fact for a result delivered twice', async () => {
    await startIngestor();
    const { executionId, fence } = await running();
    const succeeded = result(executionId, fence, 'node_succeeded', { nodeId: 'extract', output: 1 });
    await send(executionId, succeeded, succeeded, result(executionId, fence, 'node_started', { nodeId: 'load' }));
    await eventually(async () => expect((await f.types(executionId)).at(-1)).toBe('NodeStarted'));
    // Past the dedupe memory (another ingestor instance): the decider sees a replay.
    await ingestor.stop();
    await startIngestor();
    await send(executionId, succeeded, result(executionId, fence, 'node_succeeded', { nodeId: 'load', output: 2 }));
    await eventually(async () => expect((await f.types(executionId)).filter((t) => t === 'NodeSucceeded')).toHaveLength(2));
    expect((await f.types(executionId)).slice(3)).toEqual(['NodeSucceeded', 'NodeStarted', 'NodeSucceeded']);
    expect(dlq.messages).toEqual([]);
  });

  describe('results that arrive together', () => {
    const delivered = (values: object[]) =>
      values.map((value, offset) => {
        const text = JSON.stringify(value);
        return {
          topic: TOPICS.results,
          partition: 0,
          offset: String(offset),
          key: (value as { executionId: string }).executionId,
          value: text,
          headers: {},
        };
      });

    it('commit per execution as one append, in order, and only the refused result is dead-lettered', async () => {
      const executions = new ExecutionStreams(f.store, f.clock, f.ids);
      const results = new ResultIngestor({ executions, bus: f.bus, clock: f.clock, ids: f.ids, logger: f.logger });
      const one = await running();
      const two = await running();
      const stale = result(two.executionId, { ...two.fence, fencingToken: 9 }, 'node_started', { nodeId: 'load' });

      await results.handleBatch(
        delivered([
          result(one.executionId, one.fence, 'node_started', { nodeId: 'extract' }),
          result(two.executionId, two.fence, 'node_started', { nodeId: 'extract' }),
          result(one.executionId, one.fence, 'node_succeeded', { nodeId: 'extract', output: 1 }),
          stale,
          result(two.executionId, two.fence, 'node_succeeded', { nodeId: 'extract', output: 2 }),
          result(one.executionId, one.fence, 'attempt_succeeded', { output: 1 }),
        ]),
      );

      const written = async (executionId: string) => (await f.events(executionId)).slice(3);
      expect((await written(one.executionId)).map((e) => e.type)).toEqual([
        'NodeStarted',
        'NodeSucceeded',
        'AttemptSucceeded',
        'ExecutionSucceeded',
      ]);
      expect((await written(two.executionId)).map((e) => e.type)).toEqual(['NodeStarted', 'NodeSucceeded']);
      // One append per execution: its events follow one another in the global log, in one transaction.
      for (const { executionId } of [one, two]) {
        const transactions = new Set((await written(executionId)).map((e) => e.position.split('-')[0]));
        expect(transactions.size).toBe(1);
      }
      await eventually(() =>
        expect(dlq.values()).toEqual([
          expect.objectContaining({ reason: expect.objectContaining({ code: 'stale_attempt' }), original: JSON.stringify(stale) }),
        ]),
      );
    });
  });

  describe('dead letters (promise 11)', () => {
    async function expectDeadLetter(executionId: string, value: object | string, code: string) {
      const before = (await f.events(executionId)).length;
      const count = dlq.messages.length;
      await send(executionId, value);
      const letter = await eventually(() => {
        expect(dlq.messages.length).toBe(count + 1);
        return dlq.values()[count];
      });
      expect(letter).toMatchObject({
        reason: { code, message: expect.any(String) },
        original: typeof value === 'string' ? value : JSON.stringify(value),
        topic: TOPICS.results,
        partition: expect.any(Number),
        offset: expect.any(String),
        receivedAt: expect.any(String),
      });
      expect(dlq.messages[count].key).toBe(executionId);
      expect(await f.events(executionId)).toHaveLength(before);
    }

    it('sends invalid JSON, a wrong schema, a stale fencing token and an expired lease there, with the reason, recording nothing', async () => {
      await startIngestor();
      const { executionId, fence } = await running();
      await expectDeadLetter(executionId, '{"messageId": ', 'validation_failed');
      await expectDeadLetter(
        executionId,
        { ...result(executionId, fence, 'node_started', { nodeId: 'extract' }), sequence: -1 },
        'validation_failed',
      );
      await expectDeadLetter(executionId, { ...result(executionId, fence, 'node_exploded', { nodeId: 'extract' }) }, 'validation_failed');
      await expectDeadLetter(executionId, result(executionId, fence, 'node_started'), 'validation_failed');
      await expectDeadLetter(
        executionId,
        result(executionId, { ...fence, fencingToken: 7 }, 'node_started', { nodeId: 'extract' }),
        'stale_attempt',
      );
      await expectDeadLetter(executionId, result(randomUUID(), fence, 'attempt_succeeded'), 'not_found');
      f.clock.advance(LEASE_MS + 1);
      await expectDeadLetter(executionId, result(executionId, fence, 'attempt_succeeded'), 'lease_expired');
    });

    it('refuses a message over the size limit unread', async () => {
      await startIngestor();
      const { executionId, fence } = await running();
      const huge = result(executionId, fence, 'node_succeeded', { nodeId: 'extract', output: 'x'.repeat(1024 * 1024) });
      const count = dlq.messages.length;
      await send(executionId, huge);
      const letter = await eventually(() => {
        expect(dlq.messages.length).toBe(count + 1);
        return dlq.values()[count];
      });
      expect(letter).toMatchObject({ reason: { code: 'payload_too_large' }, originalTruncated: true });
      expect(await f.types(executionId)).not.toContain('NodeSucceeded');
    });
  });

  it('retries through a store outage without committing, then records the result once', async () => {
    let failuresLeft = 5;
    const failing: EventStore = Object.create(f.store, {
      readStream: {
        value: (...args: Parameters<EventStore['readStream']>) =>
          failuresLeft-- > 0 ? Promise.reject(new Error('store unavailable')) : f.store.readStream(...args),
      },
    });
    await startIngestor(failing);
    const { executionId, fence } = await running();
    await send(executionId, result(executionId, fence, 'node_started', { nodeId: 'extract' }));
    await eventually(async () => expect((await f.types(executionId)).at(-1)).toBe('NodeStarted'));
    expect(failuresLeft).toBeLessThan(0);
    expect((await f.types(executionId)).filter((t) => t === 'NodeStarted')).toHaveLength(1);
    expect(dlq.messages).toEqual([]);
  });
});
