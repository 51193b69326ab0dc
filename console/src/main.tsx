import '@xyflow/react/dist/style.css';
import './styles.css';
import { StrictMode, useCallback, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { api, get, onSignedOut, setCsrf, type Me } from './lib/api';
import { Link, navigate, useLocation } from './lib/router';
import { ErrorState, Loading } from './components/States';
import { SignIn } from './pages/SignIn';
import { Workflows } from './pages/Workflows';
import { Workflow } from './pages/Workflow';
import { Executions } from './pages/Executions';
import { Execution } from './pages/Execution';
import { Admin } from './pages/Admin';

type Auth = { state: 'checking' } | { state: 'signed-out' } | { state: 'error'; error: unknown } | { state: 'signed-in'; me: Me };

/** Who is signed in, and the CSRF value of the session (every write sends it). */
async function loadSession(): Promise<Me> {
  const me = await get<Me>('/v1/me');
  const { csrf } = await get<{ csrf: string }>('/v1/sessions/csrf');
  setCsrf(csrf);
  return me;
}

function App() {
  const [auth, setAuth] = useState<Auth>({ state: 'checking' });
  const check = useCallback(() => {
    loadSession().then(
      (me) => setAuth({ state: 'signed-in', me }),
      (error: unknown) => setAuth((error as { status?: number }).status === 401 ? { state: 'signed-out' } : { state: 'error', error }),
    );
  }, []);
  useEffect(check, [check]);
  useEffect(
    () =>
      onSignedOut(() => {
        setCsrf(null);
        setAuth({ state: 'signed-out' });
      }),
    [],
  );

  if (auth.state === 'checking') return <Loading what="the console" />;
  if (auth.state === 'error') return <ErrorState error={auth.error} retry={check} />;
  if (auth.state === 'signed-out') return <SignIn onSignedIn={check} />;
  const signOut = async () => {
    await api('DELETE', '/v1/sessions').catch(() => undefined);
    setCsrf(null);
    setAuth({ state: 'signed-out' });
    navigate('/', true);
  };
  return <Shell me={auth.me} signOut={() => void signOut()} />;
}

function Shell(props: { me: Me; signOut: () => void }) {
  const { me } = props;
  const { path, query } = useLocation();
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const isAdmin = me.global.includes('system-admin');
  const workspaceFromPath = parts[0] === 'workspaces' ? parts[1] : undefined;
  const [workspace, setWorkspace] = useState<string | undefined>(workspaceFromPath ?? me.workspaces[0]?.workspaceId);
  useEffect(() => {
    if (workspaceFromPath !== undefined) setWorkspace(workspaceFromPath);
  }, [workspaceFromPath]);

  useEffect(() => {
    if (parts.length === 0) {
      if (workspace !== undefined) navigate(`/workspaces/${encodeURIComponent(workspace)}/workflows`, true);
      else if (isAdmin) navigate('/admin', true);
    }
  }, [parts.length, workspace, isAdmin]);

  let page;
  if (parts[0] === 'workspaces' && parts[1] !== undefined && parts[2] === 'workflows' && parts[3] !== undefined)
    page = <Workflow me={me} workspaceId={parts[1]} name={parts[3]} revision={query.get('revision')} />;
  else if (parts[0] === 'workspaces' && parts[1] !== undefined && parts[2] === 'workflows')
    page = <Workflows me={me} workspaceId={parts[1]} />;
  else if (parts[0] === 'workspaces' && parts[1] !== undefined && parts[2] === 'executions')
    page = <Executions workspaceId={parts[1]} query={query} />;
  else if (parts[0] === 'executions' && parts[1] !== undefined) page = <Execution me={me} executionId={parts[1]} />;
  else if (parts[0] === 'admin') page = <Admin me={me} />;
  else if (parts.length === 0 && workspace === undefined && !isAdmin)
    page = (
      <div className="state state-empty">
        <h3>No workspace</h3>
        <p>Your token has no role in any workspace. Ask an administrator to add one to the tokens file.</p>
      </div>
    );
  else if (parts.length === 0) page = <Loading />;
  else
    page = (
      <div className="state state-empty">
        <h3>No such page</h3>
        <p>
          <Link to="/">Go to the start page</Link>
        </p>
      </div>
    );

  const ws = workspace === undefined ? undefined : encodeURIComponent(workspace);
  return (
    <div className="app">
      <header className="topbar">
        <Link to="/" className="brand">
          Flostra
        </Link>
        {me.workspaces.length > 0 ? (
          <label className="workspace-picker">
            <span>Workspace</span>
            <select
              value={workspace ?? ''}
              onChange={(event) => {
                setWorkspace(event.target.value);
                navigate(`/workspaces/${encodeURIComponent(event.target.value)}/${parts[2] === 'executions' ? 'executions' : 'workflows'}`);
              }}
            >
              {me.workspaces.map((w) => (
                <option key={w.workspaceId} value={w.workspaceId}>
                  {w.workspaceId} ({w.role})
                </option>
              ))}
            </select>
          </label>
        ) : null}
        <nav>
          {ws !== undefined ? <Link to={`/workspaces/${ws}/workflows`}>Workflows</Link> : null}
          {ws !== undefined ? <Link to={`/workspaces/${ws}/executions`}>Executions</Link> : null}
          {isAdmin ? <Link to="/admin">Admin</Link> : null}
        </nav>
        <span className="who" title="signed in as">
          {me.subject}
        </span>
        <button type="button" className="secondary" onClick={props.signOut}>
          Sign out
        </button>
      </header>
      <main>{page}</main>
    </div>
  );
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
