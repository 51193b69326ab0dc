import { createHash } from 'node:crypto';
import { z } from 'zod';
import { GLOBAL_ROLES, WORKSPACE_GRANTS, workspaceIdSchema, type GlobalRole, type WorkspaceGrant } from './principal.js';

/** Short secrets are guessable; generated tokens are 43 characters (32 random bytes, base64url). */
export const MIN_TOKEN_LENGTH = 16;

const tokenSchema = z
  .string()
  .min(MIN_TOKEN_LENGTH, `a token must have at least ${MIN_TOKEN_LENGTH} characters`)
  .regex(/^[\x21-\x7e]+$/, 'a token may only contain printable ASCII without spaces');

const tokenDigestSchema = z
  .string()
  .regex(/^[0-9a-fA-F]{64}$/, 'expected the 64 hexadecimal digits of the SHA-256 digest of the token')
  .transform((hex) => hex.toLowerCase());

/** The lowercase hex SHA-256 digest of a bearer token: what the registry looks tokens up by. */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** What one grant gives, whatever names its token. */
export interface TokenGrant {
  subject: string;
  workspaces: Record<string, WorkspaceGrant>;
  global: GlobalRole[];
}

/**
 * One grant: a bearer token, or the SHA-256 digest of one (`tokenSha256`, lowercase hex), who it
 * stands for, and its roles.
 */
export type TokenEntry = TokenGrant & ({ token: string; tokenSha256?: undefined } | { tokenSha256: string; token?: undefined });

/** The digest a grant's token is looked up by. */
export function digestOf(entry: TokenEntry): string {
  return entry.tokenSha256 !== undefined ? entry.tokenSha256 : tokenDigest(entry.token);
}

export const tokenEntrySchema = z
  .strictObject({
    token: tokenSchema.optional(),
    tokenSha256: tokenDigestSchema.optional(),
    subject: z.string().min(1).max(200),
    workspaces: z.record(workspaceIdSchema, z.enum(WORKSPACE_GRANTS)).default({}),
    global: z.array(z.enum(GLOBAL_ROLES)).default([]),
  })
  .superRefine((entry, ctx) => {
    if ((entry.token === undefined) === (entry.tokenSha256 === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'an entry needs exactly one of "token" and "tokenSha256"' });
    }
  })
  .transform(({ token, tokenSha256, ...grant }): TokenEntry =>
    tokenSha256 !== undefined ? { tokenSha256, ...grant } : { token: token ?? '', ...grant },
  );

/** The FLOSTRA_TOKENS_FILE format (docs/operations.md, "Tokens file"). */
export const tokensFileSchema = z.strictObject({ tokens: z.array(tokenEntrySchema) }).superRefine((file, ctx) => {
  // A token written twice, or once in plain text and once as its digest, is one token with two
  // grants: which one would hold? Refused, naming both entries and never the token.
  const firstIndex = new Map<string, number>();
  file.tokens.forEach((entry, index) => {
    // This check also runs when an entry failed its own, untransformed: such an entry is skipped.
    const digest =
      typeof entry.tokenSha256 === 'string'
        ? entry.tokenSha256.toLowerCase()
        : typeof entry.token === 'string'
          ? tokenDigest(entry.token)
          : null;
    if (digest === null) return;
    const first = firstIndex.get(digest);
    if (first !== undefined) {
      const field = entry.tokenSha256 !== undefined ? 'tokenSha256' : 'token';
      ctx.addIssue({ code: 'custom', path: ['tokens', index, field], message: `the same token appears twice (also in tokens.${first})` });
    } else {
      firstIndex.set(digest, index);
    }
  });
});

/** `<FLOSTRA_DATA_DIR>/dev-tokens.json`, generated once in embedded mode. */
export const devTokensFileSchema = z.strictObject({
  workspace: workspaceIdSchema,
  admin: tokenSchema,
  worker: tokenSchema,
});
export type DevTokens = z.output<typeof devTokensFileSchema>;
