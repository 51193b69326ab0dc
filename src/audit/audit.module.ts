import { Module } from '@nestjs/common';
import { GetAuditTrailHandler } from './application/get-audit-trail.handler.js';
import { AuditController } from './infrastructure/audit.controller.js';

/** The audit trail API (`/v1/workspaces/:workspaceId/audit`); its read model comes from the global ReadModelsModule. */
@Module({
  controllers: [AuditController],
  providers: [GetAuditTrailHandler],
})
export class AuditModule {}
