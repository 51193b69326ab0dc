import { describe, expect, it } from '@jest/globals';
import { handleCommand, handleCommands } from './command-handler.js';
import type { Decider } from './decider.js';
import { DomainError, InvalidStateError, WrongExpectedRevisionError } from './errors.js';
import type { AppendResult, EventStore, EventToAppend, ExpectedRevision, RecordedEvent } from './event-store.port.js';
import { StreamStateCache } from './stream-state-cache.js';

// A small account: opened once, deposits only while open, closed once and only with money in it.
type Command = { type: 'Open' } | { type: 'Deposit'; data: { amount: number } } | { type: 'Close' };
type Event =
  | { type: 'Opened'; data: Record<string, never> }
  | { type: 'Deposited'; data: { amount: number } }
  | { type: 'Closed'; data: Record<string, never> };
type State = { status: 'none' | 'open' | 'closed'; balance: number };

const account: Decider<Command, Event, State> = {
  initialState: () => ({ status: 'none', balance: 0 }),
  decide(command, state) {
    switch (command.type) {
      case 'Open':
        return state.status === 'none' ? [{ type: 'Opened', data: {} }] : [];
      case 'Deposit':
        // A closed account never opens again: that refusal holds in every later state.
        if (state.status === 'closed') throw new InvalidStateError('cannot deposit into a closed account').asFinal();
        if (state.status !== 'open') throw new InvalidStateError(`cannot deposit into a ${state.status} account`);
        if (command.data.amount <= 0) throw new Error('a bug: amounts are validated at the edge');
        return [{ type: 'Deposited', data: { amount: command.data.amount } }];
      case 'Close':
        if (state.status !== 'open') throw new InvalidStateError('not open');
        if (state.balance <= 0) throw new InvalidStateError('an empty account cannot be closed');
        return [{ type: 'Closed', data: {} }];
    }
  },
  evolve(state, event) {
    switch (event.type) {
      case 'Opened':
        return { ...state, status: 'open' };
      case 'Deposited':
        return { ...state, balance: state.balance + event.data.amount };
      case 'Closed':
        return { ...state, status: 'closed' };
    }
  },
};

/** The store is the dependency here, not the subject: an in-memory one that counts its calls. */
class CountingStore implements Pick<EventStore, 'readStream' | 'appendToStream'> {
  readonly streams = new Map<string, RecordedEvent[]>();
  reads = 0;
  appends = 0;

  async readStream(streamId: string): Promise<RecordedEvent[]> {
    this.reads += 1;
    return [...(this.streams.get(streamId) ?? [])];
  }

