/**
 * Events are facts and are never rewritten: when a payload's shape changes, the new version gets
 * a new `schemaVersion` (in the event's metadata), and events already recorded are read through
 * upcasts, one version step at a time, into the shape the code knows now.
 */

/** Turns the payload of one schema version into the next version's. Pure; never fails on a valid payload. */
export type Upcast = (data: unknown) => unknown;

/** Per event type, per schema version: the upcast from that version to the next. Types without a change have none. */
export type Upcasters = Readonly<Record<string, Readonly<Record<number, Upcast>>>>;

/** Why a recorded version cannot be read by this code. */
export type VersionProblem = { problem: 'invalid'; version: unknown } | { problem: 'newer'; version: number };

/**
 * The schema version an event was recorded with: `schemaVersion` of its metadata, or 1 for an
 * event written before versions were recorded. A problem when it is not a version this code
 * can read (not a positive integer, or newer than `current`: written by a newer release).
 */
export function recordedVersion(metadata: Readonly<Record<string, unknown>>, current: number): number | VersionProblem {
  const version = metadata['schemaVersion'] === undefined ? 1 : metadata['schemaVersion'];
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1) return { problem: 'invalid', version };
  if (version > current) return { problem: 'newer', version };
  return version;
}

/** The payload of an event of `type` recorded at `version`, brought up to `current`. */
export function upcast(upcasters: Upcasters, type: string, version: number, current: number, data: unknown): unknown {
  const steps = Object.hasOwn(upcasters, type) ? upcasters[type] : undefined;
  let result = data;
  for (let from = version; from < current; from++) {
    const step = steps !== undefined && Object.hasOwn(steps, from) ? steps[from] : undefined;
    if (step !== undefined) result = step(result);
  }
  return result;
}
