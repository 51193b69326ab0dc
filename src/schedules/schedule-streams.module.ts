import { Module } from '@nestjs/common';
import { ScheduleStreams } from './application/schedule-streams.js';

/** One ScheduleStreams per process, shared by the schedules API and the scheduler. Needs the global EVENT_STORE, CLOCK and ID_GENERATOR. */
@Module({ providers: [ScheduleStreams], exports: [ScheduleStreams] })
export class ScheduleStreamsModule {}
