import { describe, expect, it } from '@jest/globals';
import type { CommandBus, QueryBus } from '@nestjs/cqrs';
import { TokenRegistry } from '../auth/token-registry.js';
import { createLogger } from '../core/logger.js';
import { ClaimRefusedError, ControlPlaneUnavailableError } from '../worker/runtime/control-plane.port.js';
import { InProcessControlPlane } from './in-process-control-plane.js';

const EXECUTION = '0e6c5f0a-8d7e-4c39-9a55-2f1d2c3b4a5e';
const ATTEMPT = '5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d';

/** An in-process control plane over a command bus that answers with `answer` and counts its commands. */
function planeWith(answer: () => Promise<unknown>, token = 'worker-token') {
  const sent: unknown[] = [];
  const logged: string[] = [];
  const commands = {
    execute: (command: unknown) => {
      sent.push(command);
      return answer();
    },
  } as unknown as CommandBus;
  const plane = new InProcessControlPlane({
    commands,
    queries: {} as QueryBus,
    registry: new TokenRegistry([{ token: 'worker-token', subject: 'worker', workspaces: {}, global: ['worker'] }]),
    logger: createLogger({ level: 'error', write: (line) => void logged.push(line) }),
    token,
    timeoutMs: 20,
  });
  return { plane, sent, logged };
}

describe('InProcessControlPlane', () => {
  it('refuses an unknown token as 401 before any command is sent', async () => {
    const { plane, sent } = planeWith(() => Promise.resolve({}), 'not-a-token');
    const refused = await plane.heartbeat(EXECUTION, ATTEMPT, 'w-1', 1).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ClaimRefusedError);
    expect(refused).toMatchObject({ status: 401, code: 'unauthenticated' });
    expect(sent).toEqual([]);
  });

  it('fails as unavailable when the handler does not answer in time, as the HTTP client does', async () => {
    const { plane } = planeWith(() => new Promise(() => undefined));
    await expect(plane.heartbeat(EXECUTION, ATTEMPT, 'w-1', 1)).rejects.toThrow(ControlPlaneUnavailableError);
  });

  it('turns an unexpected error into unavailable (a 500 over HTTP) and logs it', async () => {
    const { plane, logged } = planeWith(() => Promise.reject(new Error('socket closed')));
    const failed = await plane
      .complete(EXECUTION, ATTEMPT, { workerId: 'w-1', fencingToken: 1, outcome: 'succeeded', output: {} })
      .catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(ControlPlaneUnavailableError);
    expect(String(failed)).toContain('500');
    expect(logged.join('\n')).toContain('socket closed');
  });

  it('answers the heartbeat with the lease and the cancel request only', async () => {
    const { plane, sent } = planeWith(() =>
      Promise.resolve({ leaseExpiresAt: '2031-01-01T00:00:30.000Z', cancelRequested: true, position: '9' }),
    );
    await expect(plane.heartbeat(EXECUTION.toUpperCase(), ATTEMPT, 'w-1', 3)).resolves.toEqual({
      leaseExpiresAt: '2031-01-01T00:00:30.000Z',
      cancelRequested: true,
    });
    // The same command the route builds: ids normalised, the principal the token stands for.
    expect(sent).toEqual([expect.objectContaining({ executionId: EXECUTION, attemptId: ATTEMPT, workerId: 'w-1', fencingToken: 3 })]);
    expect((sent[0] as { principal: { subject: string } }).principal.subject).toBe('worker');
  });
});
