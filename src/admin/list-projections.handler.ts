import { Inject } from '@nestjs/common';
import { type IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { type Principal, requireGlobalRole } from '../auth/authorization.js';
import { EVENT_STORE, type EventStore, type Position } from '../core/event-store.port.js';
import { READ_MODEL_SQL, type SqlClient } from '../postgres/sql-client.port.js';
import { readCatalog, type VersionInfo } from '../projector/projection-catalog.js';
import type { AnyProjectionDefinition } from '../projector/projection-definition.js';
import { Projector } from '../projector/projector.js';
import { PROJECTION_DEFINITIONS, PROJECTOR_RUNS } from '../projector/projector.module.js';
import { ReadModelSettings } from '../projector/projector.settings.js';

export type ProjectionsStatus = { projectorRunsHere: boolean; projections: ProjectionStatus[] };
type ProjectionStatus = {
  name: string;
  version: number;
  definitionVersion: number;
  status: 'failing' | 'catching_up' | 'live';
  position: Position | null;
  eventsApplied: number;
  updatedAt: string | null;
  lag: Lag;
  error: ReturnType<Projector['failure']>;
  rebuild: ReturnType<typeof rebuildProgress> | null;
  lastRebuild: { rebuildId: string | null; version: number; switchedAt: string | null } | null;
};

/** Events after a position, counted up to a limit; with the age of the oldest of them. */
interface Lag {
  events: number;
  /** False when the count stopped at the limit: at least that many. */
  exact: boolean;
  seconds: number;
}

export class ListProjectionsQuery extends Query<ProjectionsStatus> {
  constructor(readonly principal: Principal) {
    super();
  }
}

/** Status of the read models for operators: positions, lag, rebuild progress (system-admin only). */
@QueryHandler(ListProjectionsQuery)
export class ListProjectionsHandler implements IQueryHandler<ListProjectionsQuery> {
  constructor(
    @Inject(READ_MODEL_SQL) private readonly sql: SqlClient,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(PROJECTION_DEFINITIONS) private readonly definitions: readonly AnyProjectionDefinition[],
    @Inject(Projector) private readonly projector: Projector,
    @Inject(PROJECTOR_RUNS) private readonly projectorRunsHere: boolean,
    @Inject(ReadModelSettings) private readonly settings: ReadModelSettings,
  ) {}

  async execute({ principal }: ListProjectionsQuery): Promise<ProjectionsStatus> {
    requireGlobalRole(principal, 'system-admin');
    const catalog = await readCatalog(this.sql);
    const projections: ProjectionStatus[] = [];
    for (const definition of this.definitions) {
      const entry = catalog.get(definition.name);
      if (entry === undefined) continue;
      const live = entry.versions.find((v) => v.version === entry.liveVersion);
      if (live === undefined) continue; // the catalog always names a live version; nothing to show if not
      const building = entry.versions.find((v) => v.version === entry.buildingVersion) ?? null;
      const lag = await this.lagAfter(live.position);
      const failure = this.projector.failure(definition.name);
      const headEvents = live.eventsSeen + lag.events;
      const lastSwitch = entry.versions.filter((v) => v.rebuildId !== null && v.switchedAt !== null).at(-1) ?? null;
      projections.push({
        name: definition.name,
        version: live.version,
        definitionVersion: live.definitionVersion,
        status: failure !== null ? 'failing' : lag.events > 0 ? 'catching_up' : 'live',
        position: live.position,
        eventsApplied: live.eventsSeen,
        updatedAt: live.checkpointAt,
        lag,
        error: failure,
        rebuild: building === null ? null : rebuildProgress(building, headEvents, lag.exact),
        lastRebuild:
          lastSwitch === null ? null : { rebuildId: lastSwitch.rebuildId, version: lastSwitch.version, switchedAt: lastSwitch.switchedAt },
      });
    }
    return { projectorRunsHere: this.projectorRunsHere, projections };
  }

  private async lagAfter(position: Position | null): Promise<Lag> {
    const limit = this.settings.current.lagScanLimit;
    const behind = await this.store.readAll({ after: position, maxCount: limit });
    const oldest = behind[0];
    const seconds = oldest === undefined ? 0 : Math.max(0, (Date.now() - Date.parse(oldest.recordedAt)) / 1000);
    return { events: behind.length, exact: behind.length < limit, seconds: Math.round(seconds * 1000) / 1000 };
  }
}

function rebuildProgress(building: VersionInfo, headEvents: number, exact: boolean) {
  return {
    rebuildId: building.rebuildId,
    version: building.version,
    definitionVersion: building.definitionVersion,
    status: 'building',
    position: building.position,
    eventsApplied: building.eventsSeen,
    headEvents,
    headExact: exact,
    progress: headEvents === 0 ? 1 : Math.min(1, Math.round((building.eventsSeen / headEvents) * 10_000) / 10_000),
    startedAt: building.createdAt,
  };
}
