import { z } from 'zod';
import { GLOBAL_ROLES, WORKSPACE_ROLES, workspaceIdSchema } from './principal.js';

// Short secrets are guessable; generated tokens are 43 characters (32 random bytes, base64url).
const tokenSchema = z
  .string()
  .min(16, 'a token must have at least 16 characters')
  .regex(/^[\x21-\x7e]+$/, 'a token may only contain printable ASCII without spaces');

export const tokenEntrySchema = z.strictObject({
  token: tokenSchema,
  subject: z.string().min(1).max(200),
  workspaces: z.record(workspaceIdSchema, z.enum(WORKSPACE_ROLES)).default({}),
  global: z.array(z.enum(GLOBAL_ROLES)).default([]),
});

/** One grant: a bearer token, who it stands for, and its roles. */
export type TokenEntry = z.output<typeof tokenEntrySchema>;

/** The FLOSTRA_TOKENS_FILE format (docs/operations.md, "Tokens file"). */
export const tokensFileSchema = z.strictObject({ tokens: z.array(tokenEntrySchema) }).superRefine((file, ctx) => {
  const seen = new Set<string>();
  file.tokens.forEach((entry, index) => {
    if (seen.has(entry.token)) {
      ctx.addIssue({ code: 'custom', path: ['tokens', index, 'token'], message: 'the same token appears twice' });
    }
    seen.add(entry.token);
  });
});

/** `<FLOSTRA_DATA_DIR>/dev-tokens.json`, generated once in embedded mode. */
export const devTokensFileSchema = z.strictObject({
  workspace: workspaceIdSchema,
  admin: tokenSchema,
  worker: tokenSchema,
});
export type DevTokens = z.output<typeof devTokensFileSchema>;
