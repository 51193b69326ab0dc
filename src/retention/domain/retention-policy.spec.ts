import { describe, expect, it } from '@jest/globals';
import { fold } from '../../core/decider.js';
import { executionDecider } from '../../executions/domain/execution.decider.js';
import type { ExecutionEvent } from '../../executions/domain/execution.events.js';
import {
  aFailedExecution,
  aRunningExecution,
  ATTEMPT_2,
  attemptClaimed,
  attemptFailed,
  executionFailed,
  FAILURE,
  redriveRequested,
  time,
} from '../../../test/support/executions/execution-fixtures.js';
import { isBeyondHorizon, isExpired, laterPosition, retentionCutoff } from './retention-policy.js';

const DAY = 24 * 60 * 60 * 1000;
const state = (events: ExecutionEvent[]) => fold(executionDecider, events);

describe('retention policy', () => {
  describe('the cutoff', () => {
    it('lies whole days before now', () => {
      expect(retentionCutoff(time(30 * DAY), 30)).toEqual(time(0));
      expect(retentionCutoff(new Date('2030-03-01T12:00:00.000Z'), 1).toISOString()).toBe('2030-02-28T12:00:00.000Z');
    });
  });

  describe('when an execution ended before the cutoff', () => {
    it('is expired', () => {
      // Failed at 5 s after T0; 30 days later the cutoff is past it.
      expect(isExpired(state(aFailedExecution()), retentionCutoff(time(30 * DAY + 5_001), 30))).toBe(true);
    });

    it('is kept while its end is at or after the cutoff', () => {
      expect(isExpired(state(aFailedExecution()), retentionCutoff(time(30 * DAY + 5_000), 30))).toBe(false);
      expect(isExpired(state(aFailedExecution()), retentionCutoff(time(DAY), 30))).toBe(false);
    });
  });

  describe('when an execution has not ended', () => {
    it('is kept however old it is', () => {
      expect(isExpired(state(aRunningExecution()), retentionCutoff(time(3_650 * DAY), 30))).toBe(false);
    });

    it('is kept after a redrive took it back from its end', () => {
      const redriven = [...aFailedExecution(), redriveRequested({ at: 6_000, attemptNumber: 2 })];
      expect(isExpired(state(redriven), retentionCutoff(time(365 * DAY), 30))).toBe(false);
    });

    it('counts from the end of its last run', () => {
      const endedAgain = [
        ...aFailedExecution(),
        redriveRequested({ at: 6_000, attemptNumber: 2 }),
        attemptClaimed({ attemptId: ATTEMPT_2, at: 7_000 }),
        attemptFailed({ attemptId: ATTEMPT_2, at: 10 * DAY, error: FAILURE }),
        executionFailed({ at: 10 * DAY, error: FAILURE }),
      ];
      expect(isExpired(state(endedAgain), retentionCutoff(time(35 * DAY), 30))).toBe(false);
      expect(isExpired(state(endedAgain), retentionCutoff(time(41 * DAY), 30))).toBe(true);
    });
  });

  describe('a resume position', () => {
    const older = '00000000000000000010-0000000000000000005';
    const horizon = '00000000000000000012-0000000000000000009';
    const newer = '00000000000000000013-0000000000000000001';

    it('older than the horizon is beyond it: events after it may be gone', () => {
      expect(isBeyondHorizon(older, horizon)).toBe(true);
    });

    it('at or after the horizon is not', () => {
      expect(isBeyondHorizon(horizon, horizon)).toBe(false);
      expect(isBeyondHorizon(newer, horizon)).toBe(false);
    });

    it('is never beyond when nothing was deleted', () => {
      expect(isBeyondHorizon(older, null)).toBe(false);
    });

    it('takes the later of two positions as the horizon, which never moves back', () => {
      expect(laterPosition(older, horizon)).toBe(horizon);
      expect(laterPosition(newer, horizon)).toBe(newer);
      expect(laterPosition(null, older)).toBe(older);
      expect(laterPosition(older, null)).toBe(older);
    });
  });
});
