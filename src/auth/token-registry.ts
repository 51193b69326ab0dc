import { createHash } from 'node:crypto';
import type { Principal } from './principal.js';
import type { TokenEntry } from './tokens-file.schema.js';

/** Injection token of the process's one TokenRegistry. */
export const TOKEN_REGISTRY = Symbol('TokenRegistry');

function tokenId(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * Which bearer tokens are valid right now, and whom they stand for. The grants can be
 * replaced at runtime (a reloaded tokens file); listeners hear of it so that long-lived
 * requests (SSE) re-check their principal and end when its grant is gone.
 */
export class TokenRegistry {
  // Keyed by the sha256 of the token: a lookup compares digests, never the secret itself,
  // so response timing tells nothing about how close a guess was.
  private principals = new Map<string, Principal>();
  private readonly listeners = new Set<() => void>();

  constructor(
    entries: readonly TokenEntry[] = [],
    private readonly source?: () => Promise<readonly TokenEntry[]>,
  ) {
    this.principals = TokenRegistry.index(entries);
  }

  /** The principal of a bearer token, or null when the token is unknown or revoked. */
  authenticate(bearer: string | null | undefined): Principal | null {
    if (bearer === null || bearer === undefined || bearer === '') return null;
    return this.principals.get(tokenId(bearer)) ?? null;
  }

  /** The current grant of an earlier-authenticated principal, or null once it is revoked. */
  current(principal: Principal): Principal | null {
    return this.principals.get(principal.tokenId) ?? null;
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

  /** Reads the source the registry was created with again (e.g. on SIGHUP). */
  async reload(): Promise<void> {
    if (this.source === undefined) throw new Error('this TokenRegistry has no source to reload from');
    this.replace(await this.source());
  }

  /** Called after every replace; returns the function that unsubscribes. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  private static index(entries: readonly TokenEntry[]): Map<string, Principal> {
    const principals = new Map<string, Principal>();
    for (const entry of entries) {
      const id = tokenId(entry.token);
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
