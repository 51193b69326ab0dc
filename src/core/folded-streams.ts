import type { Decider, DomainEvent } from './decider.js';
import { WrongExpectedRevisionError } from './errors.js';
import type { AppendResult, EventStore, RecordedEvent, StreamRevision } from './event-store.port.js';
import { StreamStateCache } from './stream-state-cache.js';

export interface FoldedStreamsOptions<Command, Event extends DomainEvent, State> {
  store: Pick<EventStore, 'readStream' | 'appendToStream'>;
  decider: Decider<Command, Event, State>;
  /** Validates an event read back from the store (zod at the edge) and upcasts old versions. */
  parseEvent: (recorded: RecordedEvent) => Event;
  /** Streams whose folded state is remembered; past it the least recently used are read again in full. */
  capacity?: number;
}

/** A stream's folded state, current as of the read that returned it. */
export interface FoldedStream<State> {
  /** Revision of the stream's last event; null while the stream has none. */
  revision: StreamRevision | null;
  state: State;
  /** Global position of the stream's last event; null while it has none. */
  position: string | null;
}

export interface FoldedOutcome<Event, State> extends FoldedStream<State> {
  /** Events this call appended; empty when the decision was a no-op. */
  events: Event[];
  appended: AppendResult | null;
}

export interface FoldedCommandOptions<Event, State> {
  /** Id of the n-th event of a decision; deterministic when a retried command must not add a second fact. */
  eventId: (index: number, event: Event) => string;
  /** Envelope metadata of the appended events; a function sees the state after the decision. */
  metadata: Record<string, unknown> | ((state: State) => Record<string, unknown>);
  /** How many times to read what others appended and decide again after a revision conflict. */
  maxConflictRetries?: number;
}

/**
 * Long-lived streams that are folded incrementally: the folded state of each is remembered with
 * its revision, and a read asks the store only for the events after it (usually none), so a
 * stream that grows for ever (a workspace's quota semaphore) costs one small read per decision,
 * not a read of its whole history. Commands follow the rule of `handleCommand`: read what is
 * current, decide, append with the expected revision; on a conflict, read what the other writer
 * appended and decide again. The decision always runs on a state just read, never on a
 * remembered one alone, so a refusal or a no-op is as current as an append.
 */
export class FoldedStreams<Command, Event extends DomainEvent, State> {
  private readonly folded: StreamStateCache<FoldedStream<State>>;

  constructor(private readonly options: FoldedStreamsOptions<Command, Event, State>) {
    this.folded = new StreamStateCache(options.capacity ?? 1_000);
  }

  /** The stream's state including every event committed before this call. */
  async read(streamId: string): Promise<FoldedStream<State>> {
    const known = this.folded.get(streamId);
    const recorded = await this.options.store.readStream(streamId, { fromRevision: known === undefined ? 0 : known.revision + 1 });
    let current: FoldedStream<State> = known?.state ?? { revision: null, state: this.options.decider.initialState(), position: null };
    if (recorded.length > 0) {
      const { decider, parseEvent } = this.options;
      const last = recorded[recorded.length - 1];
      const state = recorded.reduce((s, e) => decider.evolve(s, parseEvent(e)), current.state);
      current = { revision: last.revision, state, position: last.position };
    }
    if (current.revision !== null) this.folded.set(streamId, { revision: current.revision, state: current });
    return current;
  }

  /** Decides `command` on the current state and appends what it decided, in one append with the expected revision. */
  async handle(
    streamId: string,
    command: Command | ((state: State) => Command),
    options: FoldedCommandOptions<Event, State>,
  ): Promise<FoldedOutcome<Event, State>> {
    const { decider } = this.options;
    const maxRetries = options.maxConflictRetries ?? 10;
    for (let attempt = 0; ; attempt++) {
      const current = await this.read(streamId);
      const decided = typeof command === 'function' ? (command as (state: State) => Command)(current.state) : command;
      const events = decider.decide(decided, current.state);
      if (events.length === 0) return { ...current, events, appended: null };
      const state = events.reduce((s, e) => decider.evolve(s, e), current.state);
      const metadata = typeof options.metadata === 'function' ? options.metadata(state) : options.metadata;
      try {
        const appended = await this.options.store.appendToStream(
          streamId,
          events.map((event, index) => ({ id: options.eventId(index, event), type: event.type, data: event.data, metadata })),
          { expectedRevision: current.revision === null ? 'no_stream' : current.revision },
        );
        const next = { revision: appended.nextRevision, state, position: appended.position };
        this.folded.set(streamId, { revision: appended.nextRevision, state: next });
        return { ...next, events, appended };
      } catch (error) {
        // Someone appended first (or the events were already appended): decide again on what they wrote.
        if (error instanceof WrongExpectedRevisionError && attempt < maxRetries) {
          await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 ** attempt)));
          continue;
        }
        throw error;
      }
    }
  }
}
