import { describe, expect, it } from '@jest/globals';
import {
  EventLog,
  EXECUTION_EVENT_TYPES,
  eventSummary,
  executionStatus,
  mapProgress,
  nodeOf,
  nodeStates,
  nodeWaits,
  taskSummary,
  type TimelineEvent,
} from '../../console/src/lib/event-log.js';
import { EXECUTION_EVENT_TYPES as SERVER_TYPES } from '../../src/executions/domain/execution.events.js';

let seq = 0;
const event = (type: string, data: Record<string, unknown> = {}): TimelineEvent => {
  seq++;
  return { eventId: `e${seq}`, type, position: String(seq).padStart(20, '0'), recordedAt: new Date(seq).toISOString(), data };
};

describe('the console’s event log', () => {
  it('listens to every event type the server streams', () => {
    expect([...EXECUTION_EVENT_TYPES].sort()).toEqual([...SERVER_TYPES].sort());
  });

  it('keeps each position once, in arrival order, whatever is delivered again', () => {
    const log = new EventLog();
    const [a, b, c] = [event('ExecutionStarted'), event('AttemptScheduled'), event('AttemptClaimed')];
    expect(log.add([a, b])).toBe(true);
    const before = log.events;
    expect(log.add([b])).toBe(false);
    expect(log.events).toBe(before);
    expect(log.add([{ ...b, eventId: 'copy' }, c])).toBe(true);
    expect(log.events.map((e) => e.position)).toEqual([a.position, b.position, c.position]);
    expect(log.lastPosition).toBe(c.position);
  });

  it('colours nodes by their latest event, and a new attempt runs the unfinished ones again', () => {
    const ids = ['a', 'b', 'c'];
    const events = [
      event('AttemptScheduled', { reason: 'start' }),
      event('NodeStarted', { nodeId: 'a' }),
      event('NodeSucceeded', { nodeId: 'a' }),
      event('NodeStarted', { nodeId: 'b' }),
    ];
    expect(nodeStates(ids, events)).toEqual({ a: 'succeeded', b: 'running', c: 'pending' });
    events.push(event('NodeFailed', { nodeId: 'b' }), event('NodeSkipped', { nodeId: 'c' }));
    expect(nodeStates(ids, events)).toEqual({ a: 'succeeded', b: 'failed', c: 'skipped' });
    events.push(event('AttemptScheduled', { reason: 'redrive' }));
    expect(nodeStates(ids, events)).toEqual({ a: 'succeeded', b: 'pending', c: 'pending' });
    events.push(event('NodeAwaitingApproval', { nodeId: 'b' }));
    expect(nodeStates(ids, events).b).toBe('awaiting_approval');
    events.push(event('ApprovalGranted', { nodeId: 'b' }));
    expect(nodeStates(ids, events).b).toBe('succeeded');
  });

  it('shows a task node waiting while its task lives, through resume attempts, and what it waits for', () => {
    const ids = ['a', 'b'];
    const task = (n: number) => `0b8f4e0a-1c2d-4e5f-8a9b-000000000001.a.${n}`;
    const events = [
      event('AttemptScheduled', { reason: 'start' }),
      event('TaskScheduled', { taskId: task(1), nodeId: 'a', queue: 'billing', taskAttempt: 1 }),
      event('NodeAwaitingApproval', { nodeId: 'b' }),
    ];
    expect(nodeStates(ids, events)).toEqual({ a: 'waiting', b: 'awaiting_approval' });
    expect(nodeWaits(events)).toEqual({ a: 'task on queue billing', b: 'a person’s approval' });
    events.push(event('ApprovalGranted', { nodeId: 'b' }), event('AttemptScheduled', { reason: 'resume' }));
    events.push(event('TaskClaimed', { taskId: task(1), workerId: 'poller-7' }));
    expect(nodeStates(ids, events)).toEqual({ a: 'waiting', b: 'succeeded' });
    expect(nodeWaits(events)).toEqual({ a: 'task on queue billing · claimed by poller-7' });
    events.push(event('TaskFailed', { taskId: task(1), error: { code: 'busy' } }));
    events.push(event('TaskScheduled', { taskId: task(2), nodeId: 'a', queue: 'billing', taskAttempt: 2 }));
    expect(nodeWaits(events)).toEqual({ a: 'task on queue billing · try 2' });
    events.push(event('TaskCancelled', { taskId: task(2) }));
    expect(nodeStates(ids, events).a).toBe('cancelled');
    expect(nodeWaits(events)).toEqual({});
  });

  it('names the node of a task’s event from its task id, and sums the event up for the list', () => {
    const claimed = event('TaskClaimed', { taskId: '0b8f4e0a-1c2d-4e5f-8a9b-000000000001.charge.2', workerId: 'poller-7' });
    expect(nodeOf(claimed)).toBe('charge');
    expect(taskSummary(claimed)).toBe('claimed by poller-7');
    expect(taskSummary(event('TaskScheduled', { queue: 'billing', taskAttempt: 2 }))).toBe('queue billing · try 2');
    expect(taskSummary(event('TaskLeaseExtended', { progress: { done: 0.5 } }))).toBe('heartbeat · progress {"done":0.5}');
    expect(taskSummary(event('TaskFailed', { error: { code: 'busy' } }))).toBe('error busy');
    expect(taskSummary(event('TaskTimedOut', { reason: 'lease_expired' }))).toBe('lease_expired');
    expect(taskSummary(event('NodeStarted', { nodeId: 'a' }))).toBe('');
  });

  it('tells the execution’s status from its events', () => {
    expect(executionStatus([])).toBeNull();
    expect(executionStatus([event('ExecutionStarted'), event('AttemptScheduled')])).toBe('queued');
    expect(executionStatus([event('AttemptClaimed')])).toBe('running');
    expect(executionStatus([event('AttemptClaimed'), event('AttemptSuspended')])).toBe('awaiting_approval');
    expect(executionStatus([event('AttemptClaimed'), event('AttemptSuspended', { waits: [{ nodeId: 'a', kind: 'task' }] })])).toBe(
      'waiting',
    );
    expect(executionStatus([event('AttemptClaimed'), event('ExecutionCancelled')])).toBe('cancelled');
    // Root tasks scheduled with the start: no attempt, the execution waits for them.
    expect(executionStatus([event('ExecutionStarted'), event('TaskScheduled', { nodeId: 'a' })])).toBe('waiting');
    expect(
      executionStatus([
        event('ExecutionStarted'),
        event('AttemptScheduled'),
        event('AttemptClaimed'),
        event('TaskScheduled', { nodeId: 'a' }),
      ]),
    ).toBe('running');
    // An approval decided: waiting on, until a resume attempt or the end.
    const approval = [event('AttemptClaimed'), event('AttemptSuspended'), event('ApprovalGranted', { nodeId: 'ok' })];
    expect(executionStatus(approval)).toBe('waiting');
    expect(executionStatus([...approval, event('AttemptScheduled')])).toBe('queued');
    expect(executionStatus([...approval, event('ExecutionSucceeded')])).toBe('succeeded');
  });
});

