import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EgressDeniedError, EgressError } from './egress-errors.js';
import { createEgressGuard, type EgressGuard, type ResolveHost } from './egress-guard.js';
import { json, redirect, startLoopbackServer, type LoopbackServer } from '../../../test/support/worker/egress/loopback-server.js';

// End to end against servers on loopback addresses only; every refused target is loopback too.
describe('egress guard', () => {
  let v4: LoopbackServer;
  let v6: LoopbackServer;
  const LOOPBACK = { cidrs: ['127.0.0.0/8', '::1/128'] };

  beforeAll(async () => {
    v4 = await startLoopbackServer('127.0.0.1');
    v6 = await startLoopbackServer('::1');
    for (const server of [v4, v6]) server.route('/hello', json(200, { hello: 'world' }));
  });
  afterAll(async () => {
    await v4.close();
    await v6.close();
  });

  const get = (guard: EgressGuard, url: string, headers: Record<string, string> = {}) =>
    guard.request({ method: 'GET', url, headers, signal: new AbortController().signal });

  const countRequests = () => v4.requests.length + v6.requests.length;

  describe('by default', () => {
    const guard = createEgressGuard();

    it.each([
      ['127.0.0.1', () => `http://127.0.0.1:${v4.port}/hello`],
      ['localhost', () => `http://localhost:${v4.port}/hello`],
      ['[::1]', () => `http://[::1]:${v6.port}/hello`],
    ])('refuses %s before connecting', async (_host, url) => {
      const before = countRequests();
      const error = await get(guard, url()).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(EgressDeniedError);
      expect(error).toMatchObject({ code: 'egress_denied', retryable: false, addressClass: 'loopback' });
      expect(countRequests()).toBe(before);
    });

    it.each(['ftp://127.0.0.1/file', 'file:///etc/passwd', 'not a url'])('refuses %s', async (url) => {
      await expect(get(guard, url)).rejects.toBeInstanceOf(EgressDeniedError);
    });
  });

  describe('when the allowlist permits loopback', () => {
    const guard = createEgressGuard({ allow: LOOPBACK });

    it.each([
      ['127.0.0.1', () => `http://127.0.0.1:${v4.port}/hello`],
      ['localhost', () => `http://localhost:${v4.port}/hello`],
      ['[::1]', () => `http://[::1]:${v6.port}/hello`],
    ])('reaches %s', async (_host, url) => {
      const response = await get(guard, url());

      expect(response.status).toBe(200);
      expect(JSON.parse(response.body.toString('utf8'))).toEqual({ hello: 'world' });
      expect(response.headers['content-type']).toBe('application/json');
    });

    it('allows a name by host allowlist without allowing the address literal', async () => {
      const byName = createEgressGuard({ allow: { hosts: ['localhost'] } });

      expect((await get(byName, `http://localhost:${v4.port}/hello`)).status).toBe(200);
      await expect(get(byName, `http://127.0.0.1:${v4.port}/hello`)).rejects.toBeInstanceOf(EgressDeniedError);
    });
  });

  describe('resolution', () => {
    it('connects to the address it checked, keeping the original Host', async () => {
      const resolved: string[] = [];
      // The system resolver says localhost is 127.0.0.1, where nothing listens on v6.port.
      const resolve: ResolveHost = async (hostname) => {
        resolved.push(hostname);
        return [{ address: '::1', family: 6 }];
      };
      const guard = createEgressGuard({ allow: LOOPBACK, resolve });

      const response = await get(guard, `http://localhost:${v6.port}/hello`);

      expect(response.status).toBe(200);
      expect(resolved).toEqual(['localhost']);
      expect(v6.requests.at(-1)!.headers.host).toBe(`localhost:${v6.port}`);
    });

    it('refuses when any resolved address is refused', async () => {
      const resolve: ResolveHost = async () => [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ];
      const guard = createEgressGuard({ allow: { cidrs: ['127.0.0.1/32'] }, resolve });

      await expect(get(guard, `http://localhost:${v4.port}/hello`)).rejects.toMatchObject({ code: 'egress_denied', address: '::1' });
    });

    it('reports a name that does not resolve', async () => {
      const resolve: ResolveHost = async () => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
      };
      const guard = createEgressGuard({ allow: LOOPBACK, resolve });

      await expect(get(guard, 'http://nowhere.invalid/')).rejects.toMatchObject({ code: 'egress_dns_failed', retryable: false });
    });
  });

  describe('redirects', () => {
    const allowOnly127001 = createEgressGuard({ allow: { cidrs: ['127.0.0.1/32'] } });

    it.each([
      ['[::1]', () => `http://[::1]:${v6.port}/hello`],
      ['127.0.0.2', () => `http://127.0.0.2:${v4.port}/hello`],
    ])('refuses a hop to a refused target (%s) without contacting it', async (_host, target) => {
      v4.route('/to-refused', redirect(302, target()));
      const v6Before = v6.requests.length;

      await expect(get(allowOnly127001, `${v4.origin}/to-refused`)).rejects.toMatchObject({ code: 'egress_denied' });
      expect(v6.requests.length).toBe(v6Before);
    });

    it('follows allowed hops, checking each', async () => {
      v4.route('/hop', redirect(307, `${v6.origin}/hello`));
      const response = await get(createEgressGuard({ allow: LOOPBACK }), `${v4.origin}/hop`);

      expect(response).toMatchObject({ status: 200, url: `${v6.origin}/hello`, redirects: 1 });
    });

    it('stops after 5 redirects', async () => {
      v4.route('/loop', redirect(302, '/loop'));
      const before = v4.requests.length;

      const error = await get(allowOnly127001, `${v4.origin}/loop`).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(EgressError);
      expect(error).toMatchObject({ code: 'egress_too_many_redirects', retryable: false });
      expect(v4.requests.length - before).toBe(6);
    });

    it('turns a POST into a GET on 303 and drops credentials across origins', async () => {
      v4.route('/see-other', redirect(303, `${v6.origin}/hello`));
      const guard = createEgressGuard({ allow: LOOPBACK });

      await guard.request({
        method: 'POST',
        url: `${v4.origin}/see-other`,
        headers: { Authorization: 'Bearer secret', 'Content-Type': 'application/json', 'Idempotency-Key': 'k1' },
        body: '{"a":1}',
        signal: new AbortController().signal,
      });

      const hop = v6.requests.at(-1)!;
      expect(hop).toMatchObject({ method: 'GET', body: '' });
      expect(hop.headers.authorization).toBeUndefined();
      expect(hop.headers['content-type']).toBeUndefined();
      expect(hop.headers['idempotency-key']).toBe('k1');
    });
  });

  it('refuses a response larger than the limit', async () => {
    v4.route('/big', (_request, response) => void response.writeHead(200).end('x'.repeat(100)));
    const guard = createEgressGuard({ allow: LOOPBACK, maxResponseBytes: 10 });

    await expect(get(guard, `${v4.origin}/big`)).rejects.toMatchObject({ code: 'egress_response_too_large' });
  });
});
