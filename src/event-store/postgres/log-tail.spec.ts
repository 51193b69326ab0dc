import { describe, expect, it } from '@jest/globals';
import type { RecordedEvent } from '../../core/event-store.port.js';
import { LogTail } from './log-tail.js';
import { encodePosition } from './position.codec.js';

const at = (transactionId: number, seq: number) => encodePosition({ transactionId: BigInt(transactionId), seq: BigInt(seq) });

function event(streamId: string, transactionId: number, seq: number): RecordedEvent {
  return {
    id: `${transactionId}-${seq}`,
    type: 'T',
    streamId,
    revision: 0,
    position: at(transactionId, seq),
    data: null,
    metadata: {},
    recordedAt: '',
  };
}

/** A tail started at (10, 1) and extended by one refresh of `events`, up to `head`. */
function tailWith(events: RecordedEvent[], head = events[events.length - 1].position, capacity = 100) {
  const tail = new LogTail(capacity);
  tail.join(at(10, 1));
  tail.extend(tail.refreshPoint()!, events, head);
  return tail;
}

describe('log tail', () => {
  const log = [event('a-1', 11, 2), event('b-1', 11, 3), event('a-2', 12, 4), event('b-2', 14, 5)];

  describe('when a subscription is inside the window', () => {
    it('serves the events after its cursor, of its streams only, at most a batch', () => {
      const tail = tailWith(log);
      expect(tail.take(at(10, 1), ['a-'], 1)).toEqual({ events: [log[0]], next: log[0].position });
      expect(tail.take(log[0].position, ['a-'], 5)).toEqual({ events: [log[2]], next: log[3].position });
      expect(tail.take(log[1].position, null, 5)).toEqual({ events: log.slice(2), next: log[3].position });
    });

    it('moves a subscription past events of other streams up to the readable head', () => {
      const tail = tailWith(log, at(20, 9));
      expect(tail.take(log[2].position, ['a-'], 5)).toEqual({ events: [], next: at(20, 9) });
      expect(tail.hasBeyond(log[3].position)).toBe(true);
      expect(tail.hasBeyond(at(20, 9))).toBe(false);
    });
  });

  describe('when more events arrive than it holds', () => {
    it('drops the oldest, and a subscription behind them is sent to read directly', () => {
      const tail = tailWith(log, undefined, 3);
      expect(tail.take(at(10, 1), null, 5)).toBeNull();
      expect(tail.take(log[0].position, null, 5)).toEqual({ events: log.slice(1), next: log[3].position });
    });

    it('keeps exactly the newest events over many refreshes, one event each', () => {
      const tail = new LogTail(3);
      tail.join(at(10, 1));
      const seen: RecordedEvent[] = [];
      for (let n = 0; n < 20; n++) {
        const next = event(`s-${n}`, 11 + n, 1);
        tail.extend(tail.refreshPoint()!, [next], next.position);
        seen.push(next);
        const held = seen.slice(-3);
        const before = seen.length > 3 ? seen[seen.length - 4].position : at(10, 1);
        expect(tail.take(before, null, 10)).toEqual({ events: held, next: next.position });
        if (seen.length > 3) expect(tail.take(seen[seen.length - 5]?.position ?? at(10, 1), null, 10)).toBeNull();
      }
    });
  });

  describe('when two refreshes read from the same end (one behind an append, one of the watcher)', () => {
    it('adds what the further one read beyond the window once, whichever comes in first', () => {
      for (const order of ['short first', 'long first'] as const) {
        const tail = new LogTail(100);
        tail.join(at(10, 1));
        const point = tail.refreshPoint()!;
        const short = () => tail.extend(point, log.slice(0, 2), log[1].position);
        const long = () => tail.extend(point, log, at(20, 9));
        if (order === 'short first') expect([short(), long()]).toEqual([true, true]);
        else expect([long(), short()]).toEqual([true, true]);
        expect(tail.head).toBe(at(20, 9));
        expect(tail.take(at(10, 1), null, 10)).toEqual({ events: log, next: at(20, 9) });
      }
    });
  });

  describe('when the last subscription leaves', () => {
    it('stops, and drops a refresh that was reading for the previous window', () => {
      const tail = new LogTail(10);
      expect(tail.join(at(10, 1))).toBe(true);
      expect(tail.join(at(10, 1))).toBe(false);
      const point = tail.refreshPoint()!;
      tail.leave();
      tail.leave();
      expect(tail.refreshPoint()).toBeNull();
      expect(tail.take(at(10, 1), null, 5)).toBeNull();

      tail.join(at(30, 1));
      expect(tail.extend(point, log, log[3].position)).toBe(false);
      expect(tail.head).toBe(at(30, 1));
      expect(tail.take(at(30, 1), null, 5)).toEqual({ events: [], next: at(30, 1) });
    });
  });
});
