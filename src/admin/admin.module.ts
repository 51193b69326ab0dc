import { Module } from '@nestjs/common';
import { ProjectionsAdminController } from './projections-admin.controller.js';
import { ProjectionsAdminService } from './projections-admin.service.js';

/** Operations endpoints (`/v1/admin/...`); the read-model providers come from the global ProjectorModule. */
@Module({
  controllers: [ProjectionsAdminController],
  providers: [ProjectionsAdminService],
})
export class AdminModule {}
