import { PGlite } from '@electric-sql/pglite';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { lstat, mkdir, open, readdir, readFile, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InProcessSessionLocks } from './in-process-session-locks.js';
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
 * SqlClient over one PGlite instance (the embedded mode). PGlite is a single connection:
 * every transaction goes through its `transaction()` API, which queues callers, so concurrent
 * requests never interleave BEGIN/COMMIT. Inside `transaction(fn)`, `fn` must use `tx` only:
 * a query on the client itself would wait for the transaction that waits for it.
 */
export class PgliteSqlClient implements SqlClient {
  readonly inProcess = true;
  private readonly notifications = new LocalNotifications();

  constructor(readonly db: PGlite) {}

  /**
   * Opens a database persisted in `dataDir`, or in memory when absent. A missing or empty
   * `dataDir` first gets a new cluster from `createPgliteCluster`.
   */
  static async open(dataDir?: string): Promise<PgliteSqlClient> {
    if (dataDir === undefined) return new PgliteSqlClient(await openInMemory());
    if (await isMissingOrEmpty(dataDir)) await createPgliteCluster(dataDir);
    return new PgliteSqlClient(await PGlite.create(dataDir));
  }

  sessionLocks(): SessionLocks {
    return new InProcessSessionLocks(this);
  }

  async query<T>(sql: Statement, params?: unknown[]): Promise<{ rows: T[] }> {
    const result = await this.db.query<T>(statementText(sql), params);
    return { rows: result.rows };
  }

  transaction<T>(fn: (tx: SqlTransaction) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    return this.db.transaction(async (tx) => {
      if (options.asynchronousCommit === true) await tx.query('set local synchronous_commit = off');
      return await withQueuedWrites(tx, fn);
    });
  }

  /**
   * A PGlite database belongs to this one process, so its listeners are all here: wake-ups are
   * handed over in memory instead of as a NOTIFY through the database (a query saved per append).
   */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    return this.notifications.listen(channel, onNotify);
  }

  notify(channel: string, payload: string): Promise<void> {
    return this.notifications.notify(channel, payload);
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}

/** A transaction of PGlite's own API. */
interface PgliteTransaction {
  query<R>(sql: string, params?: unknown[]): Promise<{ rows: R[] }>;
}

/**
 * Runs `fn` inside an open PGlite transaction and waits for the writes it queued. Queued writes
 * run in order with the rest; the first to fail fails the transaction (its error is thrown, and
 * the caller rolls back).
 */
async function withQueuedWrites<T>(tx: PgliteTransaction, fn: (tx: SqlTransaction) => Promise<T>): Promise<T> {
  const queued: Promise<void>[] = [];
  let failed: { error: unknown } | undefined;
  let result: T;
  try {
    result = await fn({
      query: async <R>(sql: Statement, params?: unknown[]) => ({ rows: (await tx.query<R>(statementText(sql), params)).rows }),
      queue: (sql: Statement, params?: unknown[]) =>
        void queued.push(
          tx.query(statementText(sql), params).then(
            () => undefined,
            (error: unknown) => void (failed ??= { error }),
          ),
        ),
    });
  } catch (error) {
    // A statement refused because a queued one before it failed reports that earlier failure.
    await Promise.all(queued);
    throw failed !== undefined && sqlErrorInfo(error).code === IN_FAILED_TRANSACTION ? failed.error : error;
  }
  await Promise.all(queued);
  if (failed !== undefined) throw failed.error;
  return result;
}

/** LISTEN and NOTIFY of a database only this process opens: handed over in memory. */
export class LocalNotifications {
  private readonly listeners = new Map<string, Set<{ onNotify: (payload: string) => void }>>();

  async listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    const listeners = this.listeners.get(channel) ?? new Set();
    this.listeners.set(channel, listeners);
    // Each registration is its own entry, so listening twice with one callback is two listeners.
    const entry = { onNotify };
    listeners.add(entry);
    return async () => {
      listeners.delete(entry);
    };
  }

  async notify(channel: string, payload: string): Promise<void> {
    // Delivered after the caller's turn, as a NOTIFY would be: never inside the notifier's code.
    for (const { onNotify } of this.listeners.get(channel) ?? []) setImmediate(() => onNotify(payload));
  }
}

/**
 * An in-memory database starts from an image of a new cluster instead of running initdb: initdb
 * is most of the cost of a new PGlite (about 2 s of CPU and a second WebAssembly module of some
 * 450 MB, against about 0.5 s to load the 40 MB image). The image is taken from the first
 * database the process creates, right after initdb and before anyone writes to it, and kept on
 * disk for the other processes of this user and PGlite version (tests and benchmarks open many):
 * in a directory of this user's only, mode 0700, written to a temporary name then renamed, so
 * that a reader never sees half an image. An image that fails to load is removed and made again.
 */
let freshCluster: Promise<Blob | undefined> | undefined;

async function openInMemory(): Promise<PGlite> {
  const image = await freshClusterImage();
  if (image !== undefined) {
    try {
      return await PGlite.create({ loadDataDir: image });
    } catch {
      await dropFreshClusterImage();
    }
  }
  const db = await PGlite.create();
  await keepFreshClusterImage(await db.dumpDataDir('none'));
  return db;
}

/** The image of a new cluster, when this user's processes made one (read once per process). */
export function freshClusterImage(): Promise<Blob | undefined> {
  freshCluster ??= readFreshClusterImage();
  return freshCluster;
}

/** Forgets an image that did not load, so that the next database makes a new one. */
async function dropFreshClusterImage(): Promise<void> {
  freshCluster = undefined;
  await rm(await freshClusterImagePath(), { force: true });
}

