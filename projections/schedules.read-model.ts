import type { Position } from '../src/core/event-store.port.js';
import type { SqlQueryable } from '../src/postgres/sql-client.port.js';
import type { ScheduleState } from '../src/schedules/domain/schedule.decider.js';

/** One schedule as the list shows it. */
export interface ScheduleSummary {
  name: string;
  workflow: string;
  cron: string;
  timezone: string;
  overlap: string;
  catchup: string;
  paused: boolean;
  lastFireTime: string | null;
  updatedAt: string;
  position: Position;
}

/** Queries over the `schedules` read model (through its view: always the live version). */
export class SchedulesReadModel {
  constructor(private readonly sql: SqlQueryable) {}

  /** One page by name, and the checkpoint it reflects (same statement, same snapshot). */
  async list(filter: { workspaceId: string; after: string | null; limit: number }) {
    const { rows } = await this.sql.query<{
      name: string | null;
      state: ScheduleState | null;
      position: string | null;
      checkpoint: string | null;
    }>(
      `select s.name, s.state, s.position,
              (select c.position from projector.projections p
               join projector.checkpoints c on c.name = p.name and c.version = p.live_version
               where p.name = 'schedules') as checkpoint
       from (select 1) as anchor
       left join lateral (
         select * from read_models.schedules x
         where x.workspace_id = $1 and x.active and ($2::text is null or x.name > $2::text collate "C")
         order by x.name
         limit $3
       ) as s on true
       order by s.name`,
      [filter.workspaceId, filter.after, filter.limit],
    );
    const checkpoint = rows[0]?.checkpoint ?? null;
    const schedules: ScheduleSummary[] = rows
      .filter((row) => row.name !== null)
      .map((row) => {
        const state = row.state!;
        const definition = state.definition!;
        return {
          name: state.name,
          workflow: definition.workflow,
          cron: definition.cron,
          timezone: definition.timezone,
          overlap: definition.overlap,
          catchup: definition.catchup,
          paused: state.paused,
          lastFireTime: state.lastFireTime,
          updatedAt: state.updatedAt!,
          position: row.position!,
        };
      });
    return { schedules, checkpoint };
  }
}
