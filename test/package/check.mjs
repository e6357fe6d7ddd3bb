#!/usr/bin/env node
/**
 * Checks the package as a user gets it, not as the repository has it:
 *
 * 1. `npm pack` (which runs `prepare`, so the tarball holds a fresh build);
 * 2. publint and @arethetypeswrong/cli on that tarball;
 * 3. installs the tarball and the peer dependencies, nothing else, into a
 *    scratch project;
 * 4. there, on every Node in STAUNCH_NODES (paths, colon-separated; default:
 *    the Node running this), imports every subpath of `exports` with
 *    `import()` and with `require()`, and runs the `staunch` bin;
 * 5. installs the tarball alone (no peer) into a second project, where
 *    `staunch/testing` and `staunch/testing/server` load and
 *    `staunch/testing/undici` fails for want of undici, its one peer.
 *
 * `require` gives the ESM module itself (Node's require(esm), without flag
 * or warning since 22.13, the `engines` floor): the package ships one build,
 * no CJS copy, so both ways yield the same objects and there is no
 * dual-package hazard. The probe asserts that identity export by export.
 *
 * Usage: node test/package/check.mjs   (npm run check:package)
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '../..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const nodes = (process.env.STAUNCH_NODES || process.execPath).split(':').filter(Boolean);
const work = mkdtempSync(join(tmpdir(), 'staunch-package-'));

/** Runs a command; its output goes to ours; throws on a non-zero exit. */
function run(cmd, args, options = {}) {
  console.log(`$ ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', timeout: 300_000, ...options });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${cmd} ${args[0]} exited ${r.status ?? r.signal}`);
}

/** Subpaths of `exports` and whether `require` may load them (a default or require condition). */
function subpaths(exports) {
  return Object.entries(exports)
    .filter(([key]) => !key.endsWith('.json'))
    .map(([key, target]) => ({
      specifier: key === '.' ? pkg.name : `${pkg.name}/${key.slice(2)}`,
      requirable: typeof target === 'string' || 'default' in target || 'require' in target,
    }));
}

// Run by every Node under test, as CommonJS: a CJS caller can both require()
// and import() the package, so one file checks both and compares them.
const probe = `'use strict';
const entries = ${JSON.stringify(subpaths(pkg.exports))};
(async () => {
  for (const { specifier, requirable } of entries) {
    const esm = await import(specifier);
    const names = Object.keys(esm).filter((k) => k !== 'module.exports');
    // staunch/request-init is types only (a RequestInit augmentation): it loads, and exports nothing.
    if (names.length === 0 && specifier !== '${pkg.name}/request-init') throw new Error(specifier + ': import() gave no exports');
    if (requirable) {
      const cjs = require(specifier);
      for (const name of names) {
        if (cjs[name] !== esm[name]) throw new Error(specifier + ': require() and import() differ on ' + name);
      }
    }
    console.log('  ' + specifier + ': ' + names.length + ' exports' + (requirable ? ', require() === import()' : ''));
  }
  const meta = require('${pkg.name}/package.json');
  if (meta.version !== ${JSON.stringify(pkg.version)}) throw new Error('package.json version ' + meta.version);
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
`;

try {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const packed = spawnSync(npm, ['pack', '--json', '--pack-destination', work], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 300_000,
  });
  if (packed.status !== 0) throw new Error(`npm pack exited ${packed.status}`);
  // prepare's build prints to stdout too; the JSON is the last thing npm prints.
  const json = packed.stdout.slice(packed.stdout.lastIndexOf('\n[') + 1);
  const [{ filename, entryCount, unpackedSize }] = JSON.parse(json);
  const tarball = join(work, filename);
  console.log(`packed ${filename}: ${entryCount} files, ${unpackedSize} bytes unpacked`);

  const bin = (name) => join(root, 'node_modules', '.bin', name);
  run(bin('publint'), ['run', tarball, '--strict']);
  // esm-only: the package is ESM only, on purpose (see the header); node10
  // resolution and CJS-from-TypeScript are the two views that profile drops.
  run(bin('attw'), [tarball, '--profile', 'esm-only']);

  const project = join(work, 'project');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), '{ "name": "scratch", "private": true }\n');
  // The peers at the versions the repository tests, so npm's cache serves them.
  const peers = Object.keys(pkg.peerDependencies ?? {}).map(
    (name) => `${name}@${pkg.devDependencies[name] ?? pkg.peerDependencies[name]}`,
  );
  run(npm, ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, ...peers], {
    cwd: project,
  });
  writeFileSync(join(project, 'probe.cjs'), probe);

  for (const node of nodes) {
    const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
    console.log(`== ${version}: every subpath, import() and require()`);
    run(node, ['probe.cjs'], { cwd: project });
    run(node, [join(project, 'node_modules', pkg.name, pkg.bin.staunch), '--help'], {
      cwd: project,
      stdio: 'ignore',
    });
  }
  // Without peers: the fault tools load, except the Dispatcher, which needs undici.
  const bare = join(work, 'bare');
  mkdirSync(bare);
  writeFileSync(join(bare, 'package.json'), '{ "name": "bare", "private": true }\n');
  run(npm, ['install', '--no-audit', '--no-fund', '--prefer-offline', '--omit=peer', tarball], {
    cwd: bare,
  });
  writeFileSync(
    join(bare, 'probe.mjs'),
    `for (const s of ['${pkg.name}/testing', '${pkg.name}/testing/server']) {
  const names = Object.keys(await import(s));
  if (names.length === 0) throw new Error(s + ': no exports');
  console.log('  ' + s + ' without peers: ' + names.length + ' exports');
}
const failed = await import('${pkg.name}/testing/undici').then(() => undefined, (e) => e);
if (failed?.code !== 'ERR_MODULE_NOT_FOUND' || !String(failed.message).includes("'undici'")) {
  throw new Error('${pkg.name}/testing/undici without undici: ' + (failed ?? 'it loaded'));
}
console.log('  ${pkg.name}/testing/undici without undici: needs undici, as declared');
`,
  );
  for (const node of nodes) run(node, ['probe.mjs'], { cwd: bare });
  console.log('package checks passed');
} finally {
  rmSync(work, { recursive: true, force: true });
}
