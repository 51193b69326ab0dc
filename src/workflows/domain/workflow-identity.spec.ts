import { describe, expect, it } from '@jest/globals';
import { UUID_PATTERN } from '../../core/ids.js';
import { workflowIdOf, workflowStreamId } from './workflow-identity.js';

describe('workflow identity', () => {
  it('names the stream workflow-<workspaceId>-<name>', () => {
    expect(workflowStreamId('acme', 'orders')).toBe('workflow-acme-orders');
    expect(workflowStreamId('acme_1', 'nightly-orders')).toBe('workflow-acme_1-nightly-orders');
  });

  it('keeps workspaces apart when ids and names contain "-"', () => {
    // Written literally, both would be workflow-acme-prod-orders.
    expect(workflowStreamId('acme-prod', 'orders')).not.toBe(workflowStreamId('acme', 'prod-orders'));
    expect(workflowStreamId('acme-prod', 'orders')).toBe('workflow-acme~prod-orders');
  });

  it('derives one stable uuid per workspace and name', () => {
    expect(workflowIdOf('acme', 'orders')).toMatch(UUID_PATTERN);
    expect(workflowIdOf('acme', 'orders')).toBe(workflowIdOf('acme', 'orders'));
    expect(workflowIdOf('acme', 'orders')).not.toBe(workflowIdOf('acme', 'refunds'));
    expect(workflowIdOf('acme-prod', 'orders')).not.toBe(workflowIdOf('acme', 'prod-orders'));
  });
});
