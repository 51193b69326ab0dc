import type { Decider, DomainEvent } from './decider.js';
import { DomainError, WrongExpectedRevisionError } from './errors.js';
import type { AppendResult, EventStore, RecordedEvent } from './event-store.port.js';
import type { StreamStateCache } from './stream-state-cache.js';

/** A command, or a function that builds it once the current state is known (e.g. to reuse ids of a replay). */
export type CommandInput<Command, State> = Command | ((state: State) => Command);

export interface HandleCommandOptions<Command, Event extends DomainEvent, State> {
  store: EventStore;
  streamId: string;
  decider: Decider<Command, Event, State>;
  /** Validates an event read back from the store (zod at the edge) and upcasts old versions. */
  parseEvent: (recorded: RecordedEvent) => Event;
  command: CommandInput<Command, State>;
  /** Id of the n-th event of this decision; deterministic when a retry must not add a second fact. */
  eventId: (index: number, event: Event) => string;
  /**
   * Envelope metadata of the appended events. A function is asked once per command that decided
   * events, with the command (its metadata names the actor) and the state its events left, and
   * its answer goes on exactly those events.
   */
  metadata?: Record<string, unknown> | ((state: State, command: Command) => Record<string, unknown>);
  /** How many times to reload and decide again after a revision conflict. */
  maxConflictRetries?: number;
  /**
   * Folded states of recently written streams. A decision on a cached state skips the read; the
   * append's expected revision proves the state current, and a conflict reloads. A cached
   * decision that appends nothing (a replay, a rejection) is decided again on a fresh read,
   * because an older state may refuse what the current one accepts; only a refusal marked
   * `final` (it holds in every later state) stands as decided.
   */
  cache?: StreamStateCache<State>;
  /**
   * The stream is almost surely new (its id was just made at random): decide on the initial
   * state without reading, as on a cached state: the append expects no stream, and anything
   * else reads after all.
   */
  assumeNewStream?: boolean;
}

export interface CommandOutcome<Event extends DomainEvent, State> {
  /**
   * The stream as read for the decision that stuck. Complete when nothing was appended; a
   * decision taken on a cached state read nothing, so after an append it may be empty.
   */
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

/** One command of a batch: the events it decided, or the domain error that refused it. */
export type BatchVerdict<Event> = { events: Event[] } | { rejected: DomainError };

export interface BatchOutcome<Event extends DomainEvent, State> extends CommandOutcome<Event, State> {
  /** One verdict per command, in order. */
  verdicts: BatchVerdict<Event>[];
}

export interface HandleCommandsOptions<Command, Event extends DomainEvent, State> extends Omit<
  HandleCommandOptions<Command, Event, State>,
  'command'
> {
  /** Decided in order, each on the state the previous ones left; their events go in one append. */
  commands: CommandInput<Command, State>[];
}

/**
 * Read → fold → decide → append with the expected revision; on a revision conflict, reload and
 * decide again (bounded). A command's only write is this one append (promise 1, docs/architecture.md). A DomainError
 * from the decision is thrown and nothing is written.
 */
export async function handleCommand<Command, Event extends DomainEvent, State>(
  options: HandleCommandOptions<Command, Event, State>,
): Promise<CommandOutcome<Event, State>> {
  const { command, ...rest } = options;
  const { verdicts, ...outcome } = await handleCommands({ ...rest, commands: [command] });
  const verdict = verdicts[0];
  if ('rejected' in verdict) throw verdict.rejected;
  return outcome;
}

/**
 * Several commands on one stream as one read and one append: each is decided on the state the
 * previous ones left, a command the domain refuses (DomainError) is skipped with its verdict,
 * and the events of all others commit together or not at all. Any other error propagates and
 * nothing is written.
 */
export async function handleCommands<Command, Event extends DomainEvent, State>(
  options: HandleCommandsOptions<Command, Event, State>,
): Promise<BatchOutcome<Event, State>> {
  const { store, streamId, decider, cache } = options;
  const maxRetries = options.maxConflictRetries ?? 10;
  let useCache = cache !== undefined;
  for (let attempt = 0; ; attempt++) {
    const cached =
      attempt === 0 && options.assumeNewStream === true
        ? { revision: null, state: decider.initialState() }
        : useCache
          ? cache!.get(streamId)
          : undefined;
    let loaded: Loaded<State> = cached === undefined ? await load(options) : { ...cached, history: [] };
    let decided = decideAll(decider, options.commands, loaded.state);
    let onCachedState = cached !== undefined;
    if (onCachedState && !decided.decidedForGood) {
      loaded = await load(options);
      decided = decideAll(decider, options.commands, loaded.state);
      onCachedState = false;
    }
    const outcome = {
      history: loaded.history,
      before: loaded.state,
      state: decided.state,
      events: decided.events,
      verdicts: decided.verdicts,
    };
    if (decided.events.length === 0) {
      if (loaded.revision !== null) cache?.set(streamId, { revision: loaded.revision, state: loaded.state });
      return { ...outcome, appended: null };
    }
    const metadataOf = options.metadata;
    const toAppend = decided.decisions.flatMap(({ command, state, events }) => {
      const metadata = typeof metadataOf === 'function' ? metadataOf(state, command) : metadataOf;
      return events.map((event) => ({ event, metadata }));
    });
    try {
      const appended = await store.appendToStream(
        streamId,
        toAppend.map(({ event, metadata }, index) => ({ id: options.eventId(index, event), type: event.type, data: event.data, metadata })),
        { expectedRevision: loaded.revision === null ? 'no_stream' : loaded.revision },
      );
      cache?.set(streamId, { revision: appended.nextRevision, state: decided.state });
      return { ...outcome, appended };
    } catch (error) {
      cache?.delete(streamId);
      if (error instanceof WrongExpectedRevisionError && attempt < maxRetries) {
        useCache = false;
        // A stale cached state is not contention: decide again on a fresh read at once.
        if (onCachedState) continue;
        // Someone appended first: their facts may change the decision (or make it a replay).
        await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 ** attempt)));
        continue;
      }
      throw error;
    }
  }
}

