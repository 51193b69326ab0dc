import { AuditReadModel } from '../../../projections/audit.read-model.js';
import { ExecutionsReadModel } from '../../../projections/executions.read-model.js';
import type { SqlQueryable } from '../../postgres/sql-client.port.js';
import type { RetentionCandidates } from '../application/retention-sweep.js';

/** Retention's candidates from the `executions` and `audit` read models (their live versions). */
export function readModelCandidates(sql: SqlQueryable): RetentionCandidates {
  const executions = new ExecutionsReadModel(sql);
  const audit = new AuditReadModel(sql);
  return {
    endedBefore: (cutoff, after, limit) => executions.endedBefore(cutoff, after, limit),
    auditEntriesBefore: (cutoff) => audit.hasEntriesBefore(cutoff),
  };
}
