import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** Where the server of this test run listens; set by the integration and e2e global setups, read by suites. */
export const TEST_DATABASE_URL_ENV = 'FLOSTRA_TEST_DATABASE_URL';

export interface PostgresServer {
  /** Connection string of the `postgres` database (superuser, trust auth, 127.0.0.1 only). */
  url: string;
  /** Whether this process started the server (false when reusing FLOSTRA_TEST_DATABASE_URL). */
  owned: boolean;
  /**
   * Stops the server (fast shutdown: open connections are cut), runs `whileDown`, then starts
   * it again on the same data and port. Only for a server this process started.
   */
  restart(options?: { whileDown?: () => Promise<void> }): Promise<void>;
  stop(): Promise<void>;
}

export interface StartPostgresServerOptions {
  /** Use FLOSTRA_TEST_DATABASE_URL when set (default true). A test that stops the server needs its own. */
  reuseExisting?: boolean;
  /** Server settings beyond the defaults (`-c name=value`), e.g. preloaded libraries for a profile. */
  settings?: Record<string, string>;
}

const POSTGRES_ROOT = '/usr/lib/postgresql';

/**
 * A real PostgreSQL for tests and benchmarks, from Debian's packages: initdb into a temp dir,
 * started on 127.0.0.1 on a free port with default durability (fsync on). Reuses the server
 * named by FLOSTRA_TEST_DATABASE_URL when set. Throws when it cannot start: a suite that
 * needs Postgres must fail loudly, never pass by skipping.
 */
export async function startPostgresServer(startOptions: StartPostgresServerOptions = {}): Promise<PostgresServer> {
  const existing = process.env[TEST_DATABASE_URL_ENV];
  if ((startOptions.reuseExisting ?? true) && existing !== undefined && existing !== '') {
    return {
      url: existing,
      owned: false,
      restart: async () => {
        throw new Error(`cannot restart the server named by ${TEST_DATABASE_URL_ENV}: start one with { reuseExisting: false }`);
      },
      stop: async () => undefined,
    };
  }

  const bin = findPostgresBin();
  const root = mkdtempSync(join(tmpdir(), 'flostra-pg-'));
  const dataDir = join(root, 'data');
  // Postgres refuses to run as root: CI is root, so the cluster belongs to the postgres user.
  const asPostgres = process.getuid?.() === 0;
  if (asPostgres) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(root, uid, gid);
  }
  const run = (tool: string, args: string[]) => {
    const [command, argv] = asPostgres ? ['runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]] : [join(bin, tool), args];
    const result = spawnSync(command, argv, { encoding: 'utf8', timeout: 60_000 });
    if (result.status !== 0) {
      throw new Error(
        `${tool} ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status}`}):\n${result.stderr}${result.stdout}`,
      );
    }
  };

  try {
    run('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-instructions']);
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const port = await freePort();
      const options = [`-c listen_addresses=127.0.0.1`, `-p ${port}`, `-c unix_socket_directories=${root}`, '-c max_connections=200'];
      for (const [name, value] of Object.entries(startOptions.settings ?? {})) options.push(`-c ${name}=${value}`);
      try {
        run('pg_ctl', ['-D', dataDir, '-l', join(root, 'server.log'), '-w', '-t', '60', '-o', options.join(' '), 'start']);
      } catch (error) {
        lastError = error;
        continue; // most likely the port was taken between probing and binding
      }
      const stop = () => run('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', 'stop']);
      const start = () =>
        run('pg_ctl', ['-D', dataDir, '-l', join(root, 'server.log'), '-w', '-t', '60', '-o', options.join(' '), 'start']);
      // Best effort when the run is interrupted: never leave a server behind.
      const onExit = () => {
        try {
          stop();
        } catch {
          // the process is exiting; nothing else can be done
        }
        rmSync(root, { recursive: true, force: true });
      };
      process.once('exit', onExit);
      return {
        url: `postgres://postgres@127.0.0.1:${port}/postgres`,
        owned: true,
        restart: async ({ whileDown } = {}) => {
          stop();
          try {
            await whileDown?.();
          } finally {
            start();
          }
        },
        stop: async () => {
          process.off('exit', onExit);
          stop();
          rmSync(root, { recursive: true, force: true });
        },
      };
    }
    throw new Error(`postgres did not start: ${String(lastError)}\n${readLog(root)}`);
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}

/** The server of this test run, as published by globalSetup. */
export function testServerUrl(): string {
  const url = process.env[TEST_DATABASE_URL_ENV];
  if (url === undefined || url === '') {
    throw new Error(
      `${TEST_DATABASE_URL_ENV} is not set: run the suite through jest as an integration (*.int.spec.ts) or e2e (*.e2e.spec.ts) suite, whose global setup starts Postgres`,
    );
  }
  return url;
}

/** Creates an empty database on the test server and returns its connection string. */
export async function createTestDatabase(prefix: string, serverUrl: string = testServerUrl()): Promise<string> {
  const name = `${prefix
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 40)}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

function findPostgresBin(): string {
  const versions = existsSync(POSTGRES_ROOT)
    ? readdirSync(POSTGRES_ROOT)
        .filter((entry) => /^\d+$/.test(entry) && existsSync(join(POSTGRES_ROOT, entry, 'bin', 'pg_ctl')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) {
    throw new Error(
      `no PostgreSQL server binaries under ${POSTGRES_ROOT}/<version>/bin: install Debian's postgresql package ` +
        `(apt-get install -y postgresql) or set ${TEST_DATABASE_URL_ENV} to a running server`,
    );
  }
  return join(POSTGRES_ROOT, versions[0], 'bin');
}

/** A port on 127.0.0.1 that was free a moment ago (another process may take it before it is bound). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function readLog(root: string): string {
  try {
    return readFileSync(join(root, 'server.log'), 'utf8');
  } catch {
    return '(no server log)';
  }
}
