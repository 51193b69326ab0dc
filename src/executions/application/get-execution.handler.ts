import { Inject, Optional } from '@nestjs/common';
import { type IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { ExecutionsReadModel } from '../../../projections/executions.read-model.js';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { NotFoundError } from '../../core/errors.js';
import { ReadConsistency, type ReadRequirement } from '../../projector/read-consistency.js';
import { executionStreamId } from '../domain/execution-event.parser.js';
import { APP_CONFIG, type AppConfig, DEFAULT_VIEW_VALUE_MAX_BYTES } from '../../config/config.js';
import { boundedView, type ExecutionView } from './bounded-view.js';

export class GetExecutionQuery extends Query<ExecutionView & { traceId: string | null }> {
  constructor(
    readonly principal: Principal,
    readonly executionId: string,
    readonly requirement: ReadRequirement,
  ) {
    super();
  }
}

/**
 * One execution from the `executions` read model, once it reflects what the request needs
 * (read-your-writes, read-consistency.ts). Authorization comes from the execution's workspace,
 * never the URL (promise 10, docs/architecture.md). Large values are summarized (`boundedView`).
 */
@QueryHandler(GetExecutionQuery)
export class GetExecutionHandler implements IQueryHandler<GetExecutionQuery> {
  constructor(
    @Inject(ExecutionsReadModel) private readonly executions: ExecutionsReadModel,
    @Inject(ReadConsistency) private readonly consistency: ReadConsistency,
    @Optional() @Inject(APP_CONFIG) private readonly config: AppConfig | null = null,
  ) {}

  async execute({ principal, executionId, requirement }: GetExecutionQuery) {
    const document = await this.consistency.readAfterStream(
      'executions',
      requirement,
      executionStreamId(executionId),
      () => this.executions.get(executionId),
      (found) => found?.revision ?? null,
    );
    if (document === null) throw new NotFoundError('execution not found');
    requireWorkspaceRole(principal, document.state.workspaceId, 'viewer', 'execution not found');
    const valueMaxBytes = this.config?.executionViewValueMaxBytes ?? DEFAULT_VIEW_VALUE_MAX_BYTES;
    return { ...(await boundedView(document.state, document.position, valueMaxBytes)), traceId: document.traceId };
  }
}
