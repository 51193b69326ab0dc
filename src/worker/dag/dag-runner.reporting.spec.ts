import { describe, expect, it } from '@jest/globals';
import type { DagEvent, ReportDagEvent } from './dag.types.js';
import { NodeError } from './node-error.js';
import { deferred, flushEventLoop, type Deferred } from '../../../test/support/worker/dag/deferred.js';
import { eventTrace, graphOf, ScriptedNodes } from '../../../test/support/worker/dag/scripted-nodes.js';
import { startRun } from '../../../test/support/worker/dag/start-run.js';

/** A report whose acknowledgements the test hands out: shows what is in flight at once. */
function heldReport() {
  const calls: { event: DagEvent; ack: Deferred<void>; acked?: boolean }[] = [];
  const report: ReportDagEvent = (event) => {
    const ack = deferred();
    calls.push({ event, ack });
    return ack.promise;
  };
  const inFlight = () => eventTrace(calls.filter((call) => !call.acked).map((call) => call.event));
  const ackAll = () => {
    for (const call of calls) {
      call.acked = true;
      call.ack.resolve();
    }
  };
  return { calls, report, inFlight, ackAll };
}

const pure = (ids: string[]) => (node: { id: string }) => ids.includes(node.id);

describe('runDag: reporting pure nodes', () => {
  it('without a way to hold events, reports a pure node like any other: started, acknowledged, then run', async () => {
    const nodes = new ScriptedNodes();
    const held = heldReport();
    const { result } = startRun({ graph: graphOf(['A']), executeNode: nodes.execute, report: held.report, isPure: pure(['A']) });

    await flushEventLoop();
    expect(held.inFlight()).toEqual(['started:A']);
    expect(nodes.callsOf('A')).toHaveLength(0);

    held.ackAll();
    await flushEventLoop();
    expect(nodes.callsOf('A')).toHaveLength(1);
    expect(held.inFlight()).toEqual(['succeeded:A']);
    held.ackAll();
    await expect(result).resolves.toMatchObject({ outcome: 'succeeded' });
  });

  it('still runs a node with effects only once its node_started was acknowledged', async () => {
    const nodes = new ScriptedNodes();
    const held = heldReport();
    const { result } = startRun({ graph: graphOf(['A']), executeNode: nodes.execute, report: held.report, isPure: pure([]) });

    await flushEventLoop();
    expect(held.inFlight()).toEqual(['started:A']);
    expect(nodes.callsOf('A')).toHaveLength(0);

    held.ackAll();
    await flushEventLoop();
    expect(nodes.callsOf('A')).toHaveLength(1);
    held.ackAll();
    await flushEventLoop();
    held.ackAll();
    await expect(result).resolves.toMatchObject({ outcome: 'succeeded' });
  });
});

describe('runDag: nodes ready together', () => {
  it('have their node_started reports in flight at once, in rank order', async () => {
    const nodes = new ScriptedNodes();
    const held = heldReport();
    startRun({ graph: graphOf(['A', 'B', 'C'], 'A>B', 'A>C'), executeNode: nodes.execute, report: held.report });

    await flushEventLoop();
    held.ackAll(); // started:A
    await flushEventLoop();
    held.ackAll(); // succeeded:A
    await flushEventLoop();

    expect(held.inFlight()).toEqual(['started:B', 'started:C']);
    expect(nodes.callsOf('B')).toHaveLength(0);
    expect(nodes.callsOf('C')).toHaveLength(0);
    held.ackAll();
  });
});

describe('runDag: holding the events of pure and skipped nodes', () => {
  /** One ordered record of what was held and what was reported. */
  function holdAndReport() {
    const log: string[] = [];
    const trace = (event: DagEvent) => eventTrace([event])[0];
    return {
      log,
      hold: (event: DagEvent) => void log.push(`held ${trace(event)}`),
      report: async (event: DagEvent) => void log.push(`reported ${trace(event)}`),
    };
  }

  it('holds every event of a graph of pure nodes and reports none', async () => {
    const nodes = new ScriptedNodes();
    const channel = holdAndReport();
    const { result } = startRun({
      graph: graphOf(['A', 'B', 'C', 'D'], 'A>B', 'A>C', 'B>D', 'C>D'),
      executeNode: nodes.execute,
      isPure: pure(['A', 'B', 'C', 'D']),
      ...channel,
    });

    await expect(result).resolves.toMatchObject({ outcome: 'succeeded' });
    expect(channel.log).toEqual([
      'held started:A',
      'held succeeded:A',
      'held started:B',
      'held succeeded:B',
      'held started:C',
      'held succeeded:C',
      'held started:D',
      'held succeeded:D',
    ]);
  });

  it('reports the start of a node with effects after the held events it follows, and waits for it', async () => {
    const nodes = new ScriptedNodes();
    const log: string[] = [];
    const ack = deferred();
    const hold = (event: DagEvent) => void log.push(`held ${eventTrace([event])[0]}`);
    const report = (event: DagEvent) => {
      log.push(`reported ${eventTrace([event])[0]}`);
      return event.kind === 'node_started' ? ack.promise : Promise.resolve();
    };
    const { result } = startRun({ graph: graphOf(['A', 'X'], 'A>X'), executeNode: nodes.execute, isPure: pure(['A']), hold, report });

    await flushEventLoop();
    expect(log).toEqual(['held started:A', 'held succeeded:A', 'reported started:X']);
    expect(nodes.callsOf('X')).toHaveLength(0);
    ack.resolve();
    await expect(result).resolves.toMatchObject({ outcome: 'succeeded' });
    expect(log).toEqual(['held started:A', 'held succeeded:A', 'reported started:X', 'reported succeeded:X']);
  });

  it('holds the skip of a node whose predecessor failed', async () => {
    const nodes = new ScriptedNodes();
    nodes.script('A', async () => {
      throw new NodeError('boom', 'no', false);
    });
    const channel = holdAndReport();
    const { result } = startRun({ graph: graphOf(['A', 'B'], 'A>B'), executeNode: nodes.execute, isPure: pure(['A', 'B']), ...channel });

    await expect(result).resolves.toMatchObject({ outcome: 'failed', failedNodeId: 'A' });
    expect(channel.log).toEqual(['held started:A', 'held failed:A', 'held skipped:B']);
  });
});
