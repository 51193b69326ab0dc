/**
 * The KurrentDB double's storage: one ordered log, the streams over it, and the server's
 * append decision (expected revision and idempotency, after KurrentDB's `IndexWriter.CheckCommit`).
 */

/** An event in the log. Like KurrentDB for events written by an append, commit = prepare = `position`. */
export interface StoredEvent {
  position: bigint;
  streamId: string;
  revision: bigint;
  /** Lower-case uuid. */
  id: string;
  type: string;
  contentType: string;
  data: Uint8Array;
  metadata: Uint8Array;
  /** .NET ticks (100 ns) since the Unix epoch, as the server sends `created`. */
  created: bigint;
}

export interface ProposedEvent {
  id: string;
  type: string;
  contentType: string;
  data: Uint8Array;
  metadata: Uint8Array;
}

export type Expected = 'any' | 'no_stream' | 'stream_exists' | bigint;

export type AppendOutcome =
  /** Written, or an idempotent replay answered with the original write's revision and position. */
  | { kind: 'success'; lastRevision: bigint; position: bigint }
  /** `current` is null for a stream without events. */
  | { kind: 'wrong_expected_version'; current: bigint | null };

export type EventFilter = { on: 'stream' | 'type'; prefixes: string[] } | { on: 'stream' | 'type'; regex: RegExp } | null;

/** KurrentDB's `Event.SizeOnDisk`, what MaxAppendSize is checked against. */
export function sizeOnDisk(event: ProposedEvent): number {
  return event.data.length + event.metadata.length + event.type.length * 2;
}

export function matches(filter: EventFilter, event: StoredEvent): boolean {
  if (filter === null) return true;
  const subject = filter.on === 'stream' ? event.streamId : event.type;
  return 'prefixes' in filter ? filter.prefixes.some((prefix) => subject.startsWith(prefix)) : filter.regex.test(subject);
}

const RECORD_OVERHEAD = 120n;
const NO_STREAM = -1n;

export class InMemoryLog {
  /** The whole log in position order. */
  readonly events: StoredEvent[] = [];
  private readonly streams = new Map<string, StoredEvent[]>();
  /** The server's committed-events cache (unbounded here): event id → last event written with it. */
  private readonly committed = new Map<string, StoredEvent>();
  private readonly listeners = new Set<() => void>();
  private nextPosition: bigint;

  constructor(firstPosition: bigint) {
    this.nextPosition = firstPosition;
  }

  /** Calls `listener` after every write; returns the unsubscribe function. */
  onAppend(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stream(streamId: string): readonly StoredEvent[] | undefined {
    return this.streams.get(streamId);
  }

  /** Index of the first event strictly after `position` (or at it, when `inclusive`). */
  indexAfter(position: bigint, inclusive = false): number {
    let low = 0;
    let high = this.events.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      const at = this.events[mid].position;
      if (at < position || (!inclusive && at === position)) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  append(streamId: string, expected: Expected, proposed: ProposedEvent[]): AppendOutcome {
    const stream = this.streams.get(streamId) ?? [];
    const current = BigInt(stream.length) - 1n;
    const decision = this.check(streamId, stream, current, expected, proposed);
    if (decision !== 'ok') return decision;
    const created = BigInt(Date.now()) * 10_000n;
    const written = proposed.map((event, index): StoredEvent => {
      const stored: StoredEvent = {
        ...event,
        id: event.id.toLowerCase(),
        position: this.nextPosition,
        streamId,
        revision: current + 1n + BigInt(index),
        created,
      };
      this.nextPosition += RECORD_OVERHEAD + BigInt(sizeOnDisk(event));
      return stored;
    });
    for (const event of written) {
      this.events.push(event);
      stream.push(event);
      this.committed.set(event.id, event);
    }
    this.streams.set(streamId, stream);
    for (const listener of [...this.listeners]) listener();
    const last = written[written.length - 1];
    return { kind: 'success', lastRevision: last?.revision ?? current, position: last?.position ?? this.nextPosition };
  }

  /**
   * A soft delete (`Streams.Delete`) at an exact expected revision: the stream reads as not
   * found, while its events stay in `$all`, as on a server until a scavenge removes them.
   * Returns the stream's current revision (null: no stream) when it does not match.
   */
  deleteStream(streamId: string, expected: bigint): { kind: 'deleted' } | { kind: 'wrong_expected_version'; current: bigint | null } {
    const stream = this.streams.get(streamId);
    const current = stream === undefined ? null : BigInt(stream.length) - 1n;
    if (current !== expected) return { kind: 'wrong_expected_version', current };
    this.streams.delete(streamId);
    return { kind: 'deleted' };
  }

  private check(
    streamId: string,
    stream: StoredEvent[],
    current: bigint,
    expected: Expected,
    proposed: ProposedEvent[],
  ): AppendOutcome | 'ok' {
    const conflict: AppendOutcome = { kind: 'wrong_expected_version', current: current === NO_STREAM ? null : current };
    if (expected === 'stream_exists' && current === NO_STREAM) return conflict;
    if (expected === 'any' || expected === 'stream_exists') {
      // Idempotency through the committed-events cache: every id already in this stream.
      let replayed: StoredEvent | null = null;
      for (const [index, event] of proposed.entries()) {
        const known = this.committed.get(event.id.toLowerCase());
        if (known === undefined || known.streamId !== streamId) return index === 0 ? 'ok' : conflict;
        replayed = known;
      }
      return replayed === null ? 'ok' : { kind: 'success', lastRevision: replayed.revision, position: replayed.position };
    }
    const expectedRevision = expected === 'no_stream' ? NO_STREAM : expected;
    if (expectedRevision > current) return conflict;
    if (expectedRevision === current) return 'ok';
    // Writing at an earlier revision: an idempotent replay when the same ids follow it.
    for (const [index, event] of proposed.entries()) {
      if (stream[Number(expectedRevision) + 1 + index]?.id !== event.id.toLowerCase()) return conflict;
    }
    const last = stream[Number(expectedRevision) + proposed.length];
    return last === undefined ? conflict : { kind: 'success', lastRevision: last.revision, position: last.position };
  }
}
