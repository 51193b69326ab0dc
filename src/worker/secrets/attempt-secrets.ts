import type { SecretSource } from '../dag/dag.types.js';
import { NodeError } from '../dag/node-error.js';
import { ClaimRefusedError } from '../runtime/control-plane.port.js';
import type { SecretRedactor } from './secret-redactor.js';

/** Asks the control plane for the values of `names` (the attempt's live claim answers, nobody else). */
export type ResolveSecrets = (names: readonly string[]) => Promise<ReadonlyMap<string, string>>;

/**
 * The secrets of one attempt: asked for once, when the first node that needs them runs, for
 * exactly the names the graph references, over the worker's HTTP client; kept in memory for
 * the attempt only, and handed to the redactor the moment they arrive. A failed resolution is
 * not remembered: a later try of the node asks again.
 */
export class AttemptSecrets implements SecretSource {
  private resolved: Promise<ReadonlyMap<string, string>> | null = null;

  constructor(
    private readonly names: readonly string[],
    private readonly resolve: ResolveSecrets,
    private readonly redactor: SecretRedactor,
  ) {}

  values(): Promise<ReadonlyMap<string, string>> {
    this.resolved ??= this.fetch().catch((error: unknown) => {
      this.resolved = null;
      throw error;
    });
    return this.resolved;
  }

  private async fetch(): Promise<ReadonlyMap<string, string>> {
    if (this.names.length === 0) return new Map();
    let values: ReadonlyMap<string, string>;
    try {
      values = await this.resolve(this.names);
    } catch (error) {
      throw resolutionFailure(error);
    }
    // Redact before anything else can see them.
    this.redactor.add(values);
    const missing = this.names.filter((name) => !values.has(name));
    if (missing.length > 0)
      throw new NodeError('secret_not_found', `the control plane did not answer the secret ${missing.join(', ')}`, false);
    return values;
  }
}

/** What a node reports when its secrets could not be had: never retried unless the control plane was merely unreachable. */
function resolutionFailure(error: unknown): NodeError {
  if (error instanceof ClaimRefusedError) {
    if (error.code === 'secret_not_found') return new NodeError('secret_not_found', error.message, false);
    if (error.code === 'stale_attempt' || error.code === 'lease_expired') {
      return new NodeError(error.code, `secrets were refused: the claim is no longer live (${error.message})`, false);
    }
    return new NodeError('secret_resolution_refused', `secrets were refused: ${error.message}`, false);
  }
  return new NodeError(
    'secret_resolution_unavailable',
    `secrets could not be resolved: ${error instanceof Error ? error.message : String(error)}`,
    true,
  );
}
