import { z } from 'zod';

/** A secret's name within its workspace: 1-128 of `A-Z a-z 0-9 _ . -` (docs/api.md, "Secrets"). */
export const SECRET_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

export const secretNameSchema = z
  .string()
  .regex(SECRET_NAME_PATTERN, 'a secret name is 1-128 characters of A-Z, a-z, 0-9, "_", "." or "-"');

const utf8 = new TextEncoder();

/** Largest value, in UTF-8 bytes. */
export const MAX_SECRET_VALUE_BYTES = 64 * 1024;

/** A value: 1 to 64 KiB of UTF-8 text (JSON bodies are UTF-8 already, without NUL or lone surrogates). */
export const secretValueSchema = z
  .string()
  .min(1, 'a secret value is at least one character')
  .refine(
    (value) => utf8.encode(value).length <= MAX_SECRET_VALUE_BYTES,
    `a secret value is at most ${MAX_SECRET_VALUE_BYTES} bytes of UTF-8`,
  );
