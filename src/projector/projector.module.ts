import {
  Global,
  Inject,
  Injectable,
  Module,
  type DynamicModule,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { EVENT_STORE, type EventStore } from '../core/event-store.port.js';
import { DEFAULT_LEASE_TIMINGS, type LeaseTimings } from '../core/lease.port.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { METRICS, type Metrics, type ProjectionLagSample } from '../core/metrics.port.js';
import { readCatalog } from './projection-catalog.js';
import { LeaseLocks } from '../postgres/lease-locks.js';
import { READ_MODEL_SQL, type SessionLocks, type SqlClient } from '../postgres/sql-client.port.js';
import { newHolderId, SqlLeases } from '../postgres/sql-leases.js';
import type { AnyProjectionDefinition } from './projection-definition.js';
import { ProjectionSignals } from './projection-signals.js';
import { Projector, type ProjectorOptions } from './projector.js';
import { ensureCatalog } from './projector.schema.js';
import { ReadModelSettings } from './projector.settings.js';
import { ReadConsistency } from './read-consistency.js';

/** The projection definitions this process knows (the application's `projections/`). */
export const PROJECTION_DEFINITIONS = Symbol('ProjectionDefinitions');
/** Whether this process runs the projector (FLOSTRA_ROLES has `projector`, or it owns an embedded database). */
export const PROJECTOR_RUNS = Symbol('ProjectorRuns');
/** Resolved once the catalog exists and every read model has a live version: readers depend on it. */
export const PROJECTION_CATALOG_READY = Symbol('ProjectionCatalogReady');

export interface ProjectorModuleOptions {
  run: boolean;
  projector?: Partial<ProjectorOptions>;
  definitions: readonly AnyProjectionDefinition[];
}

/** Starts the projector after the app is up and stops it (then the wake-ups) before the ports close. */
@Injectable()
class ProjectorLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  private stopReportingLag: () => void = () => undefined;

  constructor(
    @Inject(Projector) private readonly projector: Projector,
    @Inject(ProjectionSignals) private readonly signals: ProjectionSignals,
    @Inject(PROJECTOR_RUNS) private readonly runs: boolean,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(READ_MODEL_SQL) private readonly sql: SqlClient,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(PROJECTION_DEFINITIONS) private readonly definitions: readonly AnyProjectionDefinition[],
  ) {}

  onApplicationBootstrap(): void {
    if (!this.runs) return;
    this.projector.start();
    this.stopReportingLag = this.metrics.projectionLag(() => this.lag());
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopReportingLag();
    await this.projector.stop();
    await this.signals.close();
  }

  /** How far each live read model is behind the log: events after its checkpoint (up to 1000) and the age of the first. */
  private async lag(): Promise<ProjectionLagSample[]> {
    const catalog = await readCatalog(this.sql);
    const samples: ProjectionLagSample[] = [];
    for (const definition of this.definitions) {
      const entry = catalog.get(definition.name);
      const live = entry?.versions.find((v) => v.version === entry.liveVersion);
      if (live === undefined) continue;
      const behind = await this.store.readAll({ after: live.position, maxCount: LAG_SCAN_LIMIT });
      const oldest = behind[0];
      const seconds = oldest === undefined ? 0 : Math.max(0, (Date.now() - Date.parse(oldest.recordedAt)) / 1000);
      samples.push({ readModel: definition.name, events: behind.length, seconds });
    }
    return samples;
  }
}

/**
 * One runner per read-model version across processes: leases on a shared server, so that a
 * paused process loses its runners after the TTL; the in-process locks of a database only this
 * process opens (PGlite), where no other process could take over anyway.
 */
async function runnerLocks(sql: SqlClient, logger: Logger, metrics: Metrics, timings: LeaseTimings): Promise<SessionLocks | undefined> {
  if (sql.inProcess === true) return undefined;
  const store = await SqlLeases.open(sql);
  const log = logger.child({ component: 'projector' });
  return new LeaseLocks({
    store,
    role: 'projector',
    holder: newHolderId(),
    timings,
    logger: log,
    onHeld: (held) => metrics.leaseHeld('projector', held),
  });
}

/** Events counted behind a read model per scrape, at most. */
const LAG_SCAN_LIMIT = 1_000;

/**
 * Read models: the projector over the definitions it is given (run here or elsewhere), the
 * catalog, wake-ups and read-your-writes waiting. Global: the readers of each read model
 * (`projections/`), live progress and admin use them.
 */
@Global()
@Module({})
export class ProjectorModule {
  static forRoot(options: ProjectorModuleOptions): DynamicModule {
    const providers = [
      { provide: PROJECTION_DEFINITIONS, useValue: options.definitions },
      { provide: PROJECTOR_RUNS, useValue: options.run },
      ReadModelSettings,
      {
        provide: PROJECTION_CATALOG_READY,
        inject: [READ_MODEL_SQL, PROJECTION_DEFINITIONS],
        useFactory: async (sql: SqlClient, definitions: readonly AnyProjectionDefinition[]) => {
          await ensureCatalog(sql, definitions);
          return true;
        },
      },
      {
        provide: ProjectionSignals,
        inject: [READ_MODEL_SQL, LOGGER],
        useFactory: (sql: SqlClient, logger: Logger) =>
          new ProjectionSignals(sql, (error) =>
            logger.warn('projection wake-up failed; readers fall back to polling', { error: String(error) }),
          ),
      },
      ReadConsistency,
      {
        provide: Projector,
        inject: [
          READ_MODEL_SQL,
          EVENT_STORE,
          PROJECTION_DEFINITIONS,
          ProjectionSignals,
          LOGGER,
          METRICS,
          { token: APP_CONFIG, optional: true },
          PROJECTION_CATALOG_READY,
        ],
        useFactory: async (
          sql: SqlClient,
          store: EventStore,
          definitions: readonly AnyProjectionDefinition[],
          signals: ProjectionSignals,
          logger: Logger,
          metrics: Metrics,
          config: AppConfig | undefined,
        ) => {
          const locks = options.run ? await runnerLocks(sql, logger, metrics, config?.leases ?? DEFAULT_LEASE_TIMINGS) : undefined;
          return new Projector({ sql, store, definitions, signals, logger, options: options.projector, locks });
        },
      },
      ProjectorLifecycle,
    ];
    return {
      module: ProjectorModule,
      providers,
      exports: [
        PROJECTION_DEFINITIONS,
        PROJECTOR_RUNS,
        PROJECTION_CATALOG_READY,
        ReadModelSettings,
        ProjectionSignals,
        ReadConsistency,
        Projector,
      ],
    };
  }
}
