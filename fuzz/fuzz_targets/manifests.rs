//! Manifest decoding, YAML and JSON, multi-document (`---`) and
//! `kind: List`: `svcnet_core::api::manifest::parse_documents`, what the
//! agent's manifest files, `ipvs-agent plan` and the playground's
//! `kubectl apply` all call.
//!
//! Asserts: nothing panics (bad text is an error, never a panic); document
//! numbers are 1-based and never decrease; every decoded object, written
//! back as JSON, and all of them as one multi-document YAML text, decode
//! to the very same objects (what the decoder accepts, it also reads back
//! from its own output).
#![no_main]

use libfuzzer_sys::fuzz_target;
use svcnet_core::api::manifest::{parse_documents, Object};

fn reparse(text: &str, what: &str) -> Vec<Object> {
    match parse_documents(text) {
        Ok(objects) => objects.into_iter().map(|(_, o)| o).collect(),
        Err(e) => panic!("{what} of decoded objects does not decode: {e}\n{text}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(documents) = parse_documents(text) else {
        return;
    };
    let mut last = 1;
    for (document, _) in &documents {
        assert!(*document >= last, "document numbers go back");
        last = *document;
    }
    let objects: Vec<Object> = documents.into_iter().map(|(_, o)| o).collect();
    for object in &objects {
        let json = serde_json::to_string(object).expect("an object serialises");
        assert_eq!(reparse(&json, "JSON"), vec![object.clone()], "JSON round trip");
    }
    let yaml: Vec<String> = objects
        .iter()
        .map(|o| serde_yaml_ng::to_string(o).expect("an object serialises"))
        .collect();
    let yaml = yaml.join("---\n");
    assert_eq!(reparse(&yaml, "YAML"), objects, "YAML round trip");
});
