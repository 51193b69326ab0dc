/** How the interpreter threads of one sandbox are shared between workspaces. */
export interface CodeShareSettings {
  /** Interpreter threads of the sandbox (N). */
  readonly threads: number;
  /** Interpreter time a workspace may use per `windowMs` before its runs yield to others'. */
  readonly cpuBudgetMs: number;
  /** The window the budget refills over, continuously (a token bucket of `cpuBudgetMs`). */
  readonly cpuWindowMs: number;
}

interface Bucket {
  /** Interpreter time left, in ms, as of `atMs`; below zero once a run overdrew it. */
  balanceMs: number;
  atMs: number;
}

/**
 * Which waiting run a free interpreter thread takes (promise 13, docs/architecture.md: one
 * workspace's code cannot starve another's). Pure: time comes in as arguments.
 *
 * Runs wait in one queue per workspace, first in first out; workspaces take turns, the one served
 * longest ago first. A running loop cannot be preempted, so the bound is kept when a thread is
 * handed out: while another workspace has code waiting or running, or ran code within the CPU
 * window, a workspace is not given more than N−1 threads, so that the other's next run finds one
 * free (with N = 1, the one thread goes to each waiting workspace in turn). A workspace that
 * has used more than its CPU budget gets a thread only when no workspace within its budget can
 * take it. No thread stays idle while a run waits that may take it.
 */
export class CodeRunScheduler<Run> {
  private readonly queues = new Map<string, Run[]>();
  private readonly running = new Map<string, number>();
  /** When each workspace waiting or running was last given a thread, as a count of threads given. */
  private readonly servedAt = new Map<string, number>();
  private served = 0;
  private readonly buckets = new Map<string, Bucket>();
  /** When each workspace last had a run handed out or ended, oldest first (moved to the end on each). */
  private readonly activeAt = new Map<string, number>();

  constructor(private readonly settings: CodeShareSettings) {}

  get waiting(): number {
    let count = 0;
    for (const queue of this.queues.values()) count += queue.length;
    return count;
  }

  enqueue(workspaceId: string, run: Run): void {
    const queue = this.queues.get(workspaceId);
    if (queue !== undefined) queue.push(run);
    else this.queues.set(workspaceId, [run]);
  }

  /** Takes a run out of its queue before it started (aborted, or dropped); false if it was not waiting. */
  remove(workspaceId: string, run: Run): boolean {
    const queue = this.queues.get(workspaceId);
    const at = queue?.indexOf(run) ?? -1;
    if (queue === undefined || at < 0) return false;
    queue.splice(at, 1);
    if (queue.length === 0) this.idle(workspaceId);
    return true;
  }

  /** The run a free thread takes now, counted as running; undefined when none waits. */
  next(nowMs: number): { workspaceId: string; run: Run } | undefined {
    const cap = Math.max(1, this.settings.threads - 1);
    this.forgetInactive(nowMs);
    const eligible = [...this.queues.keys()]
      .filter((workspaceId) => (this.running.get(workspaceId) ?? 0) < cap || !this.othersActive(workspaceId))
      .sort((a, b) => (this.servedAt.get(a) ?? -1) - (this.servedAt.get(b) ?? -1));
    const workspaceId = eligible.find((candidate) => this.balanceOf(candidate, nowMs) > 0) ?? eligible[0];
    if (workspaceId === undefined) return undefined;
    const queue = this.queues.get(workspaceId)!;
    const run = queue.shift()!;
    if (queue.length === 0) this.queues.delete(workspaceId);
    this.running.set(workspaceId, (this.running.get(workspaceId) ?? 0) + 1);
    this.servedAt.set(workspaceId, this.served++);
    this.touch(workspaceId, nowMs);
    return { workspaceId, run };
  }

  /** A run of `workspaceId` that `next` handed out ended after holding its thread `usedMs`. */
  finished(workspaceId: string, usedMs: number, nowMs: number): void {
    const left = (this.running.get(workspaceId) ?? 1) - 1;
    if (left > 0) this.running.set(workspaceId, left);
    else this.running.delete(workspaceId);
    if (!this.queues.has(workspaceId)) this.idle(workspaceId);
    this.touch(workspaceId, nowMs);
    this.buckets.set(workspaceId, { balanceMs: this.balanceOf(workspaceId, nowMs) - Math.max(0, usedMs), atMs: nowMs });
    // A full bucket is the same as none: only workspaces still paying back their use are kept.
    for (const id of this.buckets.keys()) {
      if (this.balanceOf(id, nowMs) >= this.settings.cpuBudgetMs) this.buckets.delete(id);
    }
  }

  /** Every waiting run, taken out of the queues (the sandbox is closing). */
  drain(): Run[] {
    const all = [...this.queues.values()].flat();
    for (const workspaceId of [...this.queues.keys()]) {
      this.queues.delete(workspaceId);
      this.idle(workspaceId);
    }
    return all;
  }

  /** Interpreter time `workspaceId` has left at `nowMs`. */
  balanceOf(workspaceId: string, nowMs: number): number {
    const { cpuBudgetMs, cpuWindowMs } = this.settings;
    const bucket = this.buckets.get(workspaceId);
    if (bucket === undefined) return cpuBudgetMs;
    const refill = (Math.max(0, nowMs - bucket.atMs) * cpuBudgetMs) / cpuWindowMs;
    return Math.min(cpuBudgetMs, bucket.balanceMs + refill);
  }

  /** Whether a workspace other than `workspaceId` has code waiting or running, or ran code within the window. */
  private othersActive(workspaceId: string): boolean {
    const others = (keys: Iterable<string>) => {
      for (const key of keys) if (key !== workspaceId) return true;
      return false;
    };
    return others(this.queues.keys()) || others(this.running.keys()) || others(this.activeAt.keys());
  }

  private touch(workspaceId: string, nowMs: number): void {
    this.activeAt.delete(workspaceId);
    this.activeAt.set(workspaceId, nowMs);
  }

  private forgetInactive(nowMs: number): void {
    const horizon = nowMs - this.settings.cpuWindowMs;
    for (const [workspaceId, at] of this.activeAt) {
      if (at >= horizon) break;
      this.activeAt.delete(workspaceId);
    }
  }

  /** Forgets the turn of a workspace with nothing waiting or running: it comes first when it next waits. */
  private idle(workspaceId: string): void {
    this.queues.delete(workspaceId);
    if (!this.running.has(workspaceId)) this.servedAt.delete(workspaceId);
  }
}
