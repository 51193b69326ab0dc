import { Inject, Injectable } from '@nestjs/common';
import { CLOCK, type Clock } from '../../core/clock.port.js';
import { EVENT_STORE, type EventStore } from '../../core/event-store.port.js';
import { FoldedStreams, type FoldedOutcome, type FoldedStream } from '../../core/folded-streams.js';
import { ID_GENERATOR, type IdGenerator, uuidV5 } from '../../core/ids.js';
import { quotaDecider, type QuotaCommand, type QuotaState, type SlotRequest } from '../domain/quota.decider.js';
import { parseQuotaEvent, QUOTA_SCHEMA_VERSION, type QuotaEvent } from '../domain/quota.events.js';
import { workspaceDecider, type WorkspaceCommand, type WorkspaceState } from '../domain/workspace-settings.decider.js';
import {
  parseWorkspaceEvent,
  WORKSPACE_SCHEMA_VERSION,
  type WorkspaceEvent,
  type WorkspaceSettings,
} from '../domain/workspace-settings.events.js';
import { quotaStreamId, workspaceStreamId } from '../domain/workspace-identity.js';

export type WorkspaceSettingsStream = FoldedStream<WorkspaceState>;
export type QuotaStream = FoldedStream<QuotaState>;

/** Who appends to a quota stream: the control plane's admission, run by the dispatcher role. */
export const ADMISSION_ACTOR = 'system:dispatcher';

/**
 * The streams of workspaces: `workspace-<ws>` (settings) and `quota-<ws>` (the semaphore of the
 * concurrency bound). Both are read straight from the store, never from a read model: a start
 * sees the bound as last written, and a grant is decided on the semaphore as it stands. Each is
 * folded incrementally (a read asks only for the events after the ones already folded). One
 * instance per process (WorkspaceStreamsModule).
 */
@Injectable()
export class WorkspaceStreams {
  private readonly settingsStreams: FoldedStreams<WorkspaceCommand, WorkspaceEvent, WorkspaceState>;
  private readonly quotaStreams: FoldedStreams<QuotaCommand, QuotaEvent, QuotaState>;

  constructor(
    @Inject(EVENT_STORE) store: EventStore,
    @Inject(CLOCK) readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
  ) {
    this.settingsStreams = new FoldedStreams({ store, decider: workspaceDecider, parseEvent: parseWorkspaceEvent, capacity: 10_000 });
    this.quotaStreams = new FoldedStreams({ store, decider: quotaDecider, parseEvent: parseQuotaEvent, capacity: 10_000 });
  }

  /** The workspace's settings as last written (the defaults for a workspace that never changed them). */
  settings(workspaceId: string): Promise<WorkspaceSettingsStream> {
    return this.settingsStreams.read(workspaceStreamId(workspaceId));
  }

  /** Replaces the workspace's settings; the same settings again append nothing. */
  changeSettings(workspaceId: string, settings: WorkspaceSettings, actor: string): Promise<FoldedOutcome<WorkspaceEvent, WorkspaceState>> {
    return this.settingsStreams.handle(
      workspaceStreamId(workspaceId),
      { type: 'ChangeWorkspaceSettings', data: { workspaceId, settings }, metadata: { now: this.clock.now(), actor } },
      {
        // Random ids suffice: two racing changes are separated by the expected revision.
        eventId: () => this.ids.uuid(),
        metadata: { schemaVersion: WORKSPACE_SCHEMA_VERSION, actor, workspaceId },
      },
    );
  }

  /** The workspace's quota semaphore as it stands: the slots held, by attempt. */
  quota(workspaceId: string): Promise<QuotaStream> {
    return this.quotaStreams.read(quotaStreamId(workspaceId));
  }

  /**
   * Takes slots for these runs, in order, while `bound` leaves room; one append with the
   * semaphore's expected revision (a concurrent grant elsewhere makes this one decide again). The
   * outcome's state says which of them hold a slot now.
   */
  grantSlots(workspaceId: string, slots: readonly SlotRequest[], bound: number | null) {
    return this.quotaStreams.handle(
      quotaStreamId(workspaceId),
      { type: 'GrantSlots', data: { slots: slots.map(slotOf), bound }, metadata: { now: this.clock.now(), actor: ADMISSION_ACTOR } },
      // One grant per attempt: a grant appended but not acknowledged is refused as a duplicate when retried.
      this.quotaAppend(workspaceId, 'grant'),
    );
  }

  /** Gives back the slots these runs hold (nothing for one that holds none), in one append. */
  releaseSlots(workspaceId: string, slots: readonly SlotRequest[]) {
    return this.quotaStreams.handle(
      quotaStreamId(workspaceId),
      { type: 'ReleaseSlots', data: { slots: slots.map(slotOf) }, metadata: { now: this.clock.now(), actor: ADMISSION_ACTOR } },
      this.quotaAppend(workspaceId, 'release'),
    );
  }

  private quotaAppend(workspaceId: string, step: 'grant' | 'release') {
    return {
      eventId: (_: number, event: QuotaEvent) => uuidV5(`quota:${workspaceId}:${step}:${event.data.attemptId}`),
      metadata: { schemaVersion: QUOTA_SCHEMA_VERSION, actor: ADMISSION_ACTOR, workspaceId },
    };
  }
}

const slotOf = ({ executionId, attemptId }: SlotRequest): SlotRequest => ({ executionId, attemptId });
