import { LRUCache } from 'lru-cache';
import { DEFAULT_SIGN_IN_PER_MINUTE_PER_ADDRESS, DEFAULT_SIGN_IN_PER_MINUTE_PER_TOKEN } from '../config/config.js';
import { systemClock, type Clock } from '../core/clock.port.js';
import { TooManySignInsError } from './auth.errors.js';
import { takeToken, type Bucket, type Take } from './token-bucket.js';

/** Injection token of the api process's one SignInLimiter. */
export const SIGN_IN_LIMITER = Symbol('SignInLimiter');

export interface SignInLimits {
  /** Sign-ins a minute from one client address (FLOSTRA_SIGN_IN_PER_MINUTE_PER_ADDRESS). */
  perAddress: number;
  /** Sign-ins a minute with one token (FLOSTRA_SIGN_IN_PER_MINUTE_PER_TOKEN). */
  perToken: number;
}

export const DEFAULT_SIGN_IN_LIMITS: Readonly<SignInLimits> = Object.freeze({
  perAddress: DEFAULT_SIGN_IN_PER_MINUTE_PER_ADDRESS,
  perToken: DEFAULT_SIGN_IN_PER_MINUTE_PER_TOKEN,
});

/**
 * Addresses and tokens remembered, each: a forgotten one starts with a full bucket, so memory
 * stays bounded whoever keeps signing in, at the price of a fresh burst for the least recent.
 */
const REMEMBERED = 10_000;

/**
 * The rate of browser sign-ins (`POST /v1/sessions`), per client address and per token, each a
 * token bucket of its per-minute rate (promise 13: one token signing in again and again cannot
 * churn sessions, nor one address guess tokens). Every attempt counts, known token or not; a
 * refused one spends nothing. Tokens are remembered by their digest only.
 */
export class SignInLimiter {
  private readonly addresses = new LRUCache<string, Bucket>({ max: REMEMBERED });
  private readonly tokens = new LRUCache<string, Bucket>({ max: REMEMBERED });
  private readonly limits: SignInLimits;

  constructor(
    private readonly clock: Clock = systemClock,
    limits: Partial<SignInLimits> = {},
  ) {
    this.limits = { ...DEFAULT_SIGN_IN_LIMITS, ...limits };
  }

  /** Counts one sign-in of `tokenDigest` from `address`, or throws TooManySignInsError counting nothing. */
  admit(address: string, tokenDigest: string): void {
    const now = this.clock.now().getTime();
    const byAddress = takeToken(this.addresses.get(address), now, { perMinute: this.limits.perAddress });
    const byToken = takeToken(this.tokens.get(tokenDigest), now, { perMinute: this.limits.perToken });
    if (!byAddress.allowed) throw refusal('address', this.limits.perAddress, byAddress);
    if (!byToken.allowed) throw refusal('token', this.limits.perToken, byToken);
    this.addresses.set(address, byAddress.bucket);
    this.tokens.set(tokenDigest, byToken.bucket);
  }
}

function refusal(scope: 'address' | 'token', limit: number, take: Extract<Take, { allowed: false }>): TooManySignInsError {
  return new TooManySignInsError(scope, limit, Math.max(1, Math.ceil(take.retryAfterMs / 1000)));
}
