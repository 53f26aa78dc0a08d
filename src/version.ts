import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root: the nearest package.json above this file, from src/ and from dist/src/ alike. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('package.json not found above src/version.ts');
    dir = up;
  }
  return dir;
}

export const PACKAGE_ROOT = packageRoot();

/** The package version, read once at start; it goes into every record as AgentVersion. */
export const AGENT_VERSION: string = (
  JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
