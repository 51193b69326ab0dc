import { describe, expect, it } from '@jest/globals';
import { workspaceSettingsBodySchema } from './request-schemas.js';

describe('the settings body', () => {
  it.each([1, 5, 100_000, null])('accepts maxConcurrentExecutions %p', (value) => {
    expect(workspaceSettingsBodySchema.parse({ maxConcurrentExecutions: value })).toEqual({
      maxConcurrentExecutions: value,
      maxExecutionsPerTree: null,
    });
  });

  it.each([1, 1_000, 100_000, null])('accepts maxExecutionsPerTree %p (absent: null, the deployment’s default)', (value) => {
    expect(workspaceSettingsBodySchema.parse({ maxConcurrentExecutions: null, maxExecutionsPerTree: value })).toEqual({
      maxConcurrentExecutions: null,
      maxExecutionsPerTree: value,
    });
  });

  it.each([
    ['zero', { maxConcurrentExecutions: 0 }],
    ['a negative number', { maxConcurrentExecutions: -1 }],
    ['more than 100000', { maxConcurrentExecutions: 100_001 }],
    ['a fraction', { maxConcurrentExecutions: 2.5 }],
    ['a string', { maxConcurrentExecutions: '5' }],
    ['a missing value', {}],
    ['an unknown field', { maxConcurrentExecutions: 5, maxRunning: 5 }],
    ['a tree bound of zero', { maxConcurrentExecutions: null, maxExecutionsPerTree: 0 }],
    ['a tree bound over 100000', { maxConcurrentExecutions: null, maxExecutionsPerTree: 100_001 }],
  ])('refuses %s', (_, body) => {
    const parsed = workspaceSettingsBodySchema.safeParse(body);
    expect(parsed.success).toBe(false);
  });
});
