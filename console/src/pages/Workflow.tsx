import { useState, type FormEvent } from 'react';
import { api, can, enc, get, newKey, type Me } from '../lib/api';
import { navigate } from '../lib/router';
import { useLoad } from '../lib/use-load';
import { Dag, type Graph } from '../components/Dag';
import { PublishForm } from '../components/Publish';
import { ActionError, ErrorState, Json, Loading } from '../components/States';

interface Revision {
  workflowId: string;
  name: string;
  revision: number;
  digest: string;
  graph: Graph;
  publishedBy: string;
  publishedAt: string;
}

export function Workflow(props: { me: Me; workspaceId: string; name: string; revision: string | null }) {
  const { workspaceId, name } = props;
  const base = `/v1/workspaces/${enc(workspaceId)}/workflows/${enc(name)}`;
  const [latest, reloadLatest] = useLoad(() => get<Revision>(base), [base]);
  const wanted = props.revision;
  const [shown, reloadShown] = useLoad(() => get<Revision>(wanted === null ? base : `${base}?revision=${enc(wanted)}`), [base, wanted]);
  const page = `/workspaces/${enc(workspaceId)}/workflows/${enc(name)}`;

  if (latest.state === 'loading' || shown.state === 'loading') return <Loading what={`workflow ${name}`} />;
  if (latest.state === 'error') return <ErrorState error={latest.error} retry={reloadLatest} />;
  if (shown.state === 'error') return <ErrorState error={shown.error} retry={reloadShown} />;
  const revisions = Array.from({ length: latest.value.revision }, (_, i) => latest.value.revision - i);
  const revision = shown.value;
  return (
    <section>
      <h2>
        {name} <span className="muted">revision {revision.revision}</span>
      </h2>
      <div className="toolbar">
        <label>
          <span>Revision</span>
          <select value={revision.revision} onChange={(e) => navigate(`${page}?revision=${e.target.value}`)}>
            {revisions.map((r) => (
              <option key={r} value={r}>
                {r}
                {r === latest.value.revision ? ' (latest)' : ''}
              </option>
            ))}
          </select>
        </label>
        <span className="muted">
          published by {revision.publishedBy} on {new Date(revision.publishedAt).toLocaleString()} · digest{' '}
          <code>{revision.digest.slice(0, 16)}</code>
        </span>
      </div>
      <Dag graph={revision.graph} />
      <div className="columns">
        {can(props.me, workspaceId, 'operator') ? <StartForm workspaceId={workspaceId} name={name} revision={revision.revision} /> : null}
        {can(props.me, workspaceId, 'editor') ? (
          <PublishForm
            workspaceId={workspaceId}
            name={name}
            onPublished={() => {
              reloadLatest();
              navigate(page);
            }}
          />
        ) : null}
      </div>
      <details>
        <summary>Graph as published (defaults filled in)</summary>
        <Json value={revision.graph} />
      </details>
    </section>
  );
}

function StartForm(props: { workspaceId: string; name: string; revision: number }) {
  const [input, setInput] = useState('{\n  "name": "world"\n}');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    let parsed: unknown;
    try {
      parsed = JSON.parse(input);
    } catch (caught) {
      return setError(new Error(`the input is not valid JSON: ${(caught as Error).message}`));
    }
    setBusy(true);
    try {
      const started = await api<{ executionId: string }>(
        'POST',
        `/v1/workspaces/${enc(props.workspaceId)}/workflows/${enc(props.name)}/executions`,
        { body: { input: parsed, revision: props.revision }, headers: { 'Idempotency-Key': newKey('console') } },
      );
      navigate(`/executions/${enc(started.executionId)}`);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="card" onSubmit={(event) => void submit(event)}>
      <h3>Start an execution of revision {props.revision}</h3>
      <label>
        <span>Input (a JSON object)</span>
        <textarea name="input" rows={5} value={input} onChange={(e) => setInput(e.target.value)} spellCheck={false} />
      </label>
      <button type="submit" disabled={busy}>
        {busy ? 'Starting…' : 'Start execution'}
      </button>
      <ActionError error={error} />
    </form>
  );
}
