import type { Bus } from '../../core/bus.port.js';
import type { Logger } from '../../core/logger.js';
import { NO_METRICS, type Metrics } from '../../core/metrics.port.js';
import { type Context, inSpan, SpanKind } from '../../observability/tracing.js';
import { runDag } from '../dag/dag-runner.js';
import type { Evaluate, ExecuteNode } from '../dag/dag.types.js';
import type { WorkflowNode } from '../../workflows/domain/workflow-graph.schema.js';
import { ClaimRefusedError, type ClaimReply, type ControlPlane } from './control-plane.port.js';
import type { DispatchMessage } from '../../dispatch/dispatch-message.js';
import type { IngestWatch } from './ingest-watch.js';
import { LeaseKeeper } from './lease-keeper.js';
import { referencedSecretNames } from '../../workflows/domain/secret-references.js';
import { AttemptSecrets } from '../secrets/attempt-secrets.js';
import { redactingExecutor } from '../secrets/redacting-executor.js';
import { redactingLogger, SecretRedactor } from '../secrets/secret-redactor.js';
import { assertOutputFits, limitNodeOutputs, outputTooLarge } from './output-limit.js';
import { ResultPublisher, ResultTooLargeError, resultOf, type ResultBody } from './result-publisher.js';
import { busResultSink, type ResultSink } from './result-sink.js';

export interface AttemptRunnerOptions {
  bus: Bus;
  /** Where results go: `flostra.results.v1` on `bus` unless given (the ingestor of this process, see ResultSink). */
  results?: ResultSink;
  client: ControlPlane;
  executeNode: ExecuteNode;
  isPure?: (node: WorkflowNode) => boolean;
  /** Evaluates the items expression of map nodes (the transform sandbox). */
  evaluate?: Evaluate;
  workerId: string;
  logger: Logger;
  /** Nodes of one attempt running at once. */
  nodeConcurrency: number;
  /** Tells lingering attempts that the ingestor handled their results (see LeaseKeeper.linger). */
  ingestWatch?: IngestWatch;
  /** Attempt and node durations are measured here. */
  metrics?: Pick<Metrics, 'attemptRan' | 'nodeRan'>;
  /**
   * Aborts when the process stops and its grace has passed: running attempts stop where they
   * are and report nothing. Their leases run out and the watchdog retries them elsewhere, from
   * the nodes already recorded.
   */
  handBack?: AbortSignal;
}

export type AttemptEnd = 'not_claimed' | 'succeeded' | 'failed' | 'cancelled' | 'suspended' | 'lease_lost';

/**
 * Runs one dispatched attempt: claim (only the winner runs), heartbeat, run the DAG, publish
 * every result, and resolve only once the terminal result was acknowledged by the broker (or,
 * handed to the ingestor of this process, handled) — the caller commits the dispatch offset
 * after that.
 */
export class AttemptRunner {
  /** Node outputs too large for their result message fail their node (promise 6, docs/architecture.md). */
  private readonly executeNode: ExecuteNode;

  private readonly metrics: Pick<Metrics, 'attemptRan' | 'nodeRan'>;
  private readonly results: ResultSink;

  constructor(private readonly options: AttemptRunnerOptions) {
    this.executeNode = limitNodeOutputs(options.executeNode);
    this.metrics = options.metrics ?? NO_METRICS;
    this.results = options.results ?? busResultSink(options.bus);
  }

  /**
   * Runs the attempt in a span that continues the dispatch's trace (`parent`, from the dispatch
   * message's headers): the claim, every node and every result descend from it.
   */
  async run(dispatch: DispatchMessage, parent?: Context): Promise<AttemptEnd> {
    const started = performance.now();
    const attributes = { 'flostra.execution_id': dispatch.executionId, 'flostra.attempt_id': dispatch.attemptId };
    const end = await inSpan('attempt', { kind: SpanKind.CONSUMER, parent, attributes }, async (span) => {
      const ended = await this.runAttempt(dispatch);
      span.setAttribute('flostra.attempt_end', ended);
      return ended;
    });
    if (end !== 'not_claimed') this.metrics.attemptRan(end, (performance.now() - started) / 1000);
    return end;
  }

