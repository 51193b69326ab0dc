import { Worker } from 'node:worker_threads';
import { InProcessSessionLocks } from './in-process-session-locks.js';
import {
  createPgliteCluster,
  freshClusterImage,
  isMissingOrEmpty,
  keepFreshClusterImage,
  LocalNotifications,
} from './pglite-sql-client.js';
import {
  IN_FAILED_TRANSACTION,
  sqlErrorInfo,
  statementText,
  type SessionLocks,
  type SqlClient,
  type SqlTransaction,
  type Statement,
  type TransactionOptions,
} from './sql-client.port.js';

/**
 * The database thread: a CommonJS script evaluated by Node (so it runs the same from the sources
 * and from dist/) that opens PGlite and answers the client's messages. Each message is one call
 * of PGlite's own API (`query`, `transaction`, a query inside it, its end), carried out in the
 * order the messages arrive, so PGlite's own queueing decides what runs when, as it does on the
 * main thread.
 */
const DATABASE_THREAD = `
'use strict';
const { parentPort, workerData } = require('node:worker_threads');

// A database error crosses the thread as its message, name and fields (code, constraint, ...).
function describe(error) {
  const fields = {};
  if (error !== null && typeof error === 'object') {
    for (const key of Object.keys(error)) {
      const value = error[key];
      if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) fields[key] = value;
    }
  }
  return {
    message: error instanceof Error ? error.message : String(error),
    name: error instanceof Error ? error.name : 'Error',
    fields,
  };
}

const answer = (id, promise) =>
  promise.then(
    (result) => parentPort.postMessage({ id, rows: result.rows }),
    (error) => parentPort.postMessage({ id, error: describe(error) }),
  );

const ROLLBACK = Symbol('rollback');
const open = new Map();
let db;

// Work in PGlite's hands: calls started and not yet settled. A background transaction (work
// that can wait, such as a read model's batch) begins only once nothing else has been in PGlite's
// hands for BACKGROUND_QUIET_MS, or once it has waited BACKGROUND_MAX_WAIT_MS, so it never
// starves; one at a time. The quiet spell keeps it out of the short gaps between the statements
// of work under way (a burst of appends, each sent as the last one's answer arrives): begun
// there, it would run in many small batches that cost more in all than one larger batch.
const BACKGROUND_MAX_WAIT_MS = workerData.backgroundMaxWaitMs;
const BACKGROUND_QUIET_MS = workerData.backgroundQuietMs;
const background = [];
let busy = 0;
let lastSettled = 0;
let releasing = false;
function started(promise) {
  busy++;
  const settled = () => {
    busy--;
    lastSettled = performance.now();
    releaseSoon();
  };
  promise.then(settled, settled);
  return promise;
}
// After the messages that have already arrived: they come before a background transaction.
function releaseSoon() {
  if (releasing || background.length === 0) return;
  releasing = true;
  setImmediate(() => {
    releasing = false;
    if (background.length === 0) return;
    const now = performance.now();
    const waited = now - background[0].since;
    const quietFor = now - lastSettled;
    if ((busy === 0 && quietFor >= BACKGROUND_QUIET_MS) || waited >= BACKGROUND_MAX_WAIT_MS) {
      background.shift().start();
      releaseSoon();
    } else {
      wakeAfter(Math.min(BACKGROUND_MAX_WAIT_MS - waited, busy === 0 ? BACKGROUND_QUIET_MS - quietFor : Infinity));
    }
  });
}
// One timer, for the soonest moment a held transaction may begin. A timer may fire a little
// early by performance.now() (the event loop's clock is coarser), so the check above re-arms it.
let wake;
let wakeAt = Infinity;
function wakeAfter(ms) {
  const at = performance.now() + ms;
  if (wake !== undefined) {
    if (at >= wakeAt) return;
    clearTimeout(wake);
  }
  wakeAt = at;
  wake = setTimeout(() => {
    wake = undefined;
    wakeAt = Infinity;
    releaseSoon();
  }, Math.max(1, Math.ceil(ms)));
  wake.unref();
}

async function main() {
  const { PGlite } = await import(workerData.pglite);
  let image;
  if (workerData.dataDir !== null) {
    db = await PGlite.create(workerData.dataDir);
  } else {
    if (workerData.image !== null) {
      // An image that does not load is replaced by the new cluster's, sent back below.
      db = await PGlite.create({ loadDataDir: new Blob([workerData.image]) }).catch(() => undefined);
    }
    if (db === undefined) {
      db = await PGlite.create();
      image = new Uint8Array(await (await db.dumpDataDir('none')).arrayBuffer());
    }
  }

  parentPort.on('message', handle);
  parentPort.postMessage({ ready: true, image });
}

// One message, or a transaction's messages sent together ('batch'), carried out in order.
function handle(message) {
  switch (message.op) {
    case 'query':
      return void answer(message.id, started(db.query(message.sql, message.params)));
    case 'batch':
      for (const each of message.messages) handle(each);
      return;
    case 'begin':
      return begin(message);
    case 'tx':
      return statement(message);
    case 'end':
      return end(message);
    case 'hurry':
      for (const held of background.splice(0)) held.start();
      return;
    case 'close':
      return void answer(message.id, started(db.close().then(() => ({ rows: [] }))));
  }
}

// A transaction opens with PGlite's own API and stays open until its 'end'. The client holds a
// transaction's messages until its function awaits an answer (a query's rows) or ends, and then
// sends those held so far in one 'batch': BEGIN with the first statements, the queued writes with
// the end. So PGlite waits inside a transaction only for the reads its function awaits, never for
// a busy main thread to send the next statement or the end, and nothing waits for the BEGIN.
// 'end' commits only when every statement of the transaction succeeded; else it rolls back and
// answers with the first failure, as a queued write's failure fails the transaction.
function begin(message) {
  const free = busy === 0 && background.length === 0 && performance.now() - lastSettled >= BACKGROUND_QUIET_MS;
  if (message.background !== true || free) return openTransaction(message);
  // Its statements and end chain on the entry, which exists from now on.
  const entry = pending(message.tx);
  background.push({ since: performance.now(), start: () => openTransaction(message, entry) });
  // It begins once the database has been quiet long enough, or has waited its longest, even
  // when nothing settles meanwhile.
  releaseSoon();
}

function pending(tx) {
  const entry = { statements: [], failure: undefined, finish: undefined, end: undefined };
  entry.handle = new Promise((resolve, reject) => {
    entry.opened = resolve;
    entry.refused = reject;
  });
  entry.handle.catch(() => undefined);
  open.set(tx, entry);
  return entry;
}

function openTransaction({ id, tx, asynchronousCommit }, entry = pending(tx)) {
  started(db.transaction(async (handle) => {
    if (asynchronousCommit) await handle.query('set local synchronous_commit = off');
    entry.opened(handle);
    parentPort.postMessage({ id, rows: [] });
    await new Promise((resolve, reject) => {
      entry.finish = (commit) => (commit ? resolve() : reject(ROLLBACK));
    });
  })).then(
    () => parentPort.postMessage({ id: entry.end.id, rows: [] }),
    (error) => {
      if (entry.finish === undefined) {
        // BEGIN itself failed: the statements and the end answer with its error.
        entry.refused(error);
        return parentPort.postMessage({ id, error: describe(error) });
      }
      const failure = error !== ROLLBACK ? error : entry.end.commit ? entry.failure : undefined;
      parentPort.postMessage(failure === undefined ? { id: entry.end.id, rows: [] } : { id: entry.end.id, error: describe(failure) });
    },
  );
}

function statement({ id, tx, sql, params }) {
  const entry = open.get(tx);
  if (entry === undefined) return parentPort.postMessage({ id, error: describe(new Error('the transaction is no longer open')) });
  const run = entry.handle.then((handle) => handle.query(sql, params));
  entry.statements.push(run.then(undefined, (error) => void (entry.failure ??= error)));
  answer(id, run);
}

function end({ id, tx, commit }) {
  const entry = open.get(tx);
  if (entry === undefined) return parentPort.postMessage({ id, error: describe(new Error('the transaction is no longer open')) });
  open.delete(tx);
  entry.end = { id, commit };
  Promise.all(entry.statements)
    .then(() => entry.handle)
    .then(
      () => entry.finish(commit && entry.failure === undefined),
      (error) => parentPort.postMessage({ id, error: describe(error) }),
    );
}

main().catch((error) => parentPort.postMessage({ failed: describe(error) }));
`;

