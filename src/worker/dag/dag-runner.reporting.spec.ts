import { describe, expect, it } from '@jest/globals';
import type { DagEvent, ReportDagEvent } from './dag.types.js';
import { DagReportError } from './dag-runner.js';
import { deferred, flushEventLoop, type Deferred } from './testing/deferred.js';
import { eventTrace, graphOf, recordingReport, ScriptedNodes } from './testing/scripted-nodes.js';
import { startRun } from './testing/start-run.js';

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
  it("reports a pure node's start together with its result, start first", async () => {
    const nodes = new ScriptedNodes();
    const held = heldReport();
    const { result } = startRun({ graph: graphOf(['A', 'B'], 'A>B'), executeNode: nodes.execute, report: held.report, isPure: pure(['A', 'B']) });

    await flushEventLoop();
    // A ran before anything was acknowledged: nothing outside the run can have seen it.
    expect(nodes.callsOf('A')).toHaveLength(1);
    expect(held.inFlight()).toEqual(['started:A', 'succeeded:A']);
    expect(nodes.callsOf('B')).toHaveLength(0);

    held.ackAll();
    await flushEventLoop();
    expect(held.inFlight()).toEqual(['started:B', 'succeeded:B']);
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

  it('fails the run when the start of a pure node cannot be reported', async () => {
    const nodes = new ScriptedNodes();
    const { events, report } = recordingReport((event) => event.kind === 'node_started' && event.nodeId === 'A');

    const error = await startRun({ graph: graphOf(['A', 'B'], 'A>B'), executeNode: nodes.execute, report, isPure: pure(['A', 'B']) }).result.catch((e: unknown) => e);

    expect(error).toBeInstanceOf(DagReportError);
    expect(nodes.callsOf('B')).toHaveLength(0);
    expect(eventTrace(events)).toEqual(['succeeded:A']);
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
