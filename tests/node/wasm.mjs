// Shared by the Node tests: where things are, and the wasm package loader.
//
// The package is the one `make wasm` writes for Node (wasm-bindgen
// --target nodejs, module svcnet_wasm): target/wasm/node/svcnet_wasm.js, or
// the directory named by SVCNET_WASM_NODE_DIR.

import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The behaviour vectors shared by the native and the wasm runs. */
export const vectorsDir = path.join(root, 'tests/vectors');

/** Where `cargo test -p svcnet-core --test vectors` writes its reports. */
export const nativeReportsDir = path.join(root, 'target/vector-reports/native');

/** Where this runner writes the wasm build's reports, for diffing. */
export const wasmReportsDir = path.join(root, 'target/vector-reports/wasm');

const packageDir = process.env.SVCNET_WASM_NODE_DIR
  ? path.resolve(process.env.SVCNET_WASM_NODE_DIR)
  : path.join(root, 'target/wasm/node');

/** Loads the wasm package (CommonJS, as wasm-bindgen writes it for Node). */
export function loadWasm() {
  const entry = path.join(packageDir, 'svcnet_wasm.js');
  if (!existsSync(entry)) {
    throw new Error(`no wasm package at ${entry}: run \`make wasm\` first`);
  }
  return createRequire(import.meta.url)(entry);
}