/** A message to the database thread: one call of PGlite's API (see DATABASE_THREAD). */
type Message = Record<string, unknown>;

interface Pending {
  resolve(rows: unknown[]): void;
  reject(error: Error): void;
}

interface Reply {
  id: number;
  rows?: unknown[];
  error?: ThreadError;
}

interface ThreadError {
  message: string;
  name: string;
  fields: Record<string, unknown>;
}

/** A database error from the thread, with the fields (`code`, `constraint`, ...) it had there. */
function rebuild(error: ThreadError): Error {
  const rebuilt = new Error(error.message);
  rebuilt.name = error.name;
  return Object.assign(rebuilt, error.fields);
}

export interface PgliteThreadOptions {
  /** How long the thread may take to open the database before `open` fails. Default 120 s. */
  openTimeoutMs?: number;
  /**
   * The longest a background transaction (`TransactionOptions.background`) waits for the
   * database to have nothing else to do before it begins anyway. Default 1,000 ms.
   */
  backgroundMaxWaitMs?: number;
  /**
   * How long nothing else must have been in the database's hands before a background transaction
   * begins (unless it has waited `backgroundMaxWaitMs`). Default 10 ms.
   */
  backgroundQuietMs?: number;
}

/**
 * SqlClient over a PGlite that runs on a worker thread of its own (the embedded mode). PGlite
 * is a database compiled to WebAssembly that runs one statement at a time on the thread that
 * calls it; on the main thread every statement it runs is time the HTTP server, the projector
 * and the in-process worker cannot have. On a thread of its own it runs beside them, on
 * another core, and the main thread only sends statements and reads their answers.
 *
 * The semantics are PGlite's own: one connection, calls carried out in the order they reach the
 * thread, a query outside a transaction waits for the open one, and inside `transaction(fn)` `fn`
 * must use `tx` only. A transaction reaches the thread only when `fn` first awaits a query's rows,
 * or ends: until then its statements are held here, so PGlite is never held inside a transaction
 * waiting for this thread, and calls made meanwhile outside it may go first, as on a server.
 * Statements and their answers cross the thread by structured clone, so values arrive as PGlite
 * produced them (dates, byte arrays, parsed JSON).
 */
