/** A token bucket: `tokens` left at time `at` (milliseconds). */
export interface Bucket {
  readonly tokens: number;
  readonly at: number;
}

/** Up to `perMinute` at once, and `perMinute` more every minute after. */
export interface BucketRule {
  readonly perMinute: number;
}

export type Take = { readonly allowed: true; readonly bucket: Bucket } | { readonly allowed: false; readonly retryAfterMs: number };

const MINUTE_MS = 60_000;

/** The bucket at `now`: refilled since `at`, never beyond its capacity; a new key's bucket is full. */
function refilled(bucket: Bucket | undefined, now: number, rule: BucketRule): Bucket {
  if (bucket === undefined) return { tokens: rule.perMinute, at: now };
  const elapsed = Math.max(0, now - bucket.at);
  return { tokens: Math.min(rule.perMinute, bucket.tokens + (elapsed * rule.perMinute) / MINUTE_MS), at: now };
}

/** Takes one token at `now`, or says how long until one is there; pure, so the caller keeps the bucket. */
export function takeToken(bucket: Bucket | undefined, now: number, rule: BucketRule): Take {
  const current = refilled(bucket, now, rule);
  if (current.tokens >= 1) return { allowed: true, bucket: { tokens: current.tokens - 1, at: now } };
  return { allowed: false, retryAfterMs: Math.ceil(((1 - current.tokens) * MINUTE_MS) / rule.perMinute) };
}