describe('the console’s words for control flow', () => {
  it('sums up map item batches and a switch’s choice', () => {
    expect(eventSummary(event('MapItemsStarted', { nodeId: 'each', indexes: [0, 1, 2] }))).toBe('3 items started');
    expect(eventSummary(event('MapItemsCompleted', { nodeId: 'each', items: [{ index: 0, output: null }] }))).toBe('1 item succeeded');
    expect(eventSummary(event('MapItemsFailed', { nodeId: 'each', items: [{ index: 2, error: { code: 'http_503' } }] }))).toBe(
      '1 item failed: http_503',
    );
    expect(eventSummary(event('NodeSucceeded', { nodeId: 'route', output: { case: 1, to: ['big'] } }))).toBe('took case 1 → big');
    expect(eventSummary(event('NodeSucceeded', { nodeId: 'route', output: { case: 'default', to: [] } }))).toBe(
      'took the default → nothing',
    );
    expect(eventSummary(event('NodeSucceeded', { nodeId: 'plain', output: { total: 3 } }))).toBe('');
  });

  it('counts each map’s items done, and forgets failures when a new attempt starts', () => {
    const events = [
      event('MapItemsCompleted', { nodeId: 'each', items: [{ index: 0 }, { index: 1 }] }),
      event('MapItemsFailed', { nodeId: 'each', items: [{ index: 2 }] }),
    ];
    expect(mapProgress(events)).toEqual({ each: { succeeded: 2, failed: 1 } });
    events.push(event('AttemptScheduled', { reason: 'retry' }), event('MapItemsCompleted', { nodeId: 'each', items: [{ index: 2 }] }));
    expect(mapProgress(events)).toEqual({ each: { succeeded: 3, failed: 0 } });
  });
});
