import type { Logger } from '../../core/logger.js';
import { ClaimRefusedError, type ControlPlane } from './control-plane.port.js';
import type { IngestWatch } from './ingest-watch.js';

export type StopReason = 'cancel_requested' | 'lease_lost';

/**
 * Heartbeats a claimed attempt at the interval the claim reply gave. It aborts the run through
 * `controller` when the control plane asks for cancellation (promise 7, docs/architecture.md) or refuses the
 * heartbeat, or when the lease ran out without an answered heartbeat: the worker then stops
 * scheduling nodes, since nothing it reports would be accepted (promises 3 and 4, docs/architecture.md).
 */
export class LeaseKeeper {
  private timer: NodeJS.Timeout | null = null;
  private bound: NodeJS.Timeout | null = null;
  private stopped = false;
  private lingering = false;
  private stopWatching: (() => void) | null = null;
  private leaseExpiresAt: number;
  reason: StopReason | null = null;

  constructor(
    private readonly client: ControlPlane,
    private readonly claim: {
      executionId: string;
      attemptId: string;
      workerId: string;
      fencingToken: number;
      leaseExpiresAt: string;
      heartbeatIntervalMs: number;
    },
    private readonly controller: AbortController,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.leaseExpiresAt = Date.parse(claim.leaseExpiresAt);
  }

  start(): void {
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    // Its timers would otherwise hold the keeper, and the claim with its graph, for the bound.
    if (this.bound) clearTimeout(this.bound);
    this.stopWatching?.();
  }

  /**
   * After the terminal result was handed to the bus: keep the lease alive until the control
   * plane has handled it, or `boundMs` passes. The lease is checked when the ingestor applies
   * the result, so a slow or restarting broker must not turn a result published in time into a
   * late one. The keeper learns of the end from `watch` (the ingestor's progress, shared by the
   * process's attempts), or else from its next heartbeat being refused.
   */
  linger(boundMs: number, watch?: IngestWatch): void {
    this.lingering = true;
    this.bound = setTimeout(() => this.stop(), boundMs);
    this.bound.unref();
    if (watch !== undefined && !this.stopped) this.stopWatching = watch.whenHandled(() => this.stop());
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.beat(), this.claim.heartbeatIntervalMs);
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    if (this.stopped) return;
    const { executionId, attemptId, workerId, fencingToken } = this.claim;
    try {
      const reply = await this.client.heartbeat(executionId, attemptId, workerId, fencingToken);
      this.leaseExpiresAt = Date.parse(reply.leaseExpiresAt);
      if (reply.cancelRequested && !this.lingering) this.abort('cancel_requested');
    } catch (error) {
      if (error instanceof ClaimRefusedError && this.lingering) {
        // The end was recorded: the attempt is no longer running.
        this.stop();
        return;
      }
      if (error instanceof ClaimRefusedError) {
        this.logger.warn('heartbeat refused: stopping the attempt', { executionId, attemptId, code: error.code });
        this.abort('lease_lost');
        return;
      }
      this.logger.warn('heartbeat failed; will retry', { executionId, attemptId, error: String(error) });
      if (this.now() >= this.leaseExpiresAt) this.abort('lease_lost');
    }
    this.schedule();
  }

  private abort(reason: StopReason): void {
    if (this.reason === null) this.reason = reason;
    this.controller.abort(new Error(reason));
  }
}
