import { setTimeout as delay } from 'node:timers/promises';
import type { ExecutionError } from '../../executions/domain/execution.events.js';
import { backoffMs, shouldRetry } from '../../executions/domain/retry-policy.js';
import type { WorkflowNode } from '../../workflows/domain/workflow-graph.schema.js';
import type { ExecuteNode, NodeContext, Sleep } from './dag.types.js';
import { NodeError, NodeNotStartedError, toNodeFailure } from './node-error.js';

/** The code of a try that outlived the node's `timeoutMs`. */
export const NODE_TIMEOUT = 'node_timeout';

/** How the tries of one node ended. Never a rejection: the runner awaits it unconditionally. */
export type TriesOutcome =
  | { readonly status: 'succeeded'; readonly output: unknown; readonly tries: number }
  | { readonly status: 'failed'; readonly error: ExecutionError; readonly tries: number }
  | { readonly status: 'cancelled'; readonly tries: number };

/** Real timers, abortable: a cancelled run does not sit out a backoff. */
export const abortableSleep: Sleep = (ms, signal) => delay(ms, undefined, { signal });

export interface TryNodeOptions {
  readonly executeNode: ExecuteNode;
  readonly sleep: Sleep;
  readonly random: () => number;
}

/**
 * Runs a node under its own retry policy, inside the attempt: exponential backoff with jitter
 * between tries, no retry for `nonRetryable` codes or `retryable: false`. Once the signal is
 * aborted, whatever the node threw counts as cancellation, not as a node failure; so does a try
 * dropped before it started (`NodeNotStartedError`). With a
 * node-level `timeoutMs`, each try is bounded by it (see `tryWithDeadline`).
 */
export async function tryNode(node: WorkflowNode, context: Omit<NodeContext, 'tryNumber'>, options: TryNodeOptions): Promise<TriesOutcome> {
  const { signal } = context;
  for (let tryNumber = 1; ; tryNumber++) {
    if (signal.aborted) return { status: 'cancelled', tries: tryNumber - 1 };
    let error: ExecutionError;
    try {
      const output = await tryWithDeadline(node, { ...context, tryNumber }, options);
      return { status: 'succeeded', output: output === undefined ? null : output, tries: tryNumber };
    } catch (thrown) {
      if (signal.aborted) return { status: 'cancelled', tries: tryNumber };
      if (thrown instanceof NodeNotStartedError) return { status: 'cancelled', tries: tryNumber - 1 };
      error = toNodeFailure(thrown);
    }
    if (!shouldRetry(node.retry, tryNumber, error)) return { status: 'failed', error, tries: tryNumber };
    try {
      await options.sleep(backoffMs(node.retry, tryNumber, options.random()), signal);
    } catch (thrown) {
      if (signal.aborted) return { status: 'cancelled', tries: tryNumber };
      // A sleep that fails on its own is a worker bug; it must not pass for a node outcome.
      throw thrown;
    }
  }
}

/**
 * One try of a node, bounded by its `timeoutMs` when it has one. At the deadline the node's
 * signal aborts (with the timeout as its reason) and the try fails at once with `node_timeout`:
 * the runner does not wait for a node that ignores its signal, whose late result is dropped.
 * `node_timeout` leaves retrying to the node's policy (`nonRetryable` may list it). A node that
 * never yields (a synchronous loop) cannot be stopped here; the attempt's lease bounds it.
 */
function tryWithDeadline(node: WorkflowNode, context: NodeContext, options: TryNodeOptions): Promise<unknown> {
  const { timeoutMs } = node;
  if (timeoutMs === undefined) return options.executeNode(node, context);
  const deadline = new AbortController();
  // Stops the timer once the try settled (or the run was aborted), so no deadline outlives its try.
  const done = new AbortController();
  const timerSignal = AbortSignal.any([context.signal, done.signal]);
  return new Promise<unknown>((resolve, reject) => {
    let settled = false;
    const settle = (finish: () => void) => {
      if (settled) return;
      settled = true;
      done.abort();
      finish();
    };
    options.sleep(timeoutMs, timerSignal).then(
      () =>
        settle(() => {
          const error = new NodeError(NODE_TIMEOUT, `node ${node.id} did not finish within its timeoutMs of ${timeoutMs} ms`);
          deadline.abort(error);
          reject(error);
        }),
      // Aborted: the try settled first, or the run was aborted (the node's signal says so).
      () => undefined,
    );
    let work: Promise<unknown>;
    try {
      work = options.executeNode(node, { ...context, signal: AbortSignal.any([context.signal, deadline.signal]) });
    } catch (error) {
      work = Promise.reject(error);
    }
    work.then(
      (output) => settle(() => resolve(output)),
      (error: unknown) => settle(() => reject(error)),
    );
  });
}
