import { describe, expect, it } from '@jest/globals';
import { fold } from '../../core/decider.js';
import { deciderSpecification } from '../../../test/support/core/decider-specification.js';
import { quotaDecider, type GrantSlots, type ReleaseSlots } from './quota.decider.js';
import type { QuotaEvent } from './quota.events.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const iso = (ms: number) => new Date(T0 + ms).toISOString();
const meta = (at: number) => ({ now: new Date(T0 + at), actor: 'system:dispatcher' });
const { given } = deciderSpecification(quotaDecider);

const slot = (n: number) => ({ executionId: `e${n}`, attemptId: `a${n}` });
const grants = (ns: number[], bound: number | null, at: number): GrantSlots => ({
  type: 'GrantSlots',
  data: { slots: ns.map(slot), bound },
  metadata: meta(at),
});
const grant = (n: number, bound: number | null, at = n * 1_000) => grants([n], bound, at);
const releases = (ns: number[], at: number): ReleaseSlots => ({ type: 'ReleaseSlots', data: { slots: ns.map(slot) }, metadata: meta(at) });
const release = (n: number, at = n * 1_000) => releases([n], at);
const granted = (n: number, held: number, bound: number | null, at = n * 1_000): QuotaEvent => ({
  type: 'SlotGranted',
  data: { executionId: `e${n}`, attemptId: `a${n}`, bound, held, at: iso(at) },
});
const released = (n: number, at = n * 1_000): QuotaEvent => ({
  type: 'SlotReleased',
  data: { executionId: `e${n}`, attemptId: `a${n}`, at: iso(at) },
});

describe('the quota semaphore', () => {
  describe('GrantSlots', () => {
    it('grants a slot while fewer than the bound are held', () => {
      given([granted(1, 1, 2)])
        .when(grant(2, 2))
        .then([granted(2, 2, 2)]);
    });

    it('grants nothing when the bound is reached: the run keeps waiting', () => {
      given([granted(1, 1, 2), granted(2, 2, 2)])
        .when(grant(3, 2))
        .thenNothingHappens();
    });

    it('grants nothing new to an attempt that holds a slot already (a retried or concurrent grant)', () => {
      given([granted(1, 1, 1)])
        .when(grant(1, 1))
        .thenNothingHappens();
    });

    it('grants again once a slot was released', () => {
      given([granted(1, 1, 1), released(1)])
        .when(grant(2, 1))
        .then([granted(2, 1, 1)]);
    });

    it('grants nothing after the bound was lowered below the slots held, until enough are released', () => {
      const history = [granted(1, 1, 3), granted(2, 2, 3), granted(3, 3, 3)];
      given(history).when(grant(4, 1)).thenNothingHappens();
      given([...history, released(1), released(2)])
        .when(grant(4, 1))
        .thenNothingHappens();
      given([...history, released(1), released(2), released(3)])
        .when(grant(4, 1))
        .then([granted(4, 1, 1)]);
    });

    it('grants whatever is held without a bound', () => {
      const many = Array.from({ length: 50 }, (_, i) => granted(i + 1, i + 1, null));
      given(many)
        .when(grant(51, null))
        .then([granted(51, 51, null)]);
    });
  });

  describe('GrantSlots for several runs', () => {
    it('grants in the order asked while there is room, and nobody after the first that finds none', () => {
      given([granted(1, 1, 3)])
        .when(grants([2, 3, 4], 3, 9_000))
        .then([granted(2, 2, 3, 9_000), granted(3, 3, 3, 9_000)]);
    });

    it('skips the runs that hold a slot already and grants the next ones', () => {
      given([granted(1, 1, 3), granted(2, 2, 3)])
        .when(grants([1, 2, 3, 4], 3, 9_000))
        .then([granted(3, 3, 3, 9_000)]);
    });

    it('grants every run asked without a bound', () => {
      given([])
        .when(grants([1, 2, 3], null, 9_000))
        .then([granted(1, 1, null, 9_000), granted(2, 2, null, 9_000), granted(3, 3, null, 9_000)]);
    });
  });

  describe('ReleaseSlots', () => {
    it('gives back the slots of several runs at once, once each, and nothing for those that hold none', () => {
      given([granted(1, 1, 3), granted(2, 2, 3)])
        .when(releases([1, 3, 2, 1], 9_000))
        .then([released(1, 9_000), released(2, 9_000)]);
    });

    it('gives back a held slot', () => {
      given([granted(1, 1, 2)])
        .when(release(1, 5_000))
        .then([released(1, 5_000)]);
    });

    it('gives back nothing for an attempt that holds none (released already, or never granted)', () => {
      given([granted(1, 1, 2), released(1)])
        .when(release(1))
        .thenNothingHappens();
      given([granted(1, 1, 2)])
        .when(release(2))
        .thenNothingHappens();
    });
  });

  it('folds the slots held, by attempt', () => {
    const state = fold(quotaDecider, [granted(1, 1, 3), granted(2, 2, 3), released(1), granted(3, 2, 3)]);
    expect([...state.holders]).toEqual([
      ['a2', 'e2'],
      ['a3', 'e3'],
    ]);
  });
});
