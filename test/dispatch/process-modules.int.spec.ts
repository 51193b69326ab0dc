import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { roleModules } from '../../src/app/app.module.js';
import { CoreModule } from '../../src/app/core.module.js';
import { loadConfig } from '../../src/config/config.js';
import { TOPICS } from '../../src/core/bus.port.js';
import { AdmissionModule } from '../../src/admission/admission.module.js';
import { DispatchModule } from '../../src/dispatch/dispatch.module.js';
import { IngestModule } from '../../src/ingest/ingest.module.js';
import { WatchdogModule } from '../../src/watchdog/watchdog.module.js';
import { eventually } from '../support/eventually.js';
import { type ProcessFixture, openProcessFixture, recordTopic } from './support/process-fixture.js';

const PROCESS_MODULES: unknown[] = [DispatchModule, AdmissionModule, IngestModule, WatchdogModule];

/** The process modules chosen and wired as the app does: every port from CoreModule. */
async function boot(f: ProcessFixture, roles: string): Promise<INestApplicationContext> {
  const config = loadConfig({ FLOSTRA_ROLES: roles, LOG_LEVEL: 'silent' });
  @Module({
    imports: [
      CoreModule.forRoot({ config, store: f.store, clock: f.clock, ids: f.ids, logger: f.logger, readModelSql: f.sql, bus: f.bus }),
      ...roleModules(config).filter((m) => PROCESS_MODULES.includes(m)),
    ],
  })
  class RootModule {}

  return NestFactory.createApplicationContext(RootModule, { logger: false, abortOnError: false });
}

describe('the dispatcher (with the admission), ingestor and watchdog modules', () => {
  let f: ProcessFixture;
  let app: INestApplicationContext | undefined;

  afterEach(async () => {
    await app?.close();
    await f.close();
  });

  it('run their loops when FLOSTRA_ROLES names them, and stop with the application', async () => {
    f = await openProcessFixture('postgres');
    app = await boot(f, 'dispatcher,ingestor,watchdog');
    const dispatched = await recordTopic(f.bus, TOPICS.dispatch);
    const { executionId, attemptId } = await f.startExecution();
    await eventually(() => expect(dispatched.values()).toContainEqual(expect.objectContaining({ executionId, attemptId })));

    const fence = await f.claim(executionId, attemptId);
    const result = { messageId: randomUUID(), executionId, ...fence, sequence: 0, kind: 'attempt_succeeded', output: { ok: 1 } };
    await f.bus.publish(TOPICS.results, [{ key: executionId, value: JSON.stringify(result) }]);
    await eventually(async () => expect((await f.types(executionId)).at(-1)).toBe('ExecutionSucceeded'));

    const head = await f.store.headPosition();
    const checkpoints = async () =>
      (await f.sql.query<{ name: string; position: string }>('select name, position from subscription_checkpoints order by name')).rows;
    await eventually(async () =>
      expect(await checkpoints()).toEqual([
        { name: 'admission', position: head },
        { name: 'dispatcher', position: head },
        { name: 'watchdog', position: head },
      ]),
    );
    await dispatched.stop();
    await app.close();
    app = undefined;
  });

  it('start nothing for a process without their roles', async () => {
    f = await openProcessFixture('postgres');
    app = await boot(f, 'api');
    const { rows } = await f.sql.query<{ dispatch: string | null; deadlines: string | null; admission: string | null }>(
      "select to_regclass('dispatch_schedule')::text as dispatch, to_regclass('watchdog_deadlines')::text as deadlines, to_regclass('admission_queue')::text as admission",
    );
    expect(rows[0]).toEqual({ dispatch: null, deadlines: null, admission: null });
  });
});
