import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/**
 * A loopback stand-in for the task-queue calls of Flostra's API (poll, heartbeat, complete, and
 * the batch completion, recorded as one `complete` call per item),
 * kept in memory, for testing task-worker clients: it records every call, and a test steers it
 * (cancel a task, take its lease away, answer the next calls with a status, drop connections).
 */
export interface DoubleTask {
  taskId: string;
  executionId: string;
  nodeId: string;
  attempt: number;
  input: unknown;
  fencingToken: number;
  heartbeatIntervalMs: number;
  workerId: string | null;
  cancelRequested: boolean;
  /** Set by `loseLease`: heartbeats and completions are refused with this code. */
  lost: 'stale_attempt' | 'lease_expired' | null;
  completion: Record<string, unknown> | null;
}

export interface RecordedCall {
  route: 'poll' | 'heartbeat' | 'complete';
  taskId: string | null;
  body: any;
  status: number;
}

type TaskOptions = { heartbeatIntervalMs?: number; attempt?: number; nodeId?: string };

type Fault = { route: RecordedCall['route']; status: number | 'drop'; remaining: number };

export class TaskQueueDouble {
  readonly token = 'task-worker-token';
  readonly calls: RecordedCall[] = [];
  readonly tasks = new Map<string, DoubleTask>();
  private readonly queue: DoubleTask[] = [];
  private readonly waiters: Array<() => void> = [];
  private readonly faults: Fault[] = [];
  private server: Server | null = null;
  /** Polls being held open right now. */
  pollsWaiting = 0;
  /** Answer a poll's `max` in the list form, as Flostra does; off, it is ignored (one task, as an older server). */
  listForm = false;
  /** Batch completion requests received. */
  batches = 0;
  /** The bodies of the batch completion requests, in order. */
  readonly batchBodies: any[] = [];
  /** Tasks a completion schedules (`scheduleAfter`), as a task node's successors: claimed by its `next` first. */
  private readonly successors = new Map<string, unknown[]>();
  url = '';

