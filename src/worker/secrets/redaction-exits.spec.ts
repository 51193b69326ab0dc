import { describe, expect, it } from '@jest/globals';
import type { OutgoingMessage } from '../../core/bus.port.js';
import type { NodeContext } from '../dag/dag.types.js';
import { NodeError } from '../dag/node-error.js';
import { ResultPublisher } from '../runtime/result-publisher.js';
import type { ResultSink } from '../runtime/result-sink.js';
import { AttemptSecrets } from './attempt-secrets.js';
import { redactingExecutor } from './redacting-executor.js';
import { SecretRedactor } from './secret-redactor.js';
import { graphOf } from '../../../test/support/worker/dag/scripted-nodes.js';
import { contextFor } from '../../../test/support/worker/nodes/node-context.js';
import { ClaimRefusedError, ControlPlaneUnavailableError } from '../runtime/control-plane.port.js';

const CANARY = 'canary-5f0e8d1c2b3a49786';
const node = graphOf([{ id: 'H', type: 'noop' }]).nodes[0];

function attempt(resolve = async () => new Map([['TOKEN', CANARY]])) {
  const redactor = new SecretRedactor();
  const asked: (readonly string[])[] = [];
  const secrets = new AttemptSecrets(
    ['TOKEN'],
    (names) => {
      asked.push(names);
      return resolve();
    },
    redactor,
  );
  return { redactor, secrets, asked };
}

describe('a node run with secrets', () => {
  it('redacts the output it returns before the run sees it', async () => {
    const { redactor, secrets } = attempt();
    const execute = redactingExecutor(
      async (_node, ctx: NodeContext) => ({ echoed: `Bearer ${(await ctx.secrets!.values()).get('TOKEN')}` }),
      secrets,
      redactor,
    );
    expect(await execute(node, contextFor('H'))).toEqual({ echoed: 'Bearer [redacted:TOKEN]' });
  });

  it('redacts the message of a NodeError, keeping its code and retryability, and of any other error', async () => {
    const { redactor, secrets } = attempt();
    const failing = (error: (value: string) => unknown) =>
      redactingExecutor(
        async (_node, ctx: NodeContext) => {
          throw error((await ctx.secrets!.values()).get('TOKEN')!);
        },
        secrets,
        redactor,
      )(node, contextFor('H')).catch((e: unknown) => e);
    const nodeError = await failing((value) => new NodeError('http_500', `upstream echoed ${value}`, true));
    expect(nodeError).toBeInstanceOf(NodeError);
    expect(nodeError).toMatchObject({ code: 'http_500', retryable: true, message: 'upstream echoed [redacted:TOKEN]' });
    expect((nodeError as Error).cause).toBeUndefined();
    const plain = await failing((value) => new TypeError(`bad ${value}`));
    expect(plain).toMatchObject({ code: 'node_error', message: 'bad [redacted:TOKEN]' });
  });

  it('asks once per attempt for the names of the graph, and again only after a failure', async () => {
    let calls = 0;
    const { secrets, asked } = attempt(async () => {
      calls += 1;
      if (calls === 1) throw new ControlPlaneUnavailableError('down');
      return new Map([['TOKEN', CANARY]]);
    });
    await expect(secrets.values()).rejects.toMatchObject({ code: 'secret_resolution_unavailable', retryable: true });
    await Promise.all([secrets.values(), secrets.values(), secrets.values()]);
    expect(asked).toEqual([['TOKEN'], ['TOKEN']]);
  });

  it.each([
    ['secret_not_found', 'secret_not_found'],
    ['stale_attempt', 'stale_attempt'],
    ['lease_expired', 'lease_expired'],
    ['forbidden', 'secret_resolution_refused'],
  ])('fails the node without retry when the control plane refuses with %s', async (code, expected) => {
    const { secrets } = attempt(async () => {
      throw new ClaimRefusedError(409, code, 'no');
    });
    await expect(secrets.values()).rejects.toMatchObject({ code: expected, retryable: false });
  });
});

describe('results leaving the worker', () => {
  it('are redacted by the attempt’s redactor, held ones too, whatever node produced them', async () => {
    const sent: OutgoingMessage[] = [];
    const sink: ResultSink = { handledOnSend: false, send: async (messages) => void sent.push(...messages) };
    const redactor = new SecretRedactor();
    const publisher = new ResultPublisher(
      sink,
      { executionId: 'e', attemptId: 'a', workerId: 'w', fencingToken: 1 },
      { redact: (result) => redactor.value(result) },
    );
    redactor.add(new Map([['TOKEN', CANARY]]));
    publisher.hold({ kind: 'node_succeeded', nodeId: 'pure', output: { copied: CANARY } });
    await publisher.publish({
      kind: 'attempt_failed',
      error: { code: 'http_500', message: `said ${Buffer.from(CANARY).toString('base64')}` },
    });
    expect(sent).toHaveLength(2);
    for (const message of sent) expect(message.value).not.toContain(CANARY);
    expect(JSON.parse(sent[1].value).error.message).toBe('said [redacted:TOKEN]');
  });
});
