import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { systemClock } from '../../core/clock.port.js';
import type { EventStore, ReadStreamOptions, RecordedEvent } from '../../core/event-store.port.js';
import { randomIds } from '../../core/ids.js';
import { PostgresEventStore } from '../../event-store/postgres/postgres-event-store.js';
import { PgliteSqlClient } from '../../postgres/pglite-sql-client.js';
import type { Principal } from '../../auth/principal.js';
import { parsePublishBody, PublishWorkflowCommand, PublishWorkflowHandler } from './publish-workflow.handler.js';
import { WorkflowQueries } from './workflow.queries.js';

const graph = (nodes: string[]) => ({ nodes: nodes.map((id) => ({ id, type: 'noop' })), edges: [] });

/** The real store; every stream read it serves is recorded with how many events it returned. */
function recordingStore(store: EventStore) {
  const reads: { fromRevision: number; returned: number }[] = [];
  const recording = Object.create(store) as EventStore;
  recording.readStream = async (streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> => {
    const events = await store.readStream(streamId, options);
    reads.push({ fromRevision: Number(options?.fromRevision ?? 0), returned: events.length });
    return events;
  };
  return { recording, reads };
}

describe('WorkflowQueries', () => {
  let sql: PgliteSqlClient;
  let store: PostgresEventStore;
  let publisher: PublishWorkflowHandler;
  const editor: Principal = { subject: 'tester', workspaces: new Map([['ws-a', 'editor']]), global: new Set(), tokenId: 'test' };
  const publishAs = (name: string, nodes: string[]) =>
    publisher.execute(new PublishWorkflowCommand(editor, 'ws-a', name, parsePublishBody(graph(nodes))));
  const publish = (nodes: string[]) => publishAs('flow', nodes);

  beforeAll(async () => {
    sql = await PgliteSqlClient.open();
    store = await PostgresEventStore.open(sql);
    publisher = new PublishWorkflowHandler(store, systemClock, randomIds);
  });
  afterAll(async () => {
    await store.close();
    await sql.close();
  });

  it('reads only what was published since its last read, and always answers the latest revision', async () => {
    const { recording, reads } = recordingStore(store);
    const queries = new WorkflowQueries(recording);
    await publish(['a']);

    expect((await queries.getRevision('ws-a', 'flow')).revision).toBe(1);
    expect((await queries.getRevision('ws-a', 'flow')).revision).toBe(1);
    // A revision published elsewhere (another process) is seen by the next read.
    await publish(['a', 'b']);
    const latest = await queries.getRevision('ws-a', 'flow');
    expect(latest.revision).toBe(2);
    expect(latest.graph.nodes.map((n) => n.id)).toEqual(['a', 'b']);

    expect(reads).toEqual([
      { fromRevision: 0, returned: 1 },
      { fromRevision: 1, returned: 0 },
      { fromRevision: 1, returned: 1 },
    ]);
  });

  it('answers an older revision asked by number from the whole stream', async () => {
    const queries = new WorkflowQueries(store);
    await publish(['a', 'b', 'c']);
    await queries.getRevision('ws-a', 'flow');

    const first = await queries.getRevision('ws-a', 'flow', 1);
    expect(first.revision).toBe(1);
    expect(first.graph.nodes.map((n) => n.id)).toEqual(['a']);
    await expect(queries.getRevision('ws-a', 'flow', 9)).rejects.toThrow('revision 9 of workflow flow not found');
  });

  it('does not remember a workflow that does not exist', async () => {
    const queries = new WorkflowQueries(store);
    await expect(queries.getRevision('ws-a', 'missing')).rejects.toThrow('workflow missing not found');
    await publishAs('missing', ['x']);
    expect((await queries.getRevision('ws-a', 'missing')).revision).toBe(1);
  });
});