  constructor(
    readonly workspace = 'ws-a',
    readonly queueName = 'images',
  ) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.serve(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  async stop(): Promise<void> {
    for (const wake of this.waiters.splice(0)) wake();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** Puts a task in the queue; the next poll takes it. */
  enqueue(input: unknown, options: TaskOptions = {}): DoubleTask {
    const task = this.create(input, options);
    this.queue.push(task);
    this.waiters.shift()?.();
    return task;
  }

  private create(input: unknown, options: TaskOptions): DoubleTask {
    const task: DoubleTask = {
      taskId: randomUUID(),
      executionId: randomUUID(),
      nodeId: options.nodeId ?? 'resize',
      attempt: options.attempt ?? 1,
      input,
      fencingToken: 0,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 60_000,
      workerId: null,
      cancelRequested: false,
      lost: null,
      completion: null,
    };
    this.tasks.set(task.taskId, task);
    return task;
  }

  /**
   * When `taskId` is completed, tasks with these inputs are scheduled, as the successors of a
   * task node are: the completion's `next` claims them first (in the same request), the rest
   * join the queue.
   */
  scheduleAfter(taskId: string, inputs: unknown[]): void {
    this.successors.set(taskId, inputs);
  }

  /** The tasks `scheduleAfter` set for a completion just recorded, and the queue's, for up to `max` of `next`. */
  private takeNext(completed: string[], max: number): DoubleTask[] {
    const scheduled = completed.flatMap((id) => {
      const inputs = this.successors.get(id) ?? [];
      this.successors.delete(id);
      return inputs.map((input) => this.create(input, {}));
    });
    const taken = [...scheduled, ...this.queue].slice(0, max);
    for (const task of scheduled.slice(max)) {
      this.queue.push(task);
      this.waiters.shift()?.();
    }
    for (const task of taken) if (this.queue.includes(task)) this.queue.splice(this.queue.indexOf(task), 1);
    return taken;
  }

  /** The next `count` calls of `route` answer `status` (a problem), or lose their connection (`drop`). */
  failNext(route: RecordedCall['route'], count: number, status: number | 'drop' = 503): void {
    this.faults.push({ route, status, remaining: count });
  }

  cancel(taskId: string): void {
    this.task(taskId).cancelRequested = true;
  }

  loseLease(taskId: string, code: 'stale_attempt' | 'lease_expired' = 'lease_expired'): void {
    this.task(taskId).lost = code;
  }

  callsOf(route: RecordedCall['route'], taskId?: string): RecordedCall[] {
    return this.calls.filter((c) => c.route === route && (taskId === undefined || c.taskId === taskId));
  }

  task(taskId: string): DoubleTask {
    const task = this.tasks.get(taskId);
    if (!task) throw new Error(`no task ${taskId}`);
    return task;
  }

  /** Records a completion as the single route does: null when recorded, else the code it is refused with. */
  private record(taskId: string, body: Record<string, unknown>): string | null {
    const task = this.tasks.get(taskId);
    if (!task) return 'not_found';
    if (task.lost) return task.lost;
    if (body.workerId !== task.workerId || body.fencingToken !== task.fencingToken) return 'stale_attempt';
    if (task.completion && JSON.stringify(task.completion) !== JSON.stringify(body)) return 'stale_attempt';
    task.completion = body;
    return null;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const body = text === '' ? {} : JSON.parse(text);
    const path = req.url ?? '/';
    const pollPath = `/v1/workspaces/${this.workspace}/task-queues/${this.queueName}/poll`;
    const taskMatch = /^\/v1\/tasks\/([^/]+)\/(heartbeat|complete)$/.exec(path);
    const batch = path === '/v1/tasks/complete';
    const route: RecordedCall['route'] | null =
      path === pollPath ? 'poll' : taskMatch ? (taskMatch[2] as 'heartbeat' | 'complete') : batch ? 'complete' : null;
    const taskId = taskMatch ? decodeURIComponent(taskMatch[1]) : null;
    const answer = (status: number, payload?: unknown) => {
      if (route) this.calls.push({ route, taskId, body, status });
      if (payload === undefined) {
        res.writeHead(status).end();
        return;
      }
      const problem = status >= 400;
      res.writeHead(status, { 'content-type': problem ? 'application/problem+json' : 'application/json' }).end(JSON.stringify(payload));
    };
    /** Claims the task for the caller, as a poll's answer (or a completion's `next`) does. */
    const handOut = (task: DoubleTask, workerId = String(body.workerId)) => {
      task.workerId = workerId;
      task.fencingToken++;
      const { taskId: id, executionId, nodeId, attempt, input, fencingToken, heartbeatIntervalMs } = task;
      const leaseExpiresAt = new Date(Date.now() + 3 * heartbeatIntervalMs).toISOString();
      return { taskId: id, executionId, nodeId, attempt, input, fencingToken, leaseExpiresAt, heartbeatIntervalMs };
    };
    const problem = (status: number, code: string) =>
      answer(status, { type: `urn:flostra:problem:${code}`, title: code, status, detail: code, code });

    if (req.method !== 'POST' || route === null) return problem(404, 'not_found');
    if (req.headers.authorization !== `Bearer ${this.token}`) return problem(401, 'unauthenticated');
    const fault = this.faults.find((f) => f.route === route && f.remaining > 0);
    if (fault) {
      fault.remaining--;
      if (fault.status === 'drop') {
        this.calls.push({ route, taskId, body, status: 0 });
        req.socket.destroy();
        return;
      }
      const codes: Record<number, string> = { 409: 'stale_attempt', 413: 'output_too_large', 503: 'unavailable' };
      return problem(fault.status, codes[fault.status] ?? 'internal');
    }

    if (route === 'poll') {
      let task = this.queue.shift();
      if (!task && Number(body.waitMs) > 0) {
        this.pollsWaiting++;
        await new Promise<void>((resolve) => {
          const wake = () => {
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(() => {
            const index = this.waiters.indexOf(wake);
            if (index >= 0) this.waiters.splice(index, 1);
            resolve();
          }, Number(body.waitMs));
          this.waiters.push(wake);
        });
        this.pollsWaiting--;
        task = this.queue.shift();
      }
      if (this.listForm && body.max !== undefined) {
        const more = task ? this.queue.splice(0, Number(body.max) - 1) : [];
        return answer(200, { tasks: task ? [task, ...more].map((t) => handOut(t)) : [] });
      }
      if (!task) return answer(204);
      if (res.destroyed) {
        // The worker gave up on this poll: the task goes back to the front of the queue.
        this.queue.unshift(task);
        return;
      }
      return answer(200, handOut(task));
    }

    if (batch) {
      this.batches++;
      this.batchBodies.push(body);
      // Each item answered as the single route would; `next` takes that many queued tasks.
      const results = (body.completions as Array<Record<string, unknown>>).map((item) => {
        const { taskId: id, ...single } = item as { taskId: string };
        const verdict = this.record(String(id), single);
        this.calls.push({ route: 'complete', taskId: String(id), body: single, status: verdict === null ? 200 : 409 });
        return verdict === null
          ? { taskId: id, status: 'recorded' }
          : { taskId: id, problem: { status: verdict === 'not_found' ? 404 : 409, code: verdict, detail: verdict } };
      });
      const recorded = results.flatMap((r) => (r.problem === undefined ? [String(r.taskId)] : []));
      const next = this.takeNext(recorded, Number(body.next ?? 0)).map((t) => handOut(t, String(body.completions[0]?.workerId)));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results, next }));
      return;
    }
    const task = taskId ? this.tasks.get(taskId) : undefined;
    if (!task) return problem(404, 'not_found');
    if (task.lost) return problem(409, task.lost);
    if (body.workerId !== task.workerId || body.fencingToken !== task.fencingToken) return problem(409, 'stale_attempt');
    if (route === 'heartbeat') {
      if (task.completion) return problem(409, 'stale_attempt');
      const leaseExpiresAt = new Date(Date.now() + 3 * task.heartbeatIntervalMs).toISOString();
      return answer(200, { leaseExpiresAt, cancelRequested: task.cancelRequested });
    }
    if (task.completion && JSON.stringify(task.completion) !== JSON.stringify(body)) return problem(409, 'stale_attempt');
    task.completion = body;
    // Complete and take the next (its successor first, else the queue's next task), without waiting.
    const [next] = this.takeNext([task.taskId], body.next === true ? 1 : 0);
    if (body.next !== true) return answer(200, { status: 'recorded' });
    return answer(200, { status: 'recorded', next: next === undefined ? null : handOut(next) });
  }
}
