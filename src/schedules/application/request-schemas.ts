import { z } from 'zod';
import { nameSchema } from '../../http/validation.js';
import { consistencyQueryFields } from '../../projector/read-consistency.js';
import { cronProblem, isTimeZone } from '../domain/cron.js';
import { CATCHUP_POLICIES, OVERLAP_POLICIES } from '../domain/schedule.events.js';

/** Body of `PUT /v1/workspaces/:workspaceId/schedules/:name`: the whole schedule, validated at the edge. */
export const putScheduleBodySchema = z.strictObject({
  workflow: nameSchema.meta({ description: 'The workflow to start (its latest revision at each fire); it must exist.' }),
  cron: z
    .string()
    .max(200)
    .superRefine((cron, ctx) => {
      const problem = cronProblem(cron);
      if (problem !== null) ctx.addIssue({ code: 'custom', message: `invalid cron expression: ${problem}` });
    })
    .meta({ description: '5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first.', example: '30 2 * * *' }),
  timezone: z
    .string()
    .max(64)
    .refine(isTimeZone, 'unknown time zone: expected an IANA name such as UTC or Europe/Berlin')
    .default('UTC')
    .meta({ description: 'IANA time zone the cron expression is read in.' }),
  input: z.record(z.string(), z.unknown()).default({}).meta({ description: 'The input of every execution it starts.' }),
  overlap: z
    .enum(OVERLAP_POLICIES)
    .default('skip')
    .meta({ description: 'A fire while the previous execution still runs: `skip` it, `allow` it, or `buffer_one` (one waits).' }),
  catchup: z
    .enum(CATCHUP_POLICIES)
    .default('last')
    .meta({ description: 'Fire times missed while no scheduler ran: start `none`, the `last`, or `all` (at most 100).' }),
  paused: z.boolean().default(false),
});

export type PutScheduleBody = z.output<typeof putScheduleBodySchema>;

/** Query of `GET /v1/workspaces/:workspaceId/schedules`. */
export const listSchedulesQuerySchema = z.strictObject({
  cursor: z.string().min(1).max(400).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  ...consistencyQueryFields,
});

export type ListSchedulesQuery = z.output<typeof listSchedulesQuerySchema>;
