import { Global, Inject, Injectable, Module, type DynamicModule, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { READ_MODEL_SQL } from '../app/core.module.js';
import { EVENT_STORE, type EventStore } from '../core/event-store.port.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { TIMELINE_READER } from '../core/timeline.port.js';
import type { SqlClient } from '../postgres/sql-client.port.js';
import { PROJECTION_DEFINITIONS as ALL_PROJECTIONS } from '../../projections/projections.registry.js';
import { ExecutionsReadModel } from './executions-read-model.js';
import type { ProjectionDefinition } from './projection-definition.js';
import { ProjectionSignals } from './projection-signals.js';
import { Projector, type ProjectorOptions } from './projector.js';
import { ensureCatalog } from './projector.schema.js';
import { ReadModelSettings } from './projector.settings.js';
import { ReadConsistency } from './read-consistency.js';
import { PostgresTimelineReader } from './timeline-reader.js';

/** The projection definitions this process knows (`projections/`). */
export const PROJECTION_DEFINITIONS = Symbol('ProjectionDefinitions');
/** Whether this process runs the projector (FLOSTRA_ROLES has `projector`, or it owns an embedded database). */
export const PROJECTOR_RUNS = Symbol('ProjectorRuns');
/** Resolved once the catalog exists and every read model has a live version: readers depend on it. */
const CATALOG_READY = Symbol('ProjectionCatalogReady');

export interface ProjectorModuleOptions {
  run: boolean;
  projector?: Partial<ProjectorOptions>;
  definitions?: readonly ProjectionDefinition<any>[];
}

/** Starts the projector after the app is up and stops it (then the wake-ups) before the ports close. */
@Injectable()
class ProjectorLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    @Inject(Projector) private readonly projector: Projector,
    @Inject(ProjectionSignals) private readonly signals: ProjectionSignals,
    @Inject(PROJECTOR_RUNS) private readonly runs: boolean,
  ) {}

  onApplicationBootstrap(): void {
    if (this.runs) this.projector.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.projector.stop();
    await this.signals.close();
  }
}

/**
 * Read models: the projector (run here or elsewhere), the TimelineReader, the executions read
 * model and read-your-writes waiting. Global: queries, live progress and admin use them.
 */
@Global()
@Module({})
export class ProjectorModule {
  static forRoot(options: ProjectorModuleOptions): DynamicModule {
    const providers = [
      { provide: PROJECTION_DEFINITIONS, useValue: options.definitions ?? ALL_PROJECTIONS },
      { provide: PROJECTOR_RUNS, useValue: options.run },
      ReadModelSettings,
      {
        provide: CATALOG_READY,
        inject: [READ_MODEL_SQL, PROJECTION_DEFINITIONS],
        useFactory: async (sql: SqlClient, definitions: readonly ProjectionDefinition<any>[]) => {
          await ensureCatalog(sql, definitions);
          return true;
        },
      },
      {
        provide: ProjectionSignals,
        inject: [READ_MODEL_SQL, LOGGER],
        useFactory: (sql: SqlClient, logger: Logger) =>
          new ProjectionSignals(sql, (error) => logger.warn('projection wake-up failed; readers fall back to polling', { error: String(error) })),
      },
      {
        provide: TIMELINE_READER,
        inject: [READ_MODEL_SQL, ProjectionSignals, CATALOG_READY],
        useFactory: (sql: SqlClient, signals: ProjectionSignals) => new PostgresTimelineReader(sql, signals),
      },
      { provide: PostgresTimelineReader, useExisting: TIMELINE_READER },
      {
        provide: ExecutionsReadModel,
        inject: [READ_MODEL_SQL, CATALOG_READY],
        useFactory: (sql: SqlClient) => new ExecutionsReadModel(sql),
      },
      ReadConsistency,
      {
        provide: Projector,
        inject: [READ_MODEL_SQL, EVENT_STORE, PROJECTION_DEFINITIONS, ProjectionSignals, LOGGER, CATALOG_READY],
        useFactory: (sql: SqlClient, store: EventStore, definitions: readonly ProjectionDefinition<any>[], signals: ProjectionSignals, logger: Logger) =>
          new Projector({ sql, store, definitions, signals, logger, options: options.projector }),
      },
      ProjectorLifecycle,
    ];
    return {
      module: ProjectorModule,
      providers,
      exports: [PROJECTION_DEFINITIONS, PROJECTOR_RUNS, ReadModelSettings, ProjectionSignals, TIMELINE_READER, PostgresTimelineReader, ExecutionsReadModel, ReadConsistency, Projector],
    };
  }
}
