import type { Clock } from '../../core/clock.port.js';
import type { EventStore } from '../../core/event-store.port.js';
import { FoldedStreams, type FoldedOutcome, type FoldedStream } from '../../core/folded-streams.js';
import { uuidV5 } from '../../core/ids.js';
import { treeDecider, type TreeCommand, type TreeState } from '../domain/tree.decider.js';
import { parseTreeEvent, TREE_SCHEMA_VERSION, treeStreamId, type TreeEvent } from '../domain/tree.events.js';

/** A child's place in its root's tree. */
export interface TreePlace {
  rootExecutionId: string;
  childExecutionId: string;
  parentExecutionId: string;
  workspaceId: string;
}

/**
 * The streams of sub-workflow trees (`tree-<rootExecutionId>`), read straight from the store and
 * folded incrementally: an admission is decided on the tree as it stands, with its expected revision.
 */
export class TreeStreams {
  private readonly streams: FoldedStreams<TreeCommand, TreeEvent, TreeState>;

  constructor(
    store: EventStore,
    private readonly clock: Clock,
    private readonly actor: string,
  ) {
    this.streams = new FoldedStreams({ store, decider: treeDecider, parseEvent: parseTreeEvent, capacity: 10_000 });
  }

  read(rootExecutionId: string): Promise<FoldedStream<TreeState>> {
    return this.streams.read(treeStreamId(rootExecutionId));
  }

  /** Takes the child's place in the tree under `bound` (one it has already is kept); the outcome's state says whether it has one. */
  admit(place: TreePlace, bound: number): Promise<FoldedOutcome<TreeEvent, TreeState>> {
    const { rootExecutionId, childExecutionId, parentExecutionId, workspaceId } = place;
    return this.streams.handle(
      treeStreamId(rootExecutionId),
      { type: 'AdmitToTree', data: { childExecutionId, parentExecutionId, bound }, metadata: { now: this.clock.now(), actor: this.actor } },
      // One admission per child, however often its start is retried.
      this.append(rootExecutionId, workspaceId, () => `admit:${childExecutionId}`),
    );
  }

  /** Closes the root's tree: no child is admitted into it any more. */
  close(rootExecutionId: string, workspaceId: string, reason: string): Promise<FoldedOutcome<TreeEvent, TreeState>> {
    return this.streams.handle(
      treeStreamId(rootExecutionId),
      { type: 'CloseTree', data: { reason }, metadata: { now: this.clock.now(), actor: this.actor } },
      this.append(rootExecutionId, workspaceId, () => 'close'),
    );
  }

  private append(rootExecutionId: string, workspaceId: string, step: () => string) {
    return {
      eventId: () => uuidV5(`tree:${rootExecutionId}:${step()}`),
      metadata: { schemaVersion: TREE_SCHEMA_VERSION, actor: this.actor, workspaceId },
    };
  }
}
