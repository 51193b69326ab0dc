import { Inject } from '@nestjs/common';
import { type IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { AuditReadModel, type AuditEntry } from '../../../projections/audit.read-model.js';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { ValidationFailedError } from '../../core/errors.js';
import { ReadConsistency, type ReadRequirement } from '../../projector/read-consistency.js';
import type { AuditQuery } from './request-schemas.js';

/** One entry as the API shows it: `executionId` and `workflow` only where the event has them. */
export interface AuditItem {
  position: string;
  at: string;
  actor: string;
  action: string;
  executionId?: string;
  workflow?: string;
  detail: AuditEntry['detail'];
}

export interface AuditPage {
  items: AuditItem[];
  /** The `before` of the next page; null on the last one. */
  next: string | null;
}

export class GetAuditTrailQuery extends Query<AuditPage> {
  constructor(
    readonly principal: Principal,
    readonly workspaceId: string,
    readonly page: Pick<AuditQuery, 'before' | 'limit'>,
    readonly requirement: ReadRequirement,
  ) {
    super();
  }
}

/**
 * A workspace's audit trail from the `audit` read model, newest first, a page at a time, for
 * the workspace's admins. Read-your-writes like every read-model query (read-consistency.ts).
 */
@QueryHandler(GetAuditTrailQuery)
export class GetAuditTrailHandler implements IQueryHandler<GetAuditTrailQuery> {
  constructor(
    @Inject(AuditReadModel) private readonly audit: AuditReadModel,
    @Inject(ReadConsistency) private readonly consistency: ReadConsistency,
  ) {}

  async execute({ principal, workspaceId, page, requirement }: GetAuditTrailQuery): Promise<AuditPage> {
    requireWorkspaceRole(principal, workspaceId, 'admin');
    await this.consistency.waitFor('audit', requirement);
    // A page starts before the entry that ended the previous one (its `next`); any other value is a mistake.
    if (page.before !== undefined && !(await this.audit.hasEntry(workspaceId, page.before))) {
      throw new ValidationFailedError('before is not the position of an entry of this audit trail', [
        { path: 'query.before', message: 'not the position of an entry of this audit trail; pass a page’s `next`' },
      ]);
    }
    const entries = await this.audit.page(workspaceId, page.before ?? null, page.limit + 1);
    const shown = entries.slice(0, page.limit);
    const last = shown.at(-1);
    return { items: shown.map(toItem), next: entries.length > page.limit && last !== undefined ? last.position : null };
  }
}

function toItem(entry: AuditEntry): AuditItem {
  return {
    position: entry.position,
    at: entry.at,
    actor: entry.actor,
    action: entry.action,
    ...(entry.executionId === null ? {} : { executionId: entry.executionId }),
    ...(entry.workflow === null ? {} : { workflow: entry.workflow }),
    detail: entry.detail,
  };
}