  private async runAttempt(dispatch: DispatchMessage): Promise<AttemptEnd> {
    const { client, workerId, logger } = this.options;
    // Promise 12 (docs/architecture.md): one redactor per attempt; the node outputs and errors, the
    // results on the bus, the fallback complete call and every log line of the attempt pass through it.
    const redactor = new SecretRedactor();
    const log = redactingLogger(logger, redactor).child({ executionId: dispatch.executionId, attemptId: dispatch.attemptId });
    let claim: ClaimReply;
    try {
      claim = await client.claim(dispatch.executionId, dispatch.attemptId, workerId);
    } catch (error) {
      if (error instanceof ClaimRefusedError) {
        log.info('claim refused; another worker holds it or it is no longer current', { code: error.code });
        return 'not_claimed';
      }
      throw error;
    }
    const controller = new AbortController();
    const keeper = new LeaseKeeper(client, { ...claim, workerId }, controller, log);
    const handBack = () => controller.abort();
    this.options.handBack?.addEventListener('abort', handBack, { once: true });
    if (this.options.handBack?.aborted === true) controller.abort();
    const publisher = new ResultPublisher(
      this.results,
      { executionId: claim.executionId, attemptId: claim.attemptId, workerId, fencingToken: claim.fencingToken },
      { redact: (result) => redactor.value(result) },
    );
    const secrets = new AttemptSecrets(
      referencedSecretNames(claim.workflow.graph),
      (names) => client.resolveSecrets(claim.executionId, claim.attemptId, { workerId, fencingToken: claim.fencingToken, names }),
      redactor,
    );
    keeper.start();
    let published = false;
    try {
      const result = await runDag({
        graph: claim.workflow.graph,
        input: claim.input,
        completedNodes: claim.completedNodes,
        failedNodes: claim.failedNodes,
        executionId: claim.executionId,
        workspaceId: claim.workspaceId,
        attemptId: claim.attemptId,
        signal: controller.signal,
        concurrency: this.options.nodeConcurrency,
        executeNode: measuredNodes(redactingExecutor(this.executeNode, secrets, redactor), this.metrics),
        isPure: this.options.isPure,
        report: (event) => publisher.publish(resultOf(event)),
        // Results of pure nodes go out with the next result: all of a pure graph's, with the terminal one.
        hold: (event) => publisher.hold(resultOf(event)),
        completedItems: claim.completedItems,
        evaluate: this.options.evaluate,
        checkOutput: assertOutputFits,
      });
      switch (result.outcome) {
        case 'succeeded': {
          const ended = await this.publishEnd(publisher, { kind: 'attempt_succeeded', output: result.output }, 'the execution’s output');
          published = true;
          return ended ? 'succeeded' : 'failed';
        }
        case 'failed':
          await publisher.publish({ kind: 'attempt_failed', error: result.error });
          published = true;
          return 'failed';
        case 'suspended': {
          // Every runnable node waits: at the (first) approval reached, and for the tasks asked for.
          const approval = result.approvals.at(0);
          const tasks = {
            ...(result.tasks.length > 0 ? { tasks: result.tasks } : {}),
            ...(result.timers.length > 0 ? { timers: result.timers } : {}),
            ...(result.signals.length > 0 ? { signals: result.signals } : {}),
          };
          const ended = await this.publishEnd(
            publisher,
            approval === undefined
              ? { kind: 'attempt_suspended', ...tasks }
              : {
                  kind: 'attempt_suspended',
                  nodeId: approval.nodeId,
                  output: {
                    action: { executionId: claim.executionId, nodeId: approval.nodeId, action: approval.action, inputs: approval.inputs },
                  },
                  ...tasks,
                },
            approval === undefined ? 'the list of waiting nodes' : `the action of approval node ${approval.nodeId}`,
          );
          published = true;
          return ended ? 'suspended' : 'failed';
        }
        case 'cancelled':
          if (keeper.reason === 'cancel_requested') {
            await publisher.publish({ kind: 'attempt_cancelled' });
            published = true;
            return 'cancelled';
          }
          // The lease is gone (or handed back): anything reported now could be refused, so report nothing.
          if (this.options.handBack?.aborted === true) log.warn('attempt handed back: the process is stopping');
          else log.warn('attempt stopped after losing its lease');
          return 'lease_lost';
      }
      throw new Error(`unknown run outcome ${(result as { outcome: string }).outcome}`);
    } catch (error) {
      // Promise 6 (docs/architecture.md): a result that could not be published fails the attempt visibly.
      return await this.failVisibly(claim, publisher, error, log, redactor);
    } finally {
      // Anything still held has no one left to travel with: the attempt ended without it.
      publisher.discard();
      this.options.handBack?.removeEventListener('abort', handBack);
      // A result on the bus is applied later: the lease stays alive until it was. One the sink
      // handled (the ingestor of this process) was applied or refused already.
      if (published && !this.results.handledOnSend)
        keeper.linger(Math.max(60_000, 2 * claim.heartbeatIntervalMs * 3), this.options.ingestWatch);
      else keeper.stop();
    }
  }

