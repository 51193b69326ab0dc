import { ensureTables } from '../../postgres/checkpoint-store.js';
import { reusable, type SqlClient } from '../../postgres/sql-client.port.js';

/** A child execution and the parent node that started it. */
export interface ChildLink {
  childExecutionId: string;
  parentExecutionId: string;
  nodeId: string;
  workspaceId: string;
}

interface Row {
  child_execution_id: string;
  parent_execution_id: string;
  node_id: string;
  workspace_id: string;
}

/**
 * `subworkflow_children` in the read-model Postgres: the children the subworkflow manager
 * started and whose end it has not recorded on their parent yet. Written before a child's start
 * and marked `ended` after its end was recorded, so that any manager (another replica, or one
 * restarting from the shared checkpoint) that reads a child's end finds the child's link. Derived from the log: a replay writes it again.
 */
export class ChildLinks {
  private constructor(private readonly sql: SqlClient) {}

  static async open(sql: SqlClient): Promise<ChildLinks> {
    await ensureTables(sql, [
      `create table if not exists subworkflow_children (
        child_execution_id text primary key,
        parent_execution_id text not null,
        node_id text not null,
        workspace_id text not null,
        ended boolean not null default false,
        updated_at timestamptz not null default now()
      )`,
      `create index if not exists subworkflow_children_open_idx on subworkflow_children (parent_execution_id) where not ended`,
    ]);
    return new ChildLinks(sql);
  }

  /** Records links; one already known (open or ended) stays as it is. */
  async add(links: readonly ChildLink[]): Promise<void> {
    if (links.length === 0) return;
    await this.sql.query(
      reusable(`insert into subworkflow_children (child_execution_id, parent_execution_id, node_id, workspace_id)
       select r->>'childExecutionId', r->>'parentExecutionId', r->>'nodeId', r->>'workspaceId' from jsonb_array_elements($1::jsonb) r
       on conflict (child_execution_id) do nothing`),
      [JSON.stringify(links)],
    );
  }

  async markEnded(childExecutionIds: readonly string[]): Promise<void> {
    if (childExecutionIds.length === 0) return;
    await this.sql.query(
      reusable(`update subworkflow_children set ended = true, updated_at = now() where child_execution_id = any($1::text[]) and not ended`),
      [childExecutionIds],
    );
  }

  /**
   * Open links of the children named, and of the children of the parents named: one statement
   * for a batch's ends and cancels, whichever process wrote the links.
   */
  async openOf(childExecutionIds: readonly string[], parentExecutionIds: readonly string[]): Promise<ChildLink[]> {
    if (childExecutionIds.length === 0 && parentExecutionIds.length === 0) return [];
    const { rows } = await this.sql.query<Row>(
      reusable(`select child_execution_id, parent_execution_id, node_id, workspace_id from subworkflow_children
       where not ended and (child_execution_id = any($1::text[]) or parent_execution_id = any($2::text[]))`),
      [childExecutionIds, parentExecutionIds],
    );
    return rows.map((r) => ({
      childExecutionId: r.child_execution_id,
      parentExecutionId: r.parent_execution_id,
      nodeId: r.node_id,
      workspaceId: r.workspace_id,
    }));
  }
}
