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
  if (place === 'kafkajs') return 'kafkajs without a Flostra caller (request queue, socket writes and reads, decoding)';
  if (place === 'pg' || place.startsWith('pg-')) return 'pg without a Flostra caller (socket writes and reads, row parsing)';
  if (/express|@nestjs|body-parser|router|path-to-regexp|rxjs/.test(place))
    return 'HTTP framework before Flostra code (express, Nest, rxjs)';
  if (place.startsWith('node:')) return 'Node internals without a Flostra caller (net, http, streams, timers)';
  return `other (${place})`;
}

const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;

const SOCKET_WRITES = new Set(['writev', 'writeBuffer', 'writeUtf8String', 'writeLatin1String']);

export function summarizeCpuProfile(profile: CpuProfile, executions: number) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const frames = (id: number) => {
    const list: { functionName: string; url: string }[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) list.push(byId.get(at)!.callFrame);
    return list;
  };

  const totalUs = profile.endTime - profile.startTime;
  let idleUs = 0;
  let profilerUs = 0;
  const crossingUs = new Map<string, number>();
  const placeUs = new Map<string, number>();
  const functionUs = new Map<string, number>();
  const writesUs = new Map<string, number>();
  const add = (map: Map<string, number>, key: string, us: number) => map.set(key, (map.get(key) ?? 0) + us);
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const place = where(url, functionName);
    if (place === '(idle)') {
      idleUs += us;
      continue;
    }
    const stack = frames(id);
    // Stopping the profiler serialises the profile inside the profiled span: not the system's work.
    if (stack.some((frame) => frame.url === 'node:inspector')) {
      profilerUs += us;
      continue;
    }
    add(placeUs, place, us);
    add(
      functionUs,
      `${functionName || '(anonymous)'} ${place === url ? url : `${place}${url !== '' ? `:${url.split('/').pop()}:${lineNumber + 1}` : ''}`}`,
      us,
    );
    const flostra = stack.find((frame) => isFlostra(frame.url));
    // Without a Flostra caller, the nearest library on the stack (a native leaf such as a socket
    // write counts for the package that asked for it), else the leaf's own place.
    const library = stack.find((frame) => frame.url.includes('node_modules'));
    add(
      crossingUs,
      flostra !== undefined ? crossingOf(flostra.url) : libraryBucket(library !== undefined ? where(library.url, '') : place),
      us,
    );
    if (url === '' && SOCKET_WRITES.has(functionName)) {
      const caller = stack.find((frame) => frame.url.includes('node_modules') || isFlostra(frame.url));
      add(writesUs, caller === undefined ? 'node internals (http client)' : where(caller.url, ''), us);
    }
  }
  const busyUs = totalUs - idleUs - profilerUs;
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
  const writesTotal = [...writesUs.values()].reduce((sum, us) => sum + us, 0);
  return {
    note: 'V8 samples the main thread by wall clock: on a busy machine, time the thread spends descheduled falls on whatever it was running (long system calls most of all), so busy time exceeds its CPU time; read the shares, not the absolute figures',
    seconds: round((totalUs - profilerUs) / 1e6, 2),
    busySeconds: round(busyUs / 1e6, 2),
    idleShare: round(idleUs / (totalUs - profilerUs), 3),
    executions,
    busyMsPerExecution: round(busyUs / 1000 / Math.max(1, executions), 3),
    socketWrites: {
      ms: round(writesTotal / 1000),
      msPerExecution: round(writesTotal / 1000 / Math.max(1, executions), 3),
      shareOfBusy: round(writesTotal / busyUs, 3),
      byCaller: table(writesUs, 10),
    },
    byCrossing: table(crossingUs, 40),
    byPlace: table(placeUs, 30),
    topSelfFunctions: table(functionUs, 40),
  };
}
