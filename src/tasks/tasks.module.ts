import { Module } from '@nestjs/common';
import { ExecutionStreamsModule } from '../executions/execution-streams.module.js';
import { CompleteTaskHandler } from './application/complete-task.handler.js';
import { HeartbeatTaskHandler } from './application/heartbeat-task.handler.js';
import { CompleteTasksHandler } from './application/complete-tasks.handler.js';
import { PollTaskHandler, PollTasksHandler } from './application/poll-task.handler.js';
import { TaskBoard } from './application/task-board.js';
import { TasksController } from './infrastructure/tasks.controller.js';

/** Task queues (api role): the poll, heartbeat and complete endpoints (single and batch), and this process's board of tasks to hand out. */
@Module({
  imports: [ExecutionStreamsModule],
  controllers: [TasksController],
  providers: [TaskBoard, PollTaskHandler, PollTasksHandler, HeartbeatTaskHandler, CompleteTaskHandler, CompleteTasksHandler],
})
export class TasksModule {}
