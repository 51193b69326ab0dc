/** Bounds on one run of user code. */
export interface CodeLimits {
  /** Wall-clock budget of the run, from when an interpreter takes it. */
  readonly timeoutMs: number;
  /** Everything the interpreter allocates for the run (its heap, strings, stack frames). */
  readonly memoryMb: number;
}

/** How a run ended. Never a rejection: every failure of the code is one of these. */
export type CodeOutcome =
  /** The returned value, as JSON text. */
  | { readonly kind: 'value'; readonly json: string }
  /** The source is not a valid function body. */
  | { readonly kind: 'syntax_error'; readonly message: string }
  /** The code threw, or returned something that is not JSON. */
  | { readonly kind: 'error'; readonly message: string }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'memory_exceeded'; readonly message: string }
  /** The caller's signal aborted the run. */
  | { readonly kind: 'cancelled' }
  /** The run was still waiting for a thread when its `dropIfWaiting` signal aborted: it never started. */
  | { readonly kind: 'dropped' }
  /** The interpreter itself failed (it could not start, or crashed): not the code's doing. */
  | { readonly kind: 'unavailable'; readonly message: string };

/** Whose run it is, and what may stop it. */
export interface CodeRunContext {
  /** The workspace whose code it is: threads are shared between workspaces, not between runs. */
  readonly workspaceId: string;
  /** Aborts the run, waiting or running (`cancelled`). */
  readonly signal?: AbortSignal;
  /** Drops the run if it still waits for a thread when this aborts (`dropped`); a run that started goes on. */
  readonly dropIfWaiting?: AbortSignal;
  /** Called once a thread takes the run, before it starts. */
  readonly onStart?: () => void;
}
