import { Inject, Injectable, type OnApplicationShutdown, Optional } from '@nestjs/common';
import { APP_CONFIG, type AppConfig, DEFAULT_CODE_CHECK_TIMEOUT_MS } from '../../config/config.js';
import { CodeSandbox } from '../../sandbox/code-sandbox.js';
import { CodeCheckTimeoutError, type CodeSyntaxCheck } from '../domain/code-syntax.js';

/**
 * Compiles `code` node sources at publish, in the same QuickJS the worker runs them in (one
 * interpreter thread, started on first use, shared by workspaces in turn): a syntax error is
 * refused before anything is written. Nothing of a source runs: it is compiled only, never
 * evaluated. The sources of one publish get FLOSTRA_CODE_CHECK_TIMEOUT_MS together, waiting for
 * the thread included; beyond it the publish is refused (`CodeCheckTimeoutError`). Should the
 * interpreter itself be unavailable, the publish goes on unchecked: the worker reports a syntax
 * error as `code_error` when the node runs.
 */
@Injectable()
export class CodeSyntaxChecker implements OnApplicationShutdown {
  private readonly sandbox = new CodeSandbox({ threads: 1 });
  private readonly timeoutMs: number;

  constructor(@Optional() @Inject(APP_CONFIG) config?: AppConfig) {
    this.timeoutMs = config?.codeCheckTimeoutMs ?? DEFAULT_CODE_CHECK_TIMEOUT_MS;
  }

  /** The check of one publish in `workspaceId`: its sources share one time limit. */
  forPublish(workspaceId: string): CodeSyntaxCheck {
    // Promise 13 (docs/architecture.md): the compile thread is held per publish for a bounded time.
    const signal = AbortSignal.timeout(this.timeoutMs);
    return async (source) => {
      try {
        return await this.sandbox.syntaxError(source, { workspaceId, signal });
      } catch (error) {
        if (signal.aborted) throw new CodeCheckTimeoutError(this.timeoutMs, { cause: error });
        return null;
      }
    };
  }

  onApplicationShutdown(): Promise<void> {
    return this.sandbox.close();
  }
}
