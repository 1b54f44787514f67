#!/usr/bin/env node
// Builds and packs every publishable workspace package, each after the ones it
// depends on, into one folder (default `packs/`): `pnpm run pack [DIR]`.
// Each `pnpm pack` runs the package's prepack (a clean build into dist/) and
// writes versions in place of `workspace:` ranges, so the tarballs install
// with npm alone. Prints one line per tarball, then a JSON line
// `{ "tarballs": { name: path } }` for scripts that use it.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const destination = resolve(process.argv[2] ?? join(root, 'packs'));

/** The publishable packages under packages/, each after the workspace packages it depends on. */
function packagesInOrder() {
  const dirs = readdirSync(join(root, 'packages'))
    .map((name) => join(root, 'packages', name))
    .filter((dir) => existsSync(join(dir, 'package.json')));
  const all = dirs
    .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) }))
    .filter((pkg) => pkg.manifest.private !== true);
  const byName = new Map(all.map((pkg) => [pkg.manifest.name, pkg]));
  const ordered = [];
  const visit = (pkg) => {
    if (ordered.includes(pkg)) return;
    for (const dep of Object.keys(pkg.manifest.dependencies ?? {})) {
      const inner = byName.get(dep);
      if (inner !== undefined) visit(inner);
    }
    ordered.push(pkg);
  };
  all.forEach(visit);
  return ordered;
}

/** pnpm as `pnpm run` provides it (on PATH), or through npx. */
function pnpm() {
  try {
    execFileSync('pnpm', ['--version'], { stdio: 'ignore' });
    return ['pnpm', []];
  } catch {
    return ['npx', ['--yes', 'pnpm@10']];
  }
}

mkdirSync(destination, { recursive: true });
const [command, prefix] = pnpm();
const tarballs = {};
for (const { dir, manifest } of packagesInOrder()) {
  const before = new Set(readdirSync(destination));
  process.stderr.write(`packing ${manifest.name}@${manifest.version} (building it first)…\n`);
  // The build's diagnostics (tsc prints them on stdout) go to stderr: stdout is the tarballs' list.
  execFileSync(command, [...prefix, 'pack', '--pack-destination', destination], { cwd: dir, stdio: ['ignore', 2, 'inherit'] });
  const written = readdirSync(destination).filter((file) => !before.has(file) && file.endsWith('.tgz'));
  // A tarball of the same version from an earlier run is overwritten in place.
  const tarball = written[0] ?? `${manifest.name.replace(/^@/, '').replace('/', '-')}-${manifest.version}.tgz`;
  if (!existsSync(join(destination, tarball))) throw new Error(`pnpm pack wrote no tarball for ${manifest.name}`);
  tarballs[manifest.name] = join(destination, tarball);
  console.log(`${manifest.name}: ${join(destination, tarball)}`);
}
console.log(JSON.stringify({ tarballs }));
