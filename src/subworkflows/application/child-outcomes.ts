import { systemActor } from '../../core/actors.js';
import type { Clock } from '../../core/clock.port.js';
import { InvalidStateError, NotFoundError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { ExecutionStreams } from '../../executions/application/execution-streams.js';
import type { RecordChildResult } from '../../executions/domain/execution.commands.js';
import type { ExecutionEvent } from '../../executions/domain/execution.events.js';
import type { ChildLink, ChildLinks } from '../infrastructure/child-links.js';

export const SUBWORKFLOWS_ACTOR = systemActor('subworkflows');

export type Ending = Extract<
  ExecutionEvent,
  { type: 'ExecutionSucceeded' | 'ExecutionFailed' | 'ExecutionTimedOut' | 'ExecutionCancelled' }
>;

export interface ChildOutcomesDeps {
  executions: Pick<ExecutionStreams, 'handle' | 'ids'>;
  links: Pick<ChildLinks, 'markEnded'>;
  clock: Clock;
  logger: Logger;
}

/**
 * What the subworkflow manager records on a parent about its child (its end, or why it never
 * started) and asks of an execution (its cancel). Each is idempotent: an end recorded again, or a
 * cancel of an execution already over, changes nothing.
 */
export class ChildOutcomes {
  constructor(private readonly deps: ChildOutcomesDeps) {}

  /** The child could not start: its node fails as if the child had. */
  async startFailed(link: ChildLink, message: string): Promise<void> {
    this.deps.logger.warn('a child execution could not start', { ...link, reason: message });
    await this.record(link, { outcome: 'failed', error: { code: 'child_start_failed', message, retryable: false } });
  }

  async recordEnd(link: ChildLink, event: Ending): Promise<void> {
    switch (event.type) {
      case 'ExecutionSucceeded':
        return this.record(link, { outcome: 'succeeded', output: event.data.output });
      case 'ExecutionFailed':
        return this.record(link, { outcome: 'failed', error: event.data.error });
      case 'ExecutionTimedOut':
        return this.record(link, { outcome: 'timed_out', error: { code: 'execution_timed_out', message: event.data.reason } });
      case 'ExecutionCancelled':
        return this.record(link, {
          outcome: 'cancelled',
          error: { code: 'execution_cancelled', message: event.data.reason ?? 'cancelled' },
        });
    }
  }

  async record(link: ChildLink, end: Omit<RecordChildResult['data'], 'childExecutionId' | 'nextAttemptId'>): Promise<void> {
    try {
      await this.deps.executions.handle(link.parentExecutionId, {
        type: 'RecordChildResult',
        data: { ...end, childExecutionId: link.childExecutionId, nextAttemptId: this.deps.executions.ids.uuid() },
        metadata: { now: this.deps.clock.now(), actor: SUBWORKFLOWS_ACTOR },
      });
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      this.deps.logger.warn('the parent of a child execution was not found', { ...link });
    }
    await this.deps.links.markEnded([link.childExecutionId]);
  }

  /** The parent was cancelled or ended: its running child is cancelled (an ended one answers no change). */
  cancelChild(link: ChildLink): Promise<void> {
    return this.requestCancel(link.childExecutionId, `parent execution ${link.parentExecutionId} was cancelled or ended`);
  }

  async requestCancel(executionId: string, reason: string): Promise<void> {
    try {
      await this.deps.executions.handle(executionId, {
        type: 'RequestCancel',
        data: { reason },
        metadata: { now: this.deps.clock.now(), actor: SUBWORKFLOWS_ACTOR },
      });
    } catch (error) {
      // Already over (its end is recorded as it comes), or never started (its start failed).
      if (!(error instanceof InvalidStateError) && !(error instanceof NotFoundError)) throw error;
    }
  }
}