  /**
   * Publishes the attempt's end; one too large for a message (the outputs of several leaves, an
   * approval's inputs) fails the attempt instead with `output_too_large`, not retryable. False then.
   */
  private async publishEnd(publisher: ResultPublisher, end: ResultBody, what: string): Promise<boolean> {
    try {
      await publisher.publish(end);
      return true;
    } catch (error) {
      if (!(error instanceof ResultTooLargeError)) throw error;
      const message = `${what} makes a result message of ${error.bytes} bytes; the limit is ${error.limitBytes} bytes`;
      await publisher.publish({ kind: 'attempt_failed', error: outputTooLarge(message) });
      return false;
    }
  }

  private async failVisibly(
    claim: ClaimReply,
    publisher: ResultPublisher,
    cause: unknown,
    log: Logger,
    redactor: SecretRedactor,
  ): Promise<AttemptEnd> {
    const error = {
      code: 'result_publish_failed',
      message: redactor.text(`a result could not be published: ${String(cause)}`).slice(0, 1000),
      retryable: true,
    };
    log.error('attempt failed: results could not be published', { error: String(cause) });
    try {
      await publisher.publish({ kind: 'attempt_failed', error });
      return 'failed';
    } catch {
      // The bus is down: tell the control plane directly. If that fails too, the caller does not
      // commit the dispatch; the lease expires and the watchdog retries the attempt.
      await this.options.client.complete(
        claim.executionId,
        claim.attemptId,
        redactor.value({ workerId: this.options.workerId, fencingToken: claim.fencingToken, outcome: 'failed', error }),
      );
      return 'failed';
    }
  }
}

/** Each node run in a span of its own, its duration measured by node type and outcome. */
function measuredNodes(execute: ExecuteNode, metrics: Pick<Metrics, 'nodeRan'>): ExecuteNode {
  return (node, ctx) => {
    const attributes = { 'flostra.node_id': node.id, 'flostra.node_type': node.type, 'flostra.try': ctx.tryNumber };
    return inSpan(`node ${node.type}`, { attributes }, async () => {
      const started = performance.now();
      try {
        const output = await execute(node, ctx);
        metrics.nodeRan(node.type, 'succeeded', (performance.now() - started) / 1000);
        return output;
      } catch (error) {
        metrics.nodeRan(node.type, ctx.signal.aborted ? 'cancelled' : 'failed', (performance.now() - started) / 1000);
        throw error;
      }
    });
  };
}
