import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { DEFAULT_SESSIONS_MAX, DEFAULT_SESSIONS_PER_SUBJECT } from '../config/config.js';
import { systemClock, type Clock } from '../core/clock.port.js';
import { TooManySessionsError } from './auth.errors.js';
import type { Principal } from './principal.js';
import type { TokenRegistry } from './token-registry.js';

/** Injection token of the process's one SessionStore. */
export const SESSION_STORE = Symbol('SessionStore');

/**
 * The cookie that carries a browser session's id. `__Host-`: the browser keeps it only when it is
 * Secure, for Path=/ and without a Domain, so no sibling host or plain-http page can plant one.
 */
export const SESSION_COOKIE = '__Host-flostra_session';

/** The request header that carries a session's CSRF value on every write. */
export const CSRF_HEADER = 'x-flostra-csrf';

export interface SessionOptions {
  /** A session ends this long after its sign-in, whatever happens (the cookie's Max-Age too). */
  maxAgeMs: number;
  /** Sessions held at most, all subjects together; one more sign-in is refused (FLOSTRA_SESSIONS_MAX). */
  maxSessions: number;
  /** Sessions one subject holds at most; its next sign-in ends its oldest (FLOSTRA_SESSIONS_PER_SUBJECT). */
  maxSessionsPerSubject: number;
}

export const DEFAULT_SESSION_OPTIONS: Readonly<SessionOptions> = Object.freeze({
  maxAgeMs: 12 * 60 * 60 * 1000,
  maxSessions: DEFAULT_SESSIONS_MAX,
  maxSessionsPerSubject: DEFAULT_SESSIONS_PER_SUBJECT,
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
 *
 * Promise 13: a subject's sessions are bounded by their own count, so one token signing in
 * again and again ends only its own oldest sessions, never another subject's; when the process
 * holds its most, a new sign-in is refused rather than signing someone else out.
 */
export class SessionStore {
  /** By digest of the id, in sign-in order: all expire after the same time, so the first expires first. */
  private readonly sessions = new Map<string, StoredSession>();
  /** Each subject's session digests, oldest first. */
  private readonly bySubject = new Map<string, string[]>();
  private readonly options: SessionOptions;

  constructor(
    private readonly registry: TokenRegistry,
    private readonly clock: Clock = systemClock,
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

  /**
   * Signs a principal in: the new session's id (for the cookie) and its CSRF value. The session of
   * `replacing` (the browser's previous cookie), if any, ends: a sign-in never keeps an id it did
   * not make. Throws TooManySessionsError, changing nothing, when the process is full.
   */
  create(principal: Principal, replacing: string | null = null): { id: string; csrf: string } {
    const now = this.now();
    this.dropExpired(now);
    const previous = replacing === null ? undefined : digest(replacing);
    const ending = previous !== undefined && this.sessions.has(previous) ? previous : undefined;
    const own = (this.bySubject.get(principal.subject) ?? []).filter((key) => key !== ending);
    const ownEnding = Math.max(0, own.length - this.options.maxSessionsPerSubject + 1);
    if (this.sessions.size - (ending === undefined ? 0 : 1) - ownEnding >= this.options.maxSessions) {
      const oldest = this.sessions.values().next();
      const retryAfterMs = oldest.done === true ? 0 : oldest.value.expiresAt - now;
      throw new TooManySessionsError(this.options.maxSessions, Math.max(1, Math.ceil(retryAfterMs / 1000)));
    }
    if (ending !== undefined) this.remove(ending);
    for (const key of own.slice(0, ownEnding)) this.remove(key);
    const id = randomValue();
    const csrf = randomValue();
    const key = digest(id);
    this.sessions.set(key, { signedInAs: principal, csrf, expiresAt: now + this.options.maxAgeMs });
    this.bySubject.set(principal.subject, [...(this.bySubject.get(principal.subject) ?? []), key]);
    return { id, csrf };
  }

  /** The session of a cookie's id, with its token's current grant; null when unknown, expired or revoked. */
  resolve(id: string): ResolvedSession | null {
    const key = digest(id);
    const session = this.sessions.get(key);
    if (session === undefined) return null;
    if (this.now() >= session.expiresAt) {
      this.remove(key);
      return null;
    }
    const principal = this.registry.current(session.signedInAs);
    if (principal === null) {
      this.remove(key);
      return null;
    }
    return { principal, csrf: session.csrf };
  }

  /** Signs a session out; false when there was none. */
  end(id: string): boolean {
    return this.remove(digest(id));
  }

  private now(): number {
    return this.clock.now().getTime();
  }

  private remove(key: string): boolean {
    const session = this.sessions.get(key);
    if (session === undefined) return false;
    this.sessions.delete(key);
    const subject = session.signedInAs.subject;
    const rest = (this.bySubject.get(subject) ?? []).filter((k) => k !== key);
    if (rest.length === 0) this.bySubject.delete(subject);
    else this.bySubject.set(subject, rest);
    return true;
  }

  private dropRevoked(): void {
    for (const [key, session] of this.sessions) if (this.registry.current(session.signedInAs) === null) this.remove(key);
  }

  /** Expired sessions are the first ones: the walk stops at the first that is not. */
  private dropExpired(now: number): void {
    for (const [key, session] of this.sessions) {
      if (now < session.expiresAt) return;
      this.remove(key);
    }
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
