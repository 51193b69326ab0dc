import { describe, expect, it } from '@jest/globals';
import type { JoinTrigger } from './workflow-graph.schema.js';
import { decideTrigger, type FinalOutcome } from './trigger-rules.js';

const preds = (...outcomes: FinalOutcome[]) => outcomes.map((outcome, i) => ({ id: `P${i}`, outcome }));

describe('decideTrigger', () => {
  it.each<[JoinTrigger, FinalOutcome[], boolean]>([
    ['all_success', [], true],
    ['all_success', ['succeeded', 'succeeded'], true],
    ['all_success', ['succeeded', 'failed'], false],
    ['all_success', ['succeeded', 'skipped'], false],
    ['all_done', ['failed', 'skipped'], true],
    ['all_done', ['skipped'], true],
    ['one_success', ['failed', 'succeeded'], true],
    ['one_success', ['failed', 'skipped'], false],
    ['one_success', [], true],
  ])('%s over %j runs: %s', (trigger, outcomes, run) => {
    expect(decideTrigger(trigger, preds(...outcomes)).run).toBe(run);
  });

  it('names the predecessor that blocked an all_success node', () => {
    expect(decideTrigger('all_success', preds('succeeded', 'skipped'))).toEqual({
      run: false,
      reason: 'all_success: predecessor P1 skipped',
    });
  });
});
