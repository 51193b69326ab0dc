import { useEffect, useState } from 'react';
import { enc, get } from '../lib/api';
import { Link, navigate } from '../lib/router';
import { ActionError, Empty, ErrorState, Loading, StatusBadge } from '../components/States';

interface ExecutionSummary {
  executionId: string;
  workflow: { name: string; revision: number };
  status: string;
  waitingFor: string | null;
  cancelRequested: boolean;
  attemptCount: number;
  startedAt: string;
  endedAt: string | null;
}
interface Page {
  executions: ExecutionSummary[];
  nextCursor: string | null;
}

const STATUSES = ['queued', 'running', 'awaiting_approval', 'succeeded', 'failed', 'timed_out', 'cancelled'];
const SINCE: Record<string, number | null> = { all: null, '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 };
const PAGE_SIZE = 25;

/**
 * Executions of a workspace, newest first, a page at a time with the API's cursor. Status and
 * workflow filter on the server; the time range filters the newest-first pages here, and stops
 * offering more once a page reaches past its start.
 */
export function Executions(props: { workspaceId: string; query: URLSearchParams }) {
  const { workspaceId, query } = props;
  const status = query.get('status') ?? '';
  const workflow = query.get('workflow') ?? '';
  const since = query.get('since') ?? 'all';
  const [items, setItems] = useState<ExecutionSummary[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [more, setMore] = useState<{ busy: boolean; error: unknown }>({ busy: false, error: null });
  const [draftWorkflow, setDraftWorkflow] = useState(workflow);

  const pageUrl = (after: string | null) => {
    const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (status !== '') params.set('status', status);
    if (workflow !== '') params.set('workflow', workflow);
    if (after !== null) params.set('cursor', after);
    return `/v1/workspaces/${enc(workspaceId)}/executions?${params}`;
  };
  const load = () => {
    setItems(null);
    setError(null);
    get<Page>(pageUrl(null)).then(
      (page) => {
        setItems(page.executions);
        setCursor(page.nextCursor);
      },
      (caught: unknown) => setError(caught),
    );
  };
  useEffect(load, [workspaceId, status, workflow]);
  useEffect(() => setDraftWorkflow(workflow), [workflow]);

  const setFilter = (name: string, value: string) => {
    const next = new URLSearchParams(query);
    if (value === '' || (name === 'since' && value === 'all')) next.delete(name);
    else next.set(name, value);
    navigate(`/workspaces/${enc(workspaceId)}/executions${next.size > 0 ? `?${next}` : ''}`);
  };
  const loadMore = async () => {
    if (cursor === null) return;
    setMore({ busy: true, error: null });
    try {
      const page = await get<Page>(pageUrl(cursor));
      setItems((before) => [...(before ?? []), ...page.executions]);
      setCursor(page.nextCursor);
      setMore({ busy: false, error: null });
    } catch (caught) {
      setMore({ busy: false, error: caught });
    }
  };

  const bound = SINCE[since] ?? null;
  const from = bound === null ? null : Date.now() - bound;
  const shown = items?.filter((e) => from === null || Date.parse(e.startedAt) >= from) ?? [];
  const oldest = items?.at(-1);
  const reachedBound = from !== null && oldest !== undefined && Date.parse(oldest.startedAt) < from;

  return (
    <section>
      <h2>Executions in {workspaceId}</h2>
      <form
        className="toolbar filters"
        onSubmit={(event) => {
          event.preventDefault();
          setFilter('workflow', draftWorkflow.trim());
        }}
      >
        <label>
          <span>Status</span>
          <select name="status" value={status} onChange={(e) => setFilter('status', e.target.value)}>
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s.replace('_', ' ')}
              </option>
            ))}
          </select>
        </label>
        <label>
          <span>Workflow</span>
          <input name="workflow" value={draftWorkflow} onChange={(e) => setDraftWorkflow(e.target.value)} placeholder="any" />
        </label>
        <label>
          <span>Started</span>
          <select name="since" value={since} onChange={(e) => setFilter('since', e.target.value)}>
            <option value="all">any time</option>
            <option value="1h">last hour</option>
            <option value="24h">last 24 hours</option>
            <option value="7d">last 7 days</option>
          </select>
        </label>
        <button type="submit" className="secondary">
          Apply
        </button>
      </form>
      {error !== null ? <ErrorState error={error} retry={load} /> : null}
      {error === null && items === null ? <Loading what="executions" /> : null}
      {items !== null && shown.length === 0 ? (
        <Empty title="No executions">
          <p>{status !== '' || workflow !== '' || from !== null ? 'None match these filters.' : 'Start one from a workflow’s page.'}</p>
        </Empty>
      ) : null}
      {shown.length > 0 ? (
        <table className="table" data-testid="executions">
          <thead>
            <tr>
              <th>Execution</th>
              <th>Workflow</th>
              <th>Status</th>
              <th>Attempts</th>
              <th>Started</th>
              <th>Ended</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((e) => (
              <tr key={e.executionId}>
                <td>
                  <Link to={`/executions/${e.executionId}`}>
                    <code>{e.executionId.slice(0, 8)}</code>
                  </Link>
                </td>
                <td>
                  {e.workflow.name} <span className="muted">r{e.workflow.revision}</span>
                </td>
                <td>
                  <StatusBadge status={e.status} />
                  {e.waitingFor !== null ? <span className="muted"> waiting for a quota slot</span> : null}
                  {e.cancelRequested && e.status === 'running' ? <span className="muted"> cancelling</span> : null}
                </td>
                <td>{e.attemptCount}</td>
                <td>{new Date(e.startedAt).toLocaleString()}</td>
                <td>{e.endedAt === null ? '—' : new Date(e.endedAt).toLocaleString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {items !== null && cursor !== null && !reachedBound ? (
        <button type="button" className="secondary" onClick={() => void loadMore()} disabled={more.busy}>
          {more.busy ? 'Loading…' : 'Load more'}
        </button>
      ) : null}
      <ActionError error={more.error} />
    </section>
  );
}
