import { Inject, Optional } from '@nestjs/common';
import { type IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { PostgresTimelineReader } from '../../../projections/timeline.reader.js';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { NotFoundError, ValidationFailedError } from '../../core/errors.js';
import { ReadConsistency, type ReadRequirement } from '../../projector/read-consistency.js';
import { executionStreamId } from '../domain/execution-event.parser.js';
import { toHistoryEvent } from './execution.views.js';
import { APP_CONFIG, type AppConfig, DEFAULT_HISTORY_PAGE_MAX_BYTES } from '../../config/config.js';
import type { HistoryQuery } from './request-schemas.js';

export interface ExecutionHistoryPage {
  events: ReturnType<typeof toHistoryEvent>[];
  nextCursor: string | null;
}

export class GetExecutionHistoryQuery extends Query<ExecutionHistoryPage> {
  constructor(
    readonly principal: Principal,
    readonly executionId: string,
    readonly page: Pick<HistoryQuery, 'after' | 'limit'>,
    readonly requirement: ReadRequirement,
  ) {
    super();
  }
}

/**
 * An execution's events in log order, a page at a time, from the `timeline` read model. A page
 * ends early once its events' data pass FLOSTRA_HISTORY_PAGE_MAX_BYTES (promise 13): `nextCursor`
 * goes on from there.
 */
@QueryHandler(GetExecutionHistoryQuery)
export class GetExecutionHistoryHandler implements IQueryHandler<GetExecutionHistoryQuery> {
  constructor(
    @Inject(PostgresTimelineReader) private readonly timeline: PostgresTimelineReader,
    @Inject(ReadConsistency) private readonly consistency: ReadConsistency,
    @Optional() @Inject(APP_CONFIG) private readonly config: AppConfig | null = null,
  ) {}

  async execute({ principal, executionId, page, requirement }: GetExecutionHistoryQuery): Promise<ExecutionHistoryPage> {
    const execution = await this.consistency.readAfterStream(
      'timeline',
      requirement,
      executionStreamId(executionId),
      () => this.timeline.executionInfo(executionId),
      (found) => found?.lastRevision ?? null,
    );
    if (execution === null) throw new NotFoundError('execution not found');
    requireWorkspaceRole(principal, execution.workspaceId, 'viewer', 'execution not found');
    // Any event's position will do (an SSE id of a workspace stream, too); anything else is a mistake.
    if (page.after !== undefined && !(await this.timeline.hasEventAt(page.after))) {
      throw new ValidationFailedError('after is not the position of any event', [{ path: 'after', message: 'unknown position' }]);
    }
    const maxBytes = this.config?.historyPageMaxBytes ?? DEFAULT_HISTORY_PAGE_MAX_BYTES;
    const { events, more } = await this.timeline.readExecutionPage(executionId, page.after ?? null, page.limit, maxBytes);
    const last = events.at(-1);
    return { events: events.map(toHistoryEvent), nextCursor: more && last !== undefined ? last.position : null };
  }
}
