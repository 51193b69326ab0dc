import { describe, expect, it } from '@jest/globals';
import { recordedVersion, upcast, type Upcasters } from './upcasting.js';

describe('reading the schema version an event was recorded with', () => {
  it('takes an event recorded without one as version 1', () => {
    expect(recordedVersion({}, 3)).toBe(1);
  });

  it('takes the recorded version when this code knows it', () => {
    expect(recordedVersion({ schemaVersion: 2 }, 3)).toBe(2);
    expect(recordedVersion({ schemaVersion: 3 }, 3)).toBe(3);
  });

  it('refuses a version written by a newer release', () => {
    expect(recordedVersion({ schemaVersion: 4 }, 3)).toEqual({ problem: 'newer', version: 4 });
  });

  it.each([[0], [-1], [1.5], ['2'], [null]])('refuses %p, which is no version', (version) => {
    expect(recordedVersion({ schemaVersion: version }, 3)).toEqual({ problem: 'invalid', version });
  });
});

describe('upcasting a payload', () => {
  const upcasters: Upcasters = {
    Renamed: {
      1: (data) => ({ ...(data as object), steps: [...((data as { steps?: number[] }).steps ?? []), 1] }),
      2: (data) => ({ ...(data as object), steps: [...(data as { steps: number[] }).steps, 2] }),
    },
  };

  it('applies every step from the recorded version to the current one, in order', () => {
    expect(upcast(upcasters, 'Renamed', 1, 3, {})).toEqual({ steps: [1, 2] });
    expect(upcast(upcasters, 'Renamed', 2, 3, { steps: [] })).toEqual({ steps: [2] });
  });

  it('leaves a payload of the current version, or of a type that never changed, as it is', () => {
    const data = { steps: [] };
    expect(upcast(upcasters, 'Renamed', 3, 3, data)).toBe(data);
    expect(upcast(upcasters, 'Unchanged', 1, 3, data)).toBe(data);
    expect(upcast(upcasters, 'toString', 1, 3, data)).toBe(data);
  });
});
