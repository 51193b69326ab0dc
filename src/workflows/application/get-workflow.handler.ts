import { Inject } from '@nestjs/common';
import { type IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { WorkflowQueries, type WorkflowRevision } from './workflow.queries.js';

export class GetWorkflowQuery extends Query<WorkflowRevision> {
  constructor(
    readonly principal: Principal,
    readonly workspaceId: string,
    readonly name: string,
    /** Absent: the latest revision. */
    readonly revision: number | undefined,
  ) {
    super();
  }
}

/** One revision of a workflow, read from its stream (always current). */
@QueryHandler(GetWorkflowQuery)
export class GetWorkflowHandler implements IQueryHandler<GetWorkflowQuery> {
  constructor(@Inject(WorkflowQueries) private readonly workflows: WorkflowQueries) {}

  execute({ principal, workspaceId, name, revision }: GetWorkflowQuery): Promise<WorkflowRevision> {
    requireWorkspaceRole(principal, workspaceId, 'viewer');
    return this.workflows.getRevision(workspaceId, name, revision);
  }
}
