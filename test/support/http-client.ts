export interface HttpResult<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface RequestOptions {
  token?: string | null;
  body?: unknown;
  /** Sent as is instead of JSON.stringify(body): bytes too, for bodies that are not valid text. */
  rawBody?: string | Uint8Array;
  headers?: Record<string, string>;
}

export interface ClientOptions {
  /** Sees every response's raw text (a test that searches what left the server records them). */
  onResponse?: (response: { method: string; path: string; status: number; text: string }) => void;
}

/** A small JSON client for the API under test (loopback only). */
export function client(baseUrl: string, clientOptions: ClientOptions = {}) {
  async function request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<HttpResult<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers['authorization'] = `Bearer ${options.token}`;
    let body: string | Uint8Array | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(baseUrl + path, { method, headers, body });
    const text = await response.text();
    clientOptions.onResponse?.({ method, path, status: response.status, text });
    let parsed: unknown = text;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, body: parsed as T, headers: response.headers };
  }
  return {
    request,
    get: <T = any>(path: string, options?: RequestOptions) => request<T>('GET', path, options),
    post: <T = any>(path: string, options?: RequestOptions) => request<T>('POST', path, options),
    put: <T = any>(path: string, options?: RequestOptions) => request<T>('PUT', path, options),
  };
}

export type ApiClient = ReturnType<typeof client>;
