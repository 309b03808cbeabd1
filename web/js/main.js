// The served site's entry point: scripts/web-bundle/site.mjs bundles it
// (with everything it imports) into pkg/playground.js, the ES module
// index.html loads. The wasm-bindgen glue inside fetches
// pkg/svcnet_wasm_bg.wasm from beside it, so this needs HTTP(S). For
// file://, see offline.js.

import { start } from './app.js';

start();
