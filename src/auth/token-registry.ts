import type { Principal } from './principal.js';
import { digestOf, tokenDigest, type TokenEntry } from './tokens-file.schema.js';

/** Injection token of the process's one TokenRegistry. */
export const TOKEN_REGISTRY = Symbol('TokenRegistry');

/** How a new set of grants differs from the current one, counted by token (never naming one). */
export interface GrantChanges {
  /** Tokens in the new set. */
  tokens: number;
  added: number;
  removed: number;
  /** Tokens in both sets whose subject or roles differ. */
  changed: number;
}

/**
 * Which bearer tokens are valid right now, and whom they stand for. The grants can be
 * replaced at runtime (a reloaded tokens file, src/auth/tokens-reloader.ts); listeners hear of
 * it so that long-lived requests (SSE) re-check their principal and end when its grant is gone.
 */
export class TokenRegistry {
  // Keyed by the SHA-256 digest of the token, which is all a `tokenSha256` entry knows. A lookup
  // hashes the bearer token and finds the digest: no secret is ever compared byte by byte, so
  // response timing tells nothing about how close a guess was.
  private principals = new Map<string, Principal>();
  private readonly listeners = new Set<() => void>();

  constructor(entries: readonly TokenEntry[] = []) {
    this.principals = TokenRegistry.index(entries);
  }

  /** The principal of a bearer token, or null when the token is unknown or revoked. */
  authenticate(bearer: string | null | undefined): Principal | null {
    if (bearer === null || bearer === undefined || bearer === '') return null;
    return this.principals.get(tokenDigest(bearer)) ?? null;
  }

  /** The current grant of an earlier-authenticated principal, or null once it is revoked. */
  current(principal: Principal): Principal | null {
    return this.principals.get(principal.tokenId) ?? null;
  }

  /** What `replace(entries)` would change; changes nothing. */
  compare(entries: readonly TokenEntry[]): GrantChanges {
    const next = TokenRegistry.index(entries);
    let added = 0;
    let changed = 0;
    for (const [id, principal] of next) {
      const before = this.principals.get(id);
      if (before === undefined) added++;
      else if (!sameGrant(before, principal)) changed++;
    }
    let removed = 0;
    for (const id of this.principals.keys()) if (!next.has(id)) removed++;
    return { tokens: next.size, added, removed, changed };
  }

  /** Swaps in a new set of grants atomically, then tells every listener. */
  replace(entries: readonly TokenEntry[]): void {
    this.principals = TokenRegistry.index(entries);
    // One failing listener must not spare the others: a revoked stream has to end regardless.
    const errors: unknown[] = [];
    for (const listener of [...this.listeners]) {
      try {
        listener();
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) throw new AggregateError(errors, 'a token registry listener failed');
  }

  /** Called after every replace; returns the function that unsubscribes. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  private static index(entries: readonly TokenEntry[]): Map<string, Principal> {
    const principals = new Map<string, Principal>();
    for (const entry of entries) {
      const id = digestOf(entry);
      principals.set(id, {
        subject: entry.subject,
        workspaces: new Map(Object.entries(entry.workspaces)),
        global: new Set(entry.global),
        tokenId: id,
      });
    }
    return principals;
  }
}

function sameGrant(a: Principal, b: Principal): boolean {
  if (a.subject !== b.subject || a.workspaces.size !== b.workspaces.size || a.global.size !== b.global.size) return false;
  for (const [workspace, role] of a.workspaces) if (b.workspaces.get(workspace) !== role) return false;
  for (const role of a.global) if (!b.global.has(role)) return false;
  return true;
}
