/**
 * Exit codes of `flostra` (docs/cli.md, "Exit codes"): each names a kind of outcome a script can
 * branch on, whatever the command.
 */
export const EXIT = {
  ok: 0,
  /** The thing run failed: an execution that ended other than `succeeded`, or an error not listed below. */
  failure: 1,
  /** The command line or its input is wrong (also a request the server refused as invalid: 400, 413, 415). */
  usage: 2,
  notFound: 3,
  /** 401 or 403: no token, an unknown one, or one without the role. */
  auth: 4,
  conflict: 5,
  /** The server cannot be reached, or answers that it is unavailable (503, 429, 502, 504, 408). */
  unavailable: 6,
  interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An RFC 9457 problem as the API answers it; other members ride along. */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  code?: string;
  issues?: { path: string; message: string }[];
  [member: string]: unknown;
}

/** An error the CLI reports and exits with: its message for people, its code for scripts. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
    readonly problem: Problem | null = null,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export function usageError(message: string): CliError {
  return new CliError(message, EXIT.usage);
}

/** The exit code of an HTTP error status. */
export function exitCodeOfStatus(status: number): ExitCode {
  if (status === 401 || status === 403) return EXIT.auth;
  if (status === 404) return EXIT.notFound;
  if (status === 409) return EXIT.conflict;
  if (status === 400 || status === 413 || status === 415) return EXIT.usage;
  if (status === 408 || status === 429 || status === 502 || status === 503 || status === 504) return EXIT.unavailable;
  return EXIT.failure;
}

/** The error of a non-2xx answer, from its problem body when it has one. */
export function problemError(status: number, body: unknown): CliError {
  const problem: Problem =
    body !== null && typeof body === 'object' && !Array.isArray(body)
      ? (body as Problem)
      : { status, title: `HTTP ${status}`, detail: String(body ?? '') };
  const title = problem.title ?? `HTTP ${status}`;
  const detail = problem.detail && problem.detail !== title ? `: ${problem.detail}` : '';
  const code = problem.code ? ` [${problem.code}]` : '';
  return new CliError(`${title}${detail}${code}`, exitCodeOfStatus(status), { ...problem, status: problem.status ?? status });
}