  async appendToStream(streamId: string, events: EventToAppend[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    this.appends += 1;
    const stream = this.streams.get(streamId) ?? [];
    const actual = stream.length - 1;
    const expected = options.expectedRevision === 'no_stream' ? -1 : options.expectedRevision;
    if (expected !== actual) throw new WrongExpectedRevisionError(streamId, String(expected), String(actual));
    for (const event of events) {
      stream.push({
        ...event,
        streamId,
        revision: stream.length,
        position: String(stream.length).padStart(8, '0'),
        metadata: event.metadata ?? {},
        recordedAt: new Date(0).toISOString(),
      });
    }
    this.streams.set(streamId, stream);
    return { nextRevision: stream.length - 1, position: stream[stream.length - 1].position };
  }
}

function setup() {
  const store = new CountingStore();
  const cache = new StreamStateCache<State>(100);
  let ids = 0;
  const common = {
    store: store as unknown as EventStore,
    streamId: 'account-1',
    decider: account,
    parseEvent: (recorded: RecordedEvent) => ({ type: recorded.type, data: recorded.data }) as Event,
    eventId: () => `event-${ids++}`,
    cache,
  };
  const run = (command: Command) => handleCommand({ ...common, command });
  const types = () => (store.streams.get('account-1') ?? []).map((e) => e.type);
  /** Another process writes: this process's cache does not see it. */
  const appendElsewhere = (event: Event) =>
    store.appendToStream('account-1', [{ id: `elsewhere-${ids++}`, ...event }], {
      expectedRevision: (store.streams.get('account-1')?.length ?? 0) - 1,
    });
  return { store, cache, common, run, types, appendElsewhere };
}

describe('handleCommand with a cache of folded states', () => {
  it('decides the next command on the state its own append left, without reading the stream again', async () => {
    const { store, run, types } = setup();
    await run({ type: 'Open' });
    await run({ type: 'Deposit', data: { amount: 5 } });
    const outcome = await run({ type: 'Deposit', data: { amount: 7 } });

    expect(types()).toEqual(['Opened', 'Deposited', 'Deposited']);
    expect(outcome.state).toEqual({ status: 'open', balance: 12 });
    expect(store.reads).toBe(1);
  });

  it('decides again on a fresh read when another writer moved the stream on', async () => {
    const { run, types, appendElsewhere } = setup();
    await run({ type: 'Open' });
    await appendElsewhere({ type: 'Closed', data: {} });

    await expect(run({ type: 'Deposit', data: { amount: 5 } })).rejects.toBeInstanceOf(InvalidStateError);
    expect(types()).toEqual(['Opened', 'Closed']);
  });

  it('never trusts a refusal decided on a cached state: the current state may accept', async () => {
    const { run, types, appendElsewhere } = setup();
    await run({ type: 'Open' });
    await appendElsewhere({ type: 'Deposited', data: { amount: 1 } });

    // The cached state says empty, which refuses Close; the stream says otherwise.
    const outcome = await run({ type: 'Close' });

    expect(outcome.events.map((e) => e.type)).toEqual(['Closed']);
    expect(types()).toEqual(['Opened', 'Deposited', 'Closed']);
  });

  it('stands by a refusal that holds in every later state without reading the stream', async () => {
    const { run, store } = setup();
    await run({ type: 'Open' });
    await run({ type: 'Deposit', data: { amount: 5 } });
    await run({ type: 'Close' });
    const readsBefore = store.reads;

    await expect(run({ type: 'Deposit', data: { amount: 1 } })).rejects.toThrow('cannot deposit into a closed account');
    expect(store.reads).toBe(readsBefore);
  });

  it('answers a replay from a fresh read, with the history it was decided on', async () => {
    const { run, store } = setup();
    await run({ type: 'Open' });
    const readsBefore = store.reads;
    const replay = await run({ type: 'Open' });

    expect(replay.appended).toBeNull();
    expect(replay.history.map((e) => e.type)).toEqual(['Opened']);
    expect(store.reads).toBe(readsBefore + 1);
  });

  it('drops the cached state when an append fails, so the next command reads', async () => {
    const { run, store, cache } = setup();
    await run({ type: 'Open' });
    const failing = Object.assign(Object.create(store) as CountingStore, {
      appendToStream: async () => {
        throw new Error('connection reset');
      },
    });
    await expect(
      handleCommand({
        ...setup().common,
        store: failing as unknown as EventStore,
        cache,
        command: { type: 'Deposit', data: { amount: 1 } },
      }),
    ).rejects.toThrow('connection reset');
    expect(cache.get('account-1')).toBeUndefined();
  });
});

describe('handleCommand on a stream assumed new', () => {
  it('appends without reading when the stream is indeed new', async () => {
    const { store, common, types } = setup();
    await handleCommand({ ...common, assumeNewStream: true, command: { type: 'Open' } });

    expect(types()).toEqual(['Opened']);
    expect(store.reads).toBe(0);
  });

  it('reads and decides again when the stream exists after all', async () => {
    const { common, types, appendElsewhere } = setup();
    await appendElsewhere({ type: 'Opened', data: {} });
    await appendElsewhere({ type: 'Deposited', data: { amount: 3 } });

    const outcome = await handleCommand({ ...common, assumeNewStream: true, command: { type: 'Open' } });

    expect(outcome.appended).toBeNull();
    expect(outcome.state).toEqual({ status: 'open', balance: 3 });
    expect(types()).toEqual(['Opened', 'Deposited']);
  });
});

describe('handleCommands: several commands, one append', () => {
  it('decides each on the state the previous left and appends all their events at once', async () => {
    const { store, common, types } = setup();
    const outcome = await handleCommands({
      ...common,
      commands: [{ type: 'Open' }, { type: 'Deposit', data: { amount: 2 } }, { type: 'Deposit', data: { amount: 3 } }, { type: 'Close' }],
    });

    expect(types()).toEqual(['Opened', 'Deposited', 'Deposited', 'Closed']);
    expect(outcome.state).toEqual({ status: 'closed', balance: 5 });
    expect(store.appends).toBe(1);
  });

  it('gives a refused command its verdict and still writes the others', async () => {
    const { common, types } = setup();
    const outcome = await handleCommands({
      ...common,
      commands: [{ type: 'Open' }, { type: 'Close' }, { type: 'Deposit', data: { amount: 2 } }],
    });

    expect(outcome.verdicts.map((v) => ('rejected' in v ? v.rejected.code : v.events.map((e) => e.type)))).toEqual([
      ['Opened'],
      'invalid_state',
      ['Deposited'],
    ]);
    expect(types()).toEqual(['Opened', 'Deposited']);
  });

  it('gives the events of each command the metadata of that command and the state it left', async () => {
    const { common, store } = setup();
    await handleCommands({
      ...common,
      // The actor of a real command rides in its metadata; here the command's own type stands in.
      metadata: (state, command) => ({ decidedBy: command.type, balance: state.balance }),
      commands: [{ type: 'Open' }, { type: 'Close' }, { type: 'Deposit', data: { amount: 2 } }, { type: 'Deposit', data: { amount: 3 } }],
    });

    expect(store.streams.get('account-1')!.map((e) => [e.type, e.metadata])).toEqual([
      ['Opened', { decidedBy: 'Open', balance: 0 }],
      ['Deposited', { decidedBy: 'Deposit', balance: 2 }],
      ['Deposited', { decidedBy: 'Deposit', balance: 5 }],
    ]);
  });

  it('writes nothing when a command fails with anything but a domain error', async () => {
    const { common, store } = setup();
    await expect(
      handleCommands({ ...common, commands: [{ type: 'Open' }, { type: 'Deposit', data: { amount: -1 } }] }),
    ).rejects.not.toBeInstanceOf(DomainError);
    expect(store.appends).toBe(0);
  });
});
