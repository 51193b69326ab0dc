import { z } from 'zod';
import { anyJson, identifierField, positionField, timestampField, uuidField } from '../../http/openapi/response-fields.js';
import { CATCHUP_POLICIES, OVERLAP_POLICIES, SKIP_REASONS } from '../domain/schedule.events.js';

const overlapField = z.enum(OVERLAP_POLICIES).meta({ id: 'ScheduleOverlap' });
const catchupField = z.enum(CATCHUP_POLICIES).meta({ id: 'ScheduleCatchup' });

const fireView = z
  .strictObject({
    fireTime: timestampField,
    outcome: z.enum(['started', 'buffered', 'skipped', 'failed']),
    executionId: uuidField.nullable().meta({ description: 'The execution it started (`started`, `failed`: the one it was to start).' }),
    reason: z.enum(SKIP_REASONS).nullable().meta({ description: 'Why it was skipped.' }),
    count: z.number().int().min(1).nullable().meta({ description: 'Missed fire times this record stands for (null: more than 100).' }),
    error: z.strictObject({ code: z.string(), message: z.string() }).nullable().meta({ description: 'Why its start was refused.' }),
    decidedAt: timestampField,
  })
  .meta({ id: 'ScheduleFire' });

/** `toScheduleView`: a schedule, as PUT and GET answer it. */
export const scheduleViewSchema = z
  .strictObject({
    workspaceId: identifierField,
    name: identifierField,
    workflow: identifierField,
    cron: z.string(),
    timezone: z.string(),
    input: z.record(z.string(), anyJson),
    overlap: overlapField,
    catchup: catchupField,
    paused: z.boolean(),
    nextFireTimes: z.array(timestampField).meta({ description: 'The next five fire times; none while paused.' }),
    lastFireTime: timestampField.nullable().meta({ description: 'The latest fire time decided (started, buffered or skipped).' }),
    recentFires: z.array(fireView).meta({ description: 'The latest 20 fire times decided, newest first.' }),
    createdAt: timestampField,
    createdBy: z.string(),
    updatedAt: timestampField,
    updatedBy: z.string(),
    position: positionField.nullable().meta({ description: 'The schedule stream’s last event.' }),
  })
  .meta({ id: 'Schedule' });

export const scheduleSummarySchema = z
  .strictObject({
    name: identifierField,
    workflow: identifierField,
    cron: z.string(),
    timezone: z.string(),
    overlap: overlapField,
    catchup: catchupField,
    paused: z.boolean(),
    lastFireTime: timestampField.nullable(),
    updatedAt: timestampField,
    position: positionField,
  })
  .meta({ id: 'ScheduleSummary' });

export const scheduleListSchema = z
  .strictObject({
    schedules: z.array(scheduleSummarySchema).meta({ description: 'By name.' }),
    nextCursor: z.string().nullable(),
    position: positionField.nullable().meta({ description: 'The read model’s checkpoint this page reflects.' }),
  })
  .meta({ id: 'ScheduleList' });
