// The served site's entry point (index.html loads it as an ES module): the
// wasm-bindgen glue fetches pkg/svcnet_wasm_bg.wasm from beside itself, so
// this needs HTTP(S). For file://, see offline.js.

import { start } from './app.js';

start();
