/** A fact, past tense: `{ type, data }`. Envelope metadata travels beside it in the store. */
export interface DomainEvent<Type extends string = string, Data = unknown> {
  type: Type;
  data: Data;
}

/** What every command carries besides its data: who, when, and the ids it may mint. */
export interface CommandMetadata {
  /** Time of the command, read once from the one clock by the handler. */
  now: Date;
  /**
   * Who commands: the caller's token subject, `worker:<workerId>` or `system:<role>` (core/actors.ts).
   * Recorded as `metadata.actor` on every event the command appends.
   */
  actor: string;
}

/**
 * A pure decider: `decide` turns a command and the folded state into new events (or throws a
 * DomainError); `evolve` folds one event into state. Neither reads a clock or makes ids.
 */
export interface Decider<Command, Event extends DomainEvent, State> {
  decide(command: Command, state: State): Event[];
  evolve(state: State, event: Event): State;
  initialState(): State;
}

export function fold<Event extends DomainEvent, State>(
  decider: Pick<Decider<unknown, Event, State>, 'evolve' | 'initialState'>,
  events: readonly Event[],
): State {
  return events.reduce((state, event) => decider.evolve(state, event), decider.initialState());
}
