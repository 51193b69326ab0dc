// Builds dist/ with tsc (incremental). With --if-stale it first checks whether dist/ was built
// from exactly the present sources, and if so does nothing: `npm start` then starts in well under
// a second instead of paying tsc's own up-to-date check (several seconds of CPU) every time.
//
// "Exactly the present sources": a SHA-256 over the TypeScript version, the compiler options, the
// list and contents of the files tsconfig.build.json compiles, and package-lock.json (types from
// dependencies decide emitted decorator metadata), compared with the one stored in
// dist/.build-stamp by the last build that succeeded, plus every expected output file existing.
// Any doubt (no stamp, a missing output, a changed byte) means a build.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PROJECT = join(root, 'tsconfig.build.json');
const STAMP = join(root, 'dist', '.build-stamp');
const BUILD_INFO = join(root, 'dist', '.tsbuildinfo');
const LOCKFILE = join(root, 'package-lock.json');

const require = createRequire(import.meta.url);
const ts = require('typescript');

function parseProject() {
  const host = { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail(ts.flattenDiagnosticMessageText(d.messageText, '\n')) };
  const parsed = ts.getParsedCommandLineOfConfigFile(PROJECT, {}, host);
  if (!parsed || parsed.errors.length > 0) fail(`${relative(root, PROJECT)}: ${parsed?.errors.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')).join('; ')}`);
  return parsed;
}

function sourcesHash(parsed) {
  const hash = createHash('sha256');
  hash.update(`typescript ${ts.version}\n`);
  hash.update(`${JSON.stringify(parsed.options)}\n`);
  hash.update(existsSync(LOCKFILE) ? readFileSync(LOCKFILE) : 'no lockfile');
  for (const file of [...parsed.fileNames].sort()) {
    hash.update(`\n${relative(root, file)}\n`);
    hash.update(readFileSync(file));
  }
  return hash.digest('hex');
}

function missingOutputs(parsed) {
  for (const file of parsed.fileNames) {
    for (const output of ts.getOutputFileNames(parsed, file, !ts.sys.useCaseSensitiveFileNames)) {
      if (!existsSync(output)) return true;
    }
  }
  return false;
}

function fail(message) {
  process.stderr.write(`build: ${message}\n`);
  process.exit(1);
}

const ifStale = process.argv.includes('--if-stale');
const parsed = parseProject();
const hash = sourcesHash(parsed);
const missing = missingOutputs(parsed);
const stamp = existsSync(STAMP) ? readFileSync(STAMP, 'utf8').trim() : null;
if (ifStale && !missing && stamp === hash) process.exit(0);

if (ifStale) process.stderr.write(`Building dist/ with tsc (${stamp === null ? 'first build' : 'sources changed'})…\n`);
rmSync(STAMP, { force: true });
// tsc's incremental state cannot know that outputs were deleted: without them, start afresh.
if (missing) rmSync(BUILD_INFO, { force: true });
const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', PROJECT, '--incremental', '--tsBuildInfoFile', BUILD_INFO], { cwd: root, stdio: 'inherit' });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
mkdirSync(dirname(STAMP), { recursive: true });
writeFileSync(STAMP, `${hash}\n`);
