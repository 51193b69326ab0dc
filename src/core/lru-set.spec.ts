import { describe, expect, it } from '@jest/globals';
import { LruSet } from './lru-set.js';
import { StreamStateCache } from './stream-state-cache.js';

describe('LruSet', () => {
  it('remembers up to its capacity and forgets the least recently used first', () => {
    const set = new LruSet(3);
    for (const key of ['a', 'b', 'c']) set.add(key);
    expect(set.has('a')).toBe(true); // a is now the most recently used: b is the oldest
    set.add('d');
    expect(set.size).toBe(3);
    expect(set.has('b')).toBe(false);
    expect(['a', 'c', 'd'].every((key) => set.has(key))).toBe(true);
  });

  it('keeps its bound over a long run of new keys, remembering exactly the newest', () => {
    const set = new LruSet(1_000);
    for (let i = 0; i < 50_000; i++) set.add(`m-${i}`);
    expect(set.size).toBe(1_000);
    expect(set.has('m-48999')).toBe(false);
    expect(set.has('m-49000')).toBe(true);
    expect(set.has('m-49999')).toBe(true);
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new LruSet(0)).toThrow(RangeError);
    expect(() => new LruSet(1.5)).toThrow(RangeError);
  });
});

describe('StreamStateCache', () => {
  it('evicts the least recently read stream, and has() does not count as a read', () => {
    const cache = new StreamStateCache<string>(2);
    cache.set('s-1', { revision: 0, state: 'one' });
    cache.set('s-2', { revision: 0, state: 'two' });
    expect(cache.has('s-1')).toBe(true); // not a use: s-1 stays the oldest
    cache.set('s-3', { revision: 0, state: 'three' });
    expect(cache.get('s-1')).toBeUndefined();
    expect(cache.get('s-2')?.state).toBe('two'); // s-2 read: s-3 is now the oldest
    cache.set('s-4', { revision: 0, state: 'four' });
    expect(cache.has('s-3')).toBe(false);
    expect(cache.get('s-2')?.state).toBe('two');
  });

  it('never rolls an entry back to an older revision', () => {
    const cache = new StreamStateCache<string>(10);
    cache.set('s', { revision: 5, state: 'at 5' });
    cache.set('s', { revision: 4, state: 'at 4' });
    expect(cache.get('s')).toEqual({ revision: 5, state: 'at 5' });
    cache.set('s', { revision: 6, state: 'at 6' });
    expect(cache.get('s')?.state).toBe('at 6');
    cache.delete('s');
    expect(cache.get('s')).toBeUndefined();
  });
});
