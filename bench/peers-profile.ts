/**
 * Reads a V8 CPU profile (the `.cpuprofile` format of `node --cpu-prof` and the inspector's
 * Profiler domain) of Flostra's process and says where the time went: self time per function,
 * per package or source folder, and per crossing of an execution's path. A sample belongs to the
 * crossing of the nearest Flostra function on its stack (library code counts for the Flostra
 * code that called it); samples with no Flostra function on the stack (socket reads, timers,
 * the event loop between requests) count by the library they ran in.
 */

export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Source folders (under src/ or projections/) and files to the crossing they serve. First match wins. */
const CROSSINGS: [RegExp, string][] = [
  [
    /\/src\/executions\/application\/start-execution|\/src\/admission\/|\/src\/workflows\//,
    'start: command (workflow read, admission, decision)',
  ],
  [/\/src\/executions\/application\/(claim|heartbeat)|\/src\/executions\/infrastructure\/worker-protocol/, 'claim: command (api side)'],
  [/\/src\/executions\/infrastructure\/executions\.controller/, 'start: command (api side)'],
  [/\/src\/executions\/domain\//, 'execution decisions and folds (domain)'],
  [/\/src\/executions\//, 'execution commands (other)'],
  [/\/src\/ingest\//, 'result ingest (ingestor)'],
  [/\/src\/dispatch\//, 'dispatch (dispatcher publishes attempts)'],
  [/\/src\/worker\/runtime\/control-plane/, 'claim: worker side (HTTP client)'],
  [/\/src\/worker\//, 'worker (consumes dispatches, runs nodes, publishes results)'],
  [/\/src\/projector\/|\/projections\//, 'projections (read models)'],
  [/\/src\/live\//, 'SSE / live feed'],
  [/\/src\/watchdog\//, 'watchdog'],
  [/\/src\/event-store\//, 'event store: appends, log tail, subscriptions'],
  [/\/src\/postgres\//, 'Postgres client wrapper (pg, wake-ups)'],
  [/\/src\/bus\//, 'bus: Kafka producer/consumer wrapper'],
  [/\/src\/(http|auth|app)\//, 'HTTP layer (Flostra middleware, guard, body, errors)'],
  [/\/src\/core\//, 'core (ids, clock, logger, json)'],
  [/\/bench\//, 'benchmark host (completion subscription)'],
  [/\/src\//, 'other Flostra code'],
];

function isFlostra(url: string): boolean {
  return (
    (url.includes('/dist/src/') || url.includes('/dist/projections/') || url.includes('/dist/bench/')) && !url.includes('node_modules')
  );
}

/** Where a function lives: a package, a Flostra folder, a Node built-in, or a V8 pseudo-frame. */
function where(url: string, functionName: string): string {
  if (url === '') {
    if (functionName.startsWith('(')) return functionName; // (garbage collector), (idle), (program)
    return '(native / V8 builtin)';
  }
  const packageMatch = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (packageMatch !== null) return packageMatch[1];
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const source = /\/dist\/((?:src|projections|bench)\/[^/]+)/.exec(url);
  if (source !== null) return `flostra ${source[1]}`;
  return url;
}

function crossingOf(url: string): string {
  for (const [pattern, crossing] of CROSSINGS) if (pattern.test(url)) return crossing;
  return 'other Flostra code';
}

function libraryBucket(place: string): string {
  if (place === '(garbage collector)') return 'garbage collection';
  if (place === '(program)') return 'V8/native outside JS (program)';
  if (place === '(idle)') return 'idle';
  if (place === 'kafkajs') return 'kafkajs without a Flostra caller (socket reads, response decoding)';
  if (place === 'pg' || place.startsWith('pg-')) return 'pg without a Flostra caller (socket reads, row parsing)';
  if (/express|@nestjs|body-parser|router|path-to-regexp|rxjs/.test(place))
    return 'HTTP framework before Flostra code (express, Nest, rxjs)';
  if (place.startsWith('node:')) return 'Node internals without a Flostra caller (net, http, streams, timers)';
  return `other (${place})`;
}

const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;

export function summarizeCpuProfile(profile: CpuProfile, executions: number) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

  const totalUs = profile.endTime - profile.startTime;
  let idleUs = 0;
  const crossingUs = new Map<string, number>();
  const placeUs = new Map<string, number>();
  const functionUs = new Map<string, number>();
  const add = (map: Map<string, number>, key: string, us: number) => map.set(key, (map.get(key) ?? 0) + us);
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const { functionName, url, lineNumber } = node.callFrame;
    const place = where(url, functionName);
    if (place === '(idle)') {
      idleUs += us;
      continue;
    }
    add(placeUs, place, us);
    add(
      functionUs,
      `${functionName || '(anonymous)'} ${place === url ? url : `${place}${url !== '' ? `:${url.split('/').pop()}:${lineNumber + 1}` : ''}`}`,
      us,
    );
    let crossing: string | undefined;
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frameUrl = byId.get(at)!.callFrame.url;
      if (isFlostra(frameUrl)) {
        crossing = crossingOf(frameUrl);
        break;
      }
    }
    add(crossingUs, crossing ?? libraryBucket(place), us);
  }
  const busyUs = totalUs - idleUs;
  const table = (map: Map<string, number>, limit: number) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([name, us]) => ({
        name,
        ms: round(us / 1000),
        msPerExecution: round(us / 1000 / Math.max(1, executions), 3),
        shareOfBusy: round(us / busyUs, 3),
      }));
  return {
    seconds: round(totalUs / 1e6, 2),
    busySeconds: round(busyUs / 1e6, 2),
    idleShare: round(idleUs / totalUs, 3),
    executions,
    busyMsPerExecution: round(busyUs / 1000 / Math.max(1, executions), 3),
    byCrossing: table(crossingUs, 40),
    byPlace: table(placeUs, 30),
    topSelfFunctions: table(functionUs, 40),
  };
}
