import { uuidV5 } from '../../core/ids.js';
import { TOPICS, type Bus } from '../../core/bus.port.js';
import type { ExecutionError } from '../../executions/domain/execution.events.js';

export type ResultKind =
  | 'node_started'
  | 'node_succeeded'
  | 'node_failed'
  | 'node_skipped'
  | 'attempt_succeeded'
  | 'attempt_failed'
  | 'attempt_cancelled'
  | 'attempt_suspended';

export interface ResultBody {
  kind: ResultKind;
  nodeId?: string;
  output?: unknown;
  error?: ExecutionError;
  reason?: string;
}

/**
 * Publishes one attempt's results to `flostra.results.v1`, keyed by executionId so they stay in
 * order. `publish` resolves only once the broker acknowledged; a rejection is never swallowed
 * (promise 6): it propagates to the DAG runner, which fails the run visibly.
 */
export class ResultPublisher {
  private sequence = 0;

  constructor(
    private readonly bus: Bus,
    private readonly fence: { executionId: string; attemptId: string; workerId: string; fencingToken: number },
  ) {}

  async publish(result: ResultBody): Promise<void> {
    const sequence = this.sequence++;
    const message = {
      // Deterministic: a re-publish of the same result after a lost ack carries the same id.
      messageId: uuidV5(`${this.fence.attemptId}:${this.fence.fencingToken}:result:${sequence}`),
      ...this.fence,
      sequence,
      ...result,
    };
    await this.bus.publish(TOPICS.results, [{ key: this.fence.executionId, value: JSON.stringify(message) }]);
  }
}
