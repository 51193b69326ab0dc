// The console's one way to the API: same-origin fetch with the session cookie, the CSRF header
// on every write, and problem+json turned into ApiError.

export interface Problem {
  status: number;
  code: string;
  detail: string;
  [member: string]: unknown;
}

export class ApiError extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail);
  }
  get status(): number {
    return this.problem.status;
  }
  get code(): string {
    return this.problem.code;
  }
}

let csrf: string | null = null;
const signedOutListeners = new Set<() => void>();

export function setCsrf(value: string | null): void {
  csrf = value;
}

/** Called when the API answers 401: the session ended (signed out elsewhere, expired, token revoked). */
export function onSignedOut(listener: () => void): () => void {
  signedOutListeners.add(listener);
  return () => void signedOutListeners.delete(listener);
}

export async function api<T>(method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json', ...options.headers };
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && csrf !== null) headers['X-Flostra-CSRF'] = csrf;
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
  } catch {
    throw new ApiError({ status: 0, code: 'network', detail: 'the server cannot be reached' });
  }
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    parsed = null;
  }
  if (!response.ok) {
    const problem =
      parsed !== null && typeof parsed === 'object' && 'code' in parsed
        ? (parsed as Problem)
        : { status: response.status, code: 'http_' + response.status, detail: response.statusText || 'request failed' };
    if (response.status === 401 && path !== '/v1/sessions') for (const listener of [...signedOutListeners]) listener();
    throw new ApiError(problem);
  }
  return parsed as T;
}

export const get = <T>(path: string): Promise<T> => api<T>('GET', path);

export type WorkspaceRole = 'viewer' | 'operator' | 'editor' | 'admin';
const ROLES: WorkspaceRole[] = ['viewer', 'operator', 'editor', 'admin'];

export interface Me {
  subject: string;
  workspaces: { workspaceId: string; role: WorkspaceRole }[];
  global: string[];
}

/** True when the caller holds at least `min` in the workspace. */
export function can(me: Me | null, workspaceId: string, min: WorkspaceRole): boolean {
  const role = me?.workspaces.find((w) => w.workspaceId === workspaceId)?.role;
  return role !== undefined && ROLES.indexOf(role) >= ROLES.indexOf(min);
}

export const enc = encodeURIComponent;

/** A fresh key for requests that need one (redrive, start): random, never reused. */
export function newKey(prefix: string): string {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  return `${prefix}-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}
