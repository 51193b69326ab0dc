import pg from 'pg';
import { quoteIdentifier, reusable } from './sql-client.port.js';

type Handler = (payload: string) => void;

const MAX_RECONNECT_DELAY_MS = 5_000;
const NOTIFY = reusable('select pg_notify($1, $2)');
/** What every signal connection calls itself, so that a sender can see whether anyone listens. */
const SIGNAL_APPLICATION_NAME = 'flostra-signals';
/** Another process's signal connection on this database: someone may listen. */
const AUDIENCE = reusable(
  `select exists (select 1 from pg_stat_activity
     where application_name = '${SIGNAL_APPLICATION_NAME}' and datname = current_database() and pid <> pg_backend_pid()) as audience`,
);
async function send(client: pg.Client, channel: string, payload: string): Promise<void> {
  await inTurn(client, { name: NOTIFY.name, text: NOTIFY.text, values: [channel, payload] });
}

const lastQuery = new WeakMap<pg.Client, Promise<unknown>>();

/**
 * One query at a time on the connection: node-postgres queues a query sent while another runs,
 * but warns that pg 9 will refuse it, and wake-ups, LISTENs and audience questions overlap.
 */
function inTurn<R extends pg.QueryResultRow = pg.QueryResultRow>(
  client: pg.Client,
  query: string | pg.QueryConfig,
): Promise<pg.QueryResult<R>> {
  const result = (lastQuery.get(client) ?? Promise.resolve()).then(() => client.query<R>(query));
  lastQuery.set(
    client,
    result.catch(() => undefined),
  );
  return result;
}

/** Distinct payloads owed per channel while alone (the events channel has one per store). */
const MAX_OWED_PER_CHANNEL = 16;

/** How long a sender trusts what it learnt about its audience. */
const AUDIENCE_TTL_MS = 1_000;

/**
 * One dedicated connection for LISTEN and NOTIFY. A pooled connection cannot LISTEN (it goes
 * back to the pool), and sending wake-ups here keeps them out of the writers' transactions.
 * When the connection drops it reconnects with backoff, LISTENs again, and calls every
 * handler with '' because notifications sent meanwhile are lost.
 *
 * A NOTIFY is sent only when another process has a signal connection on the database (asked
 * of `pg_stat_activity` at most once a second): a process alone on its database, such as one
 * running every role, sends none, and hears its own wake-ups in memory. A process that starts
 * listening is heard within a second, and is then sent the wake-ups withheld meanwhile.
 */
