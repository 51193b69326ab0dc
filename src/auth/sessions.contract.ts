import { z } from 'zod';
import { AUTHENTICATED, defineRoute, empty, json, PUBLIC } from '../http/openapi/route-contract.js';
import { GLOBAL_ROLES, WORKSPACE_GRANTS } from './principal.js';

/** Contracts of SessionsController (docs/console.md, "Signing in"; docs/api.md, "Browser sessions"). */

const TAGS = ['Sessions'];

export const signInBodySchema = z.strictObject({
  token: z.string().min(1).max(4096).meta({ description: 'A bearer token from the tokens file.' }),
});

const csrfSchema = z
  .strictObject({ csrf: z.string().min(1).meta({ description: 'Send it as `X-Flostra-CSRF` with every write of this session.' }) })
  .meta({ id: 'SessionCsrf' });

export const meSchema = z
  .strictObject({
    subject: z.string().min(1).meta({ description: 'Who the token stands for.' }),
    workspaces: z
      .array(z.strictObject({ workspaceId: z.string(), role: z.enum(WORKSPACE_GRANTS) }))
      .meta({ description: 'Every workspace the token has a role in, by id.' }),
    global: z.array(z.enum(GLOBAL_ROLES)).meta({ description: 'Global roles (`worker`, `system-admin`, `metrics`).' }),
    via: z.enum(['token', 'session']).meta({ description: 'How this request was authenticated.' }),
  })
  .meta({ id: 'Me' });

export const signInContract = defineRoute({
  operationId: 'signIn',
  summary: 'Sign a browser in with a token',
  description:
    'Answers 204 with an HttpOnly, SameSite=Strict cookie `flostra_session` (Path=/, Secure over https or behind a proxy that sends ' +
    '`X-Forwarded-Proto: https`) that authenticates the following requests as the token does, until sign-out, 12 hours, or the ' +
    'token’s removal from the tokens file. Writes made with the cookie need `X-Flostra-CSRF` (GET /v1/sessions/csrf). ' +
    'Sessions live in the memory of the api process that signed in.',
  tags: TAGS,
  access: PUBLIC,
  body: signInBodySchema,
  responses: { 204: empty('Signed in: the session cookie is set.') },
  errors: ['unauthenticated'],
});

export const sessionCsrfContract = defineRoute({
  operationId: 'getSessionCsrf',
  summary: 'Read the CSRF value of this browser session',
  description: 'Only with a session cookie: a bearer request has no session and gets 401.',
  tags: TAGS,
  access: AUTHENTICATED,
  responses: { 200: json('The value to send as `X-Flostra-CSRF`.', csrfSchema) },
  errors: [],
});

export const signOutContract = defineRoute({
  operationId: 'signOut',
  summary: 'Sign this browser session out',
  description: 'Ends the session and clears its cookie. A write like any other: it needs `X-Flostra-CSRF`.',
  tags: TAGS,
  access: AUTHENTICATED,
  responses: { 204: empty('Signed out: the cookie is cleared.') },
  errors: ['csrf_required'],
});

export const meContract = defineRoute({
  operationId: 'getMe',
  summary: 'Who the caller is: subject and roles',
  description: 'The subject, workspace roles and global roles of the token (or of the token behind the browser session), as they are now.',
  tags: TAGS,
  access: AUTHENTICATED,
  responses: { 200: json('The caller.', meSchema) },
  errors: [],
});
