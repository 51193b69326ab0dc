import { Inject } from '@nestjs/common';
import { type IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { SchedulesReadModel, type ScheduleSummary } from '../../../projections/schedules.read-model.js';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { ValidationFailedError } from '../../core/errors.js';
import { IDENTIFIER_PATTERN } from '../../core/ids.js';
import { ReadConsistency, type ReadRequirement } from '../../projector/read-consistency.js';
import type { ListSchedulesQuery as ListFilters } from './request-schemas.js';

export interface SchedulesPage {
  schedules: ScheduleSummary[];
  nextCursor: string | null;
  /** The read model's checkpoint this page reflects. */
  position: string | null;
}

export class ListSchedulesQuery extends Query<SchedulesPage> {
  constructor(
    readonly principal: Principal,
    readonly workspaceId: string,
    readonly filters: Pick<ListFilters, 'cursor' | 'limit'>,
    readonly requirement: ReadRequirement,
  ) {
    super();
  }
}

/** A workspace's schedules by name, in pages, from the `schedules` read model (read-your-writes). */
@QueryHandler(ListSchedulesQuery)
export class ListSchedulesHandler implements IQueryHandler<ListSchedulesQuery> {
  constructor(
    @Inject(SchedulesReadModel) private readonly schedules: SchedulesReadModel,
    @Inject(ReadConsistency) private readonly consistency: ReadConsistency,
  ) {}

  async execute({ principal, workspaceId, filters, requirement }: ListSchedulesQuery): Promise<SchedulesPage> {
    requireWorkspaceRole(principal, workspaceId, 'viewer');
    const after = filters.cursor === undefined ? null : decodeCursor(filters.cursor);
    await this.consistency.waitFor('schedules', requirement);
    const { schedules, checkpoint } = await this.schedules.list({ workspaceId, after, limit: filters.limit + 1 });
    const page = schedules.slice(0, filters.limit);
    const last = page.at(-1);
    return {
      schedules: page,
      nextCursor: schedules.length > filters.limit && last !== undefined ? Buffer.from(last.name, 'utf8').toString('base64url') : null,
      position: checkpoint,
    };
  }
}

/** Opaque to clients: the last name of the previous page. */
function decodeCursor(cursor: string): string {
  const decoded = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  if (!IDENTIFIER_PATTERN.test(decoded))
    throw new ValidationFailedError('invalid cursor', [{ path: 'query.cursor', message: 'not a cursor of this list' }]);
  return decoded;
}
