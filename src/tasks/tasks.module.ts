import { Module } from '@nestjs/common';
import { ExecutionStreamsModule } from '../executions/execution-streams.module.js';
import { CompleteTaskHandler } from './application/complete-task.handler.js';
import { HeartbeatTaskHandler } from './application/heartbeat-task.handler.js';
import { PollTaskHandler } from './application/poll-task.handler.js';
import { TaskBoard } from './application/task-board.js';
import { TasksController } from './infrastructure/tasks.controller.js';

/** Task queues (api role): the poll, heartbeat and complete endpoints, and this process's board of tasks to hand out. */
@Module({
  imports: [ExecutionStreamsModule],
  controllers: [TasksController],
  providers: [TaskBoard, PollTaskHandler, HeartbeatTaskHandler, CompleteTaskHandler],
})
export class TasksModule {}
