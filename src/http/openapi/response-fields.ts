import { z } from 'zod';
import { IDENTIFIER_PATTERN } from '../../core/ids.js';

/** Building blocks of response schemas, shared by every area's contract. */

export const positionField = z.string().min(1).meta({
  id: 'Position',
  description:
    'A place in the event log: opaque, compare only for equality. Echo it back as `minPosition` (or X-Flostra-Min-Position) to read your own write, or as Last-Event-ID to resume live events.',
});

export const timestampField = z.iso.datetime({ offset: true });

export const uuidField = z.uuid();

/** A workspace id, workflow name or node id: 1-64 of `[A-Za-z0-9_-]`. */
export const identifierField = z.string().regex(IDENTIFIER_PATTERN);

/** Any JSON value (a node's output, an execution's input fields). */
export const anyJson = z.unknown();
