import { type IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import type { SecretSummary } from './put-secret.handler.js';
import { SecretStreams } from './secret-streams.js';

export class ListSecretsQuery extends Query<{ items: SecretSummary[] }> {
  constructor(
    readonly principal: Principal,
    readonly workspaceId: string,
  ) {
    super();
  }
}

/** The workspace's secrets, by name: names, versions and times, never a value. Read from the stream: always current. */
@QueryHandler(ListSecretsQuery)
export class ListSecretsHandler implements IQueryHandler<ListSecretsQuery> {
  constructor(private readonly secrets: SecretStreams) {}

  async execute({ principal, workspaceId }: ListSecretsQuery): Promise<{ items: SecretSummary[] }> {
    requireWorkspaceRole(principal, workspaceId, 'editor');
    const state = await this.secrets.load(workspaceId);
    const items = [...state.current.values()]
      .map(({ name, version, updatedAt }) => ({ name, version, updatedAt }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { items };
  }
}
