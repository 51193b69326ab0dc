import { fileURLToPath } from 'node:url';
import type {
  SessionLock,
  SessionLocks,
  SqlClient,
  SqlTransaction,
  Statement,
  StatementCall,
  TransactionOptions,
} from '../src/postgres/sql-client.port.js';

/**
 * Counts what Flostra asks of its database, for the benchmarks: statements, transactions and
 * round trips, optionally by the source file that asked. A SqlClient in front of the real one.
 *
 * A round trip is one batch of messages the client sends and then waits on. A single statement
 * is one; a transaction is one per turn of the event loop in which it sent something, since the
 * node-postgres client writes a transaction's statements of one turn together (BEGIN with the
 * first ones, COMMIT with the last queued ones). Each session-lock call is one. On PGlite nothing
 * crosses a socket: there the figure counts calls into the database.
 *
 * Wake-ups (`notify`) are counted apart: the client sends one only when another process listens
 * on the database (see pg-signal-connection.ts), which in a benchmark running every role in one
 * process is never the case.
 */
export interface SqlTrafficCount {
  roundTrips: number;
  statements: number;
  transactions: number;
  wakeUps: number;
}

export interface SqlTraffic {
  /** Totals since the start. */
  total(): SqlTrafficCount;
  /** Starts counting by the source file (under src/) and function that asked; costs a stack trace per call. */
  startByCaller(): void;
  /** The counts by caller since `startByCaller`, and stops taking them. */
  stopByCaller(): Map<string, SqlTrafficCount>;
}

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
/** Frames that pass a call on rather than ask for it. */
const PASS_THROUGH = /\/(sql-traffic|pg-sql-client|pglite-sql-client|pglite-thread-sql-client)\.js/;
/** Source files that serve other parts: a count names the role behind them too. */
const ADAPTERS = /^(postgres|event-store|observability\/measured-)/;

export function countSqlTraffic(inner: SqlClient): { client: SqlClient; traffic: SqlTraffic } {
  const total: SqlTrafficCount = { roundTrips: 0, statements: 0, transactions: 0, wakeUps: 0 };
  let callers: Map<string, SqlTrafficCount> | null = null;

  const callerCount = (): SqlTrafficCount | null => {
    if (callers === null) return null;
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 40;
    const stack = new Error().stack ?? '';
    Error.stackTraceLimit = limit;
    // The first frame that asked, and the first outside the database adapters (the role behind it).
    const frames: string[] = [];
    for (const line of stack.split('\n').slice(1)) {
      const at = line.indexOf(SRC);
      if (at < 0 || PASS_THROUGH.test(line)) continue;
      const file = line.slice(at + SRC.length).replace(/\.js:.*$/, '');
      const name = /^\s*at (?:async )?([^\s(]+) \(/.exec(line)?.[1] ?? '<anonymous>';
      if (frames.length === 0) frames.push(`${file} ${name}`);
      if (!ADAPTERS.test(file)) {
        if (frames[0] !== `${file} ${name}`) frames.push(`${file} ${name}`);
        break;
      }
    }
    const caller = frames.length === 0 ? 'other' : frames.join(' ← ');
    let count = callers.get(caller);
    if (count === undefined) callers.set(caller, (count = { roundTrips: 0, statements: 0, transactions: 0, wakeUps: 0 }));
    return count;
  };
  const add = (count: SqlTrafficCount | null, field: keyof SqlTrafficCount, n = 1) => {
    total[field] += n;
    if (count !== null) count[field] += n;
  };

  const counted = (count: SqlTrafficCount | null) => {
    // One round trip per turn that sent something: a window opens at the first send and closes
    // when the client's writes of that turn leave (the next tick).
    let open = false;
    return () => {
      if (open) return;
      open = true;
      add(count, 'roundTrips');
      process.nextTick(() => (open = false));
    };
  };

  const sessionLocks = (locks: SessionLocks): SessionLocks => ({
    tryAcquire: async (key) => {
      add(callerCount(), 'roundTrips');
      const lock = await locks.tryAcquire(key);
      if (lock === null) return null;
      return {
        lost: lock.lost,
        release: () => {
          add(null, 'roundTrips');
          return lock.release();
        },
      } satisfies SessionLock;
    },
    close: () => locks.close(),
  });

  const client: SqlClient = {
    inProcess: inner.inProcess,
    query: <T>(sql: Statement, params?: unknown[]) => {
      const count = callerCount();
      add(count, 'statements');
      add(count, 'roundTrips');
      return inner.query<T>(sql, params);
    },
    transaction: <T>(fn: (tx: SqlTransaction) => Promise<T>, options?: TransactionOptions) => {
      const count = callerCount();
      add(count, 'transactions');
      const send = counted(count);
      return inner.transaction(async (tx) => {
        send(); // BEGIN
        const result = await fn({
          query: <R>(sql: Statement, params?: unknown[]) => {
            add(count, 'statements');
            send();
            return tx.query<R>(sql, params);
          },
          queue: (sql: Statement, params?: unknown[]) => {
            add(count, 'statements');
            send();
            tx.queue(sql, params);
          },
        });
        send(); // COMMIT, in the turn the callback ended
        return result;
      }, options);
    },
    ...(inner.queryThen === undefined
      ? {}
      : {
          // Two statements, one write: one round trip.
          queryThen: <A, B>(first: StatementCall, then: StatementCall) => {
            const count = callerCount();
            add(count, 'statements', 2);
            add(count, 'roundTrips');
            return inner.queryThen!<A, B>(first, then);
          },
        }),
    sessionLocks: () => sessionLocks(inner.sessionLocks()),
    listen: (channel, onNotify) => inner.listen(channel, onNotify),
    notify: (channel, payload) => {
      add(callerCount(), 'wakeUps');
      return inner.notify(channel, payload);
    },
    ...(inner.onWriteEnded === undefined ? {} : { onWriteEnded: (listener: () => void) => inner.onWriteEnded!(listener) }),
    ...(inner.startBackgroundNow === undefined ? {} : { startBackgroundNow: () => inner.startBackgroundNow!() }),
    close: () => inner.close(),
  };

  return {
    client,
    traffic: {
      total: () => ({ ...total }),
      startByCaller: () => void (callers = new Map()),
      stopByCaller: () => {
        const counts = callers ?? new Map<string, SqlTrafficCount>();
        callers = null;
        return counts;
      },
    },
  };
}

/** `after - before` per execution, to two decimals. */
export function perExecution(before: SqlTrafficCount, after: SqlTrafficCount, executions: number): SqlTrafficCount {
  const per = (field: keyof SqlTrafficCount) => Math.round(((after[field] - before[field]) / Math.max(1, executions)) * 100) / 100;
  return { roundTrips: per('roundTrips'), statements: per('statements'), transactions: per('transactions'), wakeUps: per('wakeUps') };
}
