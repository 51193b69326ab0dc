import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { KafkaBus } from '../../src/bus/kafka/kafka-bus.js';
import { createLogger } from '../../src/core/logger.js';
import { executionStreamId } from '../../src/executions/domain/execution-event.parser.js';
import { eventually } from '../support/eventually.js';
import { client, type ApiClient } from '../support/http-client.js';
import { testKafkaBrokers } from '../support/kafka-broker.js';
import { startTestApp, TOKENS, type TestApp } from '../support/test-app.js';

/** The trace a client started before calling Flostra: its id and the span it sent as parent. */
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const CLIENT_SPAN_ID = 'b7ad6b7169203331';

/** The worker's claim span: the api's server span over HTTP, the in-process control plane's own span in process. */
const CLAIM_SPANS = {
  http: 'POST /v1/executions/:executionId/attempts/:attemptId/claim',
  'in-process': 'worker-protocol claim',
} as const;

describe.each(['http', 'in-process'] as const)(
  'one execution, one trace (the SDK with an in-memory exporter; Postgres and Kafka; worker over %s)',
  (transport) => {
    const claimSpan = CLAIM_SPANS[transport];
    const exporter = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    let t: TestApp;
    let api: ApiClient;
    let bus: KafkaBus;

    beforeAll(async () => {
      provider.register();
      bus = new KafkaBus({ brokers: testKafkaBrokers(), clientId: 'tracing-e2e', logger: createLogger({ level: 'silent' }) });
      t = await startTestApp('postgres', { FLOSTRA_WORKER_TRANSPORT: transport }, { bus, worker: true });
      api = client(t.url);
    }, 120_000);
    afterAll(async () => {
      await t?.close();
      await bus?.close();
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    });

    it('links start → dispatch → attempt → claim → each node → completion in one tree under the caller’s span', async () => {
      const graph = {
        nodes: [
          { id: 'a', type: 'noop' },
          { id: 'b', type: 'transform', config: { expression: 'input' } },
          { id: 'c', type: 'noop' },
        ],
        edges: [
          { from: 'a', to: 'b' },
          { from: 'b', to: 'c' },
        ],
      };
      expect((await api.put('/v1/workspaces/ws-a/workflows/traced', { token: TOKENS.adminA, body: graph })).status).toBe(201);
      const started = await api.post('/v1/workspaces/ws-a/workflows/traced/executions', {
        token: TOKENS.operatorA,
        body: {},
        headers: { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN_ID}-01` },
      });
      expect(started.status).toBe(201);
      const executionId = started.body.executionId as string;
      const view = await eventually(
        async () => {
          const body = (await api.get(`/v1/executions/${executionId}`, { token: TOKENS.viewerA })).body;
          return body.status === 'succeeded' && body;
        },
        { what: 'the execution to succeed', timeoutMs: 60_000 },
      );
      expect(view.traceId).toBe(TRACE_ID);

      // The span whose append recorded the end: its `traceparent` rides on ExecutionSucceeded.
      const stream = await t.store.readStream(executionStreamId(executionId));
      const succeeded = stream.find((e) => e.type === 'ExecutionSucceeded')!;
      expect(String(succeeded.metadata['traceparent'])).toContain(TRACE_ID);
      const endSpanId = String(succeeded.metadata['traceparent']).split('-')[2];
      const spans = await eventually(
        () => {
          const ours = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === TRACE_ID);
          return ours.some((s) => s.spanContext().spanId === endSpanId) && ours;
        },
        { what: 'the span that appended the end to be exported' },
      );

      const names = spans.map((s) => s.name);
      expect(names).toEqual(
        expect.arrayContaining([
          'POST /v1/workspaces/:workspaceId/workflows/:name/executions',
          'dispatch',
          'attempt',
          claimSpan,
          'node noop',
          'node transform',
          'ingest results',
        ]),
      );
      expect(names.filter((n) => n.startsWith('node '))).toHaveLength(3);

      // One tree: the start's span is the only one whose parent is outside Flostra (the caller's),
      // and every other span's parent is a span of this trace, all reaching the start.
      const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
      const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
      const roots = spans.filter((s) => !byId.has(parentOf(s) ?? ''));
      expect(roots.map((s) => [s.name, parentOf(s)])).toEqual([
        ['POST /v1/workspaces/:workspaceId/workflows/:name/executions', CLIENT_SPAN_ID],
      ]);
      const reachesRoot = (s: ReadableSpan): boolean => {
        for (let at: ReadableSpan | undefined = s, hops = 0; at !== undefined && hops <= spans.length; hops++) {
          if (at === roots[0]) return true;
          at = byId.get(parentOf(at) ?? '');
        }
        return false;
      };
      expect(spans.filter((s) => !reachesRoot(s)).map((s) => s.name)).toEqual([]);

      // The chain of the seams, parent by parent.
      const parentName = (name: string) => byId.get(parentOf(spans.find((s) => s.name === name)!) ?? '')?.name;
      expect(parentName('dispatch')).toBe('POST /v1/workspaces/:workspaceId/workflows/:name/executions');
      expect(parentName('attempt')).toBe('dispatch');
      expect(parentName(claimSpan)).toBe('attempt');
      // The claim's append carries the claim span's context, as any command's does.
      const claimed = stream.find((e) => e.type === 'AttemptClaimed')!;
      expect(byId.get(String(claimed.metadata['traceparent']).split('-')[2])?.name).toBe(claimSpan);
      expect(parentName('node transform')).toBe('attempt');
      expect(byId.get(endSpanId)?.name).toBe('ingest results');
      expect(byId.get(parentOf(byId.get(endSpanId)!) ?? '')?.name).toBe('attempt');
    }, 120_000);

    it('starts a new trace for a start without traceparent, and shows it on the execution', async () => {
      const started = await api.post('/v1/workspaces/ws-a/workflows/traced/executions', { token: TOKENS.operatorA, body: {} });
      expect(started.status).toBe(201);
      const view = await eventually(async () => {
        const body = (await api.get(`/v1/executions/${started.body.executionId}`, { token: TOKENS.viewerA })).body;
        return body.traceId !== undefined && body;
      });
      expect(view.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(view.traceId).not.toBe(TRACE_ID);
      expect(exporter.getFinishedSpans().some((s) => s.spanContext().traceId === view.traceId && s.parentSpanContext === undefined)).toBe(
        true,
      );
    }, 60_000);
  },
);
