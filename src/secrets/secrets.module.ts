import { Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { ExecutionStreamsModule } from '../executions/execution-streams.module.js';
import { READ_MODEL_SQL, type SqlClient } from '../postgres/sql-client.port.js';
import { DeleteSecretHandler } from './application/delete-secret.handler.js';
import { ListSecretsHandler } from './application/list-secrets.handler.js';
import { PutSecretHandler } from './application/put-secret.handler.js';
import { ResolveAttemptSecretsHandler } from './application/resolve-attempt-secrets.handler.js';
import { SecretResolutionController, SecretsController } from './infrastructure/secrets.controller.js';
import { SecretValues } from './infrastructure/secret-values.table.js';
import { SecretVault } from './infrastructure/secret-vault.js';
import { SECRETS_KEYRING, SecretsKeyring } from './infrastructure/secrets-keyring.js';
import { SecretsMaintenance } from './infrastructure/secrets-maintenance.js';
import { SecretStreamsModule } from './secret-streams.module.js';

/**
 * Secrets by reference (docs/architecture.md, "Secrets"): the secrets API, the worker's
 * resolution, and the housekeeping of `secret_values`. Part of the api role.
 */
@Module({
  imports: [SecretStreamsModule, ExecutionStreamsModule],
  controllers: [SecretsController, SecretResolutionController],
  providers: [
    { provide: SECRETS_KEYRING, useFactory: (config: AppConfig) => SecretsKeyring.fromConfig(config), inject: [APP_CONFIG] },
    { provide: SecretValues, useFactory: (sql: SqlClient) => SecretValues.open(sql), inject: [READ_MODEL_SQL] },
    SecretVault,
    SecretsMaintenance,
    PutSecretHandler,
    DeleteSecretHandler,
    ListSecretsHandler,
    ResolveAttemptSecretsHandler,
  ],
  exports: [SecretsMaintenance],
})
export class SecretsModule {}
