import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ConsumerLagSample, ExecutionEndStatus, Metrics, ProjectionLagSample } from '../core/metrics.port.js';
import { BoundedLabel, statusClass } from './bounded-label.js';

export interface PrometheusMetricsOptions {
  /** Which event store appends go to: the `store` label of the append latency. */
  store: string;
  /** Distinct workspaces with series of their own (FLOSTRA_METRICS_MAX_WORKSPACES); later ones count as `_other`. */
  maxWorkspaces: number;
  /** How long a scrape waits for a source read at scrape time (projector lag, consumer lag). */
  sourceTimeoutMs?: number;
}

/** Seconds, for things that take milliseconds to minutes: appends, lags, HTTP requests. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Seconds, for work that may take hours: nodes and attempts (delays, approvals, slow calls). */
const RUN_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14400];

/** Default process metrics (CPU, memory, event loop, GC) once per process, whatever the apps in it. */
let processRegistry: Registry | undefined;
function defaultMetricsRegistry(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

type Observe = { observe(value: number): void };
type Increment = { inc(value?: number): void };

/**
 * Metrics as Prometheus series (`flostra_*`, plus the default `process_*` and `nodejs_*`), in
 * a registry of this instance: each process exposes the series of its own roles. Labelled
 * children are made once per label combination and reused, so a hot path pays one map lookup.
 */
export class PrometheusMetrics implements Metrics {
  readonly registry = new Registry();
  private readonly workspaces: BoundedLabel;
  private readonly children = new Map<string, Observe | Increment>();
  private readonly sseSources = new Set<() => number>();
  private readonly projectionSources = new Set<() => Promise<readonly ProjectionLagSample[]>>();
  private readonly consumerSources = new Set<() => Promise<readonly ConsumerLagSample[]>>();
  private readonly sourceTimeoutMs: number;

  private readonly started: Counter<'workspace'>;
  private readonly ended: Counter<'workspace' | 'status'>;
  private readonly queue: Histogram;
  private readonly attempts: Histogram<'outcome'>;
  private readonly nodes: Histogram<'node_type' | 'outcome'>;
  private readonly dispatch: Histogram;
  private readonly ingest: Histogram;
  private readonly appendOk: Observe;
  private readonly appendFailed: Observe;
  private readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  private readonly httpDurations: Histogram<'method' | 'route' | 'status_class'>;
  private readonly sseBytes: Counter;
  private readonly lagEvents: Gauge<'read_model'>;
  private readonly leases: Gauge<'role'>;
  private readonly lagSeconds: Gauge<'read_model'>;
  private readonly consumerLagGauge: Gauge<'group' | 'topic'>;

  constructor(options: PrometheusMetricsOptions) {
    this.workspaces = new BoundedLabel(options.maxWorkspaces);
    this.sourceTimeoutMs = options.sourceTimeoutMs ?? 2_000;
    const registers = [this.registry];
    this.started = new Counter({
      name: 'flostra_executions_started_total',
      help: 'Executions started (ExecutionStarted appended by this process), by workspace.',
      labelNames: ['workspace'],
      registers,
    });
    this.ended = new Counter({
      name: 'flostra_executions_ended_total',
      help: 'Executions ended (terminal event appended by this process), by workspace and status.',
      labelNames: ['workspace', 'status'],
      registers,
    });
    this.queue = new Histogram({
      name: 'flostra_attempt_queue_seconds',
      help: 'Time from an attempt becoming claimable (scheduled, or its notBefore) to its claim.',
      buckets: RUN_BUCKETS,
      registers,
    });
    this.attempts = new Histogram({
      name: 'flostra_attempt_duration_seconds',
      help: 'Time a worker ran an attempt, from its claim to its reported end, by outcome.',
      labelNames: ['outcome'],
      buckets: RUN_BUCKETS,
      registers,
    });
    this.nodes = new Histogram({
      name: 'flostra_node_duration_seconds',
      help: 'Time a worker ran one node, by node type and outcome.',
      labelNames: ['node_type', 'outcome'],
      buckets: RUN_BUCKETS,
      registers,
    });
    this.dispatch = new Histogram({
      name: 'flostra_dispatch_lag_seconds',
      help: 'Time from an AttemptScheduled being appended (or a held-back retry becoming due) to its dispatch being acknowledged by the bus.',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.ingest = new Histogram({
      name: 'flostra_ingest_lag_seconds',
      help: "Time from a worker producing a result to the ingestor's append of it.",
      buckets: LATENCY_BUCKETS,
      registers,
    });
    const appends = new Histogram<'store' | 'result'>({
      name: 'flostra_event_store_append_seconds',
      help: 'Latency of appends to the event store, by store and result.',
      labelNames: ['store', 'result'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.appendOk = appends.labels({ store: options.store, result: 'ok' });
    this.appendFailed = appends.labels({ store: options.store, result: 'error' });
    this.httpRequests = new Counter({
      name: 'flostra_http_requests_total',
      help: 'HTTP requests answered, by method, route template and status.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.httpDurations = new Histogram({
      name: 'flostra_http_request_duration_seconds',
      help: 'Time to answer an HTTP request (SSE streams excluded), by method, route template and status class.',
      labelNames: ['method', 'route', 'status_class'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.sseBytes = new Counter({
      name: 'flostra_sse_sent_bytes_total',
      help: 'Bytes written to Server-Sent Events clients.',
      registers,
    });
    this.leases = new Gauge({
      name: 'flostra_lease_held',
      help: 'Leases this process holds, by role: 1 for the active dispatcher, admission or watchdog, one per running read model for the projector.',
      labelNames: ['role'],
      registers,
    });
    const sseSources = this.sseSources;
    new Gauge({
      name: 'flostra_sse_connections',
      help: 'Open Server-Sent Events streams.',
      registers,
      collect() {
        let open = 0;
        for (const read of sseSources) open += read();
        this.set(open);
      },
    });
    this.lagEvents = new Gauge({
      name: 'flostra_projection_lag_events',
      help: 'Events of the log a read model has not applied yet (counted up to 1000), in the process that runs the projector.',
      labelNames: ['read_model'],
      registers,
    });
    this.lagSeconds = new Gauge({
      name: 'flostra_projection_lag_seconds',
      help: 'Age of the oldest event a read model has not applied yet; 0 when caught up.',
      labelNames: ['read_model'],
      registers,
    });
    this.consumerLagGauge = new Gauge({
      name: 'flostra_kafka_consumer_lag',
      help: 'Messages a Kafka consumer group of this process has not committed, summed over the partitions of a topic.',
      labelNames: ['group', 'topic'],
      registers,
    });
  }

  /** The exposition text: this instance's series (gauges read from their sources first), then the process's default ones. */
  async scrape(): Promise<string> {
    await this.readSources();
    const [own, defaults] = await Promise.all([this.registry.metrics(), defaultMetricsRegistry().metrics()]);
    return `${own}\n${defaults}`;
  }

  /** Sets the gauges of the sources read at scrape time; a source that fails or is late leaves its series out. */
  private async readSources(): Promise<void> {
    const [projections, consumers] = await Promise.all([
      Promise.all([...this.projectionSources].map((read) => this.within(read))),
      Promise.all([...this.consumerSources].map((read) => this.within(read))),
    ]);
    this.lagEvents.reset();
    this.lagSeconds.reset();
    for (const sample of projections.flatMap((samples) => samples ?? [])) {
      this.lagEvents.set({ read_model: sample.readModel }, sample.events);
      this.lagSeconds.set({ read_model: sample.readModel }, sample.seconds);
    }
    this.consumerLagGauge.reset();
    for (const sample of consumers.flatMap((samples) => samples ?? []))
      this.consumerLagGauge.set({ group: sample.group, topic: sample.topic }, sample.messages);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  executionStarted(workspaceId: string): void {
    const workspace = this.workspaces.of(workspaceId);
    this.child(`s|${workspace}`, () => this.started.labels({ workspace })).inc();
  }

  executionEnded(workspaceId: string, status: ExecutionEndStatus): void {
    const workspace = this.workspaces.of(workspaceId);
    this.child(`e|${workspace}|${status}`, () => this.ended.labels({ workspace, status })).inc();
  }

  attemptQueued(seconds: number): void {
    this.queue.observe(nonNegative(seconds));
  }

  attemptRan(outcome: string, seconds: number): void {
    this.child(`a|${outcome}`, () => this.attempts.labels({ outcome })).observe(nonNegative(seconds));
  }

  nodeRan(nodeType: string, outcome: string, seconds: number): void {
    this.child(`n|${nodeType}|${outcome}`, () => this.nodes.labels({ node_type: nodeType, outcome })).observe(nonNegative(seconds));
  }

  leaseHeld(role: string, held: boolean): void {
    if (held) this.leases.inc({ role });
    else this.leases.dec({ role });
  }

  dispatched(seconds: number): void {
    this.dispatch.observe(nonNegative(seconds));
  }

  ingested(seconds: number): void {
    this.ingest.observe(nonNegative(seconds));
  }

  eventStoreAppend(seconds: number, failed: boolean): void {
    (failed ? this.appendFailed : this.appendOk).observe(nonNegative(seconds));
  }

  httpRequest(method: string, route: string, status: number, seconds: number | null): void {
    this.child(`h|${method}|${route}|${status}`, () => this.httpRequests.labels({ method, route, status: String(status) })).inc();
    if (seconds === null) return;
    const statusClassLabel = statusClass(status);
    this.child(`d|${method}|${route}|${statusClassLabel}`, () =>
      this.httpDurations.labels({ method, route, status_class: statusClassLabel }),
    ).observe(nonNegative(seconds));
  }

  sseBytesSent(bytes: number): void {
    this.sseBytes.inc(bytes);
  }

  sseConnections(read: () => number): () => void {
    this.sseSources.add(read);
    return () => this.sseSources.delete(read);
  }

  projectionLag(read: () => Promise<readonly ProjectionLagSample[]>): () => void {
    this.projectionSources.add(read);
    return () => this.projectionSources.delete(read);
  }

  consumerLag(read: () => Promise<readonly ConsumerLagSample[]>): () => void {
    this.consumerSources.add(read);
    return () => this.consumerSources.delete(read);
  }

  private child<T extends Observe | Increment>(key: string, make: () => T): T {
    let child = this.children.get(key) as T | undefined;
    if (child === undefined) this.children.set(key, (child = make()));
    return child;
  }

  /** A source's answer, or undefined when it failed or outlasted the timeout (its series are left out). */
  private async within<T>(read: () => Promise<T>): Promise<T | undefined> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), this.sourceTimeoutMs)));
    try {
      return await Promise.race([read().catch(() => undefined), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

function nonNegative(seconds: number): number {
  return Number.isFinite(seconds) && seconds > 0 ? seconds : 0;
}
