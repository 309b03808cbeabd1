//! The state file (`--state-file`): a control plane snapshot as JSON (the
//! agent writes its allocations: `ControlPlane::allocation_snapshot`), so
//! ClusterIPs and NodePorts survive restarts. Written atomically (a
//! temporary file in the same directory, fsync, rename, fsync of the
//! directory), so a crash leaves the old file or the new one, never half
//! of one. A file that does not parse is an error, never a silent reset.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use svcnet_core::controlplane::Snapshot;
use thiserror::Error;

/// Why the state file could not be used.
#[derive(Debug, Error)]
pub enum StateError {
    /// The file exists but could not be read.
    #[error("state file {path}: cannot read: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a snapshot (truncated, edited, another program's).
    #[error("state file {path}: not a valid svcnet state file ({message}); move it away to start from scratch")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What the JSON decoder said.
        message: String,
    },
    /// The snapshot does not fit the flags (another service CIDR or
    /// NodePort range).
    #[error("state file {path}: {message}")]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// The control plane's message.
        message: String,
    },
    /// The file could not be written.
    #[error("state file {path}: cannot write: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Reads the snapshot; `None` when the file does not exist yet.
pub fn load(path: &Path) -> Result<Option<Snapshot>, StateError> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(StateError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    serde_json::from_str(&text).map(Some).map_err(|e| StateError::Corrupt {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Writes the snapshot atomically.
pub fn save(path: &Path, snapshot: &Snapshot) -> Result<(), StateError> {
    let write_error = |source| StateError::Write {
        path: path.to_path_buf(),
        source,
    };
    // Serialising plain data with string map keys cannot fail.
    let json = serde_json::to_vec_pretty(snapshot).unwrap_or_default();
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let result = (|| {
        let mut file = File::create(&tmp)?;
        file.write_all(&json)?;
        file.write_all(b"\n")?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        File::open(&dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(write_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use svcnet_core::controlplane::{ClusterConfig, ControlPlane};

    #[test]
    fn round_trip_and_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        assert!(load(&path).unwrap().is_none());
        let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        cp.apply_manifest(
            "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {type: NodePort, ports: [{port: 80}]}\n",
        )
        .unwrap();
        save(&path, &cp.snapshot()).unwrap();
        save(&path, &cp.snapshot()).unwrap();
        let back = load(&path).unwrap().unwrap();
        assert_eq!(back, cp.snapshot());
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["state.json"], "no temporary file is left behind");
    }

    #[test]
    fn a_corrupt_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        fs::write(&path, "{\"config\": {").unwrap();
        let err = load(&path).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "state file {}: not a valid svcnet state file (",
                path.display()
            )),
            "{err}"
        );
        fs::write(&path, "[]").unwrap();
        assert!(matches!(load(&path), Err(StateError::Corrupt { .. })));
    }

    #[test]
    fn unwritable_places_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no-such-dir").join("state.json");
        let cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        let err = save(&path, &cp.snapshot()).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("state file {}: cannot write: ", path.display())),
            "{err}"
        );
    }
}
