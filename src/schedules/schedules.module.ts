import { Module } from '@nestjs/common';
import { WorkflowsModule } from '../workflows/workflows.module.js';
import { DeleteScheduleHandler } from './application/delete-schedule.handler.js';
import { GetScheduleHandler } from './application/get-schedule.handler.js';
import { ListSchedulesHandler } from './application/list-schedules.handler.js';
import { PutScheduleHandler } from './application/put-schedule.handler.js';
import { SchedulesController } from './infrastructure/schedules.controller.js';
import { ScheduleStreamsModule } from './schedule-streams.module.js';

/** The schedules API: its controller and the handlers of its commands and queries (on the app's CQRS buses). */
@Module({
  imports: [WorkflowsModule, ScheduleStreamsModule],
  controllers: [SchedulesController],
  providers: [PutScheduleHandler, DeleteScheduleHandler, GetScheduleHandler, ListSchedulesHandler],
})
export class SchedulesModule {}
