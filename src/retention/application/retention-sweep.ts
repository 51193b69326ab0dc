import { systemActor } from '../../core/actors.js';
import type { Clock } from '../../core/clock.port.js';
import { NotFoundError, WrongExpectedRevisionError } from '../../core/errors.js';
import type { EventStore, Position } from '../../core/event-store.port.js';
import type { IdGenerator } from '../../core/ids.js';
import { EXECUTIONS_EXPIRED, RETENTION_STREAM, type ExecutionsExpiredData } from '../../core/retention.js';
import type { ExecutionStreams } from '../../executions/application/execution-streams.js';
import { executionStreamId } from '../../executions/domain/execution-event.parser.js';
import { isExpired, laterPosition, retentionCutoff } from '../domain/retention-policy.js';
import type { RetentionHorizon } from './retention-horizon.js';

/** Where the sweep finds its candidates: the read models (the store has no index by time). */
export interface RetentionCandidates {
  endedBefore(cutoff: Date, after: string | null, limit: number): Promise<{ executionId: string; position: Position }[]>;
  auditEntriesBefore(cutoff: Date): Promise<boolean>;
}

export interface RetentionSweepDeps {
  store: EventStore;
  executions: Pick<ExecutionStreams, 'load'>;
  candidates: RetentionCandidates;
  horizon: RetentionHorizon;
  clock: Clock;
  ids: IdGenerator;
  days: number;
  /** Candidates per page, and executions named by one fact. Default 500. */
  pageSize?: number;
}

export interface SweepReport {
  cutoff: string;
  /** Executions whose streams this sweep deleted (or found deleted by an interrupted sweep). */
  deleted: number;
  /** Facts appended to the `retention` stream. */
  facts: number;
}

/**
 * One pass of retention (docs/operations.md, Retention). For each page of candidates: read the
 * stream, keep it unless it has ended before the cutoff, delete it at the revision read (a redrive
 * that came in between wins: the delete is refused), then record the fact that the read models
 * apply. Deletes come before the fact, so an interrupted sweep leaves rows whose streams are
 * gone, and the next sweep finds them again and records them; the fact then prunes every version
 * of every read model alike. Two sweeps at once delete the same streams once and record the same
 * executions twice, which read models apply as once.
 */
export async function sweepRetention(deps: RetentionSweepDeps): Promise<SweepReport> {
  const pageSize = deps.pageSize ?? 500;
  const cutoff = retentionCutoff(deps.clock.now(), deps.days);
  const report: SweepReport = { cutoff: cutoff.toISOString(), deleted: 0, facts: 0 };
  let after: string | null = null;
  let auditDue = await deps.candidates.auditEntriesBefore(cutoff);
  for (;;) {
    const page = await deps.candidates.endedBefore(cutoff, after, pageSize);
    const deleted: string[] = [];
    let prunedThrough: Position | null = null;
    for (const candidate of page) {
      const position = await deleteIfExpired(deps, candidate.executionId, cutoff);
      if (position === undefined) continue;
      deleted.push(candidate.executionId);
      prunedThrough = laterPosition(prunedThrough, position ?? candidate.position);
    }
    if (deleted.length > 0 || auditDue) {
      await recordFact(deps, { executionIds: deleted, before: report.cutoff, prunedThrough });
      report.facts += 1;
      report.deleted += deleted.length;
      auditDue = false;
    }
    if (page.length < pageSize) return report;
    after = page[page.length - 1].executionId;
  }
}

/**
 * Deletes the execution's stream when it is expired: the position of its last event, null when
 * it was already gone, undefined when it is kept.
 */
async function deleteIfExpired(deps: RetentionSweepDeps, executionId: string, cutoff: Date): Promise<Position | null | undefined> {
  let loaded;
  try {
    loaded = await deps.executions.load(executionId);
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
  if (!isExpired(loaded.state, cutoff)) return undefined;
  const last = loaded.history[loaded.history.length - 1];
  try {
    await deps.store.deleteStream(executionStreamId(executionId), { expectedRevision: last.revision });
  } catch (error) {
    if (error instanceof WrongExpectedRevisionError) return undefined;
    throw error;
  }
  return last.position;
}

async function recordFact(deps: RetentionSweepDeps, data: ExecutionsExpiredData): Promise<void> {
  // The horizon never moves back: a fact of a page with nothing deleted repeats the previous one.
  const prunedThrough = laterPosition(await deps.horizon.current(), data.prunedThrough);
  await deps.store.appendToStream(
    RETENTION_STREAM,
    [{ id: deps.ids.uuid(), type: EXECUTIONS_EXPIRED, data: { ...data, prunedThrough }, metadata: { actor: systemActor('retention') } }],
    { expectedRevision: 'any' },
  );
}
