import { readFileSync } from 'node:fs';

interface PackageJson {
  version: string;
  peerDependencies?: Record<string, string>;
}

let cached: PackageJson | undefined;

/**
 * The package's own package.json: two levels up from src/cli/ (tests, tsx) and from
 * dist/cli/ (a clone or an installed package alike), and always in the tarball.
 */
export function packageJson(): PackageJson {
  cached ??= JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as PackageJson;
  return cached;
}
