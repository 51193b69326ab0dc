import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { SecretKey } from './secrets-keyring.js';

/** What a sealed value is bound to: decrypting it as anything else fails. */
export interface SecretBinding {
  readonly workspaceId: string;
  readonly name: string;
  readonly version: number;
}

/** A value encrypted with AES-256-GCM: the key's id, a fresh 12-byte IV, and the ciphertext followed by its 16-byte tag. */
export interface SealedSecret {
  readonly keyId: string;
  readonly iv: Buffer;
  readonly ciphertext: Buffer;
}

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The stored ciphertext does not open under its key and binding: tampered, copied to another name or version, or a wrong key. */
export class SecretUnreadableError extends Error {}

/**
 * The workspace, name and version as additional authenticated data: a row copied to another
 * secret, another workspace or another version fails to decrypt. The parts contain no newline.
 */
function associatedData(binding: SecretBinding): Buffer {
  return Buffer.from(`flostra-secret-v1\n${binding.workspaceId}\n${binding.name}\n${binding.version}`, 'utf8');
}

export function sealSecret(key: SecretKey, binding: SecretBinding, value: string): SealedSecret {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, key.bytes, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(associatedData(binding));
  const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return { keyId: key.id, iv, ciphertext };
}

export function openSecret(key: SecretKey, binding: SecretBinding, sealed: SealedSecret): string {
  if (sealed.keyId !== key.id) throw new SecretUnreadableError(`sealed under key ${sealed.keyId}, not ${key.id}`);
  if (sealed.iv.length !== IV_BYTES || sealed.ciphertext.length < TAG_BYTES) throw new SecretUnreadableError('malformed ciphertext');
  try {
    const decipher = createDecipheriv(ALGORITHM, key.bytes, sealed.iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(associatedData(binding));
    decipher.setAuthTag(sealed.ciphertext.subarray(sealed.ciphertext.length - TAG_BYTES));
    const body = sealed.ciphertext.subarray(0, sealed.ciphertext.length - TAG_BYTES);
    return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
  } catch {
    // The cause says nothing useful ("unable to authenticate data") and must not be confused with a value.
    throw new SecretUnreadableError('the ciphertext does not authenticate under its key and binding');
  }
}
