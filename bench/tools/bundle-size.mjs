// What a browser bundle that imports only `createFetch` weighs, minified and
// gzipped, against ky built the same way. Run after `npm run build`:
//   node bench/tools/bundle-size.mjs
// Builds with vite's library mode (rolldown), tree-shaking on, into a temp dir.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'vite';

const root = fileURLToPath(new URL('../..', import.meta.url));
const entries = {
  'staunch createFetch': `export { createFetch } from ${JSON.stringify(join(root, 'dist/index.js'))};`,
  'staunch, every core export': `export * from ${JSON.stringify(join(root, 'dist/index.js'))};`,
  ky: `export { default } from ${JSON.stringify(join(root, 'node_modules/ky/distribution/index.js'))};`,
};

const dir = mkdtempSync(join(tmpdir(), 'staunch-bundle-'));
const rows = [];
try {
  for (const [name, source] of Object.entries(entries)) {
    const entry = join(dir, `${rows.length}.mjs`);
    writeFileSync(entry, source);
    const out = join(dir, `out-${rows.length}`);
    await build({
      root,
      logLevel: 'silent',
      configFile: false,
      build: {
        lib: { entry, formats: ['es'], fileName: 'bundle' },
        outDir: out,
        minify: true,
        emptyOutDir: true,
        write: true,
      },
    });
    const code = readFileSync(join(out, 'bundle.js'));
    rows.push({ name, min: code.length, gzip: gzipSync(code, { level: 9 }).length });
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
console.log('| bundle | minified | gzip |\n| --- | --- | --- |');
for (const r of rows) console.log(`| ${r.name} | ${kb(r.min)} | ${kb(r.gzip)} |`);
