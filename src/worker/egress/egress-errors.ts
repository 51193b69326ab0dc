/** Stable codes of the egress guard's refusals and failures; the http node reports them as is. */
export type EgressErrorCode = 'egress_denied' | 'egress_dns_failed' | 'egress_too_many_redirects' | 'egress_response_too_large';

export class EgressError extends Error {
  constructor(
    readonly code: EgressErrorCode,
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The guard refused a target. Never retryable: the same URL resolves to the same refusal. */
export class EgressDeniedError extends EgressError {
  constructor(
    message: string,
    /** The refused address and its class, when the refusal came from an address. */
    readonly address?: string,
    readonly addressClass?: string,
  ) {
    super('egress_denied', message, false);
  }
}
