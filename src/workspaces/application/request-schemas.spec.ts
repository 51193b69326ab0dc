import { describe, expect, it } from '@jest/globals';
import { workspaceSettingsBodySchema } from './request-schemas.js';

describe('the settings body', () => {
  it.each([1, 5, 100_000, null])('accepts maxConcurrentExecutions %p', (value) => {
    expect(workspaceSettingsBodySchema.parse({ maxConcurrentExecutions: value })).toEqual({ maxConcurrentExecutions: value });
  });

  it.each([
    ['zero', { maxConcurrentExecutions: 0 }],
    ['a negative number', { maxConcurrentExecutions: -1 }],
    ['more than 100000', { maxConcurrentExecutions: 100_001 }],
    ['a fraction', { maxConcurrentExecutions: 2.5 }],
    ['a string', { maxConcurrentExecutions: '5' }],
    ['a missing value', {}],
    ['an unknown field', { maxConcurrentExecutions: 5, maxRunning: 5 }],
  ])('refuses %s', (_, body) => {
    const parsed = workspaceSettingsBodySchema.safeParse(body);
    expect(parsed.success).toBe(false);
  });
});
