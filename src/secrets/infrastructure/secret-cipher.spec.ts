import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { SecretKeyBytes } from '../../config/config.js';
import { openSecret, sealSecret, SecretUnreadableError } from './secret-cipher.js';
import { secretKeyOf } from './secrets-keyring.js';

const key = secretKeyOf(new SecretKeyBytes(randomBytes(32)));
const binding = { workspaceId: 'acme', name: 'API_KEY', version: 3 };

describe('sealing a secret value', () => {
  it('opens again under the same key and binding, and names its key by the first 8 bytes of its SHA-256', () => {
    const sealed = sealSecret(key, binding, 'päss wörd ✓');
    expect(sealed.keyId).toMatch(/^[0-9a-f]{16}$/);
    expect(sealed.keyId).toBe(key.id);
    expect(sealed.iv).toHaveLength(12);
    expect(sealed.ciphertext.includes('päss')).toBe(false);
    expect(openSecret(key, binding, sealed)).toBe('päss wörd ✓');
  });

  it('uses a fresh IV each time, so one value never seals to the same bytes twice', () => {
    const [a, b] = [sealSecret(key, binding, 'same'), sealSecret(key, binding, 'same')];
    expect(a.iv.equals(b.iv)).toBe(false);
    expect(a.ciphertext.equals(b.ciphertext)).toBe(false);
  });

  it.each([
    ['another workspace', { ...binding, workspaceId: 'other' }],
    ['another name', { ...binding, name: 'OTHER' }],
    ['another version', { ...binding, version: 2 }],
  ])('does not open as %s', (_what, other) => {
    expect(() => openSecret(key, other, sealSecret(key, binding, 'v'))).toThrow(SecretUnreadableError);
  });

  it('does not open under another key, or tampered with', () => {
    const sealed = sealSecret(key, binding, 'value');
    const other = secretKeyOf(new SecretKeyBytes(randomBytes(32)));
    expect(() => openSecret(other, binding, { ...sealed, keyId: other.id })).toThrow('does not authenticate');
    expect(() => openSecret(other, binding, sealed)).toThrow(`sealed under key ${key.id}`);
    const flipped = Buffer.from(sealed.ciphertext);
    flipped[0] ^= 1;
    expect(() => openSecret(key, binding, { ...sealed, ciphertext: flipped })).toThrow(SecretUnreadableError);
  });
});
