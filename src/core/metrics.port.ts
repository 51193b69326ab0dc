/**
 * The metrics port: what the roles measure, in their own words. The Prometheus adapter
 * (src/observability/prometheus-metrics.ts) turns each call into a `flostra_*` series and owns
 * every label; nothing else imports prom-client. Labels never carry ids: a workspace label is
 * bounded by the adapter, node types and outcomes are closed sets.
 */

/** Status of an execution that ended. */
export type ExecutionEndStatus = 'succeeded' | 'failed' | 'cancelled' | 'timed_out';

/** One read model's distance behind the log, as the projector process sees it. */
export interface ProjectionLagSample {
  readModel: string;
  /** Events of the log the read model has not applied (counted up to a limit). */
  events: number;
  /** Age of the oldest of them; 0 when caught up. */
  seconds: number;
}

/** Messages a consumer group has not committed yet, summed over a topic's partitions. */
export interface ConsumerLagSample {
  group: string;
  topic: string;
  messages: number;
}

/**
 * Values only known when asked (read at each scrape, never on a hot path). A source that fails
 * or takes too long leaves its series out of that scrape. Each returns its unregister function.
 */
export interface MetricSources {
  sseConnections(read: () => number): () => void;
  projectionLag(read: () => Promise<readonly ProjectionLagSample[]>): () => void;
  consumerLag(read: () => Promise<readonly ConsumerLagSample[]>): () => void;
}

export interface Metrics extends MetricSources {
  /** An ExecutionStarted was appended by this process. */
  executionStarted(workspaceId: string): void;
  /** An execution's terminal event was appended by this process. */
  executionEnded(workspaceId: string, status: ExecutionEndStatus): void;
  /** An attempt was claimed `seconds` after it could first be (scheduled, or its notBefore). */
  attemptQueued(seconds: number): void;
  /** A worker ran an attempt from its claim to its reported end. */
  attemptRan(outcome: string, seconds: number): void;
  /** A worker ran one node. `nodeType` is one of the registry's types. */
  nodeRan(nodeType: string, outcome: string, seconds: number): void;
  /** A dispatch was acknowledged by the bus `seconds` after its AttemptScheduled was appended (or became due). */
  dispatched(seconds: number): void;
  /** A worker result was appended `seconds` after the worker produced it. */
  ingested(seconds: number): void;
  /** One append to the event store took `seconds`. */
  eventStoreAppend(seconds: number, failed: boolean): void;
  /** One HTTP request was answered; `route` is the route template (`/v1/executions/:executionId`), never a raw path. */
  httpRequest(method: string, route: string, status: number, seconds: number | null): void;
  /** Bytes written to SSE clients. */
  sseBytesSent(bytes: number): void;
  /** This process began (true) or stopped (false) holding a lease of `role` (`flostra_lease_held`: how many it holds). */
  leaseHeld(role: string, held: boolean): void;
}

const nothing = () => undefined;

/** Measures nothing: for code built without a metrics adapter (unit tests, tools). */
export const NO_METRICS: Metrics = {
  sseConnections: () => nothing,
  projectionLag: () => nothing,
  consumerLag: () => nothing,
  executionStarted: nothing,
  executionEnded: nothing,
  attemptQueued: nothing,
  attemptRan: nothing,
  nodeRan: nothing,
  dispatched: nothing,
  ingested: nothing,
  eventStoreAppend: nothing,
  httpRequest: nothing,
  sseBytesSent: nothing,
  leaseHeld: nothing,
};

export const METRICS = Symbol('Metrics');
