import { useEffect, useMemo, useRef, useState } from 'react';
import { api, can, enc, get, newKey, type Me } from '../lib/api';
import { eventSummary, executionStatus, isFinished, mapProgress, nodeOf, nodeStates, nodeWaits } from '../lib/event-log';
import { useExecutionEvents } from '../lib/live';
import { Link } from '../lib/router';
import { useLoad } from '../lib/use-load';
import { Dag, type Graph } from '../components/Dag';
import { ActionError, ErrorState, Json, Loading, StatusBadge } from '../components/States';

interface ExecutionError {
  code: string;
  message: string;
}
interface Detail {
  executionId: string;
  workspaceId: string;
  workflow: { workflowId: string; name: string; revision: number; digest: string };
  status: string;
  waitingFor: string | null;
  cancelRequested: boolean;
  input: unknown;
  output: unknown;
  error: ExecutionError | null;
  pendingApproval: { nodeId: string; action: unknown; actionDigest: string } | null;
  attempts: {
    attemptId: string;
    attemptNumber: number;
    reason: string;
    status: string;
    workerId: string | null;
    scheduledAt: string | null;
    claimedAt: string | null;
    endedAt: string | null;
    error: ExecutionError | null;
  }[];
  nodes: {
    nodeId: string;
    status: string;
    output?: unknown;
    error?: ExecutionError | null;
    startedAt: string | null;
    endedAt: string | null;
  }[];
  /** Sub-workflows: the execution that started this one, and those this one started. */
  parent?: { executionId: string; nodeId: string; depth: number } | null;
  children?: { executionId: string; nodeId: string; workflow: string; status: string; startedAt: string; endedAt: string | null }[];
  startedAt: string;
  endedAt: string | null;
}

const time = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleTimeString() : '—');

