import { statSync, watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { ConfigError, DEFAULT_TOKENS_RELOAD_MAX_DELAY_MS } from '../config/config.js';
import { systemClock, type Clock } from '../core/clock.port.js';
import type { Logger } from '../core/logger.js';
import { scheduleReload, type PendingReload, type ReloadTiming } from './reload-schedule.js';
import type { TokenRegistry } from './token-registry.js';
import type { TokenEntry } from './tokens-file.schema.js';

/** A file of grants and how to read its text (src/auth/tokens.loader.ts makes the two kinds). */
export interface TokensSource {
  /** Absolute path of the file. */
  readonly path: string;
  /** The variable that names the file, which every message about it starts with. */
  readonly variable: string;
  /** The grants `text` holds; throws a ConfigError naming the problem, never a token. */
  parse(text: string): TokenEntry[];
}

/** What one reload was asked by: a change seen on the file or its directory, or SIGHUP. */
export type ReloadTrigger = 'change' | 'SIGHUP';

export type ReloadOutcome =
  | { status: 'applied'; tokens: number; added: number; removed: number; changed: number; plaintext: number }
  | { status: 'unchanged'; tokens: number }
  | { status: 'skipped' }
  | { status: 'refused'; problem: string };

/** How long the file must stay quiet after a change before it is read: editors write in steps. */
export const TOKENS_RELOAD_DEBOUNCE_MS = 200;

export interface ReloadOptions extends ReloadTiming {
  readonly clock: Clock;
}

const DEFAULT_RELOAD_OPTIONS: ReloadOptions = {
  debounceMs: TOKENS_RELOAD_DEBOUNCE_MS,
  maxDelayMs: DEFAULT_TOKENS_RELOAD_MAX_DELAY_MS,
  clock: systemClock,
};

/** What the path names now, cheaply: a neighbour's change leaves it as it was. */
function fileSignature(path: string): string {
  try {
    const stat = statSync(path);
    return `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`;
  } catch (error) {
    return `unreadable:${(error as NodeJS.ErrnoException).code ?? 'error'}`;
  }
}

/**
 * Re-reads a tokens file into its TokenRegistry without a restart: on SIGHUP (`reload`) and,
 * once `watch` is called, whenever the file or its directory changes. A file that cannot be read
 * or is invalid is refused with one log line naming the problem and the grants in force stay; a
 * valid one replaces them (the registry then tells open SSE streams) and is logged with counts
 * only. Reloads run one at a time, in the order they were asked for.
 */
export class TokensReloader {
  private readonly log: Logger;
  /** What the last read found (`text:…` or `unreadable:<code>`): a change event that finds it again is no news. */
  private lastSeen: string | null;
  private queue: Promise<unknown> = Promise.resolve();
  private directoryWatcher: FSWatcher | null = null;
  private fileWatcher: FSWatcher | null = null;
  /** The inode the file's watch follows: a file replaced by rename is a new one. */
  private watchedInode: number | null = null;
  private debounce: NodeJS.Timeout | null = null;
  private pending: PendingReload | null = null;
  /** fileSignature of the path when a change was last taken in. */
  private signature: string | null = null;
  private watching = false;
  private readonly options: ReloadOptions;

  constructor(
    private readonly registry: TokenRegistry,
    private readonly source: TokensSource,
    logger: Logger,
    /** The text the registry's grants were read from, when known. */
    loadedText: string | null,
    options: Partial<ReloadOptions> = {},
  ) {
    this.options = { ...DEFAULT_RELOAD_OPTIONS, ...options };
    this.log = logger.child({ component: 'auth' });
    this.lastSeen = loadedText === null ? null : `text:${loadedText}`;
  }

  /** Reads the file again and applies it if valid; never rejects (every outcome is logged). */
  reload(trigger: ReloadTrigger): Promise<ReloadOutcome> {
    // A bug here must not become an unhandled rejection that ends the process (SIGHUP voids it).
    const next = this.queue.then(() => this.apply(trigger)).catch((error: unknown) => this.refuse(trigger, String(error)));
    this.queue = next;
    return next;
  }

  /**
   * Watches the file (an edit in place, also through a symlink) and its directory (a file
   * replaced by rename, created, or swapped in by a symlink switch, as Kubernetes mounts do).
   * Of the directory's events only those that change what the path names count, so a busy
   * neighbour (a log file) is no change. Events are debounced, at most `maxDelayMs` from the
   * first; the watchers do not keep the process alive.
   */
  watch(): void {
    if (this.watching) return;
    this.watching = true;
    this.signature = fileSignature(this.source.path);
    try {
      this.directoryWatcher = watch(dirname(this.source.path), { persistent: false }, (_event, name) => this.directoryChanged(name));
      this.directoryWatcher.on('error', (error) => this.directoryWatchFailed(error));
    } catch (error) {
      this.directoryWatchFailed(error);
    }
    this.watchFile();
  }

  /** Stops watching; a reload under way finishes. */
  close(): void {
    this.watching = false;
    if (this.debounce !== null) clearTimeout(this.debounce);
    this.debounce = null;
    this.pending = null;
    this.directoryWatcher?.close();
    this.directoryWatcher = null;
    this.fileWatcher?.close();
    this.fileWatcher = null;
  }

  /** An event of the directory: a change when it names the file or the path now names another file. */
  private directoryChanged(name: string | Buffer | null): void {
    if (!this.watching) return;
    const signature = fileSignature(this.source.path);
    const named = name !== null && name.toString() === basename(this.source.path);
    if (!named && signature === this.signature) return;
    this.changed(signature);
  }

  private changed(signature = fileSignature(this.source.path)): void {
    if (!this.watching) return;
    this.signature = signature;
    const now = this.options.clock.now().getTime();
    const previous = this.pending;
    this.pending = scheduleReload(previous, now, this.options);
    if (this.debounce !== null && previous?.dueAt === this.pending.dueAt) return;
    if (this.debounce !== null) clearTimeout(this.debounce);
    this.debounce = setTimeout(
      () => {
        this.debounce = null;
        this.pending = null;
        void this.reload('change').then(() => this.watchFile());
      },
      Math.max(0, this.pending.dueAt - now),
    );
    this.debounce.unref();
  }

  /** (Re-)arms the file's own watch unless it already follows the inode the path names now. */
  private watchFile(): void {
    let inode: number | null;
    try {
      inode = statSync(this.source.path).ino;
    } catch {
      inode = null;
    }
    // Missing right now (being replaced): the directory's watch calls again on the next change.
    if (!this.watching || inode === null || (this.fileWatcher !== null && inode === this.watchedInode)) return;
    this.fileWatcher?.close();
    this.fileWatcher = null;
    try {
      const watcher = watch(this.source.path, { persistent: false }, () => this.changed());
      watcher.on('error', () => {
        watcher.close();
        if (this.fileWatcher === watcher) this.fileWatcher = null;
      });
      this.fileWatcher = watcher;
      this.watchedInode = inode;
    } catch {
      // Gone between the stat and the watch: as above.
    }
  }

  private directoryWatchFailed(error: unknown): void {
    this.directoryWatcher?.close();
    this.directoryWatcher = null;
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    this.log.warn("cannot watch the tokens file's directory; changes take effect on SIGHUP only", {
      file: this.source.path,
      error: code ?? String(error),
    });
  }

  private async apply(trigger: ReloadTrigger): Promise<ReloadOutcome> {
    const file = this.source.path;
    let seen: string;
    let text: string | null = null;
    try {
      text = await readFile(file, 'utf8');
      seen = `text:${text}`;
    } catch (error) {
      seen = `unreadable:${(error as NodeJS.ErrnoException).code ?? 'error'}`;
    }
    // Editors and directory neighbours cause events that change nothing here; each state of the
    // file is told once, but a SIGHUP is always answered.
    if (trigger === 'change' && seen === this.lastSeen) {
      this.log.debug('tokens file event without a change in its content', { file });
      return { status: 'skipped' };
    }
    this.lastSeen = seen;
    if (text === null) return this.refuse(trigger, `${this.source.variable}: cannot read ${file} (${seen.slice('unreadable:'.length)})`);
    let entries: TokenEntry[];
    try {
      entries = this.source.parse(text);
    } catch (error) {
      return this.refuse(trigger, error instanceof ConfigError ? error.message : String(error));
    }
    const changes = this.registry.compare(entries);
    if (changes.added + changes.removed + changes.changed === 0) {
      const level = trigger === 'SIGHUP' ? 'info' : 'debug';
      this.log[level]('tokens file re-read: the grants are unchanged', { file, trigger, tokens: changes.tokens });
      return { status: 'unchanged', tokens: changes.tokens };
    }
    const plaintext = entries.filter((entry) => entry.token !== undefined).length;
    try {
      this.registry.replace(entries);
    } catch (error) {
      // The new grants are in force; a listener that failed to act on them is a bug to see.
      this.log.error('a listener of the token registry failed after a reload', { file, error });
    }
    this.log.info('tokens file reloaded; the new grants apply from the next request', { file, trigger, ...changes, plaintext });
    return { status: 'applied', ...changes, plaintext };
  }

  private refuse(trigger: ReloadTrigger, problem: string): ReloadOutcome {
    this.log.error('tokens file refused; the previous grants stay in force', { file: this.source.path, trigger, problem });
    return { status: 'refused', problem };
  }
}
