import { Global, Module } from '@nestjs/common';
import { TIMELINE_READER } from '../src/core/timeline.port.js';
import { READ_MODEL_SQL, type SqlClient } from '../src/postgres/sql-client.port.js';
import { PROJECTION_CATALOG_READY } from '../src/projector/projector.module.js';
import { ProjectionSignals } from '../src/projector/projection-signals.js';
import { AuditReadModel } from './audit.read-model.js';
import { ExecutionsReadModel } from './executions.read-model.js';
import { SchedulesReadModel } from './schedules.read-model.js';
import { PostgresTimelineReader } from './timeline.reader.js';

/**
 * The readers of this application's read models, for queries, live progress and admin. Needs
 * the global ProjectorModule (the catalog, wake-ups) and READ_MODEL_SQL.
 */
@Global()
@Module({
  providers: [
    {
      provide: TIMELINE_READER,
      inject: [READ_MODEL_SQL, ProjectionSignals, PROJECTION_CATALOG_READY],
      useFactory: (sql: SqlClient, signals: ProjectionSignals) => new PostgresTimelineReader(sql, signals),
    },
    { provide: PostgresTimelineReader, useExisting: TIMELINE_READER },
    {
      provide: ExecutionsReadModel,
      inject: [READ_MODEL_SQL, PROJECTION_CATALOG_READY],
      useFactory: (sql: SqlClient) => new ExecutionsReadModel(sql),
    },
    {
      provide: AuditReadModel,
      inject: [READ_MODEL_SQL, PROJECTION_CATALOG_READY],
      useFactory: (sql: SqlClient) => new AuditReadModel(sql),
    },
    {
      provide: SchedulesReadModel,
      inject: [READ_MODEL_SQL, PROJECTION_CATALOG_READY],
      useFactory: (sql: SqlClient) => new SchedulesReadModel(sql),
    },
  ],
  exports: [TIMELINE_READER, PostgresTimelineReader, ExecutionsReadModel, AuditReadModel, SchedulesReadModel],
})
export class ReadModelsModule {}
