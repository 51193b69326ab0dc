// `npm run build`: empties dist/ and compiles src/ and projections/ (tsconfig.build.json), bundles
// the web console (console/, with Vite, into dist/console), then stamps what it built. `--if-stale` (`npm start`'s build step) builds only unless dist/ was
// built from exactly the present sources, so that a start without changes does not pay tsc's own
// up-to-date check (seconds of CPU) every time, while a fresh clone, or any change, still builds.
//
// "Exactly the present sources": a SHA-256 over the TypeScript version, the compiler options, the
// list and contents of the files tsconfig.build.json compiles, the console's files (console/, which
// Vite bundles), and package-lock.json (types from dependencies decide emitted decorator metadata;
// the console bundles its dependencies). This script stores it in dist/.build-stamp
// after a build it ran succeeded, computed before that build (a file edited during the build makes
// the next start build again). The check also wants every expected output file present, and the
// console's index.html. Any doubt
// (no stamp, a missing output, a changed byte) means a build. The benchmarks' build
// (tsconfig.bench.json) writes into the same dist/ but no stamp.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PROJECT = join(root, 'tsconfig.build.json');
const SDK_PROJECT = join(root, 'tsconfig.sdk.json');
const STAMP = join(root, 'dist', '.build-stamp');
const LOCKFILE = join(root, 'package-lock.json');
const CONSOLE = join(root, 'console');
const CONSOLE_INDEX = join(root, 'dist', 'console', 'index.html');

const ts = createRequire(import.meta.url)('typescript');

function fail(message) {
  process.stderr.write(`build: ${message}\n`);
  process.exit(1);
}

function parseProject() {
  const diagnostics = (list) => list.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')).join('; ');
  const host = { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail(diagnostics([d])) };
  const parsed = ts.getParsedCommandLineOfConfigFile(PROJECT, {}, host);
  if (!parsed || parsed.errors.length > 0) fail(`${relative(root, PROJECT)}: ${diagnostics(parsed?.errors ?? [])}`);
  return parsed;
}

function sourcesHash(parsed) {
  const hash = createHash('sha256');
  hash.update(`typescript ${ts.version}\n${JSON.stringify(parsed.options)}\n`);
  hash.update(existsSync(LOCKFILE) ? readFileSync(LOCKFILE) : 'no lockfile');
  for (const file of [...parsed.fileNames, ...consoleFiles(CONSOLE)].sort()) {
    hash.update(`\n${relative(root, file)}\n`);
    hash.update(readFileSync(file));
  }
  return hash.digest('hex');
}

/** Every file of the console's sources and configuration (console/), its own build output aside. */
function consoleFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'dist' ? [] : consoleFiles(path);
    return entry.isFile() ? [path] : [];
  });
}

function allOutputsPresent(parsed) {
  return (
    existsSync(CONSOLE_INDEX) &&
    parsed.fileNames.every((file) =>
      ts.getOutputFileNames(parsed, file, !ts.sys.useCaseSensitiveFileNames).every((output) => existsSync(output)),
    )
  );
}

const parsed = parseProject();
const hash = sourcesHash(parsed);
if (process.argv.includes('--if-stale')) {
  const stamp = existsSync(STAMP) ? readFileSync(STAMP, 'utf8').trim() : null;
  if (stamp === hash && allOutputsPresent(parsed)) process.exit(0);
  const reason = stamp === null ? 'no build of these sources yet' : stamp !== hash ? 'the sources changed' : 'built files are missing';
  process.stderr.write(`Building dist/ (${reason})…\n`);
}
rmSync(join(root, 'dist'), { recursive: true, force: true });
const build = spawnSync(process.execPath, [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', PROJECT], {
  cwd: root,
  stdio: 'inherit',
});
if (build.error) fail(`tsc: ${build.error.message}`);
if (build.status !== 0) process.exit(build.status ?? 1);
// The package's bin (`flostra`, docs/cli.md) runs as a program: tsc writes it without the execute bit.
chmodSync(join(root, 'dist', 'src', 'cli', 'main.js'), 0o755);
// The web console: Vite bundles console/ into dist/console (console/vite.config.mjs).
const bundle = spawnSync(
  process.execPath,
  [
    join(dirname(createRequire(import.meta.url).resolve('vite/package.json')), 'bin', 'vite.js'),
    'build',
    '--config',
    join(CONSOLE, 'vite.config.mjs'),
  ],
  { cwd: root, stdio: 'inherit' },
);
if (bundle.error) fail(`vite: ${bundle.error.message}`);
if (bundle.status !== 0) process.exit(bundle.status ?? 1);
// The worker SDK (`flostra/worker`) also gets its type declarations, from tsconfig.sdk.json.
const declarations = spawnSync(process.execPath, [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', SDK_PROJECT], {
  cwd: root,
  stdio: 'inherit',
});
if (declarations.error) fail(`tsc: ${declarations.error.message}`);
if (declarations.status !== 0) process.exit(declarations.status ?? 1);
mkdirSync(dirname(STAMP), { recursive: true });
writeFileSync(STAMP, `${hash}\n`);
