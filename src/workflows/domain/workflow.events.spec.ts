import { describe, expect, it } from '@jest/globals';
import type { RecordedEvent } from '../../core/event-store.port.js';
import { parseWorkflowEvent, UnreadableWorkflowEventError } from './workflow.events.js';
import { workflowGraphDigest } from './workflow-digest.js';
import { parseWorkflowDefinition } from './workflow-graph.validation.js';
import { workflowIdOf } from './workflow-identity.js';

const parsed = parseWorkflowDefinition({ nodes: [{ id: 'a', type: 'delay', config: { ms: 5 } }] });
if (!parsed.ok) throw new Error('fixture graph is invalid');
const graph = parsed.graph;

const data = {
  workflowId: workflowIdOf('acme', 'orders'),
  workspaceId: 'acme',
  name: 'orders',
  revision: 1,
  digest: workflowGraphDigest(graph),
  graph,
  publishedBy: 'alice',
  publishedAt: '2030-01-02T03:04:05.000Z',
};

const recorded = (overrides: Partial<RecordedEvent> = {}): RecordedEvent => ({
  id: '0b6a3c5e-1f7d-4a2b-9c8d-7e6f5a4b3c2d',
  type: 'WorkflowRevisionPublished',
  streamId: 'workflow-acme-orders',
  revision: 0,
  position: '1',
  // Stored events come back as JSON: anything not JSON-shaped would not survive the store.
  data: JSON.parse(JSON.stringify(data)),
  metadata: { schemaVersion: 1 },
  recordedAt: '2030-01-02T03:04:05.010Z',
  ...overrides,
});

describe('reading workflow events back from the store', () => {
  it('returns a published revision as written', () => {
    expect(parseWorkflowEvent(recorded())).toEqual({ type: 'WorkflowRevisionPublished', data });
  });

  it('reads an event written without a schemaVersion as version 1', () => {
    expect(parseWorkflowEvent(recorded({ metadata: {} })).data).toEqual(data);
  });

  it.each([
    ['an unknown event type', { type: 'WorkflowDeleted' }, 'unknown event type'],
    ['an inherited property name as type', { type: 'toString' }, 'unknown event type'],
    ['an unknown schema version', { metadata: { schemaVersion: 2 } }, 'unknown schemaVersion 2'],
    ['a payload that does not match', { data: { ...data, revision: 0 } }, 'revision'],
    ['a stored graph that is not valid', { data: { ...data, graph: { nodes: [{ id: 'a', type: 'shell' }], edges: [] } } }, 'graph'],
  ])('refuses %s, naming the event', (_, overrides, reason) => {
    expect(() => parseWorkflowEvent(recorded(overrides as Partial<RecordedEvent>))).toThrow(UnreadableWorkflowEventError);
    expect(() => parseWorkflowEvent(recorded(overrides as Partial<RecordedEvent>))).toThrow(reason);
    expect(() => parseWorkflowEvent(recorded(overrides as Partial<RecordedEvent>))).toThrow('workflow-acme-orders@0');
  });
});
