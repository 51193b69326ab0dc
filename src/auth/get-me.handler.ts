import { type IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import type { GlobalRole, Principal, WorkspaceGrant } from './principal.js';

export interface Me {
  subject: string;
  workspaces: { workspaceId: string; role: WorkspaceGrant }[];
  global: GlobalRole[];
  via: 'token' | 'session';
}

export class GetMeQuery extends Query<Me> {
  constructor(
    readonly principal: Principal,
    readonly via: 'token' | 'session',
  ) {
    super();
  }
}

/** The caller's own grant (`GET /v1/me`): what a client such as the web console shows and offers. */
@QueryHandler(GetMeQuery)
export class GetMeHandler implements IQueryHandler<GetMeQuery> {
  async execute({ principal, via }: GetMeQuery): Promise<Me> {
    return {
      subject: principal.subject,
      workspaces: [...principal.workspaces]
        .map(([workspaceId, role]) => ({ workspaceId, role }))
        .sort((a, b) => (a.workspaceId < b.workspaceId ? -1 : a.workspaceId > b.workspaceId ? 1 : 0)),
      global: [...principal.global].sort(),
      via,
    };
  }
}
