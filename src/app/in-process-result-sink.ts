import type { INestApplicationContext } from '@nestjs/common';
import type { IncomingMessage, OutgoingMessage } from '../core/bus.port.js';
import { IngestorProcess } from '../ingest/ingest.module.js';
import type { ResultIngestor } from '../ingest/application/result-ingestor.js';
import type { ResultSink } from '../worker/runtime/result-sink.js';

/** What a dead letter of a result handed over in process names as its origin: it was on no topic. */
export const IN_PROCESS_ORIGIN = { topic: 'in-process', partition: -1, offset: '-1' } as const;

interface Waiting {
  messages: IncomingMessage[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * The ResultSink of a worker that shares the ingestor's process: its results go to that
 * ResultIngestor directly, not through `flostra.results.v1`. Nothing the ingestor does is
 * skipped: the same JSON is parsed and validated, deduplicated by messageId (one memory with
 * the bus's way in), decided (fencing, leases) and appended as one append per execution, refused
 * results dead-lettered with the reason, the append spanned under the trace the result carries,
 * its lag measured from the result's production. `send` resolves once all of that is done, so
 * the attempt has nothing to wait for afterwards; it rejects when the ingestor gives up (the
 * store down beyond its retries), as a publish rejects when the broker does (promise 6).
 *
 * Order is the bus's: the sends of one execution (its key) are handled one after another, in the
 * order they were made; those that queue behind one being handled go on together, as a consumer
 * takes what a partition has fetched. Different executions' sends are handled side by side.
 * What is lost with the process: a result handed over but not yet appended when it dies; the
 * attempt's lease then runs out and the watchdog runs it again, as for a worker that died before
 * publishing.
 */
export class InProcessResultSink implements ResultSink {
  readonly handledOnSend = true;
  /** Sends waiting behind the one being handled, by key; a key is here while one is. */
  private readonly lanes = new Map<string, Waiting[]>();

  constructor(private readonly ingestor: Pick<ResultIngestor, 'handleBatch'>) {}

  /** The sink of the ingestor of `app`, which must run the ingestor role. */
  static of(app: INestApplicationContext): InProcessResultSink {
    return new InProcessResultSink(app.get(IngestorProcess, { strict: false }).results);
  }

  send(messages: OutgoingMessage[]): Promise<void> {
    if (messages.length === 0) return Promise.resolve();
    const key = messages[0].key;
    const incoming = messages.map(({ key, value, headers }) => ({ ...IN_PROCESS_ORIGIN, key, value, headers: headers ?? {} }));
    return new Promise<void>((resolve, reject) => {
      const waiting = { messages: incoming, resolve, reject };
      const lane = this.lanes.get(key);
      if (lane !== undefined) return void lane.push(waiting);
      this.lanes.set(key, [waiting]);
      void this.drain(key);
    });
  }

  /** Handles the key's waiting sends, all that queued meanwhile together, until none is left. */
  private async drain(key: string): Promise<void> {
    const lane = this.lanes.get(key)!;
    while (lane.length > 0) {
      const taken = lane.splice(0);
      try {
        await this.ingestor.handleBatch(taken.flatMap(({ messages }) => messages));
        for (const { resolve } of taken) resolve();
      } catch (error) {
        for (const { reject } of taken) reject(error);
      }
    }
    this.lanes.delete(key);
  }
}
