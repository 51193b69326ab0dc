import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The version in Flostra's package.json, found above this module (src/ in tests, dist/src/ when built). */
export function packageVersion(from: string = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (manifest.name === 'flostra' && manifest.version !== undefined) return manifest.version;
    }
    if (dirname(dir) === dir) throw new Error(`no package.json of flostra above ${from}`);
  }
}