interface Loaded<State> {
  revision: number | null;
  state: State;
  history: RecordedEvent[];
}

async function load<Command, Event extends DomainEvent, State>(
  options: HandleCommandsOptions<Command, Event, State>,
): Promise<Loaded<State>> {
  const history = await options.store.readStream(options.streamId);
  const state = history.map(options.parseEvent).reduce((s, e) => options.decider.evolve(s, e), options.decider.initialState());
  const last = history[history.length - 1];
  return { revision: last === undefined ? null : last.revision, state, history };
}

/**
 * Decides a batch as one append would carry it: each command on the state the previous ones
 * left, a DomainError becoming that command's verdict (pure; exported for deciders' specs).
 */
export function decideAll<Command, Event extends DomainEvent, State>(
  decider: Decider<Command, Event, State>,
  commands: readonly CommandInput<Command, State>[],
  initial: State,
) {
  let state = initial;
  const events: Event[] = [];
  const verdicts: BatchVerdict<Event>[] = [];
  // Each accepted command with the events it decided and the state they left: the metadata of
  // those events is the command's own (its actor), whatever the other commands of the batch.
  const decisions: { command: Command; state: State; events: Event[] }[] = [];
  for (const input of commands) {
    try {
      const command = typeof input === 'function' ? (input as (state: State) => Command)(state) : input;
      const decided = decider.decide(command, state);
      state = decided.reduce((s, e) => decider.evolve(s, e), state);
      events.push(...decided);
      verdicts.push({ events: decided });
      if (decided.length > 0) decisions.push({ command, state, events: decided });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      verdicts.push({ rejected: error });
    }
  }
  // A verdict stands on any state as recent as the cached one when it appends (the expected
  // revision proves the state current) or refuses for good; a replay or another refusal may
  // differ on the current state.
  const decidedForGood = verdicts.every((v) => ('events' in v ? v.events.length > 0 : v.rejected.final));
  return { state, events, verdicts, decisions, decidedForGood };
}
