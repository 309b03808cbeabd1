// The served playground's one script: what `scripts/playground.sh prepare`
// runs after copying the browser package into web/pkg/.
//
//   node scripts/web-bundle/site.mjs
//
// Bundles web/js/main.js (app.js, every module it imports and the
// wasm-bindgen glue in web/pkg/) into web/pkg/playground.js, an ES module,
// minified: the one script web/index.html loads. The glue finds
// svcnet_wasm_bg.wasm through import.meta.url, which is now
// web/pkg/playground.js, beside the .wasm. The sources in web/js/ are what
// the browser tests and the file:// build read too; this only joins and
// minifies them (32 KB of gzip for the modules and the glue as they are, 19
// KB bundled), so the page stays within issue 16's 350 KB.

import { build } from 'esbuild';
import { existsSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const WEB = join(resolve(dirname(fileURLToPath(import.meta.url)), '../..'), 'web');

if (!existsSync(join(WEB, 'pkg/svcnet_wasm.js'))) {
  console.error('[web-bundle] error: web/pkg/svcnet_wasm.js is missing: run scripts/playground.sh prepare');
  process.exit(1);
}

const result = await build({
  entryPoints: [join(WEB, 'js/main.js')],
  outfile: join(WEB, 'pkg/playground.js'),
  bundle: true,
  minify: true,
  format: 'esm',
  platform: 'browser',
  target: ['chrome100', 'firefox100', 'safari15'],
  banner: { js: '// svcnet playground: web/js/ and the svcnet-wasm glue, bundled and minified by scripts/web-bundle/site.mjs. Generated; do not edit.' },
  legalComments: 'inline',
  charset: 'utf8',
  logLevel: 'silent',
});
for (const w of result.warnings) console.error(`[web-bundle] warning: ${w.text}${w.location ? ` (${w.location.file}:${w.location.line})` : ''}`);
if (result.warnings.length) {
  console.error('[web-bundle] error: esbuild warned (see above); the bundle is refused');
  process.exit(1);
}
