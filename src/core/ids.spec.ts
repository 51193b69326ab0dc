import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { FLOSTRA_NAMESPACE, UUID_PATTERN, uuidV5 } from './ids.js';

/** RFC 4122's construction spelled out step by step, to hold the fast one to. */
function referenceV5(name: string, namespace: string): string {
  const digest = createHash('sha1')
    .update(Buffer.from(namespace.replace(/-/g, ''), 'hex'))
    .update(name, 'utf8')
    .digest();
  digest[6] = (digest[6] & 0x0f) | 0x50;
  digest[8] = (digest[8] & 0x3f) | 0x80;
  const hex = digest.subarray(0, 16).toString('hex');
  return [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20)].join('-');
}

describe('uuidV5', () => {
  it('matches the published example for the DNS namespace', () => {
    expect(uuidV5('python.org', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe('886313e1-3b8a-5372-9b90-0c9aee199e5d');
  });

  it.each(['', 'a', 'execution:ws-a:key-1', 'ünïcødé € 𝄞', 'x'.repeat(5_000)])('agrees with the reference construction for %#', (name) => {
    const id = uuidV5(name);
    expect(id).toBe(referenceV5(name, FLOSTRA_NAMESPACE));
    expect(id).toMatch(UUID_PATTERN);
  });

  it('keeps namespaces apart', () => {
    const other = '6ba7b811-9dad-11d1-80b4-00c04fd430c8';
    expect(uuidV5('same', other)).toBe(referenceV5('same', other));
    expect(uuidV5('same', other)).not.toBe(uuidV5('same'));
  });
});
