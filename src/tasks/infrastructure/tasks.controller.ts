import { Body, Controller, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { Request, Response } from 'express';
import type { Principal } from '../../auth/authorization.js';
import { CurrentPrincipal } from '../../auth/current-principal.decorator.js';
import { ApiRoute } from '../../http/openapi/route-contract.js';
import { parseBody, parseParams } from '../../http/validation.js';
import { CompleteTaskCommand } from '../application/complete-task.handler.js';
import { HeartbeatTaskCommand } from '../application/heartbeat-task.handler.js';
import { CompleteTasksCommand } from '../application/complete-tasks.handler.js';
import { PollTaskCommand, PollTasksCommand } from '../application/poll-task.handler.js';
import { toProblem } from '../../http/problem.js';
import { TaskBoard } from '../application/task-board.js';
import {
  pollBodySchema,
  pollParamsSchema,
  taskBatchCompleteBodySchema,
  taskCompleteBodySchema,
  taskHeartbeatBodySchema,
  taskParamsSchema,
} from '../application/request-schemas.js';
import { completeTaskContract, completeTasksContract, heartbeatTaskContract, pollTaskContract } from './tasks.contract.js';

/** The task protocol over HTTP: users' own code polls, heartbeats and completes the tasks of task nodes. */
@Controller('v1')
export class TasksController {
  constructor(
    private readonly commands: CommandBus,
    private readonly board: TaskBoard,
  ) {}

  @ApiRoute(pollTaskContract)
  @Post('workspaces/:workspaceId/task-queues/:queue/poll')
  @HttpCode(200)
  async poll(
    @CurrentPrincipal() p: Principal,
    @Param() params: unknown,
    @Body() body: unknown,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ) {
    const { workspaceId, queue } = parseParams(pollParamsSchema, params);
    const { workerId, waitMs, max } = parseBody(pollBodySchema, body);
    const pollFor = (signal: AbortSignal) => new PollTaskCommand(p, workspaceId, queue, workerId, waitMs, signal);
    // `max` asks for the list form; a client that does not send it gets the single task, or 204, as always.
    if (max !== undefined)
      return { tasks: await this.whileConnected(req, res, (signal) => this.commands.execute(new PollTasksCommand(pollFor(signal), max))) };
    const task = await this.whileConnected(req, res, (signal) => this.commands.execute(pollFor(signal)));
    if (task === null) {
      res.status(204);
      return undefined;
    }
    return task;
  }

  @ApiRoute(heartbeatTaskContract)
  @Post('tasks/:taskId/heartbeat')
  @HttpCode(200)
  heartbeat(@CurrentPrincipal() p: Principal, @Param() params: unknown, @Body() body: unknown) {
    const { taskId } = parseParams(taskParamsSchema, params);
    return this.commands.execute(new HeartbeatTaskCommand(p, taskId, parseBody(taskHeartbeatBodySchema, body)));
  }

  @ApiRoute(completeTaskContract)
  @Post('tasks/:taskId/complete')
  @HttpCode(200)
  async complete(
    @CurrentPrincipal() p: Principal,
    @Param() params: unknown,
    @Body() body: unknown,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ) {
    const { taskId } = parseParams(taskParamsSchema, params);
    const completion = parseBody(taskCompleteBodySchema, body);
    const {
      workspaceId,
      queue,
      next: claimedWith,
      ...recorded
    } = await this.commands.execute(new CompleteTaskCommand(p, taskId, completion));
    if (completion.next !== true) return recorded;
    // The completion's own append claimed the next task (one of its execution).
    if (claimedWith !== undefined) return { ...recorded, next: claimedWith };
    // Else a poll of the task's queue that does not wait (the completion is recorded whatever it finds).
    const next = await this.whileConnected(req, res, (signal) =>
      this.commands.execute(new PollTaskCommand(p, workspaceId, queue, completion.workerId, 0, signal)),
    );
    return { ...recorded, next };
  }

  @ApiRoute(completeTasksContract)
  @Post('tasks/complete')
  @HttpCode(200)
  async completeSeveral(
    @CurrentPrincipal() p: Principal,
    @Body() body: unknown,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ) {
    const batch = parseBody(taskBatchCompleteBodySchema, body);
    const { results, next } = await this.whileConnected(req, res, (signal) =>
      this.commands.execute(new CompleteTasksCommand(p, batch, signal)),
    );
    return {
      results: results.map((r) => ('rejected' in r ? { taskId: r.taskId, problem: toProblem(r.rejected).problem } : r)),
      next,
    };
  }

  /**
   * Runs a poll with a signal that aborts when the caller hangs up: nothing may be claimed for it
   * from then on.
   */
  private async whileConnected<T>(req: Request, res: Response, poll: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const gone = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) gone.abort();
    };
    res.on('close', onClose);
    if (req.socket.destroyed) gone.abort();
    try {
      return await poll(gone.signal);
    } finally {
      res.off('close', onClose);
      // Shutting down: the poller reconnects (to this process's successor) rather than keep this connection busy.
      if (this.board.stopping) res.setHeader('Connection', 'close');
    }
  }
}
