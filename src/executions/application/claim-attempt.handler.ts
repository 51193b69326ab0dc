import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { type Principal, requireGlobalRole } from '../../auth/authorization.js';
import { workerActor } from '../../core/actors.js';
import type { ExecutionError, WorkflowSnapshot } from '../domain/execution.events.js';
import { failedInTry } from '../domain/tasks.js';
import { ExecutionStreams } from './execution-streams.js';
import { runningAttempt } from './running-attempt.js';

export interface ClaimAttemptResult {
  executionId: string;
  workspaceId: string;
  attemptId: string;
  attemptNumber: number;
  fencingToken: number;
  leaseExpiresAt: string;
  heartbeatIntervalMs: number;
  workflow: WorkflowSnapshot;
  input: Record<string, unknown>;
  /** Outputs of the nodes that already succeeded in earlier attempts: reused, never run again. */
  completedNodes: Record<string, unknown>;
  /** Task nodes whose task failed past its retries earlier in this try: final, never run again. */
  failedNodes: Record<string, ExecutionError>;
  /** Outputs of the items of unfinished map nodes that succeeded earlier, by node id, then index: never run again. */
  completedItems: Record<string, Record<string, unknown>>;
}

export class ClaimAttemptCommand extends Command<ClaimAttemptResult> {
  constructor(
    readonly principal: Principal,
    readonly executionId: string,
    readonly attemptId: string,
    readonly workerId: string,
  ) {
    super();
  }
}

/** Three heartbeats fit in one lease, so one lost heartbeat does not cost the lease. */
export function heartbeatInterval(leaseMs: number): number {
  return Math.max(100, Math.floor(leaseMs / 3));
}

/** A worker claims a dispatched attempt (promise 3, docs/architecture.md: only the appended claim runs it). */
@CommandHandler(ClaimAttemptCommand)
export class ClaimAttemptHandler implements ICommandHandler<ClaimAttemptCommand> {
  constructor(private readonly executions: ExecutionStreams) {}

  async execute({ principal, executionId, attemptId, workerId }: ClaimAttemptCommand): Promise<ClaimAttemptResult> {
    requireGlobalRole(principal, 'worker');
    const outcome = await this.executions.handle(executionId, {
      type: 'ClaimAttempt',
      data: { attemptId, workerId },
      metadata: { now: this.executions.clock.now(), actor: workerActor(workerId) },
    });
    const { state, attempt } = runningAttempt(outcome, attemptId);
    const completedNodes: Record<string, unknown> = {};
    for (const node of Object.values(state.nodes)) if (node.status === 'succeeded') completedNodes[node.nodeId] = node.output;
    return {
      executionId,
      workspaceId: state.workspaceId,
      attemptId,
      attemptNumber: attempt.attemptNumber,
      fencingToken: attempt.fencingToken,
      leaseExpiresAt: attempt.leaseExpiresAt,
      heartbeatIntervalMs: heartbeatInterval(state.workflow.graph.timeouts.leaseMs),
      workflow: state.workflow,
      input: state.input,
      completedNodes,
      failedNodes: failedInTry(state),
      completedItems: Object.fromEntries(
        Object.entries(state.mapItems ?? {}).filter(([nodeId]) => state.nodes[nodeId]?.status !== 'succeeded'),
      ),
    };
  }
}
