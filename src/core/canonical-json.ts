import { createHash } from 'node:crypto';

/**
 * JSON with object keys sorted at every depth: two values that differ only in key order
 * serialize identically, so their digests match.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const source = value as Record<string, unknown>;
    // fromEntries defines own properties, so even a key named "__proto__" survives.
    return Object.fromEntries(
      Object.keys(source)
        .sort()
        .filter((key) => source[key] !== undefined)
        .map((key) => [key, sortKeys(source[key])]),
    );
  }
  return value;
}

/** sha256 (hex) of the canonical JSON of a value: request fingerprints and graph digests. */
export function sha256OfCanonical(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}
