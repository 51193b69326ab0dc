import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Principal } from './principal.js';
import type { TokenRegistry } from './token-registry.js';

/** Injection token of the process's one SessionStore. */
export const SESSION_STORE = Symbol('SessionStore');

/** The cookie that carries a browser session's id. */
export const SESSION_COOKIE = 'flostra_session';

/** The request header that carries a session's CSRF value on every write. */
export const CSRF_HEADER = 'x-flostra-csrf';

export interface SessionOptions {
  /** A session ends this long after its sign-in, whatever happens (the cookie's Max-Age too). */
  maxAgeMs: number;
  /** Sessions held at most; one more signs the oldest out. */
  maxSessions: number;
  /** Milliseconds since the epoch (tests move it). */
  now: () => number;
}

export const DEFAULT_SESSION_OPTIONS: Readonly<SessionOptions> = Object.freeze({
  maxAgeMs: 12 * 60 * 60 * 1000,
  maxSessions: 10_000,
  now: () => Date.now(),
});

interface StoredSession {
  /** The principal at sign-in: its tokenId names the grant the session stands on. */
  readonly signedInAs: Principal;
  readonly csrf: string;
  readonly expiresAt: number;
}

/** A session as a request finds it: the token's grant as it is now, and the session's CSRF value. */
export interface ResolvedSession {
  readonly principal: Principal;
  readonly csrf: string;
}

const digest = (value: string): string => createHash('sha256').update(value, 'utf8').digest('hex');
const randomValue = (): string => randomBytes(32).toString('base64url');

/**
 * Browser sessions of this api process, in memory. A session stands on the token it was signed
 * in with and nothing else: each request resolves it to that token's grant as the TokenRegistry
 * holds it now, so a lowered role applies at once, and a token removed from the tokens file
 * ends every session signed in with it (they are dropped on the registry's change, and never
 * come back, even if the token does). Session ids are kept only as their SHA-256 digests; the
 * CSRF value is compared in constant time.
 */
export class SessionStore {
  private readonly sessions = new Map<string, StoredSession>();
  private readonly options: SessionOptions;

  constructor(
    private readonly registry: TokenRegistry,
    options: Partial<SessionOptions> = {},
  ) {
    this.options = { ...DEFAULT_SESSION_OPTIONS, ...options };
    registry.onChange(() => this.dropRevoked());
  }

  get maxAgeMs(): number {
    return this.options.maxAgeMs;
  }

  /** Sessions held now (expired ones are counted until a request or a sign-in finds them). */
  get size(): number {
    return this.sessions.size;
  }

  /** Signs a principal in: the new session's id (for the cookie) and its CSRF value. */
  create(principal: Principal): { id: string; csrf: string } {
    this.dropExpired();
    while (this.sessions.size >= this.options.maxSessions) {
      const oldest = this.sessions.keys().next();
      if (oldest.done === true) break;
      this.sessions.delete(oldest.value);
    }
    const id = randomValue();
    const csrf = randomValue();
    this.sessions.set(digest(id), { signedInAs: principal, csrf, expiresAt: this.options.now() + this.options.maxAgeMs });
    return { id, csrf };
  }

  /** The session of a cookie's id, with its token's current grant; null when unknown, expired or revoked. */
  resolve(id: string): ResolvedSession | null {
    const key = digest(id);
    const session = this.sessions.get(key);
    if (session === undefined) return null;
    if (this.options.now() >= session.expiresAt) {
      this.sessions.delete(key);
      return null;
    }
    const principal = this.registry.current(session.signedInAs);
    if (principal === null) {
      this.sessions.delete(key);
      return null;
    }
    return { principal, csrf: session.csrf };
  }

  /** Signs a session out; false when there was none. */
  end(id: string): boolean {
    return this.sessions.delete(digest(id));
  }

  private dropRevoked(): void {
    for (const [key, session] of this.sessions) if (this.registry.current(session.signedInAs) === null) this.sessions.delete(key);
  }

  private dropExpired(): void {
    const now = this.options.now();
    for (const [key, session] of this.sessions) if (now >= session.expiresAt) this.sessions.delete(key);
  }
}

/** True when `given` is the session's CSRF value (compared in constant time). */
export function csrfMatches(session: ResolvedSession, given: string | string[] | undefined): boolean {
  if (typeof given !== 'string' || given === '') return false;
  return timingSafeEqual(Buffer.from(digest(given), 'hex'), Buffer.from(digest(session.csrf), 'hex'));
}

/** The value of a cookie in a Cookie header, or null. Values are not decoded: Flostra's are base64url. */
export function cookieValue(header: string | undefined, name: string): string | null {
  if (header === undefined) return null;
  for (const pair of header.split(';')) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === name) {
      const value = pair.slice(at + 1).trim();
      return value === '' ? null : value;
    }
  }
  return null;
}
