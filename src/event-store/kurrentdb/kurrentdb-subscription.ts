import type { ClientReadableStream } from '@grpc/grpc-js';
import type streamsPb from '@eventstore/db-client/generated/streams_pb.js';
import { UnavailableError } from '../../core/errors.js';
import type { Position, RecordedEvent } from '../../core/event-store.port.js';
import { toStoreError } from './kurrentdb-errors.js';
import { encodePosition } from './kurrentdb-position.codec.js';
import { fromReadResponse } from './kurrentdb-records.js';

type ReadResp = InstanceType<typeof streamsPb.ReadResp>;

type Item = { event: RecordedEvent; checkpoint?: never } | { checkpoint: Position; event?: never };

/**
 * One subscription call's events and filter checkpoints, buffered in the order the server sent
 * them. Pauses the call while the consumer lags, so a slow consumer holds memory bounded.
 */
export class SubscriptionFeed {
  private readonly items: Item[] = [];
  private failure: unknown = null;
  private closed = false;
  private wake: (() => void) | null = null;

  constructor(
    private readonly call: ClientReadableStream<ReadResp>,
    private readonly highWaterMark: number,
  ) {
    call.on('data', (message: ReadResp) => this.receive(message));
    call.on('error', (error: unknown) => this.fail(toStoreError(error)));
    call.on('end', () => this.fail(new UnavailableError('the event store ended the subscription')));
  }

  /** Resolves once an item or a failure is there, or `signal` aborted. */
  async wait(signal: AbortSignal): Promise<void> {
    if (this.items.length > 0 || this.failure !== null || signal.aborted) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        signal.removeEventListener('abort', done);
        this.wake = null;
        resolve();
      };
      this.wake = done;
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /**
   * Up to `max` events from the head, stopping before a checkpoint; events at or before `after`
   * are dropped (the server never repeats one, but a duplicate must never reach a consumer).
   * Throws the call's failure once everything received before it was taken.
   */
  takeEvents(max: number, after: Position | null): RecordedEvent[] {
    const events: RecordedEvent[] = [];
    while (events.length < max && this.items[0]?.event !== undefined) {
      const { event } = this.items.shift()!;
      if (after === null || event!.position > after) events.push(event!);
    }
    this.resumeIfDrained();
    if (events.length === 0 && this.items.length === 0 && this.failure !== null) throw this.failure;
    return events;
  }

  /** The checkpoint at the head, if the head is one. */
  takeCheckpoint(): Position | null {
    const checkpoint = this.items[0]?.checkpoint;
    if (checkpoint === undefined) return null;
    this.items.shift();
    this.resumeIfDrained();
    return checkpoint;
  }

  /** Cancels the call; what it sends afterwards is ignored. */
  close(): void {
    this.closed = true;
    this.call.cancel();
  }

  private receive(message: ReadResp): void {
    if (this.closed) return;
    const event = message.getEvent();
    const checkpoint = message.getCheckpoint();
    if (event !== undefined) {
      try {
        this.items.push({ event: fromReadResponse(event) });
      } catch (error) {
        this.fail(error);
        return;
      }
    } else if (checkpoint !== undefined) {
      const position = { commit: BigInt(checkpoint.getCommitPosition()), prepare: BigInt(checkpoint.getPreparePosition()) };
      this.items.push({ checkpoint: encodePosition(position) });
    } else {
      return; // confirmation, caught-up and fell-behind notices carry nothing to deliver
    }
    if (this.items.length >= this.highWaterMark) this.call.pause();
    this.wake?.();
  }

  private fail(error: unknown): void {
    if (this.closed || this.failure !== null) return;
    this.failure = error;
    this.wake?.();
  }

  private resumeIfDrained(): void {
    if (!this.closed && this.call.isPaused() && this.items.length < this.highWaterMark) this.call.resume();
  }
}
