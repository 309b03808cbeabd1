//! svcnet-wasm: wasm-bindgen bindings over `svcnet-core`.
//!
//! A thin shell with no logic of its own: it converts JS values into the
//! core's inputs and the core's outputs into JS values, so the browser
//! playground and the Node run of the behaviour vectors execute the very
//! code the native build runs.
//!
//! - [`cluster::Cluster`]: the JS class `Cluster` over one control plane.
//! - [`run_vector`]: the JS function `runVector(text)`, a behaviour vector's
//!   report as the native test writes it.
//! - [`ops`]: what each method asks of the core, as plain Rust (tested
//!   natively); [`js`]: lossless JS value <-> JSON data conversion.
//!
//! `make wasm` builds the packages into `target/wasm/web/` (browsers) and
//! `target/wasm/node/` (Node), module `svcnet_wasm`.

pub mod cluster;
pub mod js;
pub mod ops;
pub mod playground;

use wasm_bindgen::prelude::*;

pub use cluster::Cluster;

/// `runVector(text)`: runs one behaviour vector (YAML or JSON) with
/// `svcnet_core::scenario::run_vector_text` and returns its report as pretty
/// JSON, byte for byte what `core/tests/vectors.rs` writes to
/// `target/vector-reports/native/<name>.json`. Throws when the vector
/// itself cannot be read. A report may record failures: check them.
#[wasm_bindgen(js_name = runVector)]
pub fn run_vector(text: &str) -> Result<String, JsValue> {
    ops::run_vector(text).map_err(|e| cluster::error(&e))
}
