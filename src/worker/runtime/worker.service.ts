import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { INGESTOR_GROUP_ID, TOPICS, TopicNotFoundError, type Bus, type ConsumerHandle, type IncomingMessage } from '../../core/bus.port.js';
import type { Logger } from '../../core/logger.js';
import { LruSet } from '../../core/lru-set.js';
import { Slots } from '../../bus/slots.js';
import type { DispatchHandOver } from '../../dispatch/dispatch-hand-over.js';
import type { Metrics } from '../../core/metrics.port.js';
import { reportConsumerLag } from '../../observability/lag-sources.js';
import { type Context, contextFrom } from '../../observability/tracing.js';
import { type DispatchMessage, dispatchMessageSchema } from '../../dispatch/dispatch-message.js';
import type { Evaluate, ExecuteNode } from '../dag/dag.types.js';
import type { WorkflowNode } from '../../workflows/domain/workflow-graph.schema.js';
import { AttemptRunner } from './attempt-runner.js';
import { ControlPlaneClient } from './control-plane.client.js';
import { type ControlPlane, ControlPlaneUnavailableError } from './control-plane.port.js';
import { IngestWatch } from './ingest-watch.js';
import type { ResultSink } from './result-sink.js';

export const DISPATCH_DLQ_TOPIC = 'flostra.dispatch.dlq.v1';

/**
 * Where the worker's claims, heartbeats, secret resolutions and fallback completions go: over
 * HTTP to the api at `apiUrl` with the bearer `token`, or to a given `controlPlane` (the
 * in-process one when the worker shares the api's process, see src/app).
 */
export type ControlPlaneRoute = { apiUrl: string; token: string } | { controlPlane: ControlPlane };

export type WorkerOptions = WorkerSettings & ControlPlaneRoute;

interface WorkerSettings {
  bus: Bus;
  /** Where attempts' results go: `flostra.results.v1` on `bus` unless given (the ingestor of this process, see src/app). */
  results?: ResultSink;
  executeNode: ExecuteNode;
  /** Node types with no outside effect (see runDag's `isPure`). */
  isPure?: (node: WorkflowNode) => boolean;
  /** Evaluates the items expression of map nodes (the transform sandbox); maps fail without it. */
  evaluate?: Evaluate;
  logger: Logger;
  /** Attempts run at once, across and within dispatch partitions. */
  concurrency: number;
  nodeConcurrency: number;
  workerId?: string;
  /** Consumer group of the dispatch topic; every worker of a deployment shares the default. */
  groupId?: string;
  /** How often lingering attempts look at the ingestor's progress (see IngestWatch). Default 500 ms. */
  ingestWatchPeriodMs?: number;
  /** Attempt and node durations, and the dispatch consumer's lag on Kafka, are measured here (none when absent). */
  metrics?: Pick<Metrics, 'attemptRan' | 'nodeRan' | 'consumerLag'>;
  /** Called last by `stop`, once no attempt runs: releases what the node types hold (evaluator processes). */
  onStopped?: () => Promise<void>;
  /**
   * The dispatcher of this process hands dispatches over here, in memory, while this worker has
   * room (FLOSTRA_WORKER_DISPATCH): it attaches on `start` and detaches on `stop`.
   */
  handOver?: Pick<DispatchHandOver, 'attach'>;
  /**
   * How many dispatches handed over may wait for a free slot beyond those running (default:
   * `concurrency`); the dispatcher sends the rest on the bus, for any worker. Unbounded on a bus
   * that only this process reads (the in-process bus).
   */
  handOverBacklog?: number;
}

/**
 * The worker process: consumes dispatch messages, runs each claimed attempt, and lets the bus
 * commit a dispatch offset only once the attempt's terminal result was acknowledged.
 */
export class WorkerService {
  readonly workerId: string;
  private consumer: ConsumerHandle | null = null;
  private stopping = false;
  private stopReportingLag: () => void = () => undefined;
  /** A pending subscribe after a crash or while the dispatch topic does not exist. */
  private resubscribe: ReturnType<typeof setTimeout> | undefined;
  private waitingForTopic = false;
  private readonly runner: AttemptRunner;
  private readonly client: ControlPlane;
  private readonly ingestWatch: IngestWatch;
  /** Attempts this process already ran: a redelivered dispatch is not claimed twice. */
  private readonly seen = new LruSet(10_000);
  /** Attempts running in this process now, by attemptId. */
  private readonly running = new Map<string, Promise<void>>();
  /** Aborted by `stop` once its grace has passed: running attempts are handed back. */
  private readonly handBack = new AbortController();
  /** `concurrency` slots, shared by dispatches from the bus and those handed over in process. */
  private readonly slots: Slots;
  /** Dispatches handed over that wait for a slot. */
  private waitingHandedOver = 0;
  /** True between `start` and `stop`: dispatches handed over are taken. */
  private taking = false;
  private detach: () => void = () => undefined;

