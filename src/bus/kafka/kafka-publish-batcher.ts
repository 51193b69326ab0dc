import type { OutgoingMessage } from '../../core/bus.port.js';
import { InvalidStateError, UnavailableError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';

/** A publish that could not be acknowledged by the broker in time. Nothing was silently dropped. */
export class BusPublishError extends UnavailableError {
  constructor(
    readonly topic: string,
    readonly attempts: number,
    override readonly cause: unknown,
  ) {
    super(`publishing to ${topic} failed after ${attempts} attempt(s): ${String(cause)}`);
  }
}

export interface PublishRecord {
  key: string;
  value: string;
  headers: Record<string, string>;
}

/** One topic's share of a request; shaped like kafkajs' `TopicMessages`. */
export interface TopicRecords {
  topic: string;
  messages: PublishRecord[];
}

export interface PublishBatcherOptions {
  /** Sends one request; resolves once the broker acknowledged all of it. */
  send(batch: TopicRecords[]): Promise<void>;
  isRetriable(error: unknown): boolean;
  /** How long after its `publish` call a caller's messages may keep being retried. */
  timeoutMs: number;
  /** Upper bound of one request, in messages (a single larger publish still goes alone). */
  maxMessages: number;
  /** Upper bound of one request, in UTF-8 bytes of keys plus values (headers not counted). */
  maxBytes: number;
  logger: Logger;
}

interface Pending {
  readonly topic: string;
  readonly records: PublishRecord[];
  readonly bytes: number;
  readonly deadline: number;
  attempts: number;
  lastError: unknown;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Natural batching of publishes: one request in flight at a time, and every publish that
 * arrived meanwhile goes out together in the next one. No linger timer, so an idle bus sends
 * at once. Requests leave in call order and a caller's messages stay together, so per-key
 * order holds across callers. Each caller keeps its own deadline, counted from its call.
 */
export class KafkaPublishBatcher {
  private readonly queue: Pending[] = [];
  private draining: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly options: PublishBatcherOptions) {}

  /** Resolves once the request carrying these messages was acknowledged; rejects with BusPublishError. */
  publish(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    if (this.closed) return Promise.reject(new InvalidStateError('the Kafka publisher is closed'));
    if (messages.length === 0) return Promise.resolve();
    const records = messages.map(({ key, value, headers }) => ({ key, value, headers: { ...headers } }));
    const bytes = records.reduce((sum, { key, value }) => sum + Buffer.byteLength(key) + Buffer.byteLength(value), 0);
    return new Promise<void>((resolve, reject) => {
      this.queue.push({
        topic,
        records,
        bytes,
        deadline: Date.now() + this.options.timeoutMs,
        attempts: 0,
        lastError: undefined,
        resolve,
        reject,
      });
      this.draining ??= this.drain();
    });
  }

  /**
   * Takes no new publishes and stops retrying, but still sends what was already accepted (one
   * more attempt each): resolves once every queued caller was acknowledged or rejected.
   */
  close(): Promise<void> {
    this.closed = true;
    return this.draining ?? Promise.resolve();
  }

  private async drain(): Promise<void> {
    // Yield once so that callers of the same tick share the first request; this is no timer.
    await Promise.resolve();
    try {
      while (this.queue.length > 0) await this.deliver(this.takeBatch());
    } finally {
      this.draining = undefined;
    }
  }

  /** The oldest callers that fit the bounds; stops at the first misfit, as skipping it would reorder keys. */
  private takeBatch(): Pending[] {
    const batch = [this.queue.shift()!];
    let messages = batch[0].records.length;
    let bytes = batch[0].bytes;
    for (let next = this.queue[0]; next !== undefined; next = this.queue[0]) {
      if (messages + next.records.length > this.options.maxMessages || bytes + next.bytes > this.options.maxBytes) break;
      messages += next.records.length;
      bytes += next.bytes;
      batch.push(this.queue.shift()!);
    }
    return batch;
  }

  /** Never silently dropped: settles every caller of the batch, acknowledged or with its error; never throws. */
  private async deliver(batch: Pending[]): Promise<void> {
    try {
      const failed = await this.sendUntilAcknowledged(batch);
      if (failed === undefined) return;
      // One caller's bad record (too large, say) must not fail the others: resend each caller
      // alone, in order. Parts of the batch may already be stored: duplicates, which consumers dedupe.
      if (failed.isolate && failed.pending.length > 1) {
        for (const pending of failed.pending) await this.deliver([pending]);
        return;
      }
      for (const pending of failed.pending) this.reject(pending);
    } catch (error) {
      for (const pending of batch) pending.reject(error);
    }
  }

  /** Resolves every acknowledged caller and rejects every expired one; returns the callers still unsettled. */
  private async sendUntilAcknowledged(batch: Pending[]): Promise<{ pending: Pending[]; isolate: boolean } | undefined> {
    let live = this.expire(batch, Date.now());
    let backoffMs = 100;
    while (live.length > 0) {
      for (const pending of live) pending.attempts++;
      try {
        const deadline = Math.min(...live.map((pending) => pending.deadline));
        await beforeDeadline(this.options.send(groupByTopic(live)), deadline, this.options.timeoutMs);
        for (const pending of live) pending.resolve();
        return undefined;
      } catch (error) {
        // An attempt cut off by the deadline may still land later: a duplicate, which consumers dedupe.
        const timedOut = error instanceof DeadlineExceeded;
        for (const pending of live) pending.lastError = timedOut ? (pending.lastError ?? error) : error;
        if (!timedOut && !this.options.isRetriable(error)) return { pending: live, isolate: true };
        if (this.closed) return { pending: live, isolate: false };
        live = this.expire(live, Date.now() + backoffMs);
        if (live.length === 0) return undefined;
        const topics = [...new Set(live.map((pending) => pending.topic))];
        this.options.logger.warn('publish failed; retrying', {
          component: 'kafka-bus',
          topics,
          publishes: live.length,
          attempt: live[0].attempts,
          error: String(error),
        });
        await sleep(backoffMs);
        backoffMs = Math.min(backoffMs * 2, 2_000);
      }
    }
    return undefined;
  }

  /** Rejects the callers whose deadline falls before `by`; returns the others. */
  private expire(batch: Pending[], by: number): Pending[] {
    const live: Pending[] = [];
    for (const pending of batch) {
      if (pending.deadline <= by) this.reject(pending);
      else live.push(pending);
    }
    return live;
  }

  private reject(pending: Pending): void {
    pending.reject(new BusPublishError(pending.topic, pending.attempts, pending.lastError ?? new DeadlineExceeded(this.options.timeoutMs)));
  }
}

function groupByTopic(batch: Pending[]): TopicRecords[] {
  const byTopic = new Map<string, PublishRecord[]>();
  for (const { topic, records } of batch) {
    const messages = byTopic.get(topic);
    if (messages === undefined) byTopic.set(topic, [...records]);
    else messages.push(...records);
  }
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
}

class DeadlineExceeded extends Error {
  constructor(timeoutMs: number) {
    super(`no acknowledgement within the publish timeout (${timeoutMs} ms)`);
  }
}

function beforeDeadline(work: Promise<void>, deadline: number, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new DeadlineExceeded(timeoutMs)), Math.max(0, deadline - Date.now()));
    work.then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
