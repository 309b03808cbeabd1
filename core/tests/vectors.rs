//! Runs every behaviour vector in `tests/vectors/` against the native core.
//!
//! Each report is also written to `target/vector-reports/native/<name>.json`
//! so the WebAssembly run can be compared with it byte for byte.

use std::fs;
use std::path::{Path, PathBuf};
use svcnet_core::scenario::run_vector_text;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn every_vector_passes() {
    let dir = workspace_root().join("tests/vectors");
    let out_dir = workspace_root().join("target/vector-reports/native");
    fs::create_dir_all(&out_dir).expect("create report directory");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .expect("tests/vectors exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "expected the vector suite in {}, found {} files",
        dir.display(),
        files.len()
    );
    let mut failed = Vec::new();
    let mut steps = 0;
    for file in &files {
        let name = file.file_stem().and_then(|s| s.to_str()).unwrap_or("?").to_string();
        let text = fs::read_to_string(file).expect("read vector");
        match run_vector_text(&text) {
            Err(e) => failed.push(format!("{name}: {e}")),
            Ok(report) => {
                steps += report.steps.len();
                let json = serde_json::to_string_pretty(&report).expect("report serialises");
                fs::write(out_dir.join(format!("{name}.json")), json).expect("write report");
                failed.extend(report.all_failures().into_iter().map(|f| format!("{name}: {f}")));
            }
        }
    }
    println!("{} vectors, {steps} steps, {} failures", files.len(), failed.len());
    assert!(failed.is_empty(), "vector failures:\n{}", failed.join("\n"));
}
