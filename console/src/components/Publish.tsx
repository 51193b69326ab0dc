// Publish a workflow revision from a JSON or YAML file (editors).
import { useState, type ChangeEvent, type FormEvent } from 'react';
import { api, enc } from '../lib/api';
import { ActionError } from './States';

/** A graph file's content: YAML by its extension (the parser is loaded only then), JSON otherwise. */
export async function parseGraphFile(name: string, text: string): Promise<unknown> {
  if (!/\.ya?ml$/i.test(name)) return JSON.parse(text) as unknown;
  const { parse } = await import('yaml');
  return parse(text) as unknown;
}

export function PublishForm(props: { workspaceId: string; name?: string; onPublished: (name: string, revision: number) => void }) {
  const [name, setName] = useState(props.name ?? '');
  const [graph, setGraph] = useState<{ file: string; value: unknown } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<string | null>(null);

  const pick = async (event: ChangeEvent<HTMLInputElement>) => {
    setError(null);
    setDone(null);
    const file = event.target.files?.[0];
    if (file === undefined) return setGraph(null);
    try {
      setGraph({ file: file.name, value: await parseGraphFile(file.name, await file.text()) });
    } catch (caught) {
      setGraph(null);
      setError(new Error(`${file.name} is not valid ${/\.ya?ml$/i.test(file.name) ? 'YAML' : 'JSON'}: ${(caught as Error).message}`));
    }
  };
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (graph === null) return;
    setBusy(true);
    setError(null);
    try {
      const answer = await api<{ revision: number }>('PUT', `/v1/workspaces/${enc(props.workspaceId)}/workflows/${enc(name)}`, {
        body: graph.value,
      });
      setDone(`Published revision ${answer.revision}.`);
      props.onPublished(name, answer.revision);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  const issues = (error as { problem?: { issues?: { path: string; message: string }[] } } | null)?.problem?.issues ?? [];
  return (
    <form className="card publish" onSubmit={(event) => void submit(event)}>
      <h3>{props.name === undefined ? 'Publish a workflow' : 'Publish a new revision'}</h3>
      {props.name === undefined ? (
        <label>
          <span>Name</span>
          <input
            name="workflow-name"
            value={name}
            onChange={(e) => setName(e.target.value)}
            placeholder="orders"
            pattern="[A-Za-z0-9_-]{1,64}"
          />
        </label>
      ) : null}
      <label>
        <span>Graph file (JSON or YAML)</span>
        <input name="graph-file" type="file" accept=".json,.yaml,.yml,application/json" onChange={(event) => void pick(event)} />
      </label>
      <button type="submit" disabled={busy || graph === null || name === ''}>
        {busy ? 'Publishing…' : 'Publish'}
      </button>
      {done !== null ? <p className="ok">{done}</p> : null}
      <ActionError error={error} />
      {issues.length > 0 ? (
        <ul className="issues">
          {issues.map((issue, i) => (
            <li key={i}>
              <code>{issue.path}</code> {issue.message}
            </li>
          ))}
        </ul>
      ) : null}
    </form>
  );
}
