import type { LeaseTime } from '../../src/core/leadership.js';
import type { LeaseGrant, LeaseStore } from '../../src/core/lease.port.js';

/** Lets promises and their continuations run before time moves on. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Time that moves only when a test says so: sleeps end when `advance` passes their end. */
export class ManualLeaseTime implements LeaseTime {
  private t = 0;
  private sleepers: { until: number; wake: () => void }[] = [];

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted === true) return Promise.resolve();
    return new Promise((resolve) => {
      const sleeper = { until: this.t + Math.max(0, ms), wake: () => resolve() };
      this.sleepers.push(sleeper);
      signal?.addEventListener('abort', () => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        resolve();
      });
    });
  }

  /** Moves time forward in steps of `stepMs`, waking each sleeper on its way and letting it run. */
  async advance(ms: number, stepMs = 10): Promise<void> {
    await settle();
    const end = this.t + ms;
    while (this.t < end) {
      this.t = Math.min(end, this.t + stepMs);
      const due = this.sleepers.filter((s) => s.until <= this.t);
      this.sleepers = this.sleepers.filter((s) => s.until > this.t);
      for (const sleeper of due) sleeper.wake();
      await settle();
    }
  }
}

/**
 * Leases kept in memory on the same manual time, with the database's rules: free or expired
 * takes the next epoch. A holder in `cutOff` gets no answers.
 */
export class InMemoryLeases implements LeaseStore {
  readonly rows = new Map<string, { holder: string; epoch: number; expiresAt: number }>();
  /** Holders whose calls never answer (their database connection hangs). */
  readonly cutOff = new Set<string>();

  constructor(private readonly time: ManualLeaseTime) {}

  private reach(holder: string): Promise<void> {
    return this.cutOff.has(holder) ? new Promise<void>(() => undefined) : Promise.resolve();
  }

  async tryAcquire(role: string, shard: string, holder: string, ttlMs: number): Promise<LeaseGrant | null> {
    await this.reach(holder);
    const key = `${role}/${shard}`;
    const row = this.rows.get(key);
    if (row !== undefined && row.expiresAt > this.time.now()) return null;
    const epoch = (row?.epoch ?? 0) + 1;
    this.rows.set(key, { holder, epoch, expiresAt: this.time.now() + ttlMs });
    return { role, shard, holder, epoch };
  }

  async renew(grant: LeaseGrant, ttlMs: number): Promise<boolean> {
    await this.reach(grant.holder);
    const row = this.rows.get(`${grant.role}/${grant.shard}`);
    if (row?.epoch !== grant.epoch) return false;
    row.expiresAt = this.time.now() + ttlMs;
    return true;
  }

  async release(grant: LeaseGrant): Promise<void> {
    await this.reach(grant.holder);
    const row = this.rows.get(`${grant.role}/${grant.shard}`);
    if (row?.epoch === grant.epoch) row.expiresAt = this.time.now();
  }
}
