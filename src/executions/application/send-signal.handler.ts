import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Principal } from '../../auth/authorization.js';
import { sha256OfCanonical } from '../../core/canonical-json.js';
import { authorizeOperator } from './authorize-operator.js';
import { ExecutionStreams, positionOf } from './execution-streams.js';

export interface SendSignalResult {
  signalId: string;
  position: string;
}

export class SendSignalCommand extends Command<SendSignalResult> {
  constructor(
    readonly principal: Principal,
    readonly executionId: string,
    readonly name: string,
    readonly payload: unknown,
    readonly idempotencyKey: string | null,
  ) {
    super();
  }
}

/**
 * Sends a signal to an execution (docs/api.md, "Signals"): recorded on its stream, taken by the
 * `wait_signal` node of its name that waited longest, or kept for the first that asks. With an
 * Idempotency-Key, the same key and signal again answers the first signal's id.
 */
@CommandHandler(SendSignalCommand)
export class SendSignalHandler implements ICommandHandler<SendSignalCommand> {
  constructor(private readonly executions: ExecutionStreams) {}

  async execute({ principal, executionId, name, payload, idempotencyKey }: SendSignalCommand): Promise<SendSignalResult> {
    const signalId = this.executions.ids.uuid();
    const idempotency = idempotencyKey === null ? null : { key: idempotencyKey, fingerprint: sha256OfCanonical({ name, payload }) };
    const outcome = await this.executions.handle(executionId, (state) => {
      authorizeOperator(principal, state);
      return {
        type: 'SendSignal',
        data: { signalId, name, payload, idempotency, nextAttemptId: this.executions.ids.uuid() },
        metadata: { now: this.executions.clock.now(), actor: principal.subject },
      };
    });
    const state = outcome.state;
    if (state.status === 'not_started') throw new Error('unreachable: the decider refuses a missing execution');
    const recorded = state.signals.find((s) => (idempotency === null ? s.signalId === signalId : s.idempotency?.key === idempotency.key));
    if (recorded === undefined) throw new Error('a handled signal left no record');
    const position =
      outcome.appended?.position ??
      positionOf(outcome.history, (e) => e.type === 'SignalReceived' && (e.data as { signalId: string }).signalId === recorded.signalId);
    return { signalId: recorded.signalId, position };
  }
}
