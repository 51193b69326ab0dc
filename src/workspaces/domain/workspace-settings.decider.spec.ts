import { describe, expect, it } from '@jest/globals';
import { deciderSpecification } from '../../../test/support/core/decider-specification.js';
import { workspaceDecider, type ChangeWorkspaceSettings } from './workspace-settings.decider.js';
import { parseWorkspaceEvent, type WorkspaceEvent } from './workspace-settings.events.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const { given } = deciderSpecification(workspaceDecider);

const change = (maxConcurrentExecutions: number | null, at = 0): ChangeWorkspaceSettings => ({
  type: 'ChangeWorkspaceSettings',
  data: { workspaceId: 'ws-a', settings: { maxConcurrentExecutions, maxExecutionsPerTree: null } },
  metadata: { now: new Date(T0 + at), actor: 'alice' },
});
const changed = (maxConcurrentExecutions: number | null, at = 0): WorkspaceEvent => ({
  type: 'WorkspaceSettingsChanged',
  data: {
    workspaceId: 'ws-a',
    settings: { maxConcurrentExecutions, maxExecutionsPerTree: null },
    changedBy: 'alice',
    changedAt: new Date(T0 + at).toISOString(),
  },
});

describe('ChangeWorkspaceSettings', () => {
  it('records the first bound of a workspace, with who set it and when', () => {
    given([])
      .when(change(5, 1_000))
      .then([changed(5, 1_000)]);
  });

  it('records a changed bound, and its removal', () => {
    given([changed(5)])
      .when(change(2, 1_000))
      .then([changed(2, 1_000)]);
    given([changed(5)])
      .when(change(null, 1_000))
      .then([changed(null, 1_000)]);
  });

  it('records nothing for the settings in force (no bound is the default)', () => {
    given([changed(5)])
      .when(change(5, 1_000))
      .thenNothingHappens();
    given([]).when(change(null)).thenNothingHappens();
  });

  it('records a tree bound as a change of its own; a change recorded before tree bounds reads as the default', () => {
    const tree = change(5, 1_000);
    tree.data.settings = { maxConcurrentExecutions: 5, maxExecutionsPerTree: 40 };
    given([changed(5)])
      .when(tree)
      .then([
        {
          ...changed(5, 1_000),
          data: { ...changed(5, 1_000).data, settings: { maxConcurrentExecutions: 5, maxExecutionsPerTree: 40 } },
        },
      ]);
    const old = {
      workspaceId: 'ws-a',
      settings: { maxConcurrentExecutions: 5 },
      changedBy: 'alice',
      changedAt: new Date(T0).toISOString(),
    };
    const recorded = { id: 'e1', streamId: 'workspace-ws-a', revision: 0, position: '1', type: 'WorkspaceSettingsChanged', data: old };
    expect(parseWorkspaceEvent({ ...recorded, metadata: {}, recordedAt: old.changedAt }).data.settings).toEqual({
      maxConcurrentExecutions: 5,
      maxExecutionsPerTree: null,
    });
  });

  it('folds the settings with who changed them last', () => {
    given([changed(5), changed(3, 2_000)])
      .when(change(3, 4_000))
      .thenState({
        settings: { maxConcurrentExecutions: 3, maxExecutionsPerTree: null },
        changedBy: 'alice',
        changedAt: new Date(T0 + 2_000).toISOString(),
      });
  });
});
