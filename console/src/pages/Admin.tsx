import { useEffect, useState } from 'react';
import { api, enc, get, type Me } from '../lib/api';
import { ActionError, ErrorState, Forbidden, Loading, StatusBadge } from '../components/States';

interface Projection {
  name: string;
  version: number;
  definitionVersion: number;
  status: string;
  position: string | null;
  eventsApplied: number;
  updatedAt: string | null;
  lag: { events: number; exact: boolean; seconds: number | null } | null;
  error: string | null;
  rebuild: {
    rebuildId: string;
    version: number;
    status: string;
    eventsApplied: number;
    headEvents: number | null;
    progress: number | null;
  } | null;
  lastRebuild: unknown;
}
interface Answer {
  projectorRunsHere: boolean;
  projections: Projection[];
}

const POLL_MS = 1000;

/** Read models: versions, lag, and rebuilds with their progress (global system-admin). */
export function Admin(props: { me: Me }) {
  const allowed = props.me.global.includes('system-admin');
  const [answer, setAnswer] = useState<Answer | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [actionError, setActionError] = useState<unknown>(null);
  const [round, setRound] = useState(0);
  useEffect(() => {
    if (!allowed) return;
    let live = true;
    const timer = window.setInterval(() => setRound((n) => n + 1), POLL_MS);
    get<Answer>('/v1/admin/projections').then(
      (value) => {
        if (!live) return;
        setAnswer(value);
        setError(null);
      },
      (caught: unknown) => live && setError(caught),
    );
    return () => {
      live = false;
      window.clearInterval(timer);
    };
  }, [allowed, round]);

  if (!allowed) return <Forbidden detail="The admin page needs the global system-admin role." />;
  if (answer === null && error !== null) return <ErrorState error={error} />;
  if (answer === null) return <Loading what="read models" />;
  const rebuild = async (name: string) => {
    setActionError(null);
    try {
      await api('POST', `/v1/admin/projections/${enc(name)}/rebuild`);
      setRound((n) => n + 1);
    } catch (caught) {
      setActionError(caught);
    }
  };
  return (
    <section>
      <h2>Read models</h2>
      {!answer.projectorRunsHere ? (
        <p className="muted">The projector does not run in this process: lag is read from the shared database.</p>
      ) : null}
      {error !== null ? <p className="action-error">Refreshing failed: {(error as Error).message}</p> : null}
      <table className="table" data-testid="projections">
        <thead>
          <tr>
            <th>Name</th>
            <th>Version</th>
            <th>Status</th>
            <th>Events applied</th>
            <th>Lag</th>
            <th>Rebuild</th>
          </tr>
        </thead>
        <tbody>
          {answer.projections.map((p) => {
            const progress = p.rebuild?.progress ?? null;
            return (
              <tr key={p.name} data-projection={p.name}>
                <td>{p.name}</td>
                <td>
                  {p.version}
                  {p.definitionVersion !== p.version ? <span className="muted"> (code: {p.definitionVersion})</span> : null}
                </td>
                <td>
                  <StatusBadge status={p.status} />
                  {p.error !== null ? <div className="action-error">{p.error}</div> : null}
                </td>
                <td>{p.eventsApplied}</td>
                <td>
                  {p.lag === null ? '—' : `${p.lag.events}${p.lag.exact ? '' : '+'} events`}
                  {p.lag?.seconds ? ` · ${p.lag.seconds} s` : ''}
                </td>
                <td>
                  {p.rebuild !== null ? (
                    <div className="progress" title={`version ${p.rebuild.version}: ${p.rebuild.status}`}>
                      <div className="bar" style={{ width: `${Math.round((progress ?? 0) * 100)}%` }} />
                      <span>
                        v{p.rebuild.version} {p.rebuild.status} {progress === null ? '' : `${Math.round(progress * 100)} %`}
                      </span>
                    </div>
                  ) : (
                    <button type="button" className="secondary" onClick={() => void rebuild(p.name)}>
                      Rebuild
                    </button>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <ActionError error={actionError} />
    </section>
  );
}
