import { Inject } from '@nestjs/common';
import { type IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { ExecutionsReadModel } from '../../../projections/executions.read-model.js';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { ReadConsistency, type ReadRequirement } from '../../projector/read-consistency.js';
import { decodeCursor, encodeCursor, toSummaryView } from './execution.views.js';
import type { ListExecutionsQuery as ListFilters } from './request-schemas.js';

export interface ExecutionsPage {
  executions: ReturnType<typeof toSummaryView>[];
  nextCursor: string | null;
  /** The read model's checkpoint this page reflects. */
  position: string | null;
}

export class ListExecutionsQuery extends Query<ExecutionsPage> {
  constructor(
    readonly principal: Principal,
    readonly workspaceId: string,
    readonly filters: Pick<ListFilters, 'status' | 'workflow' | 'cursor' | 'limit'>,
    readonly requirement: ReadRequirement,
  ) {
    super();
  }
}

/** A workspace's executions, newest first, filtered by status and workflow, in pages. */
@QueryHandler(ListExecutionsQuery)
export class ListExecutionsHandler implements IQueryHandler<ListExecutionsQuery> {
  constructor(
    @Inject(ExecutionsReadModel) private readonly executions: ExecutionsReadModel,
    @Inject(ReadConsistency) private readonly consistency: ReadConsistency,
  ) {}

  async execute({ principal, workspaceId, filters, requirement }: ListExecutionsQuery): Promise<ExecutionsPage> {
    requireWorkspaceRole(principal, workspaceId, 'viewer');
    const before = filters.cursor === undefined ? null : decodeCursor(filters.cursor);
    await this.consistency.waitFor('executions', requirement);
    const { executions, checkpoint } = await this.executions.list({
      workspaceId,
      statuses: filters.status ?? null,
      workflowName: filters.workflow ?? null,
      before,
      limit: filters.limit + 1,
    });
    const page = executions.slice(0, filters.limit);
    const last = page.at(-1);
    return {
      executions: page.map(toSummaryView),
      nextCursor: executions.length > filters.limit && last !== undefined ? encodeCursor(last.createdPosition) : null,
      position: checkpoint,
    };
  }
}
