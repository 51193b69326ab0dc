import { z } from 'zod';
import { defineRoute, json, workspaceRole } from '../../http/openapi/route-contract.js';
import { nameSchema } from '../../http/validation.js';
import { workspaceSettingsBodySchema } from '../application/request-schemas.js';
import { workspaceSettingsSchema } from './workspace-settings.responses.js';

/** Contracts of WorkspacesController (docs/api.md, "Workspace settings"). */

const TAGS = ['Workspace settings'];
const params = z.object({ workspaceId: nameSchema });

export const getWorkspaceSettingsContract = defineRoute({
  operationId: 'getWorkspaceSettings',
  summary: 'Get a workspace’s settings',
  description: 'Read from the workspace’s stream: always current. A workspace that never changed them has the defaults (no bound).',
  tags: TAGS,
  access: workspaceRole('viewer', 'path'),
  params,
  responses: { 200: json('The settings.', workspaceSettingsSchema) },
  errors: ['validation_failed', 'not_found', 'unavailable'],
});

export const putWorkspaceSettingsContract = defineRoute({
  operationId: 'putWorkspaceSettings',
  summary: 'Change a workspace’s settings',
  description:
    '`maxConcurrentExecutions` bounds how many executions of the workspace run at once (an integer 1-100000, or null for no bound). ' +
    'Executions beyond it are accepted and wait, `queued` with `waitingFor: "workspace_quota"`, and start in the order they were started as slots free. ' +
    'A new bound applies to the next admission: raising it (or null) admits waiting executions at once; lowering it admits none until enough end. ' +
    '`maxExecutionsPerTree` bounds how many executions one sub-workflow tree holds, its top-level execution included (absent or null: the deployment’s default); ' +
    'a `subworkflow` node whose child would go beyond it fails `subworkflow_tree_limit_exceeded`. ' +
    'The same settings again change nothing.',
  tags: TAGS,
  access: workspaceRole('admin', 'path'),
  params,
  body: workspaceSettingsBodySchema,
  responses: { 200: json('The settings now in force.', workspaceSettingsSchema) },
  errors: ['validation_failed', 'forbidden', 'not_found', 'concurrency_conflict', 'unavailable'],
});
