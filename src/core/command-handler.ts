import type { Decider, DomainEvent } from './decider.js';
import { WrongExpectedRevisionError } from './errors.js';
import type { AppendResult, EventStore, RecordedEvent } from './event-store.port.js';

export interface HandleCommandOptions<Command, Event extends DomainEvent, State> {
  store: EventStore;
  streamId: string;
  decider: Decider<Command, Event, State>;
  /** Validates an event read back from the store (zod at the edge) and upcasts old versions. */
  parseEvent: (recorded: RecordedEvent) => Event;
  /** Builds the command once the current state is known (e.g. to reuse ids of a replay). */
  command: Command | ((state: State, history: readonly RecordedEvent[]) => Command);
  /** Id of the n-th event of this decision; deterministic when a retry must not add a second fact. */
  eventId: (index: number, event: Event) => string;
  /** Envelope metadata of the appended events; a function sees the state after the decision. */
  metadata?: Record<string, unknown> | ((state: State) => Record<string, unknown>);
  /** How many times to reload and decide again after a revision conflict. */
  maxConflictRetries?: number;
}

export interface CommandOutcome<Event extends DomainEvent, State> {
  /** The stream as it was read for the decision that stuck. */
  history: RecordedEvent[];
  /** State before the decision. */
  before: State;
  /** State after the new events. */
  state: State;
  /** Events appended by this call; empty when the decision was a no-op. */
  events: Event[];
  /** Present when something was appended. */
  appended: AppendResult | null;
}

/**
 * Read → fold → decide → append with the expected revision; on a revision conflict, reload and
 * decide again (bounded). A command's only write is this one append (promise 1).
 */
export async function handleCommand<Command, Event extends DomainEvent, State>(
  options: HandleCommandOptions<Command, Event, State>,
): Promise<CommandOutcome<Event, State>> {
  const { store, streamId, decider, parseEvent } = options;
  const maxRetries = options.maxConflictRetries ?? 10;
  for (let attempt = 0; ; attempt++) {
    const history = await store.readStream(streamId);
    const before = history.map(parseEvent).reduce((s, e) => decider.evolve(s, e), decider.initialState());
    const command = typeof options.command === 'function'
      ? (options.command as (state: State, history: readonly RecordedEvent[]) => Command)(before, history)
      : options.command;
    const events = decider.decide(command, before);
    const state = events.reduce((s, e) => decider.evolve(s, e), before);
    if (events.length === 0) return { history, before, state, events, appended: null };
    const last = history[history.length - 1];
    const metadata = typeof options.metadata === 'function' ? options.metadata(state) : options.metadata;
    try {
      const appended = await store.appendToStream(
        streamId,
        events.map((event, index) => ({
          id: options.eventId(index, event),
          type: event.type,
          data: event.data,
          metadata,
        })),
        { expectedRevision: last === undefined ? 'no_stream' : last.revision },
      );
      return { history, before, state, events, appended };
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError && attempt < maxRetries) {
        // Someone appended first: their facts may change the decision (or make it a replay).
        await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 ** attempt)));
        continue;
      }
      throw error;
    }
  }
}
