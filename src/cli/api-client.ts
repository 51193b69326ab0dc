import { CliError, EXIT, problemError } from './errors.js';

/** How long a plain request may take before the server counts as unavailable. */
const REQUEST_TIMEOUT_MS = 30_000;

export interface RequestOptions {
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface ApiAnswer<T> {
  status: number;
  body: T;
}

/** The message of a failure to reach `url`, from fetch's cause (ECONNREFUSED, ENOTFOUND, …). */
export function unreachable(url: string, error: unknown): CliError {
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  const why = cause?.code ?? cause?.message ?? (error as Error)?.message ?? String(error);
  return new CliError(`cannot reach the Flostra server at ${url} (${why})`, EXIT.unavailable);
}

/** A small JSON client of the Flostra HTTP API: bearer token, problem+json errors as CliError. */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly token: string | null,
  ) {}

  url(path: string, query: RequestOptions['query'] = {}): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
    const search = params.toString();
    return `${this.baseUrl}${path}${search ? `?${search}` : ''}`;
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    const headers: Record<string, string> = { accept: 'application/json, application/problem+json', ...extra };
    if (this.token !== null) headers.authorization = `Bearer ${this.token}`;
    return headers;
  }

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<ApiAnswer<T>> {
    const headers = this.headers(options.headers);
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    let response: Response;
    let text: string;
    try {
      response = await fetch(this.url(path, options.query), { method, headers, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      text = await response.text();
    } catch (error) {
      if ((error as Error)?.name === 'TimeoutError')
        throw new CliError(`the Flostra server at ${this.baseUrl} did not answer within ${REQUEST_TIMEOUT_MS / 1000} s`, EXIT.unavailable);
      throw unreachable(this.baseUrl, error);
    }
    let parsed: unknown = null;
    if (text !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    if (!response.ok) throw problemError(response.status, parsed);
    return { status: response.status, body: parsed as T };
  }

  get<T>(path: string, query?: RequestOptions['query']): Promise<ApiAnswer<T>> {
    return this.request<T>('GET', path, { query });
  }

  post<T>(path: string, body: unknown, headers?: Record<string, string>): Promise<ApiAnswer<T>> {
    return this.request<T>('POST', path, { body, headers });
  }

  put<T>(path: string, body: unknown): Promise<ApiAnswer<T>> {
    return this.request<T>('PUT', path, { body });
  }
}

/** Path segments are identifiers or UUIDs; encoding keeps anything else from reshaping the path. */
export function segment(value: string): string {
  return encodeURIComponent(value);
}