/** Keeps the image of a new cluster for this process and the others of this user. */
export async function keepFreshClusterImage(image: Blob): Promise<void> {
  freshCluster = Promise.resolve(image);
  await writeFreshClusterImage(image).catch(() => undefined);
}

let imagePath: Promise<string> | undefined;

/** Named by the package's own version: another PGlite may not load this one's cluster. */
function freshClusterImagePath(): Promise<string> {
  imagePath ??= (async () => {
    const packageDir = dirname(dirname(fileURLToPath(import.meta.resolve('@electric-sql/pglite'))));
    const { version } = JSON.parse(await readFile(join(packageDir, 'package.json'), 'utf8')) as { version: string };
    return join(tmpdir(), `flostra-${process.getuid?.() ?? 'user'}`, `pglite-${version}-new-cluster.tar`);
  })();
  return imagePath;
}

/** The image's path, when there is one in a directory only this user may write to. */
async function readableFreshClusterImage(): Promise<string | undefined> {
  try {
    const path = await freshClusterImagePath();
    if (!(await isPrivateDirectory(dirname(path)))) return undefined;
    return (await lstat(path)).isFile() ? path : undefined;
  } catch {
    return undefined;
  }
}

async function readFreshClusterImage(): Promise<Blob | undefined> {
  const path = await readableFreshClusterImage();
  if (path === undefined) return undefined;
  return await readFile(path).then(
    (bytes) => new Blob([bytes]),
    () => undefined,
  );
}

async function writeFreshClusterImage(image: Blob): Promise<void> {
  const path = await freshClusterImagePath();
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  if (!(await isPrivateDirectory(dirname(path)))) return;
  const staging = `${path}.${process.pid}-${randomBytes(4).toString('hex')}`;
  await writeFile(staging, new Uint8Array(await image.arrayBuffer()), { mode: 0o600 });
  await rename(staging, path);
}

/** A real directory (not a link) that this user owns and no one else may write to. */
async function isPrivateDirectory(dir: string): Promise<boolean> {
  const stat = await lstat(dir);
  const uid = process.getuid?.();
  return stat.isDirectory() && (uid === undefined || stat.uid === uid) && (stat.mode & 0o022) === 0;
}

export async function isMissingOrEmpty(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw error;
  }
}

/** Where a cluster is made before it becomes `dataDir`: beside it, so that a rename moves it. */
const STAGING_INFIX = '.creating-';

/**
 * Creates a PGlite cluster (initdb) in `dataDir`, which must be missing or empty, the way PGlite
 * itself would, but in a child process and beside `dataDir` first.
 *
 * In a child process, because PGlite creates a cluster with a second, temporary PGlite instance
 * and an initdb WebAssembly module, whose memories (about 450 MB) the process keeps until a full
 * GC that an idle server may never run: measured with bench:startup, a first `npm start` idled at
 * about 900 MB RSS, against under 400 MB when the cluster came from the child. The child's exit
 * gives all of it back; it costs one more WebAssembly compile, on the first start only.
 *
 * Beside `dataDir` first, then renamed into place, so that a creation cut short (Ctrl-C, a crash)
 * leaves no half-made cluster in `dataDir`, which PGlite would take for a database on the next
 * start. A staging directory whose process is gone is removed by the next creation.
 */
export async function createPgliteCluster(dataDir: string): Promise<void> {
  const parent = dirname(dataDir);
  await mkdir(parent, { recursive: true });
  await removeAbandonedStaging(dataDir);
  const staging = `${dataDir}${STAGING_INFIX}${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await runInitdbChild(staging);
    // rename() would also replace an empty directory on Linux; removing it first says so on every OS.
    if (existsSync(dataDir)) await rmdir(dataDir);
    await rename(staging, dataDir);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
  // The rename is durable only once the directory that holds it is.
  const handle = await open(parent, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function runInitdbChild(dir: string): Promise<void> {
  const pglite = import.meta.resolve('@electric-sql/pglite');
  // A new cluster's image, when an in-memory database of this user made one, is unpacked
  // instead of running initdb (4-6 s against 20 s on a loaded two-core machine); an image that
  // does not load leaves the directory to initdb.
  const image = (await readableFreshClusterImage()) ?? '';
  const script = [
    `const { PGlite } = await import(${JSON.stringify(pglite)});`,
    `const { readFile, rm } = await import('node:fs/promises');`,
    `const dir = ${JSON.stringify(dir)};`,
    `let db;`,
    `if (${JSON.stringify(image)} !== '') {`,
    `  try { db = await PGlite.create(dir, { loadDataDir: new Blob([await readFile(${JSON.stringify(image)})]) }); }`,
    `  catch { db = undefined; await rm(dir, { recursive: true, force: true }); }`,
    `}`,
    `db ??= await PGlite.create(dir);`,
    `await db.close();`,
  ].join('\n');
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', script], { maxBuffer: 16 * 1024 * 1024 }, (error, _stdout, stderr) => {
      if (error === null) return resolve();
      const detail =
        stderr
          .split('\n')
          .map((line) => line.trim())
          .find((line) => /error/i.test(line)) ?? error.message.split('\n', 1)[0];
      reject(new Error(`PGlite could not create a database in ${dir}: ${detail}`, { cause: error }));
    });
  });
}

async function removeAbandonedStaging(dataDir: string): Promise<void> {
  const prefix = `${basename(dataDir)}${STAGING_INFIX}`;
  let siblings: string[];
  try {
    siblings = await readdir(dirname(dataDir));
  } catch {
    return;
  }
  for (const name of siblings) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(name.slice(prefix.length).split('-', 1)[0]);
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) continue;
    await rm(join(dirname(dataDir), name), { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
