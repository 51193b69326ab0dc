import { type LeaderWork, Leadership, type Term } from '../core/leadership.js';
import type { LeaseTimings } from '../core/lease.port.js';
import type { Logger } from '../core/logger.js';
import type { Metrics } from '../core/metrics.port.js';
import type { SqlClient } from './sql-client.port.js';
import { newHolderId, SqlLeases } from './sql-leases.js';

export interface LeaderRoleOptions {
  /** The lease's role (`dispatcher`, `admission`, `watchdog`). */
  role: string;
  /** The read-model database: the lease lives there, and so does the role's own state. */
  sql: SqlClient;
  logger: Logger;
  metrics: Pick<Metrics, 'leaseHeld'>;
  timings: LeaseTimings;
  /**
   * Builds and starts the role's work for one term. `sql` is fenced by the term's epoch: every
   * write through it is refused once another process took the lease over.
   */
  lead(sql: SqlClient, term: Term): Promise<LeaderWork>;
}

/**
 * Runs a single-writer role in any number of processes: one leads, the others stand by and poll
 * for the lease. Resolves once the lease table exists; `stop()` on the result ends the term (if
 * any) and releases the lease.
 */
export async function startLeaderRole(options: LeaderRoleOptions): Promise<Leadership> {
  const { role, sql, logger, metrics, timings } = options;
  const leases = await SqlLeases.open(sql);
  const leadership = new Leadership(
    { store: leases, logger, onHeld: (held) => metrics.leaseHeld(role, held) },
    { role, holder: newHolderId(), ...timings },
  );
  leadership.start((term) =>
    options.lead(
      leases.fenced(sql, term.grant, timings.ttlMs, () => term.stepDown()),
      term,
    ),
  );
  return leadership;
}