export function Execution(props: { me: Me; executionId: string }) {
  const { executionId } = props;
  const [detail, reload] = useLoad(() => get<Detail>(`/v1/executions/${enc(executionId)}`), [executionId]);
  const live = useExecutionEvents(executionId);
  const workflow = detail.state === 'ready' ? detail.value.workflow : null;
  const workspaceId = detail.state === 'ready' ? detail.value.workspaceId : null;
  const [graph] = useLoad(
    () =>
      workflow === null || workspaceId === null
        ? new Promise<{ graph: Graph }>(() => undefined)
        : get<{ graph: Graph }>(`/v1/workspaces/${enc(workspaceId)}/workflows/${enc(workflow.name)}?revision=${workflow.revision}`),
    [workspaceId, workflow?.name, workflow?.revision],
  );
  const [selected, setSelected] = useState<string | null>(null);

  // The detail (outputs, attempts, the pending approval) is read again as events come, at most every 300 ms.
  const count = live.events.length;
  const timer = useRef<number | undefined>(undefined);
  useEffect(() => {
    if (count === 0) return;
    window.clearTimeout(timer.current);
    timer.current = window.setTimeout(reload, 300);
    return () => window.clearTimeout(timer.current);
  }, [count]);

  const nodeIds = useMemo(() => (graph.state === 'ready' ? graph.value.graph.nodes.map((n) => n.id) : []), [graph]);
  const states = useMemo(() => nodeStates(nodeIds, live.events), [nodeIds, live.events]);
  const notes = useMemo(() => {
    const progress = Object.entries(mapProgress(live.events));
    return Object.fromEntries(progress.map(([id, p]) => [id, `${p.succeeded} done${p.failed > 0 ? `, ${p.failed} failed` : ''}`]));
  }, [live.events]);
  const waits = useMemo(() => nodeWaits(live.events), [live.events]);

  if (detail.state === 'loading' && count === 0) return <Loading what="the execution" />;
  if (detail.state === 'error') return <ErrorState error={detail.error} retry={reload} />;
  if (detail.state === 'loading') return <Loading what="the execution" />;
  const d = detail.value;
  const status = executionStatus(live.events) ?? d.status;
  const operator = can(props.me, d.workspaceId, 'operator');
  const node = selected === null ? null : (d.nodes.find((n) => n.nodeId === selected) ?? null);
  const predecessors =
    graph.state === 'ready' && selected !== null ? graph.value.graph.edges.filter((e) => e.to === selected).map((e) => e.from) : [];
  const derivedInput =
    selected === null
      ? undefined
      : {
          input: d.input,
          nodes: Object.fromEntries(
            predecessors.flatMap((id) => {
              const before = d.nodes.find((n) => n.nodeId === id);
              return before?.status === 'succeeded' ? [[id, before.output ?? null]] : [];
            }),
          ),
        };

  return (
    <section className="execution">
      <h2>
        Execution <code>{executionId.slice(0, 8)}</code> <StatusBadge status={status} />
        <span className={`live-dot ${live.connected ? 'on' : 'off'}`} data-testid="live" data-connected={String(live.connected)}>
          {live.connected ? 'live' : isFinished(status) ? 'ended' : 'reconnecting…'}
        </span>
      </h2>
      <p className="muted">
        <Link to={`/workspaces/${enc(d.workspaceId)}/workflows/${enc(d.workflow.name)}?revision=${d.workflow.revision}`}>
          {d.workflow.name} revision {d.workflow.revision}
        </Link>{' '}
        in {d.workspaceId} · started {new Date(d.startedAt).toLocaleString()}
        {d.endedAt !== null ? ` · ended ${new Date(d.endedAt).toLocaleString()}` : ''}
        {d.waitingFor !== null ? ' · waiting for a quota slot' : ''}
        {d.cancelRequested && !isFinished(status) ? ' · cancel requested' : ''}
        {d.parent ? (
          <span data-testid="parent">
            {' · child of '}
            <Link to={`/executions/${enc(d.parent.executionId)}`}>
              <code>{d.parent.executionId.slice(0, 8)}</code>
            </Link>{' '}
            (node {d.parent.nodeId})
          </span>
        ) : null}
      </p>
      {operator ? <Actions detail={d} status={status} onDone={reload} /> : null}
      {graph.state === 'ready' ? (
        <Dag graph={graph.value.graph} states={states} notes={notes} waits={waits} selected={selected} onSelect={setSelected} />
      ) : graph.state === 'error' ? (
        <ErrorState error={graph.error} />
      ) : (
        <Loading what="the graph" />
      )}
      <div className="columns">
        <div className="card">
          <h3>{selected === null ? 'Node' : `Node ${selected}`}</h3>
          {selected === null ? (
            <p className="muted">Select a node in the graph to see its input, output and error.</p>
          ) : (
            <div data-testid="node-panel">
              <p>
                <StatusBadge status={states[selected] ?? node?.status ?? 'pending'} /> started {time(node?.startedAt)} · ended{' '}
                {time(node?.endedAt)}
              </p>
              <h4>Input</h4>
              <Json value={derivedInput} />
              <h4>Output</h4>
              <Json value={node?.output} />
              {node?.error ? (
                <>
                  <h4>Error</h4>
                  <Json value={node.error} />
                </>
              ) : null}
            </div>
          )}
        </div>
        <div className="card">
          <h3>Execution</h3>
          <h4>Input</h4>
          <Json value={d.input} />
          <h4>Output</h4>
          <Json value={d.output} />
          {d.error !== null ? (
            <>
              <h4>Error</h4>
              <Json value={d.error} />
            </>
          ) : null}
        </div>
      </div>
      <h3>Attempts</h3>
      <table className="table">
        <thead>
          <tr>
            <th>#</th>
            <th>Reason</th>
            <th>Status</th>
            <th>Worker</th>
            <th>Scheduled</th>
            <th>Claimed</th>
            <th>Ended</th>
            <th>Error</th>
          </tr>
        </thead>
        <tbody>
          {d.attempts.map((a) => (
            <tr key={a.attemptId}>
              <td>{a.attemptNumber}</td>
              <td>{a.reason}</td>
              <td>
                <StatusBadge status={a.status} />
              </td>
              <td>{a.workerId ?? '—'}</td>
              <td>{time(a.scheduledAt)}</td>
              <td>{time(a.claimedAt)}</td>
              <td>{time(a.endedAt)}</td>
              <td>{a.error ? <code>{a.error.code}</code> : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {(d.children ?? []).length > 0 ? (
        <>
          <h3>Children</h3>
          <table className="table" data-testid="children">
            <thead>
              <tr>
                <th>Execution</th>
                <th>Node</th>
                <th>Workflow</th>
                <th>Status</th>
                <th>Started</th>
                <th>Ended</th>
              </tr>
            </thead>
            <tbody>
              {(d.children ?? []).map((c) => (
                <tr key={c.executionId}>
                  <td>
                    <Link to={`/executions/${enc(c.executionId)}`}>
                      <code>{c.executionId.slice(0, 8)}</code>
                    </Link>
                  </td>
                  <td>{c.nodeId}</td>
                  <td>{c.workflow}</td>
                  <td>
                    <StatusBadge status={c.status} />
                  </td>
                  <td>{time(c.startedAt)}</td>
                  <td>{time(c.endedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
      <h3>History</h3>
      <ol className="timeline" data-testid="timeline">
        {live.events.map((e) => (
          <li key={e.position} data-position={e.position} data-type={e.type}>
            <span className="when">{time(e.recordedAt)}</span>
            <span className="what">{e.type}</span>
            <span className="which muted">
              {nodeOf(e) ?? ''}
              {eventSummary(e) !== '' ? ` · ${eventSummary(e)}` : ''}
            </span>
          </li>
        ))}
      </ol>
    </section>
  );
}

function Actions(props: { detail: Detail; status: string; onDone: () => void }) {
  const { detail, status } = props;
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [comment, setComment] = useState('');
  const base = `/v1/executions/${enc(detail.executionId)}`;
  const run = async (action: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await action();
      props.onDone();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  const finished = isFinished(status);
  const redrivable = status === 'failed' || status === 'timed_out' || status === 'cancelled';
  const approval = detail.pendingApproval;
  return (
    <div className="actions">
      {!finished ? (
        <button
          type="button"
          className="danger"
          disabled={busy || detail.cancelRequested}
          onClick={() => void run(() => api('POST', `${base}/cancel`, { body: { reason: 'cancelled from the console' } }))}
        >
          {detail.cancelRequested ? 'Cancelling…' : 'Cancel'}
        </button>
      ) : null}
      {redrivable ? (
        <button
          type="button"
          disabled={busy}
          onClick={() =>
            void run(() =>
              api('POST', `${base}/redrive`, {
                body: { reason: 'redriven from the console' },
                headers: { 'Idempotency-Key': newKey('redrive') },
              }),
            )
          }
        >
          Redrive
        </button>
      ) : null}
      {approval !== null && status === 'awaiting_approval' ? (
        <div className="card approval" data-testid="approval">
          <h3>Approval needed: {approval.nodeId}</h3>
          <p>You approve exactly this action:</p>
          <Json value={approval.action} />
          <p>
            Digest <code data-testid="action-digest">{approval.actionDigest}</code>
          </p>
          <label>
            <span>Comment</span>
            <input name="comment" value={comment} onChange={(e) => setComment(e.target.value)} />
          </label>
          <div className="row">
            {(['approve', 'reject'] as const).map((decision) => (
              <button
                key={decision}
                type="button"
                className={decision === 'reject' ? 'danger' : ''}
                disabled={busy}
                onClick={() =>
                  void run(() =>
                    api('POST', `${base}/approvals/${enc(approval.nodeId)}`, {
                      body: { decision, actionDigest: approval.actionDigest, ...(comment !== '' ? { comment } : {}) },
                    }),
                  )
                }
              >
                {decision === 'approve' ? 'Approve' : 'Reject'}
              </button>
            ))}
          </div>
        </div>
      ) : null}
      <ActionError error={error} />
    </div>
  );
}
