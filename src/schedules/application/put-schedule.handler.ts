import { Inject, Optional } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { SchedulesReadModel } from '../../../projections/schedules.read-model.js';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import {
  APP_CONFIG,
  DEFAULT_MAX_SCHEDULES_PER_WORKSPACE,
  DEFAULT_SCHEDULE_MIN_INTERVAL_SECONDS,
  type AppConfig,
} from '../../config/config.js';
import { NotFoundError, ValidationFailedError } from '../../core/errors.js';
import { ReadConsistency } from '../../projector/read-consistency.js';
import { WorkflowQueries } from '../../workflows/application/workflow.queries.js';
import { fireTimesCloserThan, INTERVAL_CHECK_FIRES } from '../domain/cron.js';
import type { ScheduleDefinition } from '../domain/schedule.events.js';
import type { PutScheduleBody } from './request-schemas.js';
import { ScheduleStreams } from './schedule-streams.js';
import { toScheduleView, type ScheduleView } from './schedule.view.js';

export interface PutScheduleResult {
  /** True when the schedule did not exist (or was deleted) before: 201. */
  created: boolean;
  view: ScheduleView;
}

export class PutScheduleCommand extends Command<PutScheduleResult> {
  constructor(
    readonly principal: Principal,
    readonly workspaceId: string,
    readonly name: string,
    readonly body: PutScheduleBody,
  ) {
    super();
  }
}

type ScheduleLimits = Pick<AppConfig, 'maxSchedulesPerWorkspace' | 'scheduleMinIntervalSeconds'>;

/**
 * `PUT /v1/workspaces/:workspaceId/schedules/:name`: defines the schedule, or records what changed
 * of it (nothing for the definition in force). The scheduler applies it at its next tick.
 * Promise 13 (docs/architecture.md): a new schedule first takes a place in the workspace's
 * register, so no workspace holds more than FLOSTRA_MAX_SCHEDULES_PER_WORKSPACE, and no cron put
 * in fires more often than FLOSTRA_SCHEDULE_MIN_INTERVAL_SECONDS.
 */
@CommandHandler(PutScheduleCommand)
export class PutScheduleHandler implements ICommandHandler<PutScheduleCommand> {
  private readonly limits: ScheduleLimits;

  constructor(
    private readonly schedules: ScheduleStreams,
    private readonly workflows: WorkflowQueries,
    @Inject(SchedulesReadModel) private readonly readModel: SchedulesReadModel,
    @Inject(ReadConsistency) private readonly consistency: ReadConsistency,
    @Optional() @Inject(APP_CONFIG) config?: ScheduleLimits,
  ) {
    this.limits = {
      maxSchedulesPerWorkspace: config?.maxSchedulesPerWorkspace ?? DEFAULT_MAX_SCHEDULES_PER_WORKSPACE,
      scheduleMinIntervalSeconds: config?.scheduleMinIntervalSeconds ?? DEFAULT_SCHEDULE_MIN_INTERVAL_SECONDS,
    };
  }

  async execute({ principal, workspaceId, name, body }: PutScheduleCommand): Promise<PutScheduleResult> {
    requireWorkspaceRole(principal, workspaceId, 'editor');
    const { paused, ...definition } = body;
    const current = (await this.schedules.read(workspaceId, name)).state;
    const creating = current.status !== 'active';
    // A schedule in force keeps its timing (it may be paused or given new input); a new timing must keep the minimum.
    if (creating || current.definition?.cron !== definition.cron || current.definition.timezone !== definition.timezone) {
      this.requireMinimumInterval(definition);
    }
    try {
      await this.workflows.getRevision(workspaceId, definition.workflow);
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      const message = `workflow ${definition.workflow} does not exist in workspace ${workspaceId}`;
      throw new ValidationFailedError(`invalid request body: body.workflow: ${message}`, [{ path: 'body.workflow', message }]);
    }
    if (creating) {
      const existing = (await this.schedules.readRegister(workspaceId)).state.seeded ? null : await this.schedulesHeld(workspaceId);
      await this.schedules.register(workspaceId, name, this.limits.maxSchedulesPerWorkspace, existing, principal.subject);
    }
    const outcome = await this.put(workspaceId, name, definition, paused, principal.subject, creating);
    return {
      created: outcome.events[0]?.type === 'ScheduleDefined',
      view: toScheduleView(outcome.state, outcome.position, this.schedules.clock.now()),
    };
  }

  /** The definition's append; a new schedule whose definition could not be appended gives its place back. */
  private async put(workspaceId: string, name: string, definition: ScheduleDefinition, paused: boolean, actor: string, creating: boolean) {
    try {
      return await this.schedules.put(workspaceId, name, definition, paused, actor);
    } catch (error) {
      if (creating && (await this.schedules.read(workspaceId, name)).state.status !== 'active') {
        await this.schedules.unregister(workspaceId, name, actor).catch(() => undefined);
      }
      throw error;
    }
  }

  /**
   * The schedules a workspace held before it had a register (defined when no bound was kept): from
   * the `schedules` read model, caught up with the log, so that they hold their places too.
   */
  private async schedulesHeld(workspaceId: string): Promise<string[]> {
    await this.consistency.waitFor('schedules', { kind: 'latest' });
    const names: string[] = [];
    for (let after: string | null = null; ;) {
      const { schedules } = await this.readModel.list({ workspaceId, after, limit: 1_000 });
      names.push(...schedules.map((schedule) => schedule.name));
      if (schedules.length < 1_000) return names;
      after = schedules[schedules.length - 1].name;
    }
  }

  private requireMinimumInterval(definition: ScheduleDefinition): void {
    const minMs = this.limits.scheduleMinIntervalSeconds * 1000;
    const close = fireTimesCloserThan(definition, this.schedules.clock.now(), minMs, INTERVAL_CHECK_FIRES);
    if (close === null) return;
    const apart = (close.second.getTime() - close.first.getTime()) / 1000;
    const message =
      `fires at ${close.first.toISOString()} and ${close.second.toISOString()}, ${apart} s apart; ` +
      `fire times may come no closer than ${this.limits.scheduleMinIntervalSeconds} s (FLOSTRA_SCHEDULE_MIN_INTERVAL_SECONDS)`;
    throw new ValidationFailedError(`invalid request body: body.cron: ${message}`, [{ path: 'body.cron', message }]);
  }
}
