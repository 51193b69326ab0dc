import type { Position } from '../src/core/event-store.port.js';
import type { SqlQueryable } from '../src/postgres/sql-client.port.js';
import type { AuditDetail } from './audit-events.js';

/** One entry of a workspace's audit trail. */
export interface AuditEntry {
  position: Position;
  /** When the store recorded the event. */
  at: string;
  actor: string;
  action: string;
  executionId: string | null;
  workflow: string | null;
  detail: AuditDetail;
}

interface AuditRow {
  position: string;
  recorded_at: Date | string;
  actor: string;
  action: string;
  execution_id: string | null;
  workflow: string | null;
  detail: AuditDetail;
}

/**
 * Queries over the `audit` read model, through its view (always the live version). Each page is
 * one statement, so it never shows part of a batch.
 */
export class AuditReadModel {
  constructor(private readonly sql: SqlQueryable) {}

  /** A workspace's entries strictly before `before` (all when null), newest first. */
  async page(workspaceId: string, before: Position | null, limit: number): Promise<AuditEntry[]> {
    const { rows } = await this.sql.query<AuditRow>(
      `select position, recorded_at, actor, action, execution_id, workflow, detail from read_models.audit
       where workspace_id = $1 and ($2::text is null or position < $2::text collate "C")
       order by position desc limit $3`,
      [workspaceId, before, limit],
    );
    return rows.map(toEntry);
  }

  /**
   * The latest publication of each workflow of a workspace, by name: every workflow's
   * `WorkflowRevisionPublished` is on the trail, so the list of workflows needs no model of its own.
   */
  async latestPublications(workspaceId: string): Promise<AuditEntry[]> {
    const { rows } = await this.sql.query<AuditRow>(
      `select distinct on (workflow) position, recorded_at, actor, action, execution_id, workflow, detail from read_models.audit
       where workspace_id = $1 and action = 'WorkflowRevisionPublished' and workflow is not null
       order by workflow, position collate "C" desc`,
      [workspaceId],
    );
    return rows.map(toEntry);
  }

  /** True when some workspace's trail has an entry recorded before `cutoff` (retention prunes it). */
  async hasEntriesBefore(cutoff: Date): Promise<boolean> {
    const { rows } = await this.sql.query('select 1 as found from read_models.audit where recorded_at < $1::timestamptz limit 1', [
      cutoff.toISOString(),
    ]);
    return rows.length > 0;
  }

  /** True when the workspace's trail has an entry at exactly this position. */
  async hasEntry(workspaceId: string, position: Position): Promise<boolean> {
    const { rows } = await this.sql.query(
      'select 1 as found from read_models.audit where position = $1::text collate "C" and workspace_id = $2',
      [position, workspaceId],
    );
    return rows.length > 0;
  }
}

function toEntry(row: AuditRow): AuditEntry {
  return {
    position: row.position,
    at: (row.recorded_at instanceof Date ? row.recorded_at : new Date(row.recorded_at)).toISOString(),
    actor: row.actor,
    action: row.action,
    executionId: row.execution_id,
    workflow: row.workflow,
    detail: row.detail,
  };
}
