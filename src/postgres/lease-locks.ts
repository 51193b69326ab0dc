import { keepLease, type LeaseEnd, type LeaseTime, realLeaseTime } from '../core/leadership.js';
import type { LeaseStore, LeaseTimings } from '../core/lease.port.js';
import type { Logger } from '../core/logger.js';
import type { SessionLock, SessionLocks } from './sql-client.port.js';

export interface LeaseLocksOptions {
  store: LeaseStore;
  /** The leases' role; each lock's name is its shard. */
  role: string;
  holder: string;
  timings: LeaseTimings;
  logger: Logger;
  time?: LeaseTime;
  /** Told whenever a lock is taken (true) or given up or lost (false). */
  onHeld?(held: boolean): void;
}

/**
 * Session locks made of leases: a lock is lost when its lease cannot be renewed in time, which a
 * process paused with SIGSTOP (its connection and any advisory lock alive) cannot do. The
 * holder's `lost` signal then aborts, and another process takes the lock once the TTL passed.
 */
export class LeaseLocks implements SessionLocks {
  private readonly held = new Map<string, () => Promise<void>>();

  constructor(private readonly options: LeaseLocksOptions) {}

  async tryAcquire(key: string): Promise<SessionLock | null> {
    const { store, role, holder, timings, logger } = this.options;
    const time = this.options.time ?? realLeaseTime;
    const askedAt = time.now();
    const grant = await store.tryAcquire(role, key, holder, timings.ttlMs);
    if (grant === null) return null;
    const fields = { role, shard: key, epoch: grant.epoch };
    logger.info(`lease ${role} acquired epoch ${grant.epoch}`, fields);
    this.options.onHeld?.(true);
    const giveUp = new AbortController();
    const lost = new AbortController();
    const keeping: Promise<LeaseEnd> = keepLease({
      store,
      grant,
      timings,
      time,
      validFrom: askedAt,
      signal: giveUp.signal,
      onRenewError: (error) => logger.warn('renewing the lease failed', { ...fields, err: error }),
    }).then((end) => {
      this.options.onHeld?.(false);
      if (end !== 'released') {
        logger.warn(`lease ${role} lost epoch ${grant.epoch}; stepped down`, { ...fields, reason: end });
        lost.abort(new Error(`the lease of ${key} was lost (${end})`));
      }
      return end;
    });
    const release = async () => {
      if (this.held.get(key) !== release) return;
      this.held.delete(key);
      giveUp.abort();
      if ((await keeping) === 'released') await store.release(grant).catch(() => undefined);
    };
    this.held.set(key, release);
    return { lost: lost.signal, release };
  }

  async close(): Promise<void> {
    await Promise.all([...this.held.values()].map((release) => release()));
  }
}
