import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { CodeSandbox } from '../../sandbox/code-sandbox.js';
import type { CodeSyntaxCheck } from '../domain/code-syntax.js';

/**
 * Compiles `code` node sources at publish, in the same QuickJS sandbox the worker runs them in
 * (one interpreter thread, started on first use, shared by workspaces in turn): a syntax error is
 * refused before anything is written. Nothing runs: the source is only compiled as a function
 * body. Should the interpreter itself be unavailable, the publish goes on unchecked: the worker
 * reports a syntax error as `code_error` when the node runs.
 */
@Injectable()
export class CodeSyntaxChecker implements OnApplicationShutdown {
  private readonly sandbox = new CodeSandbox({ threads: 1 });

  /** The check of one publish in `workspaceId`. */
  forPublish(workspaceId: string): CodeSyntaxCheck {
    return (source) => this.sandbox.syntaxError(source, { workspaceId }).catch(() => null);
  }

  onApplicationShutdown(): Promise<void> {
    return this.sandbox.close();
  }
}
