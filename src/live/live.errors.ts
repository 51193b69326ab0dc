import { DomainError } from '../core/errors.js';

/**
 * A resume position of this store's form that lies beyond the end of its log: no reader was
 * ever handed it (it comes from another deployment, a store that was reset, or was made up).
 * Resuming after it would deliver nothing until the log got there, then skip everything before
 * it. HTTP 409.
 */
export class PositionAheadError extends DomainError {
  constructor(source: string, position: string) {
    super(
      'position_ahead',
      `${source} ${position} is beyond the end of the event log: this store never handed it out; reconnect without it to start over`,
    );
  }
}
