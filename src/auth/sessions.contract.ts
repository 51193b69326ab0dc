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
    'Answers 204 with the cookie `__Host-flostra_session` (HttpOnly, SameSite=Strict, Secure, Path=/; browsers take it over https ' +
    'and from loopback) that authenticates the following requests as the token does, until sign-out, 12 hours, or the token’s ' +
    'removal from the tokens file. Each sign-in makes a new session and ends the one of the cookie it came with. Writes made with ' +
    'the cookie need `X-Flostra-CSRF` (GET /v1/sessions/csrf) and, when they send `Origin`, this server’s own; so does a sign-in. ' +
    'Sign-ins are limited per client address and per token (429 `too_many_sign_ins`); a subject’s sessions are bounded, its ' +
    'oldest ending first, and a process that holds its most refuses new ones (429 `too_many_sessions`). ' +
    'Sessions live in the memory of the api process that signed in.',
  tags: TAGS,
  access: PUBLIC,
  body: signInBodySchema,
  responses: { 204: empty('Signed in: the session cookie is set.') },
  errors: ['unauthenticated', 'csrf_required', 'too_many_sessions', 'too_many_sign_ins'],
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
  description:
    'Ends the session and clears its cookie. A write like any other: it needs `X-Flostra-CSRF` (and this server’s `Origin`, if any).',
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
