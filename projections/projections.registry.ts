import type { AnyProjectionDefinition } from '../src/projector/projection-definition.js';
import { auditProjection } from './audit.projection.js';
import { executionsProjection } from './executions.projection.js';
import { schedulesProjection } from './schedules.projection.js';
import { timelineProjection } from './timeline.projection.js';

/** Every read model the projector maintains. Names are unique and never reused for another model. */
export const PROJECTION_DEFINITIONS: readonly AnyProjectionDefinition[] = [
  executionsProjection,
  timelineProjection,
  auditProjection,
  schedulesProjection,
];
