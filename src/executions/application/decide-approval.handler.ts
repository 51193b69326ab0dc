import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Principal } from '../../auth/authorization.js';
import type { ExecutionStatus } from '../domain/execution.state.js';
import { authorizeOperator } from './authorize-operator.js';
import { ExecutionStreams, lastPosition } from './execution-streams.js';
import type { ApprovalBody } from './request-schemas.js';

export interface DecideApprovalResult {
  status: ExecutionStatus;
  decision: ApprovalBody['decision'];
  position: string;
}

export class DecideApprovalCommand extends Command<DecideApprovalResult> {
  constructor(
    readonly principal: Principal,
    readonly executionId: string,
    readonly nodeId: string,
    readonly body: ApprovalBody,
  ) {
    super();
  }
}

/** Approves or rejects the pending approval of a node; bound to the digest of the action shown. */
@CommandHandler(DecideApprovalCommand)
export class DecideApprovalHandler implements ICommandHandler<DecideApprovalCommand> {
  constructor(private readonly executions: ExecutionStreams) {}

  async execute({ principal, executionId, nodeId, body }: DecideApprovalCommand): Promise<DecideApprovalResult> {
    const outcome = await this.executions.handle(executionId, (state) => {
      authorizeOperator(principal, state);
      return {
        type: 'DecideApproval',
        data: {
          nodeId,
          decision: body.decision,
          actionDigest: body.actionDigest,
          comment: body.comment ?? null,
          attemptId: this.executions.ids.uuid(),
        },
        metadata: { now: this.executions.clock.now(), actor: principal.subject },
      };
    });
    if (outcome.state.status === 'not_started') throw new Error('unreachable: the decider refuses a missing execution');
    return { status: outcome.state.status, decision: body.decision, position: lastPosition(outcome) };
  }
}
