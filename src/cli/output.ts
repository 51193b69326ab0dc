/** What a command writes to, and whether a person is at the other end. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** Both stdin and stdout are terminals: a person can be asked. */
  interactive: boolean;
  /** Asks a question on stderr and resolves to the answer line (only when `interactive`). */
  ask(question: string): Promise<string>;
}

export type OutputFormat = 'text' | 'json';

/** One JSON document, pretty-printed, as the whole of stdout. */
export function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

export interface Column<T> {
  header: string;
  value: (row: T) => string;
}

/**
 * A plain-text table: a header row, then one row per item, columns padded to their widest cell
 * and separated by two spaces; the last column is not padded. Cells are made single-line.
 */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const cells = [columns.map((c) => c.header), ...rows.map((row) => columns.map((c) => oneLine(c.value(row))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i].length)));
  return (
    cells
      .map((line) =>
        line
          .map((cell, i) => (i === line.length - 1 ? cell : cell.padEnd(widths[i])))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ');
}

/** A timestamp as `YYYY-MM-DD HH:MM:SS` in UTC, or `-` for none. */
export function when(iso: string | null | undefined): string {
  if (!iso) return '-';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toISOString().replace('T', ' ').slice(0, 19);
}

/** A time of day, `HH:MM:SS` UTC, for live lines. */
export function clock(iso: string | null | undefined): string {
  return when(iso).slice(11) || '-';
}

/** A JSON value on one line, cut to `max` characters. */
export function compact(value: unknown, max = 120): string {
  const text = JSON.stringify(value) ?? 'null';
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** `key: value` lines with the keys aligned. */
export function fields(entries: readonly [string, string][]): string {
  const width = Math.max(...entries.map(([key]) => key.length)) + 1;
  return entries.map(([key, value]) => `${`${key}:`.padEnd(width)} ${value}`).join('\n') + '\n';
}

/** The output format asked for, read from argv without the parser (which may be what failed). */
export function formatOf(argv: readonly string[]): OutputFormat {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--output' || arg === '-o') return argv[i + 1] === 'json' ? 'json' : 'text';
    if (arg === '--output=json' || arg === '-ojson') return 'json';
  }
  return 'text';
}
