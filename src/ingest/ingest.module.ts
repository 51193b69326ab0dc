import { Inject, Injectable, Module, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { BUS, INGESTOR_GROUP_ID, TOPICS, type Bus } from '../core/bus.port.js';
import { CLOCK, type Clock } from '../core/clock.port.js';
import { ID_GENERATOR, type IdGenerator } from '../core/ids.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { METRICS, type Metrics } from '../core/metrics.port.js';
import { ExecutionStreams } from '../executions/application/execution-streams.js';
import { ExecutionStreamsModule } from '../executions/execution-streams.module.js';
import { reportConsumerLag } from '../observability/lag-sources.js';
import { Ingestor } from './application/ingestor.js';
import { ResultIngestor } from './application/result-ingestor.js';

/**
 * Runs the results consumer while the module lives (the app imports the module when FLOSTRA_ROLES
 * names the role). Its ResultIngestor, `results`, also takes the results of a worker in this
 * process directly (src/app/in-process-result-sink.ts): one dedupe memory for both ways in.
 */
@Injectable()
export class IngestorProcess implements OnModuleInit, OnModuleDestroy {
  readonly results: ResultIngestor;
  private ingestor: Ingestor | null = null;
  private stopReportingLag: () => void = () => undefined;

  constructor(
    @Inject(BUS) private readonly bus: Bus,
    @Inject(CLOCK) clock: Clock,
    @Inject(ID_GENERATOR) ids: IdGenerator,
    @Inject(LOGGER) private readonly logger: Logger,
    executions: ExecutionStreams,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {
    this.results = new ResultIngestor({ executions, bus, clock, ids, logger: logger.child({ component: 'ingestor' }), metrics });
  }

  async onModuleInit(): Promise<void> {
    const logger = this.logger.child({ component: 'ingestor' });
    this.ingestor = new Ingestor({ bus: this.bus, results: this.results, logger });
    await this.ingestor.start();
    this.stopReportingLag = reportConsumerLag(this.metrics, this.bus, INGESTOR_GROUP_ID, TOPICS.results);
    logger.info('ingestor started');
  }

  async onModuleDestroy(): Promise<void> {
    this.stopReportingLag();
    await this.ingestor?.stop();
    this.ingestor = null;
  }
}

/** Needs the global BUS, EVENT_STORE, CLOCK, ID_GENERATOR and LOGGER providers. */
// ExecutionStreamsModule rather than ExecutionsModule keeps the API's module graph (controllers,
// read models) out of processes that only run this role.
@Module({ imports: [ExecutionStreamsModule], providers: [IngestorProcess] })
export class IngestModule {}
