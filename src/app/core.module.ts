import { Global, Module, type DynamicModule } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { CLOCK, type Clock } from '../core/clock.port.js';
import { EVENT_STORE, type EventStore } from '../core/event-store.port.js';
import { ID_GENERATOR, type IdGenerator } from '../core/ids.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { READ_MODEL_SQL, type SqlClient } from '../postgres/sql-client.port.js';
import { BUS, type Bus } from '../core/bus.port.js';
import { METRICS, NO_METRICS, type Metrics } from '../core/metrics.port.js';
import { DISPATCH_HAND_OVER, DispatchHandOver } from '../dispatch/dispatch-hand-over.js';

export interface CoreDependencies {
  config: AppConfig;
  store: EventStore;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  readModelSql: SqlClient;
  bus: Bus;
  /** What the process's roles measure; createApp makes Prometheus metrics when absent. */
  metrics?: Metrics;
}

/** Makes the process's ports injectable everywhere; their lifetimes belong to the bootstrap. */
@Global()
@Module({})
export class CoreModule {
  static forRoot(deps: CoreDependencies): DynamicModule {
    const providers = [
      { provide: APP_CONFIG, useValue: deps.config },
      { provide: EVENT_STORE, useValue: deps.store },
      { provide: CLOCK, useValue: deps.clock },
      { provide: ID_GENERATOR, useValue: deps.ids },
      { provide: LOGGER, useValue: deps.logger },
      { provide: READ_MODEL_SQL, useValue: deps.readModelSql },
      { provide: BUS, useValue: deps.bus },
      { provide: METRICS, useValue: deps.metrics ?? NO_METRICS },
      // Where this process's dispatcher meets this process's worker, if it runs one (FLOSTRA_WORKER_DISPATCH).
      { provide: DISPATCH_HAND_OVER, useValue: new DispatchHandOver() },
    ];
    return { module: CoreModule, providers, exports: providers.map((p) => p.provide) };
  }
}
