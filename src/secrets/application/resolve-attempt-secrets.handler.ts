import { type IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { ForbiddenError } from '../../auth/auth.errors.js';
import { type Principal, requireGlobalRole } from '../../auth/authorization.js';
import { SecretNotFoundError } from '../../core/errors.js';
import { ExecutionStreams } from '../../executions/application/execution-streams.js';
import { requireLiveClaim } from '../../executions/domain/execution.decider.js';
import { referencedSecretNames } from '../../workflows/domain/secret-references.js';
import { SecretValueUnreadableError, SecretVault } from '../infrastructure/secret-vault.js';
import { SecretStreams } from './secret-streams.js';

export interface ResolvedSecrets {
  /** By name; an object with own properties only (a name may be `__proto__`). */
  values: Record<string, string>;
}

export class ResolveAttemptSecretsQuery extends Query<ResolvedSecrets> {
  constructor(
    readonly principal: Principal,
    readonly executionId: string,
    readonly attemptId: string,
    readonly workerId: string,
    readonly fencingToken: number,
    readonly names: readonly string[],
  ) {
    super();
  }
}

/** Reads again when a value's row went away under a concurrent replace or delete. */
const MAX_READS = 3;

/**
 * Promise 12 (docs/architecture.md): the only answer that carries values. A worker's resolution
 * of the secrets its claimed graph references (docs/api.md, "Worker
 * protocol"): a query on the live claim, not an event, so it appends nothing. It answers only
 * the current claim of the attempt, with the very fence heartbeats pass (attempt, worker,
 * fencing token, lease), and only names the execution's own graph references; secrets come
 * from the workspace that owns the execution, never from the request.
 */
@QueryHandler(ResolveAttemptSecretsQuery)
export class ResolveAttemptSecretsHandler implements IQueryHandler<ResolveAttemptSecretsQuery> {
  constructor(
    private readonly executions: ExecutionStreams,
    private readonly secrets: SecretStreams,
    private readonly vault: SecretVault,
  ) {}

  async execute(query: ResolveAttemptSecretsQuery): Promise<ResolvedSecrets> {
    const { principal, executionId, attemptId, workerId, fencingToken } = query;
    requireGlobalRole(principal, 'worker');
    // A fresh read of the stream, never a cached state: a claim that just lost its lease gets nothing.
    const { state } = await this.executions.load(executionId);
    requireLiveClaim(state, { attemptId, workerId, fencingToken }, this.executions.clock.now());
    const names = [...new Set(query.names)].sort();
    const referenced = new Set(referencedSecretNames(state.workflow.graph));
    const unreferenced = names.filter((name) => !referenced.has(name));
    if (unreferenced.length > 0) {
      throw new ForbiddenError(`the claimed workflow does not reference the secret ${unreferenced.join(', ')}`, { unreferenced });
    }
    const { workspaceId } = state;
    for (let read = 1; ; read++) {
      const secrets = await this.secrets.load(workspaceId);
      const missing = names.filter((name) => !secrets.current.has(name));
      if (missing.length > 0) throw new SecretNotFoundError(missing);
      const entries: [string, string][] = [];
      let gone: { name: string; valueId: string } | null = null;
      for (const name of names) {
        const { version, valueId } = secrets.current.get(name)!;
        const value = await this.vault.read(valueId, { workspaceId, name, version });
        if (value === null) {
          gone = { name, valueId };
          break;
        }
        entries.push([name, value]);
      }
      if (gone === null) return { values: Object.fromEntries(entries) };
      if (read >= MAX_READS) {
        throw new SecretValueUnreadableError(
          `secret ${gone.name} of workspace ${workspaceId} has no stored value: row ${gone.valueId} of secret_values is missing`,
        );
      }
    }
  }
}
