import { describe, expect, it } from '@jest/globals';
import type { Decider } from './decider.js';
import { WrongExpectedRevisionError } from './errors.js';
import type { AppendResult, EventToAppend, ExpectedRevision, ReadStreamOptions, RecordedEvent } from './event-store.port.js';
import { FoldedStreams } from './folded-streams.js';

// A counter with a ceiling: an increment is refused (nothing recorded) once it is reached.
type Command = { type: 'Increment'; data: { ceiling: number } };
type Event = { type: 'Incremented'; data: Record<string, never> };
type State = { count: number };

const counter: Decider<Command, Event, State> = {
  initialState: () => ({ count: 0 }),
  decide: (command, state) => (state.count < command.data.ceiling ? [{ type: 'Incremented', data: {} }] : []),
  evolve: (state) => ({ count: state.count + 1 }),
};

/** The store is the dependency here, not the subject: an in-memory one that records what each read asked for. */
class RecordingStore {
  readonly streams = new Map<string, RecordedEvent[]>();
  readonly reads: Array<{ streamId: string; fromRevision: number; returned: number }> = [];
  /** Runs once, just before the next append: another writer getting there first. */
  beforeNextAppend: (() => void) | null = null;

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const fromRevision = options.fromRevision ?? 0;
    const events = (this.streams.get(streamId) ?? []).slice(fromRevision);
    this.reads.push({ streamId, fromRevision, returned: events.length });
    return events;
  }

  async appendToStream(streamId: string, events: EventToAppend[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    const interloper = this.beforeNextAppend;
    this.beforeNextAppend = null;
    interloper?.();
    const stream = this.streams.get(streamId) ?? [];
    const expected = options.expectedRevision === 'no_stream' ? -1 : options.expectedRevision;
    if (expected !== stream.length - 1) throw new WrongExpectedRevisionError(streamId, String(expected), String(stream.length - 1));
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

  /** Another process appends: the FoldedStreams under test does not see it happen. */
  appendElsewhere(streamId: string, count: number): void {
    const stream = this.streams.get(streamId) ?? [];
    for (let i = 0; i < count; i++) {
      stream.push({
        id: `elsewhere-${stream.length}`,
        type: 'Incremented',
        data: {},
        streamId,
        revision: stream.length,
        position: String(stream.length).padStart(8, '0'),
        metadata: {},
        recordedAt: new Date(0).toISOString(),
      });
    }
    this.streams.set(streamId, stream);
  }
}

function setup() {
  const store = new RecordingStore();
  let ids = 0;
  const streams = new FoldedStreams({
    store,
    decider: counter,
    parseEvent: (recorded: RecordedEvent) => ({ type: recorded.type, data: recorded.data }) as Event,
  });
  const increment = (ceiling: number) =>
    streams.handle('counter-1', { type: 'Increment', data: { ceiling } }, { eventId: () => `event-${ids++}`, metadata: { by: 'test' } });
  return { store, streams, increment };
}

describe('FoldedStreams', () => {
  it('reads only the events after those it has folded', async () => {
    const { store, streams, increment } = setup();
    await increment(10);
    await increment(10);
    store.appendElsewhere('counter-1', 3);

    const current = await streams.read('counter-1');

    expect(current).toMatchObject({ revision: 4, state: { count: 5 }, position: '00000004' });
    expect(store.reads.map((r) => r.fromRevision)).toEqual([0, 1, 2]);
    expect(store.reads.at(-1)?.returned).toBe(3);
  });

  it('decides on what other writers appended, not on what it folded last', async () => {
    const { store, increment } = setup();
    await increment(3);
    store.appendElsewhere('counter-1', 2);

    // The remembered state says one; the stream says three, which is the ceiling.
    const outcome = await increment(3);

    expect(outcome.events).toEqual([]);
    expect(outcome.appended).toBeNull();
    expect(store.streams.get('counter-1')).toHaveLength(3);
  });

  it('decides again when another writer appends between its read and its append, and never passes the ceiling', async () => {
    const { store, increment } = setup();
    await increment(2);
    store.beforeNextAppend = () => store.appendElsewhere('counter-1', 1);

    const outcome = await increment(2);

    expect(outcome.events).toEqual([]);
    expect(outcome.state).toEqual({ count: 2 });
    expect(store.streams.get('counter-1')).toHaveLength(2);
  });

  it('appends with the metadata and ids it is given, and answers the new revision and position', async () => {
    const { store, increment } = setup();
    const outcome = await increment(1);

    expect(outcome).toMatchObject({ revision: 0, position: '00000000', state: { count: 1 }, appended: { nextRevision: 0 } });
    expect(store.streams.get('counter-1')?.[0]).toMatchObject({ id: 'event-0', metadata: { by: 'test' } });
  });

  it('answers the initial state for a stream that does not exist', async () => {
    const { streams } = setup();
    expect(await streams.read('counter-2')).toEqual({ revision: null, state: { count: 0 }, position: null });
  });
});
