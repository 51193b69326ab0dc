import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Keeps the documentation true to the repository: every relative link and every repository path
 * named in backticks exists, and nothing points at design notes that live outside the repository
 * or speaks of the working sessions the project was built in. Reads files only.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Where repository paths start; a backticked token beginning with one of these must exist. */
const PATH_PREFIXES = ['src/', 'test/', 'projections/', 'bench/', 'deploy/', '.ci/', 'docs/'];

/** Files at the root that the documentation names in backticks. */
const ROOT_FILES = new Set([
  'README.md',
  'CHANGELOG.md',
  'Dockerfile',
  'docker-compose.yml',
  'package.json',
  'package-lock.json',
  'jest.config.js',
  'tsconfig.json',
  'tsconfig.build.json',
  'nest-cli.json',
  '.dockerignore',
  '.gitignore',
]);

/** Build output, dependencies and local data: not part of the repository (see .gitignore). */
const NOT_IN_REPOSITORY = new Set(['.git', 'node_modules', 'dist', '.flostra', '.cache', 'coverage', '.tmp', '.scratch']);

function documentationFiles(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`);
  return ['README.md', 'CHANGELOG.md', ...docs];
}

/** Every file of the repository, as a path relative to its root with `/` separators. */
function repositoryFiles(from = ROOT): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (NOT_IN_REPOSITORY.has(entry.name)) continue;
    const path = join(from, entry.name);
    if (entry.isDirectory()) files.push(...repositoryFiles(path));
    else if (entry.isFile()) files.push(relative(ROOT, path).split(sep).join('/'));
  }
  return files;
}

function read(file: string): string {
  return readFileSync(join(ROOT, file), 'utf8');
}

/** The text outside fenced code blocks: commands and examples there are not references. */
function prose(markdown: string): string {
  return markdown.replace(/^```[^\n]*\n[\s\S]*?^```[ \t]*$/gm, '');
}

/** `path:12`, `path#anchor` and trailing punctuation name the same file. */
function bare(token: string): string {
  const trimmed = (text: string) => text.replace(/[.,;:)]+$/, '');
  return trimmed(trimmed(token.replace(/[#?].*$/, '')).replace(/:\d+(?::\d+)?$/, ''));
}

function exists(path: string): boolean {
  return existsSync(resolve(ROOT, path));
}

/** Repository paths named inside inline code spans, and source files named without their folder. */
function backtickedPaths(markdown: string): { paths: string[]; unplaced: string[] } {
  const paths: string[] = [];
  const unplaced: string[] = [];
  for (const [, code] of prose(markdown).matchAll(/`([^`\n]+)`/g)) {
    for (const token of code.split(/\s+/)) {
      const path = bare(token);
      // Templates and patterns (`src/<area>/`, `*.spec.ts`) name no single path.
      if (/[<>*{}$]/.test(path)) continue;
      if (PATH_PREFIXES.some((prefix) => path.startsWith(prefix)) || ROOT_FILES.has(path)) paths.push(path);
      // `heartbeat.spec.ts` alone cannot be checked, and goes stale unnoticed when files move.
      else if (/^[\w.-]+\.(?:ts|mjs)$/.test(path)) unplaced.push(path);
    }
  }
  return { paths, unplaced };
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  const text = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/`/g, '');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a markdown document offers, repeated headings numbered as GitHub does. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of prose(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  // Explicit anchors, as the generated API reference writes them.
  for (const [, id] of markdown.matchAll(/<a (?:id|name)="([^"]+)"><\/a>/g)) anchors.add(id);
  return anchors;
}

interface Link {
  written: string;
  /** Relative to the repository root; the document itself for `#anchor`. */
  path: string;
  anchor: string | null;
}

/** Targets of markdown links that stay inside the repository, resolved from the document's folder. */
function relativeLinks(file: string, markdown: string): Link[] {
  const links: Link[] = [];
  for (const [, target] of prose(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const hash = target.indexOf('#');
    const anchor = hash === -1 ? null : target.slice(hash + 1);
    const path = bare(target);
    const resolved =
      path === ''
        ? file
        : relative(ROOT, resolve(ROOT, dirname(file), path))
            .split(sep)
            .join('/');
    links.push({ written: target, path: resolved, anchor });
  }
  return links;
}

describe('the documentation', () => {
  const documents = documentationFiles();

  it('covers the README, the changelog and docs/', () => {
    expect(documents).toEqual(
      expect.arrayContaining([
        'README.md',
        'CHANGELOG.md',
        'docs/architecture.md',
        'docs/api.md',
        'docs/operations.md',
        'docs/benchmarks.md',
      ]),
    );
  });

  it('names only repository paths that exist, each from the repository root', () => {
    const missing: string[] = [];
    for (const file of documents) {
      const { paths, unplaced } = backtickedPaths(read(file));
      for (const path of paths) {
        if (!exists(path)) missing.push(`${file}: \`${path}\` does not exist`);
      }
      for (const name of unplaced)
        missing.push(`${file}: \`${name}\` is named without its folder; write its path from the repository root`);
    }
    expect(missing).toEqual([]);
  });

  it('links only to files and folders that exist', () => {
    const missing: string[] = [];
    for (const file of documents) {
      for (const { written, path } of relativeLinks(file, read(file))) {
        const inside = !path.startsWith('..');
        if (!inside || !exists(path))
          missing.push(`${file}: link (${written}) → ${path} ${inside ? 'does not exist' : 'leaves the repository'}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('links only to headings that exist', () => {
    const missing: string[] = [];
    for (const file of documents) {
      for (const { written, path, anchor } of relativeLinks(file, read(file))) {
        if (anchor === null || !path.endsWith('.md') || !existsSync(join(ROOT, path))) continue;
        if (!anchorsOf(read(path)).has(anchor)) missing.push(`${file}: link (${written}) → ${path} has no heading #${anchor}`);
      }
    }
    expect(missing).toEqual([]);
  });
});

describe('the repository', () => {
  const files = repositoryFiles().filter((file) => {
    const size = statSync(join(ROOT, file)).size;
    return size < 2 * 1024 * 1024;
  });

  it('stands alone: nothing refers to design notes kept outside it', () => {
    // Written so that this file does not name them itself.
    const outside = [/\.\.\/shared\b/, /\b(?:DESIGN|API|STYLE)\.md\b/];
    const found: string[] = [];
    for (const file of files) {
      read(file)
        .split('\n')
        .forEach((line, index) => {
          if (outside.some((pattern) => pattern.test(line))) found.push(`${file}:${index + 1}: ${line.trim()}`);
        });
    }
    expect(found).toEqual([]);
  });

  it('does not speak of numbered working sessions in the docs, sources, tests or benchmarks', () => {
    const scanned = files.filter(
      (file) => file === 'README.md' || file === 'CHANGELOG.md' || /^(docs|src|test|bench|projections)\//.test(file),
    );
    const found: string[] = [];
    for (const file of scanned) {
      read(file)
        .split('\n')
        .forEach((line, index) => {
          if (/\bsessions? \d+/i.test(line)) found.push(`${file}:${index + 1}: ${line.trim()}`);
        });
    }
    expect(found).toEqual([]);
  });
});
