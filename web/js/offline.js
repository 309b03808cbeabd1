// The file:// build's entry point. Browsers load neither ES modules nor
// fetch() from file://, so scripts/web-bundle/ bundles this file, app.js and
// the wasm-bindgen glue into one classic script, with the .wasm's bytes
// embedded (esbuild's binary loader: the import below is a Uint8Array).
// Only the bundler reads this file; index.html never loads it.

import wasm from '../pkg/svcnet_wasm_bg.wasm';
import { start } from './app.js';

start({ module_or_path: wasm });
