import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';

/** Jiffies of every process on the machine (user + system), from /proc/stat. */
export function machineCpuSeconds(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0] = fields;
  return (user + nice + system + irq + softirq) / 100;
}

/**
 * The load generator's client: node:http over kept-alive connections, the cheapest client Node
 * has (fetch costs several times its CPU), since it shares the machine with what it measures.
 */
const clientAgent = new Agent({ keepAlive: true, maxSockets: 256 });

export function post(url: string, headers: Record<string, string>, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent: clientAgent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => {
      // A kept-alive connection the server closed as idle just as this request went out on
      // it: the server never read the request, so sending it again on a fresh one is safe.
      if (req.reusedSocket && error.code === 'ECONNRESET') post(url, headers, body).then(resolve, reject);
      else reject(error);
    });
    req.end(body);
  });
}

/**
 * Before its first cell, a stack runs this long at 16 concurrent (BENCH_STACK_WARMUP_SECONDS,
 * default 20): the broker's JVM and V8 compile their hot paths over the first thousands of
 * executions. In the runs of 2026-11-30 a first cell at 1 concurrent on a cold stack ran 25–50 % fewer
 * executions per second than the same cell after this warm-up. Each cell still warms up at its
 * own concurrency too.
 */
export const STACK_WARMUP_SECONDS = nonNegativeSeconds('BENCH_STACK_WARMUP_SECONDS', 20);

function nonNegativeSeconds(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds < 0)
    throw new Error(`${name} must be a number of seconds, 0 or more; got ${JSON.stringify(raw)}`);
  return seconds;
}

export interface ClosedLoopResult {
  concurrency: number;
  executions: number;
  executionsPerSec: number;
  latencyMs: { p50: number; p90: number; p99: number };
  /** CPU seconds per execution of this process and of the whole machine. */
  processCpu: number;
  machineCpu: number;
}

/** `concurrency` clients each running `once` back to back for `seconds`. */
export async function closedLoop(concurrency: number, seconds: number, once: () => Promise<number>): Promise<ClosedLoopResult> {
  const latencies: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  const cpuBefore = process.cpuUsage();
  const machineBefore = machineCpuSeconds();
  const began = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) latencies.push(await once());
    }),
  );
  const elapsed = (performance.now() - began) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const machine = machineCpuSeconds() - machineBefore;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => Math.round((latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0) * 10) / 10;
  return {
    concurrency,
    executions: latencies.length,
    executionsPerSec: Math.round((latencies.length / elapsed) * 10) / 10,
    latencyMs: { p50: pct(0.5), p90: pct(0.9), p99: pct(0.99) },
    processCpu: Math.round(((cpu.user + cpu.system) / 1e6 / latencies.length) * 1e5) / 1e5,
    machineCpu: Math.round((machine / latencies.length) * 1e5) / 1e5,
  };
}
