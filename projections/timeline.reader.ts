import type { Position } from '../src/core/event-store.port.js';
import type { TimelineEvent, TimelineReader } from '../src/core/timeline.port.js';
import type { SqlQueryable } from '../src/postgres/sql-client.port.js';
import { liveCheckpoint } from '../src/projector/projection-catalog.js';
import type { ProjectionSignals } from '../src/projector/projection-signals.js';

interface TimelineRow {
  position: string;
  event_id: string;
  execution_id: string;
  workspace_id: string;
  type: string;
  revision: number;
  recorded_at: Date | string;
  data: unknown;
}

const COLUMNS = 'position, event_id::text as event_id, execution_id, workspace_id, type, revision, recorded_at, data';
const AFTER = `($2::text is null or position > $2::text collate "C")`;

/**
 * TimelineReader over the `timeline` read model. It reads the views, which always name the live
 * version's tables, so a rebuild's switch is atomic for readers too. Each page is one statement,
 * so it never shows part of a batch: rows and checkpoint commit together. No statement reads
 * more than one view (see executionInfo).
 *
 *   new PostgresTimelineReader(readModelSql, signals)
 */
export class PostgresTimelineReader implements TimelineReader {
  constructor(
    private readonly sql: SqlQueryable,
    private readonly signals: ProjectionSignals,
  ) {}

  async readExecution(executionId: string, after: Position | null, limit: number): Promise<TimelineEvent[]> {
    const { rows } = await this.sql.query<TimelineRow>(
      `select ${COLUMNS} from read_models.timeline where execution_id = $1 and ${AFTER} order by position limit $3`,
      [executionId, after, limit],
    );
    return rows.map(toTimelineEvent);
  }

  /**
   * One page of an execution's events: at most `limit`, and no more after the one that brings
   * their data past `maxBytes` (the first always comes), so that a page of large events stays
   * small. The database measures the data: the page is cut before any of it reaches the process.
   * `more`: later events exist.
   */
  async readExecutionPage(
    executionId: string,
    after: Position | null,
    limit: number,
    maxBytes: number,
  ): Promise<{ events: TimelineEvent[]; more: boolean }> {
    const { rows } = await this.sql.query<TimelineRow & { fetched: string | number }>(
      `select ${COLUMNS}, fetched from (
         select ${COLUMNS},
                coalesce(sum(octet_length(data::text)) over (order by position rows between unbounded preceding and 1 preceding), 0) as bytes_before,
                count(*) over () as fetched
         from (select ${COLUMNS} from read_models.timeline where execution_id = $1 and ${AFTER} order by position limit $3) as candidates
       ) as page
       where bytes_before < $4
       order by position`,
      [executionId, after, limit + 1, maxBytes],
    );
    const shown = rows.slice(0, limit);
    return { events: shown.map(toTimelineEvent), more: Number(rows[0]?.fetched ?? 0) > shown.length };
  }

  async readWorkspace(workspaceId: string, after: Position | null, limit: number): Promise<TimelineEvent[]> {
    const { rows } = await this.sql.query<TimelineRow>(
      `select ${COLUMNS} from read_models.timeline where workspace_id = $1 and ${AFTER} order by position limit $3`,
      [workspaceId, after, limit],
    );
    return rows.map(toTimelineEvent);
  }

  async readAll(after: Position | null, limit: number): Promise<TimelineEvent[]> {
    const { rows } = await this.sql.query<TimelineRow>(
      `select ${COLUMNS} from read_models.timeline where $1::text is null or position > $1::text collate "C" order by position limit $2`,
      [after, limit],
    );
    return rows.map(toTimelineEvent);
  }

  async workspaceOf(executionId: string): Promise<string | null> {
    const { rows } = await this.sql.query<{ workspace_id: string }>(
      'select workspace_id from read_models.timeline_owners where execution_id = $1',
      [executionId],
    );
    return rows[0]?.workspace_id ?? null;
  }

  /**
   * Owner of an execution and the stream revision of its last event in the timeline; null when
   * unknown. Every row carries its execution's workspace, so one view answers: a statement that
   * read two views could deadlock with a rebuild's switch, which replaces them one by one.
   */
  async executionInfo(executionId: string): Promise<{ workspaceId: string; lastRevision: number } | null> {
    const { rows } = await this.sql.query<{ workspace_id: string; revision: number }>(
      'select workspace_id, revision from read_models.timeline where execution_id = $1 order by position desc limit 1',
      [executionId],
    );
    const row = rows[0];
    return row === undefined ? null : { workspaceId: row.workspace_id, lastRevision: Number(row.revision) };
  }

  /** True when some execution event sits at exactly this position. */
  async hasEventAt(position: Position): Promise<boolean> {
    const { rows } = await this.sql.query('select 1 as found from read_models.timeline where position = $1::text collate "C"', [position]);
    return rows.length > 0;
  }

  checkpoint(): Promise<Position | null> {
    return liveCheckpoint(this.sql, 'timeline');
  }

  onAdvance(listener: () => void): () => void {
    return this.signals.on('timeline', () => listener());
  }

  follow(): () => void {
    return this.signals.watch('timeline');
  }
}

function toTimelineEvent(row: TimelineRow): TimelineEvent {
  return {
    position: row.position,
    eventId: row.event_id,
    executionId: row.execution_id,
    workspaceId: row.workspace_id,
    type: row.type,
    revision: Number(row.revision),
    recordedAt: (row.recorded_at instanceof Date ? row.recorded_at : new Date(row.recorded_at)).toISOString(),
    data: row.data,
  };
}
