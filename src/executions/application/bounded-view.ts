import { setImmediate as nextTurn } from 'node:timers/promises';
import { jsonBytes } from '../domain/json-bytes.js';
import type { StartedExecution } from '../domain/execution.state.js';
import { toView } from './execution.views.js';

export type ExecutionView = ReturnType<typeof toView>;

/** What the view shows instead of a value larger than it shows: the value's size. The whole value is in the history. */
export interface OmittedValue {
  $omitted: { bytes: number };
}

/** Measuring values serializes them: after this many bytes the event loop gets a turn for other requests. */
const BYTES_PER_TURN = 256 * 1024;

/**
 * The view of one execution with every large value (inputs, outputs, progress, payloads,
 * approval actions) beyond `valueMaxBytes` summarized, so its answer stays small whatever the
 * execution holds (promise 13, docs/architecture.md). Built a slice at a time: a large document
 * never holds the event loop for long, and other requests (`/health/live`) are answered meanwhile.
 */
export async function boundedView(state: StartedExecution, position: string, valueMaxBytes: number): Promise<ExecutionView> {
  const view = toView(state, position);
  let sinceTurn = 0;
  const fit = async <T>(value: T): Promise<T | OmittedValue> => {
    if (value === null || (typeof value !== 'object' && typeof value !== 'string')) return value;
    const bytes = jsonBytes(value);
    sinceTurn += bytes;
    if (sinceTurn >= BYTES_PER_TURN) {
      sinceTurn = 0;
      await nextTurn();
    }
    return bytes > valueMaxBytes ? { $omitted: { bytes } } : value;
  };
  view.input = (await fit(view.input)) as Record<string, unknown>;
  view.output = await fit(view.output);
  if (view.pendingApproval !== null) view.pendingApproval = { ...view.pendingApproval, action: await fit(view.pendingApproval.action) };
  for (const node of view.nodes) node.output = await fit(node.output);
  for (const task of view.tasks) {
    task.input = await fit(task.input);
    task.output = await fit(task.output);
    task.progress = await fit(task.progress);
    for (const entry of task.recentProgress) entry.progress = await fit(entry.progress);
  }
  for (const signal of view.signals) signal.payload = await fit(signal.payload);
  return view;
}
