import { describe, expect, it } from '@jest/globals';
import { fold } from '../../core/decider.js';
import { deciderSpecification } from '../../../test/support/core/decider-specification.js';
import { refusal, treeDecider, type AdmitToTree, type CloseTree } from './tree.decider.js';
import type { TreeEvent } from './tree.events.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const iso = (ms: number) => new Date(T0 + ms).toISOString();
const meta = (at: number) => ({ now: new Date(T0 + at), actor: 'system:subworkflows' });
const { given } = deciderSpecification(treeDecider);

const admit = (n: number, bound: number, at = n * 1_000): AdmitToTree => ({
  type: 'AdmitToTree',
  data: { childExecutionId: `c${n}`, parentExecutionId: 'root', bound },
  metadata: meta(at),
});
const close = (at: number): CloseTree => ({ type: 'CloseTree', data: { reason: 'root cancelled' }, metadata: meta(at) });
const admitted = (n: number, executions: number, bound: number, at = n * 1_000): TreeEvent => ({
  type: 'TreeMemberAdmitted',
  data: { childExecutionId: `c${n}`, parentExecutionId: 'root', bound, executions, at: iso(at) },
});
const closed = (at: number): TreeEvent => ({ type: 'TreeClosed', data: { reason: 'root cancelled', at: iso(at) } });

describe('the sub-workflow tree', () => {
  describe('when a child is admitted', () => {
    it('admits it while the tree, root included, holds fewer executions than the bound', () => {
      given([admitted(1, 2, 3)])
        .when(admit(2, 3))
        .then([admitted(2, 3, 3)]);
    });

    it('admits nobody once the bound is reached, and says the tree is full', () => {
      const history = [admitted(1, 2, 3), admitted(2, 3, 3)];
      given(history).when(admit(3, 3)).thenNothingHappens();
      expect(refusal(fold(treeDecider, history), 'c3')).toBe('full');
    });

    it('admits no child at all under a bound of one: the root is the whole tree', () => {
      given([]).when(admit(1, 1)).thenNothingHappens();
    });

    it('admits a child asked again (a retried start) to the place it has, without a new fact', () => {
      const history = [admitted(1, 2, 2)];
      given(history).when(admit(1, 2)).thenNothingHappens();
      expect(refusal(fold(treeDecider, history), 'c1')).toBeNull();
    });

    it('admits nobody after the close, whatever room is left, and says the tree is closed', () => {
      const history = [admitted(1, 2, 100), closed(1_500)];
      given(history).when(admit(2, 100)).thenNothingHappens();
      expect(refusal(fold(treeDecider, history), 'c2')).toBe('closed');
    });
  });

  describe('when the root is cancelled', () => {
    it('closes the tree once', () => {
      given([admitted(1, 2, 10)])
        .when(close(2_000))
        .then([closed(2_000)]);
      given([closed(1_000)])
        .when(close(2_000))
        .thenNothingHappens();
    });

    it('closes a tree that has no member yet, so that a first child racing the cancel is refused', () => {
      given([])
        .when(close(500))
        .then([closed(500)]);
    });
  });
});