export class PgSignalConnection {
  private client: pg.Client | null = null;
  private connecting: Promise<pg.Client> | null = null;
  private readonly handlers = new Map<string, Set<Handler>>();
  private reconnectTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private audience: { present: boolean; askedAt: number } | null = null;
  /** Wake-ups withheld while nobody else listened, by channel: sent when the audience is asked again, if someone joined. */
  private readonly owed = new Map<string, Set<string>>();
  private owedTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly onError: (error: unknown) => void,
  ) {}

  async listen(channel: string, handler: Handler): Promise<() => Promise<void>> {
    let handlers = this.handlers.get(channel);
    const firstForChannel = handlers === undefined;
    if (handlers === undefined) {
      handlers = new Set();
      this.handlers.set(channel, handlers);
    }
    handlers.add(handler);
    try {
      const client = await this.connection();
      if (firstForChannel) await inTurn(client, `LISTEN ${quoteIdentifier(channel)}`);
    } catch (error) {
      this.removeHandler(channel, handler);
      throw error;
    }
    return async () => {
      if (this.removeHandler(channel, handler) && this.client !== null) {
        await inTurn(this.client, `UNLISTEN ${quoteIdentifier(channel)}`);
      }
    };
  }

  /**
   * Sends a NOTIFY if another process may hear it. While nobody else listens, it is owed instead:
   * a process that starts listening before the audience is asked again (at most a second later)
   * is sent it then, so no wake-up is lost to the time the audience was last asked.
   */
  async notify(channel: string, payload: string): Promise<void> {
    const client = await this.connection();
    if (await this.audiencePresent(client)) {
      await send(client, channel, payload);
      return;
    }
    const payloads = this.owed.get(channel) ?? new Set<string>();
    this.owed.set(channel, payloads);
    if (payloads.size < MAX_OWED_PER_CHANNEL) payloads.add(payload);
    this.owedTimer ??= setTimeout(() => {
      this.owedTimer = null;
      void this.sendOwed();
    }, AUDIENCE_TTL_MS);
  }

  private async audiencePresent(client: pg.Client): Promise<boolean> {
    const now = performance.now();
    if (this.audience === null || now - this.audience.askedAt >= AUDIENCE_TTL_MS) {
      const { rows } = await inTurn<{ audience: boolean }>(client, { name: AUDIENCE.name, text: AUDIENCE.text });
      this.audience = { present: rows[0]?.audience === true, askedAt: now };
    }
    return this.audience.present;
  }

  /** Sends what was owed if someone listens now; still alone, there is nobody to wake. */
  private async sendOwed(): Promise<void> {
    const owed = [...this.owed];
    this.owed.clear();
    if (this.closed) return;
    try {
      const client = await this.connection();
      if (!(await this.audiencePresent(client))) return;
      for (const [channel, payloads] of owed) {
        for (const payload of payloads) await send(client, channel, payload);
      }
    } catch (error) {
      this.onError(error);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer !== null) clearTimeout(this.reconnectTimer);
    if (this.owedTimer !== null) clearTimeout(this.owedTimer);
    await this.connecting?.catch(() => undefined);
    const client = this.client;
    this.client = null;
    await client?.end();
  }

  /** True when the channel lost its last handler. */
  private removeHandler(channel: string, handler: Handler): boolean {
    const handlers = this.handlers.get(channel);
    if (handlers === undefined || !handlers.delete(handler) || handlers.size > 0) return false;
    this.handlers.delete(channel);
    return true;
  }

  private connection(): Promise<pg.Client> {
    if (this.closed) return Promise.reject(new Error('the signal connection is closed'));
    if (this.client !== null) return Promise.resolve(this.client);
    this.connecting ??= this.connect().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async connect(): Promise<pg.Client> {
    const client = new pg.Client(this.config);
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client));
    client.on('notification', (message) => this.dispatch(message.channel, message.payload ?? ''));
    try {
      await client.connect();
      // A lost wake-up costs one poll interval at worst; a WAL flush per NOTIFY costs every time.
      await client.query('set synchronous_commit = off');
      // Set here, not in the config: an application_name in the connection string would win.
      await client.query(`set application_name = '${SIGNAL_APPLICATION_NAME}'`);
      for (const channel of this.handlers.keys()) await client.query(`LISTEN ${quoteIdentifier(channel)}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.closed) {
      await client.end();
      throw new Error('the signal connection is closed');
    }
    this.client = client;
    return client;
  }

  private dispatch(channel: string, payload: string): void {
    for (const handler of this.handlers.get(channel) ?? []) handler(payload);
  }

  private lost(client: pg.Client, error?: Error): void {
    if (this.client !== client) return;
    this.client = null;
    client.end().catch(() => undefined);
    if (this.closed) return;
    if (error !== undefined) this.onError(error);
    if (this.handlers.size > 0) this.scheduleReconnect(50);
  }

  private scheduleReconnect(delayMs: number): void {
    if (this.closed || this.reconnectTimer !== null) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.connection().then(
        () => {
          for (const channel of [...this.handlers.keys()]) this.dispatch(channel, '');
        },
        (error: unknown) => {
          this.onError(error);
          this.scheduleReconnect(Math.min(delayMs * 2, MAX_RECONNECT_DELAY_MS));
        },
      );
    }, delayMs);
  }
}
