import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Principal } from '../../auth/authorization.js';
import type { ExecutionStatus } from '../domain/execution.state.js';
import { authorizeOperator } from './authorize-operator.js';
import { ExecutionStreams, lastPosition } from './execution-streams.js';

export interface CancelExecutionResult {
  status: ExecutionStatus;
  cancelRequested: true;
  position: string;
}

export class CancelExecutionCommand extends Command<CancelExecutionResult> {
  constructor(
    readonly principal: Principal,
    readonly executionId: string,
    readonly reason: string | null,
  ) {
    super();
  }
}

/** Requests cancellation (promise 7, docs/architecture.md): one append; a second request is a no-op. */
@CommandHandler(CancelExecutionCommand)
export class CancelExecutionHandler implements ICommandHandler<CancelExecutionCommand> {
  constructor(private readonly executions: ExecutionStreams) {}

  async execute({ principal, executionId, reason }: CancelExecutionCommand): Promise<CancelExecutionResult> {
    const outcome = await this.executions.handle(executionId, (state) => {
      authorizeOperator(principal, state);
      return { type: 'RequestCancel', data: { reason }, metadata: { now: this.executions.clock.now(), actor: principal.subject } };
    });
    if (outcome.state.status === 'not_started') throw new Error('unreachable: the decider refuses a missing execution');
    return { status: outcome.state.status, cancelRequested: true, position: lastPosition(outcome) };
  }
}
