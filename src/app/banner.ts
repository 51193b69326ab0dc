import { isAbsolute, relative } from 'node:path';
import type { DevTokens } from '../auth/tokens-file.schema.js';
import { ConfigError } from '../config/config.js';
import { DependencyUnavailableError } from '../core/errors.js';
import { DEMO_WORKFLOW_NAME } from './demo-workflow.js';

/** What a person sees after `npm start`: where it listens, the dev tokens, and a first command. */
export function printBanner(options: {
  url: string;
  devTokens: DevTokens | null;
  dataDir: string;
  embedded: boolean;
  /** The embedded secrets key file in use, if any: its path is shown, never the key. */
  secretsKeyFile?: string | null;
}): void {
  const { url, devTokens } = options;
  const lines = [``, `Flostra is listening on ${url}`];
  if (options.embedded) lines.push(`Embedded mode: PGlite and in-process bus, data in ${options.dataDir}`);
  if (options.secretsKeyFile) lines.push(`Secrets are encrypted with the key in ${options.secretsKeyFile} (back it up with the data)`);
  if (devTokens) {
    lines.push(
      `Dev admin token  (admin of workspace "${devTokens.workspace}", system-admin):         ${devTokens.admin}`,
      `Dev worker token (worker, task-worker of workspace "${devTokens.workspace}"): ${devTokens.worker}`,
      ``,
      `Start an execution of the bundled "${DEMO_WORKFLOW_NAME}" workflow:`,
      `  curl -sS -X POST ${url}/v1/workspaces/${devTokens.workspace}/workflows/${DEMO_WORKFLOW_NAME}/executions \\`,
      `    -H 'Authorization: Bearer ${devTokens.admin}' -H 'Content-Type: application/json' \\`,
      `    -H 'Idempotency-Key: first-run' -d '{"input":{"name":"world"}}'`,
      `Then look at it:`,
      `  curl -sS ${url}/v1/executions/<executionId> -H 'Authorization: Bearer ${devTokens.admin}'`,
      `Or open the web console and paste the dev admin token: ${url}/console`,
    );
  }
  lines.push(``);
  process.stdout.write(lines.join('\n') + '\n');
}

/** What a person sees when the start fails: one or two lines naming the cause, and the exit code. */
export interface StartFailure {
  lines: string[];
  /** 2: the configuration is wrong; 1: anything else. */
  exitCode: number;
}

const LISTEN_CAUSES: Record<string, string> = {
  EADDRINUSE: 'the address is already in use (another Flostra?); stop it or set PORT to a free port',
  EACCES: 'permission denied (ports below 1024 need privileges); set PORT to 1024 or above',
  EADDRNOTAVAIL: 'no network interface here has that address; set HOST (127.0.0.1 for this machine only)',
  ENOTFOUND: 'HOST does not resolve to an address',
  EAI_AGAIN: 'HOST could not be resolved (DNS did not answer)',
};

const CONNECT_CAUSES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved (DNS did not answer)',
};

const FILE_CAUSES: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  ENOTDIR: 'a part of the path is not a directory',
  EEXIST: 'it exists and is not a directory',
  EISDIR: 'it is a directory',
  ENOENT: 'no such file or directory',
  EMFILE: 'too many open files',
};

const FILE_VERBS: Record<string, string> = {
  mkdir: 'create',
  open: 'open',
  read: 'read',
  write: 'write',
  rename: 'rename',
  link: 'create',
  unlink: 'remove',
  scandir: 'read',
};

/**
 * Turns whatever stopped the start into the lines to print (the caller prefixes each with
 * `flostra: `) and an exit code. A configuration error says which variable is wrong; a port,
 * address, server or file the OS refused says which one and why; anything else gives its
 * message's first line. No stack trace: the caller adds it only at LOG_LEVEL=debug.
 */
export function describeStartFailure(thrown: unknown, context: { dataDir?: string; host?: string } = {}): StartFailure {
  if (thrown instanceof ConfigError) return { lines: [`invalid configuration: ${thrown.message}`], exitCode: 2 };
  // A dependency found down is told by the failure underneath (which server, why).
  const error = thrown instanceof DependencyUnavailableError && thrown.cause !== undefined ? thrown.cause : thrown;
  // A connection tried on several addresses fails with all of them: the first says enough.
  const sys = (error instanceof AggregateError && error.errors[0] instanceof Error ? error.errors[0] : error) as Partial<SystemError>;
  if (error instanceof Error && typeof sys.code === 'string') {
    const lookupOfHost = sys.syscall === 'getaddrinfo' && sys.hostname !== undefined && sys.hostname === context.host;
    if (sys.syscall === 'listen' || sys.syscall === 'bind' || lookupOfHost) {
      const address = sys.address ?? sys.hostname;
      const where = address !== undefined ? ` on ${sys.port !== undefined ? hostPort(address, sys.port) : address}` : '';
      return { lines: [`cannot listen${where}: ${LISTEN_CAUSES[sys.code] ?? firstLine(sys.message ?? sys.code)}`], exitCode: 1 };
    }
    if (sys.syscall === 'connect' || sys.syscall === 'getaddrinfo') {
      const where =
        sys.address !== undefined ? (sys.port !== undefined ? hostPort(sys.address, sys.port) : sys.address) : (sys.hostname ?? 'a server');
      return {
        lines: [
          `cannot connect to ${where}: ${CONNECT_CAUSES[sys.code] ?? firstLine(sys.message ?? sys.code)}`,
          `is the server that EVENT_STORE_URL, DATABASE_URL or KAFKA_BROKERS names running and reachable?`,
        ],
        exitCode: 1,
      };
    }
    if (typeof sys.path === 'string') {
      const lines = [`cannot ${FILE_VERBS[sys.syscall ?? ''] ?? 'use'} ${sys.path}: ${FILE_CAUSES[sys.code] ?? sys.code}`];
      if (context.dataDir !== undefined && isInside(sys.path, context.dataDir)) {
        lines.push(`FLOSTRA_DATA_DIR (${context.dataDir}) must be a directory this process can create and write`);
      }
      return { lines, exitCode: 1 };
    }
  }
  const message = error instanceof Error ? firstLine(error.message) || error.name : String(error);
  const cause = error instanceof Error && error.cause instanceof Error ? `: ${firstLine(error.cause.message)}` : '';
  return { lines: [`failed to start: ${message}${cause}`, `(LOG_LEVEL=debug prints the stack trace)`], exitCode: 1 };
}

type SystemError = NodeJS.ErrnoException & { address: string; port: number; hostname: string };

function firstLine(text: string): string {
  return text.split('\n', 1)[0].trim();
}

function hostPort(address: string, port: number): string {
  return `${address.includes(':') ? `[${address}]` : address}:${port}`;
}

function isInside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}
