import { describe, expect, it } from '@jest/globals';
import type { SqlClient } from '../postgres/sql-client.port.js';
import { advancedNames, ProjectionSignals } from './projection-signals.js';

/** LISTEN/NOTIFY of one database shared by several processes, nothing else. */
function notifyingDatabase() {
  const listeners = new Map<string, Set<(payload: string) => void>>();
  const sent: string[] = [];
  const client = (): SqlClient =>
    ({
      async listen(channel: string, onNotify: (payload: string) => void) {
        const set = listeners.get(channel) ?? new Set();
        listeners.set(channel, set);
        set.add(onNotify);
        return async () => void set.delete(onNotify);
      },
      async notify(channel: string, payload: string) {
        sent.push(payload);
        for (const listener of listeners.get(channel) ?? []) listener(payload);
      },
    }) as unknown as SqlClient;
  return { client, sent };
}

describe('ProjectionSignals', () => {
  it('tells readers in another process which projections advanced, in fewer NOTIFYs than batches', async () => {
    const db = notifyingDatabase();
    const projector = new ProjectionSignals(db.client());
    const reader = new ProjectionSignals(db.client());
    const heard: string[] = [];
    reader.on('executions', () => heard.push('executions'));
    reader.on('timeline', () => heard.push('timeline'));
    await new Promise((resolve) => setImmediate(resolve)); // LISTEN is in place

    for (let batch = 0; batch < 10; batch++) {
      projector.advanced('executions', null);
      projector.advanced('timeline', null);
    }
    await projector.close();

    expect(new Set(heard)).toEqual(new Set(['executions', 'timeline']));
    expect(db.sent.length).toBeLessThanOrEqual(2);
    await reader.close();
  });

  it('calls this process’s readers at once for every batch, with the live position', () => {
    const db = notifyingDatabase();
    const signals = new ProjectionSignals(db.client());
    const positions: (string | null)[] = [];
    signals.on('timeline', (position) => positions.push(position));
    signals.advanced('timeline', 'p1');
    signals.advanced('timeline', 'p2');
    // Its own NOTIFY comes back as well, as a position-less hint.
    expect(positions.filter((position) => position !== null)).toEqual(['p1', 'p2']);
    return signals.close();
  });
});

describe('advancedNames', () => {
  it('reads a JSON array of names, a bare name, and the empty payload of a reconnect', () => {
    expect(advancedNames('["executions","timeline"]')).toEqual(['executions', 'timeline']);
    expect(advancedNames('timeline')).toEqual(['timeline']);
    expect(advancedNames('')).toBeNull();
    expect(advancedNames('[not json')).toBeNull();
  });
});