export class PgliteThreadSqlClient implements SqlClient {
  readonly inProcess = true;
  private readonly notifications = new LocalNotifications();
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private nextTransaction = 1;
  /** The BEGIN of each background transaction not sent yet (see `transaction`). */
  private readonly unsentBackground = new Set<Message>();
  /** Why the thread is gone; every call after that fails with it. */
  private stopped: Error | undefined;

  private constructor(private readonly worker: Worker) {
    worker.on('message', (reply: Reply) => this.settle(reply));
    worker.on('error', (error) => this.stop(new Error(`the PGlite thread failed: ${error.message}`, { cause: error })));
    worker.on('exit', (code) => this.stop(new Error(`the PGlite thread stopped (exit code ${code})`)));
    // Only calls in flight keep the process alive, as a socket with a request in flight would.
    worker.unref();
  }

  /**
   * Opens a database persisted in `dataDir`, or in memory when absent, on a new thread. A missing
   * or empty `dataDir` first gets a new cluster from `createPgliteCluster`.
   */
  static async open(dataDir?: string, options: PgliteThreadOptions = {}): Promise<PgliteThreadSqlClient> {
    if (dataDir !== undefined && (await isMissingOrEmpty(dataDir))) await createPgliteCluster(dataDir);
    const image = dataDir === undefined ? await freshClusterImage() : undefined;
    const worker = new Worker(DATABASE_THREAD, {
      eval: true,
      workerData: {
        pglite: import.meta.resolve('@electric-sql/pglite'),
        dataDir: dataDir ?? null,
        image: image === undefined ? null : new Uint8Array(await image.arrayBuffer()),
        backgroundMaxWaitMs: options.backgroundMaxWaitMs ?? 1_000,
        backgroundQuietMs: options.backgroundQuietMs ?? 10,
      },
    });
    const opened = await new Promise<{ image?: Uint8Array }>((resolve, reject) => {
      const timeoutMs = options.openTimeoutMs ?? 120_000;
      const timer = setTimeout(() => fail(new Error(`PGlite did not open within ${timeoutMs} ms`)), timeoutMs);
      const fail = (error: Error) => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        void worker.terminate();
        reject(error);
      };
      const onMessage = (message: { ready?: true; image?: Uint8Array; failed?: ThreadError }) => {
        if (message.failed !== undefined) return fail(rebuild(message.failed));
        if (message.ready !== true) return;
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', fail);
        resolve(message);
      };
      worker.on('message', onMessage);
      worker.once('error', fail);
    });
    if (opened.image !== undefined) await keepFreshClusterImage(new Blob([opened.image]));
    return new PgliteThreadSqlClient(worker);
  }

  sessionLocks(): SessionLocks {
    return new InProcessSessionLocks(this);
  }

  async query<T>(sql: Statement, params?: unknown[]): Promise<{ rows: T[] }> {
    return { rows: (await this.call({ op: 'query', sql: statementText(sql), params })) as T[] };
  }

  async transaction<T>(fn: (tx: SqlTransaction) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    const tx = this.nextTransaction++;
    // Held until `fn` awaits an answer or ends, then sent together (see the thread's `begin`):
    // the thread carries them out in the order held.
    const held: Message[] = [];
    const begun = this.expect(held, {
      op: 'begin',
      tx,
      asynchronousCommit: options.asynchronousCommit === true,
      background: options.background === true,
    });
    begun.catch(() => undefined);
    // Nothing is held once the thread is gone: `begun` has failed already.
    if (options.background === true && held.length > 0) this.unsentBackground.add(held[0]);
    const add = (sql: Statement, params?: unknown[]) => this.expect(held, { op: 'tx', tx, sql: statementText(sql), params });
    const queued: Promise<void>[] = [];
    let failed: { error: unknown } | undefined;
    let result: T;
    try {
      result = await fn({
        query: async <R>(sql: Statement, params?: unknown[]) => {
          const answer = add(sql, params);
          this.send(held);
          return { rows: (await answer) as R[] };
        },
        queue: (sql: Statement, params?: unknown[]) =>
          void queued.push(
            add(sql, params).then(
              () => undefined,
              (error: unknown) => void (failed ??= { error }),
            ),
          ),
      });
    } catch (error) {
      const ended = this.expect(held, { op: 'end', tx, commit: false });
      this.send(held);
      await ended.catch(() => undefined);
      await Promise.all(queued);
      const refused = await begun.then(
        () => undefined,
        (beginError: unknown) => beginError,
      );
      // A statement refused because a queued one before it failed reports that earlier failure.
      throw refused ?? (failed !== undefined && sqlErrorInfo(error).code === IN_FAILED_TRANSACTION ? failed.error : error);
    }
    // Commits when every statement succeeded; else rolls back and rejects with the first failure.
    const ended = this.expect(held, { op: 'end', tx, commit: true });
    this.send(held);
    await ended;
    return result;
  }

  startBackgroundNow(): void {
    // Those whose function is still running begin as soon as it awaits a read or ends.
    for (const begin of this.unsentBackground) begin['background'] = false;
    this.unsentBackground.clear();
    if (this.stopped === undefined) this.worker.postMessage({ op: 'hurry' });
  }

  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    return this.notifications.listen(channel, onNotify);
  }

  notify(channel: string, payload: string): Promise<void> {
    return this.notifications.notify(channel, payload);
  }

  async close(): Promise<void> {
    if (this.stopped === undefined) {
      await this.call({ op: 'close' });
      this.stop(new Error('the PGlite client is closed'));
    }
    await this.worker.terminate();
  }

  private call(message: Message): Promise<unknown[]> {
    const outbox: Message[] = [];
    const answer = this.expect(outbox, message);
    this.send(outbox);
    return answer;
  }

  /** Adds `message` to `outbox` with an id of its own; resolves to its answer once sent and carried out. */
  private expect(outbox: Message[], message: Message): Promise<unknown[]> {
    if (this.stopped !== undefined) return Promise.reject(this.stopped);
    const id = this.nextId++;
    return new Promise<unknown[]>((resolve, reject) => {
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve, reject });
      outbox.push({ ...message, id });
    });
  }

  /** Sends what `outbox` holds, in one message, and empties it. */
  private send(outbox: Message[]): void {
    if (outbox.length === 0 || this.stopped !== undefined) return;
    const messages = outbox.splice(0);
    for (const message of messages) this.unsentBackground.delete(message);
    this.worker.postMessage(messages.length === 1 ? messages[0] : { op: 'batch', messages });
  }

  private settle(reply: Reply): void {
    const pending = this.pending.get(reply.id);
    if (pending === undefined) return;
    this.pending.delete(reply.id);
    if (this.pending.size === 0) this.worker.unref();
    if (reply.error !== undefined) pending.reject(rebuild(reply.error));
    else pending.resolve(reply.rows ?? []);
  }

  private stop(reason: Error): void {
    this.stopped ??= reason;
    for (const { reject } of this.pending.values()) reject(this.stopped);
    this.pending.clear();
  }
}
