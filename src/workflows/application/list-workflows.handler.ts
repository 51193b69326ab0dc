import { Inject } from '@nestjs/common';
import { type IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { AuditReadModel } from '../../../projections/audit.read-model.js';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { ReadConsistency, type ReadRequirement } from '../../projector/read-consistency.js';

/** One workflow as the list shows it: its latest revision, who published it and when. */
export interface WorkflowSummary {
  name: string;
  revision: number;
  digest: string;
  publishedBy: string;
  publishedAt: string;
  position: string;
}

export class ListWorkflowsQuery extends Query<{ items: WorkflowSummary[] }> {
  constructor(
    readonly principal: Principal,
    readonly workspaceId: string,
    readonly requirement: ReadRequirement,
  ) {
    super();
  }
}

/**
 * A workspace's workflows by name, each with its latest revision, from the `audit` read model
 * (every publication is on it). Read-your-writes like every read-model query.
 */
@QueryHandler(ListWorkflowsQuery)
export class ListWorkflowsHandler implements IQueryHandler<ListWorkflowsQuery> {
  constructor(
    @Inject(AuditReadModel) private readonly audit: AuditReadModel,
    @Inject(ReadConsistency) private readonly consistency: ReadConsistency,
  ) {}

  async execute({ principal, workspaceId, requirement }: ListWorkflowsQuery): Promise<{ items: WorkflowSummary[] }> {
    requireWorkspaceRole(principal, workspaceId, 'viewer');
    await this.consistency.waitFor('audit', requirement);
    const entries = await this.audit.latestPublications(workspaceId);
    return {
      items: entries.map((entry) => ({
        name: entry.workflow ?? '',
        revision: Number(entry.detail['revision']),
        digest: String(entry.detail['digest']),
        publishedBy: entry.actor,
        publishedAt: entry.at,
        position: entry.position,
      })),
    };
  }
}