  constructor(private readonly options: WorkerOptions) {
    this.workerId = options.workerId ?? `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
    this.client = 'controlPlane' in options ? options.controlPlane : new ControlPlaneClient(options.apiUrl, options.token);
    this.slots = new Slots(options.concurrency);
    // Every running attempt listens on it, and removes its listener when it ends: more than
    // Node's default of ten at a time is the normal case, not a leak.
    setMaxListeners(0, this.handBack.signal);
    this.ingestWatch = new IngestWatch({
      bus: options.bus,
      topic: TOPICS.results,
      groupId: INGESTOR_GROUP_ID,
      periodMs: options.ingestWatchPeriodMs ?? 500,
      logger: options.logger.child({ component: 'worker' }),
    });
    this.runner = new AttemptRunner({
      bus: options.bus,
      results: options.results,
      client: this.client,
      executeNode: options.executeNode,
      isPure: options.isPure,
      evaluate: options.evaluate,
      workerId: this.workerId,
      logger: options.logger.child({ component: 'worker', workerId: this.workerId }),
      nodeConcurrency: options.nodeConcurrency,
      ingestWatch: this.ingestWatch,
      metrics: options.metrics,
      handBack: this.handBack.signal,
    });
  }

  /**
   * Starts consuming dispatches. When the dispatch topic does not exist yet (a worker process
   * started before any dispatcher created it), it resolves at once and keeps trying every second
   * in the background until the topic exists or `stop` is called.
   */
  async start(): Promise<void> {
    this.stopping = false;
    const groupId = this.options.groupId ?? 'flostra-workers';
    this.stopReportingLag();
    if (this.options.metrics) this.stopReportingLag = reportConsumerLag(this.options.metrics, this.options.bus, groupId, TOPICS.dispatch);
    await this.subscribe(groupId);
    this.taking = true;
    this.detach = this.options.handOver?.attach(this) ?? (() => undefined);
  }

  /**
   * A dispatch handed over in process by this process's dispatcher (see DispatchHandOver): taken
   * when a slot is free, or when fewer than `handOverBacklog` taken ones already wait for one;
   * refused while stopped or full, and the dispatcher sends it on the bus instead. A taken
   * dispatch that has not started when `stop` is called is dropped: it was not claimed, and the
   * dispatcher, whose checkpoint stays before it, sends it again.
   */
  take(dispatch: DispatchMessage, headers: Record<string, string>): boolean {
    if (!this.taking) return false;
    const { attemptId } = dispatch;
    if (this.seen.has(attemptId) || this.running.has(attemptId)) return true;
    const hasSlot = this.slots.tryAcquire();
    if (!hasSlot && this.waitingHandedOver >= (this.options.handOverBacklog ?? this.options.concurrency)) return false;
    const run = (async () => {
      if (!hasSlot) {
        this.waitingHandedOver++;
        try {
          await this.slots.acquire();
        } finally {
          this.waitingHandedOver--;
        }
      }
      try {
        if (this.taking) await this.runAttempt(dispatch, contextFrom(headers));
      } finally {
        this.slots.release();
      }
    })();
    this.running.set(attemptId, run);
    void run
      .catch((error: unknown) =>
        // Not claimed, or its end not reported: the dispatcher makes it durable after a while, and the watchdog retries what ran.
        this.options.logger.error('an attempt handed over in process failed to run', { attemptId, error: String(error) }),
      )
      .finally(() => this.running.delete(attemptId));
    return true;
  }

  private async subscribe(groupId: string): Promise<void> {
    if (this.stopping) return;
    try {
      const consumer = await this.options.bus.consume({
        groupId,
        topic: TOPICS.dispatch,
        concurrency: this.options.concurrency,
        // Attempts of one partition run side by side: a long attempt (a delay, a slow http call)
        // holds back its partition's commit, never the attempts dispatched behind it.
        maxInFlight: this.options.concurrency,
        handle: (message) => this.handle(message),
        onCrash: (error) => {
          // The failed message was not committed: a fresh consumer gets it again.
          this.options.logger.error('worker consumer stopped; restarting it', { error: String(error) });
          this.subscribeLater(groupId);
        },
      });
      // Stopped while subscribing: this consumer is not one stop() saw.
      if (this.stopping) return await consumer.stop();
      this.consumer = consumer;
      if (this.waitingForTopic) this.options.logger.info('the dispatch topic exists now; taking dispatches', { topic: TOPICS.dispatch });
      this.waitingForTopic = false;
    } catch (error) {
      if (!(error instanceof TopicNotFoundError)) throw error;
      if (!this.waitingForTopic)
        this.options.logger.warn('the dispatch topic does not exist yet (a dispatcher creates it); waiting for it', {
          topic: TOPICS.dispatch,
        });
      this.waitingForTopic = true;
      this.subscribeLater(groupId);
    }
  }

  /** Subscribes again in a second, unless stopped by then. */
  private subscribeLater(groupId: string): void {
    if (this.stopping) return;
    clearTimeout(this.resubscribe);
    this.resubscribe = setTimeout(
      () => void this.subscribe(groupId).catch((e) => this.options.logger.error('worker restart failed', { error: String(e) })),
      1_000,
    );
  }

  /**
   * Stops taking dispatches and waits for the attempts running here, committing their offsets.
   * Those still running after `graceMs` (default: no bound) are handed back: they stop without
   * reporting, and the watchdog retries them once their leases run out.
   */
  async stop(options: { graceMs?: number } = {}): Promise<void> {
    this.stopping = true;
    this.taking = false;
    this.detach();
    clearTimeout(this.resubscribe);
    this.stopReportingLag();
    const grace =
      options.graceMs === undefined
        ? null
        : setTimeout(() => {
            if (this.running.size > 0)
              this.options.logger.warn('shutdown grace passed; handing running attempts back', { attempts: this.running.size });
            this.handBack.abort();
          }, options.graceMs);
    await this.consumer?.stop();
    // Attempts handed over in process: those waiting for a slot end without running.
    await Promise.allSettled([...this.running.values()]);
    if (grace !== null) clearTimeout(grace);
    this.consumer = null;
    this.ingestWatch.stop();
    this.client.close();
    await this.options.onStopped?.();
  }

  private async handle(message: IncomingMessage): Promise<void> {
    const parsed = parseJson(message.value);
    const dispatch = parsed === undefined ? null : dispatchMessageSchema.safeParse(parsed);
    if (!dispatch?.success) {
      // Promise 11 (docs/architecture.md): an unreadable dispatch goes to a dead-letter topic with the reason.
      const reason = dispatch ? dispatch.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') : 'not JSON';
      await this.options.bus.publish(DISPATCH_DLQ_TOPIC, [
        {
          key: message.key,
          value: JSON.stringify({
            reason: { code: 'validation_failed', message: reason },
            original: message.value,
            topic: message.topic,
            partition: message.partition,
            offset: message.offset,
          }),
        },
      ]);
      return;
    }
    const { attemptId } = dispatch.data;
    if (this.seen.has(attemptId)) return;
    // A duplicate delivered while the attempt runs here (attempts run side by side) must not run
    // it again: a claim repeated by the same worker is answered as the same claim. It waits for
    // the first run instead, so its offset, too, is committed only after the terminal result.
    const running = this.running.get(attemptId);
    if (running !== undefined) return running;
    const run = this.runInSlot(dispatch.data, contextFrom(message.headers));
    this.running.set(attemptId, run);
    try {
      await run;
    } finally {
      this.running.delete(attemptId);
    }
  }

  /** A dispatch from the bus: runs once a slot is free (dispatches handed over share the slots). */
  private async runInSlot(dispatch: DispatchMessage, trace: Context): Promise<void> {
    await this.slots.acquire();
    try {
      await this.runAttempt(dispatch, trace);
    } finally {
      this.slots.release();
    }
  }

  private async runAttempt(dispatch: DispatchMessage, trace: Context): Promise<void> {
    const { attemptId } = dispatch;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.runner.run(dispatch, trace);
        break;
      } catch (error) {
        // The control plane is down: the attempt was not claimed (or its end not reported).
        // Retry while the queue deadline allows; after that the claim would be refused anyway.
        if (!(error instanceof ControlPlaneUnavailableError)) throw error;
        if (Date.now() >= Date.parse(dispatch.queueDeadline)) {
          // Past the deadline a claim is refused anyway; an attempt that ran but could not report
          // loses its lease and the watchdog retries it. Nothing is lost by moving on.
          this.options.logger.warn('control plane unreachable past the queue deadline; leaving the attempt to the watchdog', {
            attemptId,
            error: String(error),
          });
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 100 * 2 ** attempt)));
      }
    }
    this.remember(attemptId);
  }

  private remember(attemptId: string): void {
    this.seen.add(attemptId);
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
