import { setTimeout as delay } from 'node:timers/promises';
import { DEFAULT_LEASE_TIMINGS, type LeaseGrant, type LeaseStore, type LeaseTimings } from './lease.port.js';
import type { Logger } from './logger.js';

/** The time a lease is kept by: monotonic milliseconds and a sleep (a test moves both by hand). */
export interface LeaseTime {
  now(): number;
  /** Resolves after `ms`, or at once when `signal` aborts; never rejects. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const realLeaseTime: LeaseTime = {
  now: () => performance.now(),
  sleep: (ms, signal) => delay(ms, undefined, { signal }).catch(() => undefined),
};

/** Why a holder stopped holding: asked to (`released`), or it can no longer be sure it holds the lease. */
export type LeaseEnd = 'released' | 'expired' | 'taken' | 'fenced';

export interface KeepLeaseOptions {
  store: LeaseStore;
  grant: LeaseGrant;
  timings: Pick<LeaseTimings, 'ttlMs' | 'renewMs'>;
  time: LeaseTime;
  /** When the request that got (or last renewed) the lease was sent: it is valid until then + TTL at the latest. */
  validFrom: number;
  /** Aborts to give the lease up (the caller releases it). */
  signal: AbortSignal;
  /** Aborts when a fenced write found the lease gone. */
  fenced?: AbortSignal;
  onRenewError?(error: unknown): void;
}

/**
 * Renews a lease every `renewMs` until it is given up or can no longer be trusted. The holder
 * counts its TTL from the moment it *sent* each successful renewal, on its own monotonic clock:
 * the database set the expiry later than that, so the holder always believes it holds the lease
 * for less time than the database grants it. A renewal that fails, or does not answer, before
 * the TTL runs out ends the lease (`expired`); one the database refuses ends it at once (`taken`).
 * So does a process that was paused: its timers fire late, it sees the TTL gone, and stops.
 */
export async function keepLease(options: KeepLeaseOptions): Promise<LeaseEnd> {
  const { store, grant, timings, time, signal, fenced } = options;
  const stopped = fenced === undefined ? signal : AbortSignal.any([signal, fenced]);
  let validUntil = options.validFrom + timings.ttlMs;
  const ended = (): LeaseEnd | null =>
    signal.aborted ? 'released' : fenced?.aborted === true ? 'fenced' : time.now() >= validUntil ? 'expired' : null;
  for (;;) {
    let end = ended();
    if (end !== null) return end;
    await time.sleep(Math.min(timings.renewMs, validUntil - time.now()), stopped);
    end = ended();
    if (end !== null) return end;
    const sentAt = time.now();
    const timeout = new AbortController();
    const stop = () => timeout.abort();
    stopped.addEventListener('abort', stop, { once: true });
    const outcome = await Promise.race([
      store.renew(grant, timings.ttlMs).then(
        (held) => (held ? 'renewed' : 'taken'),
        (error: unknown) => {
          options.onRenewError?.(error);
          return 'failed';
        },
      ),
      time.sleep(validUntil - sentAt, timeout.signal).then(() => 'waited'),
    ]);
    stopped.removeEventListener('abort', stop);
    timeout.abort();
    if (outcome === 'taken') return 'taken';
    if (outcome === 'renewed') validUntil = sentAt + timings.ttlMs;
  }
}

/** A promise of null that resolves when `signal` aborts (one listener, removed by `dispose`). */
function whenAborted(signal: AbortSignal): { promise: Promise<null>; dispose(): void } {
  let onAbort = () => undefined as void;
  const promise = new Promise<null>((resolve) => {
    onAbort = () => resolve(null);
    if (signal.aborted) resolve(null);
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  return { promise, dispose: () => signal.removeEventListener('abort', onAbort) };
}

/** One term of a leader: its lease and the signal that ends it. */
export interface Term {
  readonly grant: LeaseGrant;
  /** Aborts when this process steps down: stop taking work, abort what is in flight. */
  readonly signal: AbortSignal;
  /** A fenced write found the lease gone: step down now. */
  stepDown(): void;
}

/** What a leader runs for one term; stopped when the term ends. */
export interface LeaderWork {
  stop(): Promise<void>;
}

export interface LeadershipOptions extends Partial<LeaseTimings> {
  role: string;
  shard?: string;
  /** This process's id in the lease row (shows who holds it). */
  holder: string;
}

export interface LeadershipDeps {
  store: LeaseStore;
  logger: Logger;
  time?: LeaseTime;
  /** Told whenever this process starts or stops holding the lease (`flostra_lease_held`). */
  onHeld?(held: boolean): void;
}

/**
 * Makes one process of many the leader of a role: every contender polls for the lease, the one
 * that gets it runs `elected` and keeps renewing; when it cannot renew in time, or a fenced write
 * finds it taken over, it stops its work at once and goes back to polling. `stop` ends the work
 * and releases the lease, so a standby takes over at its next poll instead of after the TTL.
 */
export class Leadership {
  private readonly timings: LeaseTimings;
  private readonly shard: string;
  private readonly time: LeaseTime;
  private running: { abort: AbortController; done: Promise<void> } | null = null;
  private current: LeaseGrant | null = null;

  constructor(
    private readonly deps: LeadershipDeps,
    private readonly options: LeadershipOptions,
  ) {
    this.timings = {
      ttlMs: options.ttlMs ?? DEFAULT_LEASE_TIMINGS.ttlMs,
      renewMs: options.renewMs ?? DEFAULT_LEASE_TIMINGS.renewMs,
      pollMs: options.pollMs ?? DEFAULT_LEASE_TIMINGS.pollMs,
    };
    this.shard = options.shard ?? 'default';
    this.time = deps.time ?? realLeaseTime;
  }

  /** The lease while this process holds it. */
  get held(): LeaseGrant | null {
    return this.current;
  }

  start(elected: (term: Term) => Promise<LeaderWork>): void {
    if (this.running !== null) return;
    const abort = new AbortController();
    this.running = { abort, done: this.run(elected, abort.signal) };
  }

  /** Stops the work of a term in progress and releases its lease. */
  async stop(): Promise<void> {
    const running = this.running;
    this.running = null;
    running?.abort.abort();
    await running?.done;
  }

  private async run(elected: (term: Term) => Promise<LeaderWork>, signal: AbortSignal): Promise<void> {
    const { store, logger } = this.deps;
    const stopping = whenAborted(signal);
    while (!signal.aborted) {
      const askedAt = this.time.now();
      let grant: LeaseGrant | null = null;
      const asking = store.tryAcquire(this.options.role, this.shard, this.options.holder, this.timings.ttlMs);
      try {
        // A database that does not answer must not hold up a stop; a lease it grants too late is given back.
        grant = await Promise.race([asking, stopping.promise]);
      } catch (error) {
        logger.warn('taking the lease failed; trying again', { role: this.options.role, err: error });
      }
      if (signal.aborted) {
        void asking.then((late) => late && store.release(late)).catch(() => undefined);
        return;
      }
      if (grant === null) {
        await this.time.sleep(this.timings.pollMs, signal);
        continue;
      }
      if (await this.serve(grant, askedAt, elected, signal)) await this.time.sleep(this.timings.pollMs, signal);
    }
    stopping.dispose();
  }

  /** One term, from the lease acquired to the work stopped; true when it failed to start. */
  private async serve(
    grant: LeaseGrant,
    askedAt: number,
    elected: (term: Term) => Promise<LeaderWork>,
    signal: AbortSignal,
  ): Promise<boolean> {
    const { store, logger } = this.deps;
    const { role } = this.options;
    const fields = { role, shard: grant.shard, epoch: grant.epoch, holder: grant.holder };
    const term = new AbortController();
    const giveUp = new AbortController();
    this.current = grant;
    logger.info(`lease ${role} acquired epoch ${grant.epoch}`, fields);
    this.deps.onHeld?.(true);
    const keeping = keepLease({
      store,
      grant,
      timings: this.timings,
      time: this.time,
      validFrom: askedAt,
      signal: AbortSignal.any([signal, giveUp.signal]),
      fenced: term.signal,
      onRenewError: (error) => logger.warn('renewing the lease failed', { ...fields, err: error }),
    }).finally(() => term.abort());
    let work: LeaderWork | null = null;
    let failed = false;
    try {
      work = await elected({ grant, signal: term.signal, stepDown: () => term.abort() });
    } catch (error) {
      failed = true;
      logger.error('the leader failed to start; giving the lease up', { ...fields, err: error });
      giveUp.abort();
    }
    const end = await keeping;
    this.current = null;
    await work?.stop().catch((error: unknown) => logger.warn('stopping the leader failed', { ...fields, err: error }));
    this.deps.onHeld?.(false);
    if (end === 'released') {
      await store.release(grant).catch((error: unknown) => logger.warn('releasing the lease failed', { ...fields, err: error }));
      logger.info(`lease ${role} released epoch ${grant.epoch}`, fields);
    } else {
      logger.warn(`lease ${role} lost epoch ${grant.epoch}; stepped down`, { ...fields, reason: end });
    }
    return failed;
  }
}
