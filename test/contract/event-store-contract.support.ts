/** Fixtures and helpers of the event store contract suite. */
import { randomUUID } from 'node:crypto';
import { expect } from '@jest/globals';
import { WrongExpectedRevisionError } from '../../src/core/errors.js';
import type { EventStore, EventToAppend, RecordedEvent, SubscribeOptions } from '../../src/core/event-store.port.js';
import { eventually } from '../support/eventually.js';

/** How a contract run reaches an adapter: one database per run, any number of store instances. */
export interface EventStoreFixture {
  /** A store instance on the run's database; a second call behaves like a second process. */
  open(): Promise<EventStore>;
  /** Called once every opened store was closed. */
  dispose?(): Promise<void>;
}

export interface ContractContext {
  /** The run's first store. */
  store(): EventStore;
  /** Another instance on the same database, as another process would have. */
  otherStore(): EventStore;
}

export function newEvent(type = 'SomethingHappened', data: unknown = { n: 1 }, metadata?: Record<string, unknown>): EventToAppend {
  return { id: randomUUID(), type, data, metadata };
}

/** A stream-id prefix no other test uses: the log is shared, so every test reads through one. */
export function uniquePrefix(): string {
  return `contract-${randomUUID().slice(0, 8)}-`;
}

export async function expectConflict(attempt: Promise<unknown>, expected: string, actual: string): Promise<void> {
  const error = await attempt.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(WrongExpectedRevisionError);
  expect(error).toMatchObject({ code: 'concurrency_conflict', expected, actual });
}

/** A subscription running in the background, recording what it delivers, for assertions. */
export interface SubscriptionRecorder {
  readonly events: RecordedEvent[];
  readonly batchSizes: number[];
  /** Resolves once `count` events arrived; rejects on timeout or when the subscription failed. */
  waitFor(count: number, timeoutMs?: number): Promise<RecordedEvent[]>;
  /** Aborts the subscription and resolves once its loop has ended. */
  stop(): Promise<void>;
  /** Settles when the subscription ends by itself (its error, if it failed). */
  readonly ended: Promise<void>;
}

export function recordSubscription(store: EventStore, options: Omit<SubscribeOptions, 'signal'>): SubscriptionRecorder {
  const controller = new AbortController();
  const events: RecordedEvent[] = [];
  const batchSizes: number[] = [];
  let failure: unknown;
  let finished = false;
  const ended = (async () => {
    try {
      for await (const batch of store.subscribeToAll({ ...options, signal: controller.signal })) {
        batchSizes.push(batch.length);
        events.push(...batch);
      }
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      finished = true;
    }
  })();
  // The recorder reports the failure itself; keep Node from flagging it as unhandled meanwhile.
  ended.catch(() => undefined);

  return {
    events,
    batchSizes,
    ended,
    async waitFor(count, timeoutMs = 10_000) {
      await eventually(
        () => {
          if (events.length >= count) return true;
          if (failure !== undefined) throw failure;
          if (finished) throw new Error(`subscription ended after ${events.length} of ${count} events`);
          return false;
        },
        {
          // Enough to tell a stall (the last events never came) from a skip (a gap before them).
          what: () =>
            `${count} events: ${events.length} came (batches ${batchSizes.join(',') || 'none'}; last position ${events.at(-1)?.position ?? 'none'})`,
          timeoutMs,
          intervalMs: 5,
        },
      );
      return events.slice(0, count);
    },
    async stop() {
      controller.abort();
      await ended;
    },
  };
}

/** What an adapter's store guarantees beyond the common contract. */
export interface EventStoreCapabilities {
  /** An event id exists once in the whole store, not only in its stream. Default true; false for KurrentDB. */
  globallyUniqueEventIds?: boolean;
}
