import type { SqlClient, SqlTransaction } from '../postgres/sql-client.port.js';

interface Member {
  work: (tx: SqlTransaction) => Promise<void>;
  /** Nobody waits for this batch (see TransactionOptions.background). */
  background: boolean;
  /** The shared transaction rolled back: forget what `work` remembered, it runs again alone. */
  rolledBack: () => void;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * One transaction for the batches of several read models. The live runners of one process read
 * the same log and gather on the same clock, so their batches are usually ready in the same
 * turn of the event loop: batches started in one turn commit together, in one transaction
 * (one BEGIN, one COMMIT, one connection, their statements pipelined together) instead of one
 * transaction each. Each batch still moves its own checkpoint with its own writes, so every
 * read model stays atomic with its checkpoint, as alone.
 *
 * Shared transactions fail together: when one fails, which batch caused it cannot be told, so
 * every batch of it runs again alone in a transaction of its own, where a failure is its own
 * (a fenced or held checkpoint, an error of its handlers). A batch alone in its turn goes as before.
 * Every transaction here commits asynchronously, as every projector batch does.
 */
export class SharedTransactions {
  private queue: Member[] = [];
  private scheduled = false;

  constructor(private readonly sql: SqlClient) {}

  /**
   * Runs `work` in a transaction, shared with the other batches started in this turn; a
   * background one (see TransactionOptions.background) when every batch in it is.
   */
  run(work: (tx: SqlTransaction) => Promise<void>, rolledBack: () => void, background = false): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ work, background, rolledBack, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      // After this turn's timers and I/O callbacks: batches whose gather windows ended together.
      setImmediate(() => {
        this.scheduled = false;
        const members = this.queue;
        this.queue = [];
        void this.commit(members);
      });
    });
  }

  /** Settles every member; never throws. */
  private async commit(members: Member[]): Promise<void> {
    if (members.length === 1) return this.alone(members[0]);
    try {
      await this.sql.transaction(
        async (tx) => {
          const outcomes = await Promise.allSettled(members.map((member) => member.work(tx)));
          const failed = outcomes.find((outcome) => outcome.status === 'rejected');
          if (failed !== undefined) throw failed.reason;
        },
        { asynchronousCommit: true, background: members.every((member) => member.background) },
      );
    } catch {
      for (const member of members) member.rolledBack();
      await Promise.all(members.map((member) => this.alone(member)));
      return;
    }
    for (const member of members) member.resolve();
  }

  private async alone(member: Member): Promise<void> {
    try {
      await this.sql.transaction(member.work, { asynchronousCommit: true, background: member.background });
      member.resolve();
    } catch (error) {
      member.reject(error);
    }
  }
}
