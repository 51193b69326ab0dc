import { TOPICS, type Bus } from '../core/bus.port.js';
import type { EventStore } from '../core/event-store.port.js';
import type { SqlClient } from '../postgres/sql-client.port.js';

export type CheckResult = 'up' | 'down';
export type DependencyName = 'eventStore' | 'readModels' | 'kafka';

/** How long one probe may take before its dependency counts as down. */
export const PROBE_TIMEOUT_MS = 3_000;

/** One dependency's probe: resolves when it answers, rejects (or never settles) when not. */
type Probe = () => Promise<unknown>;

/**
 * The dependencies a process's roles use, each with a cheap probe: the event store's head, a
 * `select 1` on the read-model database, and Kafka's end offsets of a topic the roles use (only
 * when the bus is Kafka and a role here uses it). A probe still running is shared by later
 * checks rather than started again, so a hanging dependency does not pile requests up.
 */
export class Readiness {
  private readonly probes = new Map<DependencyName, Probe>();
  private readonly inFlight = new Map<DependencyName, Promise<CheckResult>>();

  constructor(deps: { store: EventStore; readModelSql: SqlClient; bus: Bus; kafkaTopic: string | null }) {
    this.probes.set('eventStore', () => deps.store.headPosition());
    this.probes.set('readModels', () => deps.readModelSql.query('select 1'));
    const topic = deps.kafkaTopic;
    if (deps.bus.durable && topic !== null) this.probes.set('kafka', () => deps.bus.endOffsets(topic));
  }

  /** Every dependency checked at once, named. */
  async check(): Promise<Record<string, CheckResult>> {
    const names = [...this.probes.keys()];
    const results = await Promise.all(names.map((name) => this.checkOne(name)));
    return Object.fromEntries(names.map((name, index) => [name, results[index]]));
  }

  private checkOne(name: DependencyName): Promise<CheckResult> {
    let running = this.inFlight.get(name);
    if (running === undefined) {
      running = within(this.probes.get(name)!(), PROBE_TIMEOUT_MS).finally(() => this.inFlight.delete(name));
      this.inFlight.set(name, running);
    }
    return running;
  }
}

async function within(probe: Promise<unknown>, timeoutMs: number): Promise<CheckResult> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<CheckResult>((resolve) => (timer = setTimeout(() => resolve('down'), timeoutMs)));
  try {
    return await Promise.race([
      probe.then(
        (): CheckResult => 'up',
        (): CheckResult => 'down',
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The Kafka topic whose offsets tell whether the broker answers the roles here; null when none of them uses Kafka. */
export function kafkaTopicOf(roles: readonly string[]): string | null {
  if (roles.includes('dispatcher') || roles.includes('worker')) return TOPICS.dispatch;
  if (roles.includes('ingestor')) return TOPICS.results;
  return null;
}
