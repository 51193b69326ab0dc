import { describe, expect, it } from '@jest/globals';
import { eventTrace, graphOf, ScriptedNodes } from '../../../test/support/worker/dag/scripted-nodes.js';
import { startRun as start } from '../../../test/support/worker/dag/start-run.js';
import type { WorkflowDefinition } from '../../workflows/domain/workflow-graph.schema.js';

type Trigger = 'all_success' | 'one_success' | 'all_done';

/** S routes to B (case 0) or C (default); both lead to the join J; U follows S unconditionally. */
const routed = (join: Trigger, extra: WorkflowDefinition['nodes'] = []) =>
  graphOf(
    [
      { id: 'S', type: 'switch', config: { cases: [{ when: 'input.order > 5', to: ['B'] }], default: ['C'] } },
      'B',
      'C',
      { id: 'J', type: 'noop', trigger: join },
      ...extra,
    ],
    'S>B',
    'S>C',
    'B>J',
    'C>J',
    ...(extra.length > 0 ? ['S>U'] : []),
  );

const switchTaking = (output: unknown) => {
  const nodes = new ScriptedNodes();
  nodes.script('S', async () => output);
  return nodes;
};

describe('runDag: switch nodes', () => {
  it('runs the targets of the case taken and skips the others, whatever their trigger', async () => {
    const nodes = switchTaking({ case: 0, to: ['B'] });
    const graph = graphOf(
      [
        { id: 'S', type: 'switch', config: { cases: [{ when: 'true', to: ['B'] }], default: ['C'] } },
        'B',
        { id: 'C', type: 'noop', trigger: 'all_done' },
      ],
      'S>B',
      'S>C',
    );
    const { result, events } = start({ graph, executeNode: nodes.execute });

    const outcome = await result;
    expect(outcome.outcome).toBe('succeeded');
    expect(nodes.callsOf('C')).toHaveLength(0);
    expect(outcome.nodes['C']).toEqual({ status: 'skipped', reason: 'switch S took case 0' });
    expect(eventTrace(events)).toEqual(['started:S', 'succeeded:S', 'skipped:C', 'started:B', 'succeeded:B']);
  });

  it('takes the default and skips the case targets', async () => {
    const nodes = switchTaking({ case: 'default', to: ['C'] });
    const outcome = await start({ graph: routed('one_success'), executeNode: nodes.execute }).result;
    expect(outcome.nodes['B']).toEqual({ status: 'skipped', reason: 'switch S took the default' });
    expect(outcome.nodes['C']).toMatchObject({ status: 'succeeded' });
  });

  it('lets joins treat a branch not taken per their trigger rule', async () => {
    const ran = async (join: Trigger) => {
      const outcome = await start({ graph: routed(join), executeNode: switchTaking({ case: 0, to: ['B'] }).execute }).result;
      return outcome.nodes['J'].status;
    };
    expect(await ran('one_success')).toBe('succeeded');
    expect(await ran('all_done')).toBe('succeeded');
    expect(await ran('all_success')).toBe('skipped');
  });

  it('skips every target when no case holds and there is no default; other successors run', async () => {
    const nodes = switchTaking({ case: 'default', to: [] });
    const outcome = await start({ graph: routed('one_success', [{ id: 'U', type: 'noop' }]), executeNode: nodes.execute }).result;
    expect([outcome.nodes['B'].status, outcome.nodes['C'].status, outcome.nodes['J'].status]).toEqual(['skipped', 'skipped', 'skipped']);
    expect(outcome.nodes['U']).toMatchObject({ status: 'succeeded' });
  });

  it('routes a resumed attempt by the switch output it reuses, without running the switch again', async () => {
    const nodes = new ScriptedNodes();
    const outcome = await start({
      graph: routed('one_success'),
      executeNode: nodes.execute,
      completedNodes: { S: { case: 'default', to: ['C'] } },
    }).result;
    expect(nodes.callsOf('S')).toHaveLength(0);
    expect(nodes.callsOf('B')).toHaveLength(0);
    expect(outcome.nodes['C']).toMatchObject({ status: 'succeeded' });
  });

  it('skips the targets of a switch that failed per the usual rules', async () => {
    const nodes = new ScriptedNodes();
    nodes.script('S', async () => Promise.reject(new Error('no predicate')));
    const outcome = await start({ graph: routed('all_done'), executeNode: nodes.execute }).result;
    expect(outcome.outcome).toBe('failed');
    expect(outcome.nodes['B']).toEqual({ status: 'skipped', reason: 'all_success: predecessor S failed' });
    expect(outcome.nodes['J'].status).toBe('succeeded');
  });
});
