import { describe, expect, it } from '@jest/globals';
import { CatchUpSlots } from '../../src/live/catch-up-slots.js';

describe('catch-up slots', () => {
  it('run every read, never more than the limit at once, failures included', async () => {
    const slots = new CatchUpSlots(() => 3);
    let running = 0;
    let peak = 0;
    const read = (i: number) =>
      slots.run(async () => {
        peak = Math.max(peak, ++running);
        await new Promise((resolve) => setImmediate(resolve));
        running--;
        if (i % 5 === 0) throw new Error(`read ${i} failed`);
        return i;
      });
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => read(i)));
    expect(peak).toBe(3);
    expect(results.filter((r) => r.status === 'fulfilled').map((r) => r.value)).toEqual(
      Array.from({ length: 20 }, (_, i) => i).filter((i) => i % 5 !== 0),
    );
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(4);
    expect(await read(1)).toBe(1);
  });
});
