import jsonata from 'jsonata';
import { NodeError } from '../dag/node-error.js';
import type { NodeExecutor } from './node-executor.js';

/** Bounds on one evaluation, enforced by JSONata itself while it evaluates. */
export interface TransformLimits {
  /** Wall-clock budget of one evaluation (JSONata error D1012 past it). */
  readonly timeoutMs: number;
  /** Deepest evaluation stack (D1011: runaway recursion). */
  readonly maxDepth: number;
  /** Longest sequence an evaluation may build (D2015). */
  readonly maxSequence: number;
}

export const DEFAULT_TRANSFORM_LIMITS: TransformLimits = { timeoutMs: 1_000, maxDepth: 500, maxSequence: 100_000 };

/**
 * Evaluates the node's JSONata expression over its input (`{ input, nodes }`). JSONata is a
 * declarative language with no access to the process: nothing is handed to eval or Function.
 * Every failure (syntax, evaluation, a limit) is `transform_failed`, not retryable: the same
 * expression over the same input fails the same way.
 */
export function createTransformNode(limits: TransformLimits = DEFAULT_TRANSFORM_LIMITS): NodeExecutor<'transform'> {
  return async (node, ctx) => {
    let expression: jsonata.Expression;
    try {
      expression = jsonata(node.config.expression, {
        timeout: limits.timeoutMs,
        stack: limits.maxDepth,
        sequence: limits.maxSequence,
      });
    } catch (error) {
      throw failed('the expression does not parse', error);
    }
    ctx.signal.throwIfAborted();
    let result: unknown;
    try {
      result = await expression.evaluate(ctx.input);
    } catch (error) {
      throw failed('the expression failed', error);
    }
    return toJson(result);
  };
}

function failed(what: string, error: unknown): NodeError {
  // JSONata throws plain objects carrying `code` and `message`.
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  const detail = typeof message === 'string' ? message : String(error);
  return new NodeError('transform_failed', `${what}: ${typeof code === 'string' ? `${code} ` : ''}${detail}`, false, {
    cause: error,
  });
}

/** JSONata may yield sequences (arrays with extra fields), functions or nothing: keep plain JSON. */
function toJson(result: unknown): unknown {
  if (result === undefined) return null;
  let text: string | undefined;
  try {
    text = JSON.stringify(result, (_key, value: unknown) => (isFunctionValue(value) ? undefined : value));
  } catch (error) {
    throw failed('the result is not JSON', error);
  }
  return text === undefined ? null : (JSON.parse(text) as unknown);
}

/** A JavaScript function, or a JSONata lambda (an object carrying its closure). */
function isFunctionValue(value: unknown): boolean {
  return (
    typeof value === 'function' ||
    (typeof value === 'object' && value !== null && ('_jsonata_lambda' in value || '_jsonata_function' in value))
  );
}
