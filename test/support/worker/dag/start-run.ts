import type { RunDagOptions } from '../../../../src/worker/dag/dag.types.js';
import { runDag } from '../../../../src/worker/dag/dag-runner.js';
import { recordingReport } from './scripted-nodes.js';

/** Starts a run with test defaults: no real backoff, fixed jitter, events recorded. */
export function startRun(options: Pick<RunDagOptions, 'graph' | 'executeNode'> & Partial<RunDagOptions>) {
  const { events, report } = recordingReport();
  const controller = new AbortController();
  const result = runDag({
    input: { order: 7 },
    executionId: 'exec-1',
    workspaceId: 'ws-a',
    attemptId: 'attempt-1',
    signal: controller.signal,
    concurrency: 4,
    report,
    sleep: async () => {},
    random: () => 0.5,
    ...options,
  });
  return { result, events, controller };
}
