import type { Bus } from '../../core/bus.port.js';
import type { Logger } from '../../core/logger.js';
import type { Metrics } from '../../core/metrics.port.js';
import { CodeSandbox, type CodeSandboxOptions } from '../../sandbox/code-sandbox.js';
import { createEgressGuard } from '../egress/egress-guard.js';
import { createNodeRegistry } from '../nodes/node-registry.js';
import { TransformSandbox, type TransformSandboxOptions } from '../nodes/transform-sandbox.js';
import type { ResultSink } from './result-sink.js';
import { type ControlPlaneRoute, WorkerService, type WorkerOptions as WorkerServiceOptions } from './worker.service.js';

export type CreateWorkerOptions = WorkerSettings & ControlPlaneRoute;

interface WorkerSettings {
  bus: Bus;
  /** Where results go: `flostra.results.v1` on `bus` unless given (the ingestor of this process, see src/app). */
  results?: ResultSink;
  logger: Logger;
  concurrency: number;
  /** Allowlist entries: CIDRs (contain "/") or host names. */
  egressAllow: readonly string[];
  workerId?: string;
  groupId?: string;
  /** Limits of transform evaluation (FLOSTRA_TRANSFORM_*): the defaults where absent. */
  transform?: Partial<TransformSandboxOptions>;
  /** Threads of the code sandbox and each workspace's share of them (FLOSTRA_CODE_*): the defaults where absent. */
  code?: Pick<CodeSandboxOptions, 'threads' | 'cpuBudgetMs' | 'cpuWindowMs'>;
  /** Where attempt and node durations go (the process's metrics); none when absent. */
  metrics?: Metrics;
  /** See WorkerService's options. */
  handOver?: WorkerServiceOptions['handOver'];
  handOverBacklog?: number;
}

/** A worker with every node type, its http nodes behind the egress guard. */
export function createWorker(options: CreateWorkerOptions): WorkerService {
  const cidrs = options.egressAllow.filter((entry) => entry.includes('/'));
  const hosts = options.egressAllow.filter((entry) => !entry.includes('/'));
  const transforms = new TransformSandbox(options.transform);
  const code = new CodeSandbox(options.code);
  const registry = createNodeRegistry({ egress: createEgressGuard({ allow: { cidrs, hosts } }), transform: transforms, code });
  return new WorkerService({
    ...('controlPlane' in options ? { controlPlane: options.controlPlane } : { apiUrl: options.apiUrl, token: options.token }),
    bus: options.bus,
    results: options.results,
    executeNode: registry.execute,
    isPure: registry.isPure,
    evaluate: registry.evaluate,
    logger: options.logger,
    concurrency: options.concurrency,
    nodeConcurrency: 4,
    workerId: options.workerId,
    groupId: options.groupId,
    metrics: options.metrics,
    handOver: options.handOver,
    handOverBacklog: options.handOverBacklog,
    onStopped: async () => {
      await Promise.all([transforms.close(), code.close()]);
    },
  });
}
