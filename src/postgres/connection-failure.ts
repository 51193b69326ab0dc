import { DependencyUnavailableError } from '../core/errors.js';
import { sqlErrorInfo } from './sql-client.port.js';

/** Socket failures of a connection to the server (node's errno codes). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs that mean the server is not there for this statement: class 08 (connection
 * exception), 57P01–57P03 (shut down by an administrator, crash shutdown, cannot connect now),
 * 53300 (too many connections).
 */
function isUnavailableSqlState(code: string): boolean {
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300';
}

/** What node-postgres says when the server went away under a query or a connect. */
const CONNECTION_MESSAGES =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Connection closed/i;

/**
 * Whether `error` says that Postgres could not be reached or dropped the connection (rather
 * than refused a statement): the same request may succeed once it is back.
 */
export function isConnectionFailure(error: unknown): boolean {
  if (error instanceof AggregateError) return error.errors.length > 0 && error.errors.every(isConnectionFailure);
  const { code } = sqlErrorInfo(error);
  if (code !== undefined && (NETWORK_CODES.has(code) || isUnavailableSqlState(code))) return true;
  return error instanceof Error && CONNECTION_MESSAGES.test(error.message);
}

/** `error` as DependencyUnavailableError when it is a connection failure, else as it is. */
export function asUnavailable(error: unknown): unknown {
  return !(error instanceof DependencyUnavailableError) && isConnectionFailure(error)
    ? new DependencyUnavailableError('postgres', { cause: error })
    : error;
}
