import type { JoinTrigger } from './workflow-graph.schema.js';

/** The final state a predecessor reached; only these three unblock a successor. */
export type FinalOutcome = 'succeeded' | 'failed' | 'skipped';

export type TriggerDecision = { readonly run: true } | { readonly run: false; readonly reason: string };

/**
 * One rule for both sides that decide what runs next: the worker's DAG runner, and the control
 * plane when a task's end makes successors runnable (src/executions/domain/task-successors.ts).
 *
 * Whether a node runs once EVERY predecessor is final (the caller guarantees that: a node whose
 * predecessor has not produced yet is not asked). A node without predecessors always runs.
 * - `all_success`: every predecessor succeeded;
 * - `all_done`: whatever they ended as;
 * - `one_success`: at least one succeeded.
 */
export function decideTrigger(
  trigger: JoinTrigger,
  predecessors: readonly { readonly id: string; readonly outcome: FinalOutcome }[],
): TriggerDecision {
  if (predecessors.length === 0) return { run: true };
  switch (trigger) {
    case 'all_success': {
      const blocker = predecessors.find((p) => p.outcome !== 'succeeded');
      if (!blocker) return { run: true };
      return { run: false, reason: `all_success: predecessor ${blocker.id} ${blocker.outcome}` };
    }
    case 'all_done':
      return { run: true };
    case 'one_success':
      if (predecessors.some((p) => p.outcome === 'succeeded')) return { run: true };
      return { run: false, reason: 'one_success: no predecessor succeeded' };
    default: {
      const unknown: never = trigger;
      throw new Error(`decideTrigger: unknown trigger ${String(unknown)}`);
    }
  }
}
