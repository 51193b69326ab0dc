import { Module } from '@nestjs/common';
import { ListProjectionsHandler } from './list-projections.handler.js';
import { ProjectionsAdminController } from './projections-admin.controller.js';
import { RebuildProjectionHandler } from './rebuild-projection.handler.js';

/** Operations endpoints (`/v1/admin/...`); the read-model providers come from the global ProjectorModule. */
@Module({
  controllers: [ProjectionsAdminController],
  providers: [ListProjectionsHandler, RebuildProjectionHandler],
})
export class AdminModule {}
