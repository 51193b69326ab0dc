import { describe, expect, it } from '@jest/globals';
import { FairRequestGate, type GateEntry } from './fair-request-gate.js';

describe('the fair request gate', () => {
  const WINDOW = 1_000;
  let started: string[] = [];
  const gate = () => {
    started = [];
    return new FairRequestGate({ inFlight: 2, queued: 2, contentionWindowMs: WINDOW });
  };
  const enter = (g: FairRequestGate, key: string, name: string, now = 0): GateEntry => g.enter(key, now, () => started.push(name));

  describe('when a token is alone', () => {
    it('lets all its requests go at once', () => {
      const g = gate();
      for (const name of ['a1', 'a2', 'a3', 'a4', 'a5']) expect(enter(g, 'a', name).kind).toBe('go');
      expect(g.load('a')).toEqual({ running: 5, waiting: 0 });
    });

    it('is alone again once another token’s last request is older than the window and ended', () => {
      const g = gate();
      expect(enter(g, 'b', 'b1', 0).kind).toBe('go');
      g.leave('b', 10);
      enter(g, 'a', 'a1', 500);
      enter(g, 'a', 'a2', 500);
      expect(enter(g, 'a', 'a3', 500).kind).toBe('wait');
      expect(enter(g, 'a', 'a4', WINDOW + 1).kind).toBe('wait');
      g.leave('a', WINDOW + 1);
      expect(started).toEqual(['a3', 'a4']);
      expect(g.load('a')).toEqual({ running: 3, waiting: 0 });
    });
  });

  describe('when another token is active', () => {
    it('holds a token to its share, first in first out, while the other goes at once', () => {
      const g = gate();
      enter(g, 'b', 'b0');
      g.leave('b', 1);
      enter(g, 'a', 'a1', 2);
      enter(g, 'a', 'a2', 2);
      expect(enter(g, 'a', 'a3', 3).kind).toBe('wait');
      expect(enter(g, 'a', 'a4', 3).kind).toBe('wait');
      expect(enter(g, 'b', 'b1', 4).kind).toBe('go');

      g.leave('a', 5);
      expect(started).toEqual(['a3']);
      g.leave('a', 6);
      expect(started).toEqual(['a3', 'a4']);
      expect(g.load('a')).toEqual({ running: 2, waiting: 0 });
    });

    it('counts a token with a request still running as active, however old', () => {
      const g = gate();
      enter(g, 'b', 'b1', 0);
      enter(g, 'a', 'a1', 5 * WINDOW);
      enter(g, 'a', 'a2', 5 * WINDOW);
      expect(enter(g, 'a', 'a3', 5 * WINDOW).kind).toBe('wait');
    });

    it('takes new requests of a token that ran over its share only as its running ones end', () => {
      const g = gate();
      for (const name of ['a1', 'a2', 'a3']) enter(g, 'a', name, 0);
      enter(g, 'b', 'b1', 1);
      expect(enter(g, 'a', 'a4', 2).kind).toBe('wait');
      g.leave('a', 3);
      expect(started).toEqual([]);
      g.leave('a', 4);
      expect(started).toEqual(['a4']);
    });

    it('refuses a request beyond the token’s queue', () => {
      const g = gate();
      enter(g, 'b', 'b1');
      for (const name of ['a1', 'a2', 'a3', 'a4']) enter(g, 'a', name);
      expect(enter(g, 'a', 'a5').kind).toBe('refused');
      expect(g.load('a')).toEqual({ running: 2, waiting: 2 });
    });

    it('drops a waiting request whose client went away: it never goes on', () => {
      const g = gate();
      enter(g, 'b', 'b1');
      enter(g, 'a', 'a1');
      enter(g, 'a', 'a2');
      const gone = enter(g, 'a', 'a3');
      enter(g, 'a', 'a4');
      if (gone.kind !== 'wait') throw new Error('a3 should wait');
      gone.cancel();

      g.leave('a', 1);
      g.leave('a', 1);
      g.leave('a', 1);
      expect(started).toEqual(['a4']);
      expect(g.load('a')).toEqual({ running: 0, waiting: 0 });
    });
  });
});
