import { InvalidStateError } from '../../core/errors.js';
import type { RecordMapItems } from './execution.commands.js';
import type { ExecutionEvent } from './execution.events.js';
import type { StartedExecution } from './execution.state.js';

/**
 * Records a batch of item facts of a running map node. Only the live claim may (`requireLiveClaim`);
 * a batch of a claim whose attempt already ended was appended before its end (results of one
 * execution arrive in order), so it is a replay: nothing new. An item that already succeeded stays
 * as it was: its completion again adds nothing. Each kind of fact becomes one event, if any.
 */
export function recordMapItems(
  s: StartedExecution,
  command: RecordMapItems,
  requireLiveClaim: (s: StartedExecution) => void,
): ExecutionEvent[] {
  const { data, metadata } = command;
  const own = s.attempts.find((a) => a.attemptId === data.attemptId);
  const sameClaim = own?.workerId === data.workerId && own.fencingToken === data.fencingToken;
  if (sameClaim && own.status !== 'running') return [];
  requireLiveClaim(s);
  const node = s.workflow.graph.nodes.find((n) => n.id === data.nodeId);
  if (node === undefined) throw new InvalidStateError(`unknown node ${data.nodeId}`);
  if (node.type !== 'map') throw new InvalidStateError(`node ${data.nodeId} is a ${node.type} node, not a map`);
  const done = s.mapItems?.[data.nodeId] ?? {};
  const seen = new Set<number>();
  const completed = data.completed.filter(({ index }) => {
    if (Object.hasOwn(done, index) || seen.has(index)) return false;
    seen.add(index);
    return true;
  });
  const base = { attemptId: data.attemptId, nodeId: data.nodeId, at: metadata.now.toISOString() };
  const events: ExecutionEvent[] = [];
  if (data.started.length > 0) events.push({ type: 'MapItemsStarted', data: { ...base, indexes: data.started } });
  if (completed.length > 0) {
    events.push({
      type: 'MapItemsCompleted',
      data: { ...base, items: completed.map(({ index, output }) => ({ index, output: output ?? null })) },
    });
  }
  if (data.failed.length > 0) events.push({ type: 'MapItemsFailed', data: { ...base, items: data.failed } });
  return events;
}
