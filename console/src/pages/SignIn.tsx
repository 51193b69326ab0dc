import { useState, type FormEvent } from 'react';
import { api, ApiError } from '../lib/api';

/** Paste a token; the server answers with an HttpOnly session cookie. The token is not kept by the page. */
export function SignIn(props: { onSignedIn: () => void }) {
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await api('POST', '/v1/sessions', { body: { token: token.trim() } });
      setToken('');
      props.onSignedIn();
    } catch (caught) {
      setError(
        caught instanceof ApiError && caught.status === 401 ? 'This token is not known (or was revoked).' : (caught as Error).message,
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="signin">
      <form onSubmit={(event) => void submit(event)} className="card">
        <h1>Flostra</h1>
        <p className="muted">Sign in with a token from the tokens file. `npm start` prints a dev admin token.</p>
        <label>
          <span>Token</span>
          <input
            name="token"
            type="password"
            autoComplete="off"
            autoFocus
            value={token}
            onChange={(event) => setToken(event.target.value)}
            placeholder="paste your token"
          />
        </label>
        {error !== null ? (
          <p className="action-error" role="alert">
            {error}
          </p>
        ) : null}
        <button type="submit" disabled={busy || token.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </div>
  );
}
