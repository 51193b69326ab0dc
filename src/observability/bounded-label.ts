/** The value that stands for every value past the bound. */
export const OTHER_LABEL_VALUE = '_other';

/**
 * Values of one label, bounded: the first `limit` distinct values seen keep their own series,
 * every later one is counted under `_other`. Keeps a label whose values come from outside (a
 * workspace id) from growing the number of series without bound. A limit of 0 keeps none.
 */
export class BoundedLabel {
  private readonly kept = new Set<string>();

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 0) throw new RangeError(`a label bound must be a whole number ≥ 0, not ${limit}`);
  }

  of(value: string): string {
    if (this.kept.has(value)) return value;
    if (this.kept.size >= this.limit || value === OTHER_LABEL_VALUE) return OTHER_LABEL_VALUE;
    this.kept.add(value);
    return value;
  }

  /** Distinct values with a series of their own so far. */
  get size(): number {
    return this.kept.size;
  }
}

/** `200` → `2xx`; anything outside 100–599 → `unknown`. */
export function statusClass(status: number): string {
  return Number.isInteger(status) && status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : 'unknown';
}

/**
 * The route label of a request: the template of the route that matched (`/v1/executions/:executionId`),
 * or `unmatched` for anything no route took (a 404, a request refused before routing). Raw paths
 * carry ids and would make a series per execution.
 */
export function routeLabel(template: string | undefined): string {
  return template === undefined || template === '' ? 'unmatched' : template;
}
