import { TaskApiError, type TaskFailure } from './task-errors.js';

/** A task as `poll` hands it out. */
export interface PolledTask {
  taskId: string;
  executionId: string;
  nodeId: string;
  attempt: number;
  input: unknown;
  fencingToken: number;
  leaseExpiresAt: string;
  heartbeatIntervalMs: number;
}

export interface HeartbeatAnswer {
  leaseExpiresAt: string;
  cancelRequested: boolean;
}

export type Completion = { outcome: 'succeeded'; output?: unknown } | { outcome: 'failed'; error: TaskFailure };

export interface TaskApiOptions {
  url: string;
  token: string;
  workspace: string;
  queue: string;
  /** Bound of a heartbeat or a completion call (a poll gets its wait on top). */
  requestTimeoutMs: number;
}

/** The task-queue calls of Flostra's HTTP API, over Node's own fetch. Every failure is a `TaskApiError`. */
export class TaskApi {
  private readonly base: string;
  private readonly pollUrl: string;
  private readonly headers: Record<string, string>;

  constructor(private readonly options: TaskApiOptions) {
    this.base = options.url.replace(/\/+$/, '');
    this.pollUrl = `${this.base}/v1/workspaces/${encodeURIComponent(options.workspace)}/task-queues/${encodeURIComponent(options.queue)}/poll`;
    this.headers = { authorization: `Bearer ${options.token}`, 'content-type': 'application/json', accept: 'application/json' };
  }

  /** The next task of the queue, or null when none arrived within `waitMs`. */
  async poll(workerId: string, waitMs: number, signal: AbortSignal): Promise<PolledTask | null> {
    return (await this.pollMany(workerId, waitMs, 1, signal))[0] ?? null;
  }

  /**
   * Up to `max` tasks of the queue (empty when none arrived within `waitMs`). One is asked for in
   * the single form (no `max`), several in the list form; either reply is read.
   */
  async pollMany(workerId: string, waitMs: number, max: number, signal: AbortSignal): Promise<PolledTask[]> {
    const body = max > 1 ? { workerId, waitMs, max } : { workerId, waitMs };
    const answer = await this.post(this.pollUrl, body, waitMs + this.options.requestTimeoutMs, signal);
    if (answer.status === 204 || answer.body === null) return [];
    const tasks = (answer.body as { tasks?: unknown }).tasks;
    return Array.isArray(tasks) ? (tasks as PolledTask[]) : [answer.body as PolledTask];
  }

  async heartbeat(taskId: string, body: { workerId: string; fencingToken: number; progress?: unknown }): Promise<HeartbeatAnswer> {
    const answer = await this.post(this.taskUrl(taskId, 'heartbeat'), body, this.options.requestTimeoutMs);
    const parsed = (answer.body ?? {}) as Partial<HeartbeatAnswer>;
    return { leaseExpiresAt: String(parsed.leaseExpiresAt ?? ''), cancelRequested: parsed.cancelRequested === true };
  }

  /**
   * Reports how a task ended. With `next`, the same request takes the next due task of the queue
   * (claimed for this worker, as a poll would): answered, or null when none was due.
   */
  async complete(
    taskId: string,
    body: { workerId: string; fencingToken: number; next?: boolean } & Completion,
  ): Promise<PolledTask | null> {
    const answer = await this.post(this.taskUrl(taskId, 'complete'), body, this.options.requestTimeoutMs);
    const next = (answer.body as { next?: PolledTask | null } | null)?.next;
    return next ?? null;
  }

  /**
   * Reports several ends in one request (`POST /v1/tasks/complete`); with `next`, takes up to that
   * many due tasks of the queue too. Each completion's answer is its own: recorded, or the problem
   * it was refused with (as a `TaskApiError`, not thrown).
   */
  async completeMany(
    completions: Array<{ taskId: string; workerId: string; fencingToken: number } & Completion>,
    next: number,
  ): Promise<{ results: Array<TaskApiError | null>; next: PolledTask[] }> {
    const answer = await this.post(`${this.base}/v1/tasks/complete`, { completions, next }, this.options.requestTimeoutMs);
    const body = (answer.body ?? {}) as {
      results?: Array<{ problem?: { status?: number; code?: string; detail?: string } }>;
      next?: PolledTask[];
    };
    const results = completions.map((c, i) => {
      const problem = body.results?.[i]?.problem;
      if (body.results?.[i] === undefined) return new TaskApiError(0, 'no_answer', `no answer for the completion of ${c.taskId}`, null);
      if (problem === undefined) return null;
      const code = problem.code ?? `http_${problem.status ?? 0}`;
      return new TaskApiError(problem.status ?? 0, code, `completion of ${c.taskId} refused: ${code}: ${problem.detail ?? ''}`, null);
    });
    return { results, next: body.next ?? [] };
  }

  private taskUrl(taskId: string, verb: string): string {
    return `${this.base}/v1/tasks/${encodeURIComponent(taskId)}/${verb}`;
  }

  private async post(url: string, body: unknown, timeoutMs: number, signal?: AbortSignal): Promise<{ status: number; body: unknown }> {
    const timeout = AbortSignal.timeout(timeoutMs);
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: this.headers,
        body: JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      text = await response.text();
    } catch (error) {
      const why = timeout.aborted ? `no answer within ${timeoutMs} ms` : describe(error);
      throw new TaskApiError(0, signal?.aborted ? 'aborted' : 'network_error', `POST ${url}: ${why}`, null, { cause: error });
    }
    let parsed: unknown = null;
    if (text !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = null;
      }
    }
    if (response.status >= 200 && response.status < 300) return { status: response.status, body: parsed };
    const problem = (parsed ?? {}) as { code?: unknown; detail?: unknown; title?: unknown };
    const code = typeof problem.code === 'string' ? problem.code : `http_${response.status}`;
    const detail =
      typeof problem.detail === 'string' ? problem.detail : typeof problem.title === 'string' ? problem.title : text.slice(0, 200);
    throw new TaskApiError(response.status, code, `POST ${url} answered ${response.status} ${code}: ${detail}`, retryAfter(response));
  }
}

function retryAfter(response: Response): number | null {
  const header = response.headers.get('retry-after');
  if (header === null) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}
