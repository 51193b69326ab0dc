import {
  Global,
  Inject,
  Injectable,
  Module,
  type DynamicModule,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { EVENT_STORE, type EventStore } from '../core/event-store.port.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { READ_MODEL_SQL, type SqlClient } from '../postgres/sql-client.port.js';
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
        inject: [READ_MODEL_SQL, EVENT_STORE, PROJECTION_DEFINITIONS, ProjectionSignals, LOGGER, PROJECTION_CATALOG_READY],
        useFactory: (
          sql: SqlClient,
          store: EventStore,
          definitions: readonly AnyProjectionDefinition[],
          signals: ProjectionSignals,
          logger: Logger,
        ) => new Projector({ sql, store, definitions, signals, logger, options: options.projector }),
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
