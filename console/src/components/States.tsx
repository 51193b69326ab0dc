// The states every page shares: loading, empty, error and forbidden, each designed once.
import type { ReactNode } from 'react';
import { ApiError } from '../lib/api';

export function Loading(props: { what?: string }) {
  return (
    <div className="state state-loading" role="status">
      <span className="spinner" aria-hidden="true" /> Loading {props.what ?? ''}…
    </div>
  );
}

export function Empty(props: { title: string; children?: ReactNode }) {
  return (
    <div className="state state-empty">
      <h3>{props.title}</h3>
      {props.children}
    </div>
  );
}

export function Forbidden(props: { detail?: string }) {
  return (
    <div className="state state-forbidden" role="alert">
      <h3>Not allowed</h3>
      <p>{props.detail ?? 'Your token does not have the role this page needs.'}</p>
    </div>
  );
}

export function ErrorState(props: { error: unknown; retry?: () => void }) {
  const { error } = props;
  if (error instanceof ApiError && error.status === 403) return <Forbidden detail={error.message} />;
  if (error instanceof ApiError && error.status === 404) {
    return (
      <div className="state state-error" role="alert">
        <h3>Not found</h3>
        <p>{error.message}. It does not exist, or your token has no role in its workspace.</p>
      </div>
    );
  }
  return (
    <div className="state state-error" role="alert">
      <h3>Something went wrong</h3>
      <p>
        {error instanceof Error ? error.message : String(error)}
        {error instanceof ApiError ? <code className="code-tag">{error.code}</code> : null}
      </p>
      {props.retry ? (
        <button type="button" onClick={props.retry}>
          Try again
        </button>
      ) : null}
    </div>
  );
}

/** A problem answered to an action (a button), shown beside it. */
export function ActionError(props: { error: unknown }) {
  if (props.error === null || props.error === undefined) return null;
  const error = props.error;
  return (
    <p className="action-error" role="alert">
      {error instanceof Error ? error.message : String(error)}
      {error instanceof ApiError ? <code className="code-tag">{error.code}</code> : null}
    </p>
  );
}

export function StatusBadge(props: { status: string | null }) {
  return <span className={`badge status-${props.status ?? 'unknown'}`}>{(props.status ?? 'unknown').replace('_', ' ')}</span>;
}

export function Json(props: { value: unknown }) {
  return <pre className="json">{props.value === undefined ? '—' : JSON.stringify(props.value, null, 2)}</pre>;
}
