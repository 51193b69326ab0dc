import { Inject, Injectable } from '@nestjs/common';
import { z } from 'zod';
import { UnavailableError, ValidationFailedError } from '../core/errors.js';
import { EVENT_STORE, type EventStore, type Position } from '../core/event-store.port.js';
import { READ_MODEL_SQL, type SqlClient } from '../postgres/sql-client.port.js';
import { liveCheckpoint } from './projection-catalog.js';
import { ProjectionSignals } from './projection-signals.js';
import { ReadModelSettings } from './projector.settings.js';

/**
 * What a query must reflect:
 * - `latest` (the default): every write acknowledged before the query arrived. Read-your-writes
 *   for everyone, without passing anything. A query of one execution checks that execution's
 *   own stream (`readAfterStream`); a list waits for the log's head at arrival.
 * - `position`: at least this position (`?minPosition=` or `X-Flostra-Min-Position`, e.g. the
 *   `position` of a command's response). Skips the head lookup.
 * - `eventual` (`?consistency=eventual`): whatever the read model holds now; never waits.
 */
export type ReadRequirement = { kind: 'latest' } | { kind: 'position'; position: Position } | { kind: 'eventual' };

export const MIN_POSITION_HEADER = 'x-flostra-min-position';

/** Query parameters every read-model query accepts; spread into its strict query schema. */
export const consistencyQueryFields = {
  minPosition: z
    .string()
    .min(1)
    .max(200)
    .regex(/^[\x21-\x7e]+$/, 'visible ASCII characters only')
    .optional(),
  consistency: z.enum(['latest', 'eventual']).optional(),
};

/** The requirement a request names; `minPosition` wins over the header, and either over `consistency`. */
export function readRequirement(query: { minPosition?: string; consistency?: 'latest' | 'eventual' }, header?: string): ReadRequirement {
  const position = query.minPosition ?? (header !== undefined && header !== '' ? header : undefined);
  if (position !== undefined) return { kind: 'position', position };
  return query.consistency === 'eventual' ? { kind: 'eventual' } : { kind: 'latest' };
}

/**
 * Read-your-writes over asynchronous read models: a query first waits, bounded, until the
 * projection's live checkpoint has reached what it must reflect. Positions of one store are
 * fixed-width strings, so `>=` on them is log order. Waiting is woken by the projector's
 * signals (in process, or NOTIFY from another) and falls back to polling.
 */
@Injectable()
export class ReadConsistency {
  private readonly known = new Map<string, Position>();
  private readonly reading = new Map<string, Promise<Position | null>>();

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(READ_MODEL_SQL) private readonly sql: SqlClient,
    @Inject(ProjectionSignals) private readonly signals: ProjectionSignals,
    @Inject(ReadModelSettings) private readonly settings: ReadModelSettings,
  ) {}

  /** Resolves once `projection` reflects `requirement`; UnavailableError (503) after the bound. */
  async waitFor(projection: string, requirement: ReadRequirement): Promise<void> {
    if (requirement.kind === 'eventual') return;
    if (requirement.kind === 'position')
      this.validate(requirement.position, this.known.get(projection) ?? (await this.readCheckpoint(projection)));
    const target = requirement.kind === 'latest' ? await this.store.headPosition() : requirement.position;
    if (target === null || this.reached(projection, target)) return;
    let signalled = false;
    let wake: (() => void) | null = null;
    const off = this.signals.on(projection, (position) => {
      if (position !== null) this.note(projection, position);
      signalled = true;
      wake?.();
    });
    const deadline = Date.now() + this.settings.current.readWaitMs;
    // A runner of this process holding a batch back for more to join it lets it go now.
    this.signals.hurry(projection);
    try {
      for (;;) {
        signalled = false;
        await this.readCheckpoint(projection);
        if (this.reached(projection, target)) return;
        const left = deadline - Date.now();
        if (left <= 0) {
          throw new UnavailableError(
            `read model "${projection}" has not reached position ${target} within ${this.settings.current.readWaitMs} ms ` +
              `(it is at ${this.known.get(projection) ?? 'the start'}); retry, or ask with consistency=eventual`,
          );
        }
        if (signalled) continue; // news arrived while the checkpoint was being read
        this.signals.hurry(projection); // what it waits for may have come after the batch in flight
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, Math.min(left, this.settings.current.readPollMs));
          function done() {
            clearTimeout(timer);
            resolve();
          }
          wake = done;
        });
        wake = null;
      }
    } finally {
      off();
    }
  }

  /**
   * `read()` from the read model, once it reflects `requirement`. For `latest` it reads first and
   * then asks the stream whether anything after `appliedRevision(result)` was committed: only
   * then does it wait — for exactly those events — and read again. Streams are read without the
   * global log's gate, so a write committed behind an older open transaction still counts.
   */
  async readAfterStream<T>(
    projection: string,
    requirement: ReadRequirement,
    streamId: string,
    read: () => Promise<T>,
    appliedRevision: (result: T) => number | null,
  ): Promise<T> {
    if (requirement.kind !== 'latest') {
      await this.waitFor(projection, requirement);
      return read();
    }
    const first = await read();
    const applied = appliedRevision(first);
    const newer = await this.store.readStream(streamId, { fromRevision: applied === null ? 0 : applied + 1 });
    if (newer.length === 0) return first;
    await this.waitFor(projection, { kind: 'position', position: newer[newer.length - 1].position });
    return read();
  }

  private reached(projection: string, target: Position): boolean {
    const known = this.known.get(projection);
    return known !== undefined && known >= target;
  }

  private note(projection: string, position: Position): void {
    const known = this.known.get(projection);
    if (known === undefined || position > known) this.known.set(projection, position);
  }

  /** One query shared by every waiter of the projection at that moment. */
  private async readCheckpoint(projection: string): Promise<Position | null> {
    let reading = this.reading.get(projection);
    if (reading === undefined) {
      reading = liveCheckpoint(this.sql, projection).finally(() => this.reading.delete(projection));
      this.reading.set(projection, reading);
    }
    const checkpoint = await reading;
    if (checkpoint !== null) this.note(projection, checkpoint);
    return checkpoint;
  }

  /** Positions of one store share one width: anything else was never handed out by it. */
  private validate(position: Position, checkpoint: Position | null): void {
    if (checkpoint !== null && position.length !== checkpoint.length) {
      throw new ValidationFailedError('invalid minPosition', [{ path: 'minPosition', message: 'not a position of this event store' }]);
    }
  }
}
