import type { EventStore, Position } from '../../core/event-store.port.js';
import { RETENTION_STREAM, executionsExpiredSchema, EXECUTIONS_EXPIRED } from '../../core/retention.js';
import { laterPosition } from '../domain/retention-policy.js';

/**
 * The retention horizon: the newest position whose event retention deleted, as the facts in the
 * `retention` stream record it (null: nothing was ever deleted). Read from the event store, so
 * every api process and every store agrees; each call reads only the facts it has not seen.
 */
export class RetentionHorizon {
  private seenRevision = -1;
  private horizon: Position | null = null;

  constructor(private readonly store: EventStore) {}

  async current(): Promise<Position | null> {
    const facts = await this.store.readStream(RETENTION_STREAM, { fromRevision: this.seenRevision + 1 });
    for (const fact of facts) {
      if (fact.revision <= this.seenRevision) continue;
      if (fact.type === EXECUTIONS_EXPIRED)
        this.horizon = laterPosition(this.horizon, executionsExpiredSchema.parse(fact.data).prunedThrough);
      this.seenRevision = fact.revision;
    }
    return this.horizon;
  }
}
