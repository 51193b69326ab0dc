import { describe, expect, it } from '@jest/globals';
import type { EventStore, RecordedEvent } from '../core/event-store.port.js';
import { NO_METRICS } from '../core/metrics.port.js';
import { measureAppends } from './measured-event-store.js';

const unused = () => Promise.reject(new Error('not used here'));

/** A store answering only what these cases ask; `readStreams` present or not. */
function storeWith(readStreams?: EventStore['readStreams']): EventStore {
  return {
    appendToStream: unused,
    readStream: unused,
    readAll: unused,
    subscribeToAll: () => ({ [Symbol.asyncIterator]: () => ({ next: unused }) }),
    headPosition: unused,
    isPosition: () => false,
    isAheadOfLog: unused,
    deleteStream: unused,
    close: () => Promise.resolve(),
    ...(readStreams === undefined ? {} : { readStreams }),
  };
}

describe('measureAppends', () => {
  it('given a store that reads several streams at once, when wrapped, then the wrapper reads them through it', async () => {
    const history = [{ streamId: 'execution-a' } as RecordedEvent];
    const asked: (readonly string[])[] = [];
    const wrapped = measureAppends(
      storeWith((ids) => {
        asked.push(ids);
        return Promise.resolve(new Map([['execution-a', history]]));
      }),
      NO_METRICS,
    );

    const read = await wrapped.readStreams?.(['execution-a', 'execution-b']);

    expect(asked).toEqual([['execution-a', 'execution-b']]);
    expect(read?.get('execution-a')).toBe(history);
  });

  it('given a store that cannot, when wrapped, then the wrapper cannot either (callers read stream by stream)', () => {
    expect(measureAppends(storeWith(), NO_METRICS).readStreams).toBeUndefined();
  });
});
