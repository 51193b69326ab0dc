import { z } from 'zod';
import { defineRoute, empty, json, workspaceRole } from '../../http/openapi/route-contract.js';
import { nameSchema } from '../../http/validation.js';
import { listSchedulesQuerySchema, putScheduleBodySchema } from '../application/request-schemas.js';
import { scheduleListSchema, scheduleViewSchema } from './schedule.responses.js';

/** Contracts of SchedulesController (docs/api.md, "Schedules"). */

const TAGS = ['Schedules'];
const params = z.object({ workspaceId: nameSchema, name: nameSchema });

export const putScheduleContract = defineRoute({
  operationId: 'putSchedule',
  summary: 'Create or replace a schedule',
  description:
    'Starts the workflow at every fire time of `cron` in `timezone`, one execution per fire time however many schedulers run, ' +
    'each carrying `scheduledBy`. The body is the whole schedule; the same body again changes nothing. Changes apply at the scheduler’s next tick. ' +
    'An invalid cron expression, one whose fire times can come closer than FLOSTRA_SCHEDULE_MIN_INTERVAL_SECONDS, ' +
    'an unknown time zone or workflow, or a bad policy is 400 `validation_failed`. ' +
    'A new schedule in a workspace that holds FLOSTRA_MAX_SCHEDULES_PER_WORKSPACE is 409 `limit_reached`.',
  tags: TAGS,
  access: workspaceRole('editor', 'path'),
  params,
  body: putScheduleBodySchema,
  responses: {
    201: json('The schedule was created.', scheduleViewSchema),
    200: json('The schedule was updated, or was already so.', scheduleViewSchema),
  },
  errors: ['validation_failed', 'forbidden', 'not_found', 'concurrency_conflict', 'limit_reached', 'unavailable'],
});

export const getScheduleContract = defineRoute({
  operationId: 'getSchedule',
  summary: 'Get a schedule',
  description: 'Read from the schedule’s stream: always current. With its next five fire times and its recent fires.',
  tags: TAGS,
  access: workspaceRole('viewer', 'path'),
  params,
  responses: { 200: json('The schedule.', scheduleViewSchema) },
  errors: ['validation_failed', 'not_found', 'unavailable'],
});

export const listSchedulesContract = defineRoute({
  operationId: 'listSchedules',
  summary: 'List a workspace’s schedules',
  description:
    'By name, in pages, from the `schedules` read model. Read-your-writes like the other lists: `minPosition` or `consistency=eventual` as there.',
  tags: TAGS,
  access: workspaceRole('viewer', 'path'),
  params: z.object({ workspaceId: nameSchema }),
  query: listSchedulesQuerySchema,
  headers: z.object({ 'X-Flostra-Min-Position': z.string().optional() }),
  responses: { 200: json('One page of schedules.', scheduleListSchema) },
  errors: ['validation_failed', 'not_found', 'unavailable'],
});

export const deleteScheduleContract = defineRoute({
  operationId: 'deleteSchedule',
  summary: 'Delete a schedule',
  description: 'No fire after it; the executions it started run on. The name may be defined again.',
  tags: TAGS,
  access: workspaceRole('editor', 'path'),
  params,
  responses: { 204: empty('The schedule was deleted.') },
  errors: ['validation_failed', 'forbidden', 'not_found', 'concurrency_conflict', 'unavailable'],
});
