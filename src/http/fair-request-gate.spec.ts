import { describe, expect, it } from '@jest/globals';
import { FairRequestGate } from './fair-request-gate.js';

describe('the fair request gate', () => {
  const gate = () => new FairRequestGate({ inFlight: 2, queued: 2 });
  const started: string[] = [];
  const enter = (g: FairRequestGate, key: string, name: string) => g.enter(key, () => started.push(name));

  describe('when a token has fewer requests in flight than its share', () => {
    it('lets them go at once', () => {
      const g = gate();
      expect(enter(g, 'a', 'a1').kind).toBe('go');
      expect(enter(g, 'a', 'a2').kind).toBe('go');
      expect(g.load('a')).toEqual({ running: 2, waiting: 0 });
    });
  });

  describe('when a token has its share in flight', () => {
    it('makes its next requests wait, first in first out, while another token goes at once', () => {
      started.length = 0;
      const g = gate();
      enter(g, 'a', 'a1');
      enter(g, 'a', 'a2');
      expect(enter(g, 'a', 'a3').kind).toBe('wait');
      expect(enter(g, 'a', 'a4').kind).toBe('wait');
      expect(enter(g, 'b', 'b1').kind).toBe('go');

      g.leave('a');
      expect(started).toEqual(['a3']);
      g.leave('a');
      expect(started).toEqual(['a3', 'a4']);
      expect(g.load('a')).toEqual({ running: 2, waiting: 0 });
    });

    it('refuses a request beyond its queue', () => {
      const g = gate();
      for (const name of ['a1', 'a2', 'a3', 'a4']) enter(g, 'a', name);
      expect(enter(g, 'a', 'a5').kind).toBe('refused');
      expect(g.load('a')).toEqual({ running: 2, waiting: 2 });
    });

    it('drops a waiting request whose client went away: it never goes on', () => {
      started.length = 0;
      const g = gate();
      enter(g, 'a', 'a1');
      enter(g, 'a', 'a2');
      const gone = enter(g, 'a', 'a3');
      enter(g, 'a', 'a4');
      if (gone.kind !== 'wait') throw new Error('a3 should wait');
      gone.cancel();

      g.leave('a');
      g.leave('a');
      g.leave('a');
      expect(started).toEqual(['a4']);
      expect(g.load('a')).toEqual({ running: 0, waiting: 0 });
    });
  });
});
