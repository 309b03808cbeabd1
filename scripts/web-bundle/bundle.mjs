// The playground's file:// build: what `make playground-offline` runs (through
// scripts/playground.sh offline).
//
//   node scripts/web-bundle/bundle.mjs [OUT]     OUT defaults to target/playground-offline
//
// Browsers refuse ES modules and fetch() from file:// pages, so this bundles
// web/js/offline.js (app.js and every module it imports, and the wasm-bindgen
// glue in web/pkg/) into ONE classic script, OUT/playground.js, with
// web/pkg/svcnet_wasm_bg.wasm embedded (esbuild's binary loader). It writes
// OUT/index.html from web/index.html with the module script swapped for
// <script src="playground.js">, and copies web/css/. The JavaScript is the
// same web/js/ sources the served site loads; nothing is copied by hand.
//
// Prints the path of OUT/index.html and the sizes, raw and gzip -9.

import { build, version as esbuildVersion } from 'esbuild';
import { readFile, writeFile, rm, mkdir, cp, readdir, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join, resolve, dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const WEB = join(ROOT, 'web');
const OUT = resolve(process.argv[2] ?? join(ROOT, 'target/playground-offline'));
const SCRIPT = 'playground.js';

function die(message) {
  console.error(`[web-bundle] error: ${message}`);
  process.exit(1);
}

if (!existsSync(join(WEB, 'pkg/svcnet_wasm.js')) || !existsSync(join(WEB, 'pkg/svcnet_wasm_bg.wasm'))) {
  die('web/pkg/ is missing: run make playground-site (or make wasm, then scripts/playground.sh prepare)');
}

await rm(OUT, { recursive: true, force: true });
await mkdir(OUT, { recursive: true });

// 1. One classic script: an IIFE, no import/export left, the wasm inside.
const result = await build({
  entryPoints: [join(WEB, 'js/offline.js')],
  outfile: join(OUT, SCRIPT),
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: ['chrome100', 'firefox100', 'safari15'],
  loader: { '.wasm': 'binary' },
  // The glue only reads import.meta.url to find the .wasm when init() is
  // given nothing; offline.js always hands it the bytes.
  define: { 'import.meta.url': 'document.baseURI' },
  banner: { js: '// svcnet playground, file:// build: web/js/ and the svcnet-wasm package bundled by scripts/web-bundle/bundle.mjs. Generated; do not edit.' },
  legalComments: 'inline',
  charset: 'utf8',
  logLevel: 'silent',
});
for (const w of result.warnings) console.error(`[web-bundle] warning: ${w.text}${w.location ? ` (${w.location.file}:${w.location.line})` : ''}`);
if (result.warnings.length) die('esbuild warned (see above); the bundle is refused');
const bundled = await readFile(join(OUT, SCRIPT), 'utf8');
if (/\bimport\.meta\b|^\s*(import|export)\s/m.test(bundled)) die(`${SCRIPT} still has module syntax`);

// 2. index.html: the served page, with the module script swapped for the bundle.
let html = await readFile(join(WEB, 'index.html'), 'utf8');
const swaps = [
  [/<script type="module" src="pkg\/playground\.js"><\/script>/, `<script src="${SCRIPT}"></script>`],
];
for (const [pattern, replacement] of swaps) {
  if (!pattern.test(html)) die(`web/index.html no longer matches ${pattern}: update scripts/web-bundle/bundle.mjs`);
  html = html.replace(pattern, replacement);
}
if (/type="module"/.test(html)) die('web/index.html has another module script: the file:// build cannot load it');
await writeFile(join(OUT, 'index.html'), html);

// 3. The stylesheet, as it is.
await cp(join(WEB, 'css'), join(OUT, 'css'), { recursive: true });

// 4. Sizes.
async function files(dir) {
  const out = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await files(p)));
    else out.push(p);
  }
  return out.sort();
}
const rows = [];
let raw = 0;
let gz = 0;
for (const file of await files(OUT)) {
  const body = await readFile(file);
  const g = gzipSync(body, { level: 9 }).length;
  raw += body.length;
  gz += g;
  rows.push([relative(OUT, file), body.length, g]);
}
rows.push(['total', raw, gz]);
const wasmBytes = (await stat(join(WEB, 'pkg/svcnet_wasm_bg.wasm'))).size;
const lines = rows.map(([name, r, g]) => `${name.padEnd(22)} ${String(r).padStart(10)} bytes raw ${String(g).padStart(10)} bytes gzip -9`);
const report = [`svcnet playground, file:// build (esbuild ${esbuildVersion}; ${wasmBytes} bytes of wasm embedded as base64)`, ...lines].join('\n');
await writeFile(join(OUT, 'size.txt'), `${report}\n`);
console.log(`\n${report}\n`);
console.log(`  Offline playground: ${join(OUT, 'index.html')}`);
console.log(`  (open it from disk: file://${join(OUT, 'index.html')}; no server needed)\n`);
