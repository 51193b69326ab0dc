/**
 * Leases: at most one active holder of a (role, shard) across every process, with failover
 * (docs/operations.md, "Leases and failover"). A lease is a row with its holder, an epoch (the
 * fencing token, one more at each new holder) and an expiry on the database's clock. Its holder
 * renews it; whoever finds it free or expired takes it with the next epoch. The port is small so
 * that the keeping logic (src/core/leadership.ts) is tested without a database.
 */

/** A lease as its holder got it. The epoch never repeats for one (role, shard). */
export interface LeaseGrant {
  readonly role: string;
  readonly shard: string;
  readonly holder: string;
  readonly epoch: number;
}

export interface LeaseStore {
  /** The lease with the next epoch when it is free or expired, else null (someone holds it). */
  tryAcquire(role: string, shard: string, holder: string, ttlMs: number): Promise<LeaseGrant | null>;
  /** Extends the lease to `ttlMs` after the database's now; false when its epoch moved on (taken over). */
  renew(grant: LeaseGrant, ttlMs: number): Promise<boolean>;
  /** Expires the lease at once if it is still this grant's, so a standby takes it without waiting. */
  release(grant: LeaseGrant): Promise<void>;
}

/** A write refused because the lease it was made under has a newer epoch: its writer is no longer the leader. */
export class LeaseLostError extends Error {
  constructor(readonly grant: LeaseGrant) {
    super(`lease ${grant.role}/${grant.shard} epoch ${grant.epoch} is no longer held`);
    this.name = 'LeaseLostError';
  }
}

/** Lease timings (FLOSTRA_LEASE_TTL_MS, FLOSTRA_LEASE_RENEW_MS, FLOSTRA_LEASE_POLL_MS). */
export interface LeaseTimings {
  /** How long a lease lasts after each renewal, on the database's clock. */
  ttlMs: number;
  /** How often the holder renews; well below `ttlMs`, so a renewal or two may fail in between. */
  renewMs: number;
  /** How often a standby tries to take the lease. */
  pollMs: number;
}

export const DEFAULT_LEASE_TIMINGS: Readonly<LeaseTimings> = Object.freeze({ ttlMs: 3_000, renewMs: 1_000, pollMs: 500 });
