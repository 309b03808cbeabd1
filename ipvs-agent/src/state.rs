//! The state file (`--state-file`): a control plane snapshot as JSON (the
//! agent writes its allocations: `ControlPlane::allocation_snapshot`), so
//! ClusterIPs and NodePorts survive restarts; and the plan-state file
//! beside it ([`plan_state_path`]: `<state-file>.plan.json`), the proxy's
//! [`PlanState`] as JSON (drain start times, claimed virtual servers), so
//! drain timeouts count from when draining began and not from the last
//! restart. Both are written atomically (a temporary file in the same
//! directory, fsync, rename, fsync of the directory), so a crash leaves the
//! old file or the new one, never half of one. A state file that does not
//! parse is an error, never a silent reset; a plan-state file that does not
//! parse is an error too ([`StateError::CorruptPlanState`]), which the agent
//! logs and starts without (see `agent::load_plan_state`).
//!
//! Two files rather than one: the state file holds every Service (several
//! MB at 5,000 Services) and changes only with Services and ServiceCIDRs,
//! while the plan state is small and changes with every drain; writing it
//! alone keeps a drain from rewriting megabytes.
//!
//! Both are created with mode 0600, and a file that another user owns or
//! that group or others may write is refused ([`StateError::Owner`],
//! [`StateError::Mode`]; see [`ownership`]).

pub mod ownership;
pub mod writer;

use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use svcnet_core::api::limits::{check_file_size, LimitError};
use svcnet_core::controlplane::Snapshot;
use svcnet_core::proxy::PlanState;
use thiserror::Error;

/// Why the state file could not be used.
#[derive(Debug, Error)]
pub enum StateError {
    /// The file is larger than the limit on files; it is not read.
    #[error("state file {path}: {limit}")]
    Limit {
        /// The file.
        path: PathBuf,
        /// The limit broken.
        limit: LimitError,
    },
    /// The file exists but could not be read.
    #[error("state file {path}: cannot read: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file belongs to another user than the agent's; it is not read.
    #[error(
        "state file {path}: owned by uid {owner}, but the agent runs as uid {expected}; refusing a state file \
         another user owns (expected: owned by uid {expected}, mode 0600; chown it, or move it away to start from \
         scratch)"
    )]
    Owner {
        /// The file.
        path: PathBuf,
        /// Its owner's uid.
        owner: u32,
        /// The agent's effective uid.
        expected: u32,
    },
    /// Group or others may write the file; it is not read.
    #[error(
        "state file {path}: mode {mode:04o} lets group or others write it; refusing it (expected: mode 0600; \
         chmod 600 it, or move it away to start from scratch)"
    )]
    Mode {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The file is not a snapshot (truncated, edited, another program's).
    /// The agent refuses to start rather than allocate anew: the kernel's
    /// table still serves the old ClusterIPs and NodePorts, and fresh
    /// allocations could hand them to other Services.
    #[error(
        "state file {path}: not a valid svcnet state file ({message}); refusing to start: allocating ClusterIPs \
         and NodePorts anew could give the ones the kernel still serves to other Services (nothing was changed in \
         the kernel). Put back a good copy, or move it away to start from scratch, knowing that Services without a \
         fixed clusterIP or nodePort may get new ones"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What the JSON decoder said.
        message: String,
    },
    /// The plan-state file exists but does not hold a plan state
    /// (truncated, edited, another program's).
    #[error("plan state file {path}: not a valid svcnet plan state ({message})")]
    CorruptPlanState {
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
    let Some(bytes) = read(path)? else {
        return Ok(None);
    };
    text(bytes)
        .and_then(|text| parse(&text))
        .map(Some)
        .map_err(|message| StateError::Corrupt {
            path: path.to_path_buf(),
            message,
        })
}

/// Reads a snapshot from the text of a state file (what [`load`] does once
/// the file is read); the error is the JSON decoder's message.
pub fn parse(text: &str) -> Result<Snapshot, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// Writes the snapshot atomically.
pub fn save(path: &Path, snapshot: &Snapshot) -> Result<(), StateError> {
    // Serialising plain data with string map keys cannot fail.
    let json = serde_json::to_vec_pretty(snapshot).unwrap_or_default();
    write_atomically(path, &json)
}

/// The plan-state file kept beside `state_file`: its name with
/// `.plan.json` appended (`state.json` -> `state.json.plan.json`).
/// Appended rather than replacing the extension, so two state files never
/// share a plan-state file; in the same directory, so the atomic rename
/// stays on one filesystem and whatever volume holds the state file holds
/// this one too.
pub fn plan_state_path(state_file: &Path) -> PathBuf {
    let mut name = state_file.as_os_str().to_owned();
    name.push(".plan.json");
    PathBuf::from(name)
}

/// Reads a plan state; `None` when the file does not exist yet.
pub fn load_plan_state(path: &Path) -> Result<Option<PlanState>, StateError> {
    let Some(bytes) = read(path)? else {
        return Ok(None);
    };
    text(bytes)
        .and_then(|text| parse_plan_state(&text))
        .map(Some)
        .map_err(|message| StateError::CorruptPlanState {
            path: path.to_path_buf(),
            message,
        })
}

/// Reads a plan state from the text of a plan-state file (what
/// [`load_plan_state`] does once the file is read).
pub fn parse_plan_state(text: &str) -> Result<PlanState, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// Writes a plan state atomically.
pub fn save_plan_state(path: &Path, state: &PlanState) -> Result<(), StateError> {
    // Serialising plain data with string map keys cannot fail.
    let json = serde_json::to_vec_pretty(state).unwrap_or_default();
    write_atomically(path, &json)
}

/// The file's text; `None` when it does not exist. It must belong to
/// this process's user and be writable by no one else
/// ([`ownership::check`]), and fit the limit on files; both are checked on
/// the open file, before it is read.
/// A state file's bytes as text; garbage that is not UTF-8 is a corrupt
/// file like any other, not a read error.
fn text(bytes: Vec<u8>) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text: an invalid byte at offset {}",
            e.utf8_error().valid_up_to()
        )
    })
}

fn read(path: &Path) -> Result<Option<Vec<u8>>, StateError> {
    let read_error = |source| StateError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(read_error(source)),
    };
    let meta = file.metadata().map_err(read_error)?;
    ownership::check(path, &meta, ownership::effective_uid())?;
    // serde_json's own depth limit (128) keeps the decoding linear.
    let size = usize::try_from(meta.len()).unwrap_or(usize::MAX);
    check_file_size(size).map_err(|limit| StateError::Limit {
        path: path.to_path_buf(),
        limit,
    })?;
    let mut bytes = Vec::with_capacity(size);
    file.read_to_end(&mut bytes).map_err(read_error)?;
    Ok(Some(bytes))
}

/// Replaces `path` with `json` and a newline: a temporary file in the same
/// directory, created with mode 0600, fsync, rename over `path`, fsync of
/// the directory.
fn write_atomically(path: &Path, json: &[u8]) -> Result<(), StateError> {
    let write_error = |source| StateError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    // One left by an earlier run with the same pid (1, in a container)
    // that was killed mid-write.
    let _ = fs::remove_file(&tmp);
    let result = (|| {
        let mut file = ownership::create_private(&tmp)?;
        file.write_all(json)?;
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
    fn a_state_file_over_the_limit_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        // Sparse: no 64 MiB are written.
        let file = File::create(&path).unwrap();
        file.set_len(svcnet_core::api::limits::MAX_FILE_BYTES as u64 + 1)
            .unwrap();
        let err = load(&path).unwrap_err();
        assert!(matches!(err, StateError::Limit { .. }), "{err}");
        assert!(err.to_string().contains("Request entity too large"), "{err}");
    }

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
        assert_eq!(
            file_names(dir.path()),
            vec!["state.json"],
            "no temporary file is left behind"
        );
    }

    /// The names of the files in `dir`.
    fn file_names(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
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

    /// Two draining real servers and a claimed NodePort, as the plan
    /// writes them.
    fn a_plan_state() -> PlanState {
        serde_json::from_str(
            r#"{"draining": {"TCP/10.96.0.20:80": {"10.244.1.12:8080": 1000061000, "10.244.1.13:8080": 1000062000}},
                "claimed": ["TCP/192.168.0.10:30080"]}"#,
        )
        .unwrap()
    }

    #[test]
    fn the_plan_state_file_sits_beside_the_state_file() {
        assert_eq!(
            plan_state_path(Path::new("/var/lib/ipvs-agent/state.json")),
            Path::new("/var/lib/ipvs-agent/state.json.plan.json")
        );
        assert_eq!(plan_state_path(Path::new("state")), Path::new("state.plan.json"));
    }

    #[test]
    fn plan_state_round_trip_and_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = plan_state_path(&dir.path().join("state.json"));
        assert!(load_plan_state(&path).unwrap().is_none());
        let state = a_plan_state();
        assert_eq!(state.draining.len(), 2);
        save_plan_state(&path, &state).unwrap();
        save_plan_state(&path, &state).unwrap();
        assert_eq!(load_plan_state(&path).unwrap(), Some(state));
        save_plan_state(&path, &PlanState::default()).unwrap();
        assert_eq!(load_plan_state(&path).unwrap(), Some(PlanState::default()));
        assert_eq!(
            file_names(dir.path()),
            vec!["state.json.plan.json"],
            "no temporary file is left behind"
        );
    }

    #[test]
    fn a_corrupt_plan_state_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = plan_state_path(&dir.path().join("state.json"));
        fs::write(&path, "{\"draining\": {\"TCP/10.96.0.20:80\": {").unwrap();
        let err = load_plan_state(&path).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "plan state file {}: not a valid svcnet plan state (",
                path.display()
            )),
            "{err}"
        );
        fs::write(&path, "{\"claimed\": [\"not a virtual server\"]}").unwrap();
        assert!(matches!(
            load_plan_state(&path),
            Err(StateError::CorruptPlanState { .. })
        ));
    }

    #[test]
    fn files_are_written_0600_even_over_a_wider_one() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        fs::write(&path, "{}").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        // A temporary file left by a run with the same pid, killed mid-write.
        let stale = dir.path().join(format!(".state.json.tmp.{}", std::process::id()));
        fs::write(&stale, "{\"half").unwrap();
        let cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        save(&path, &cp.snapshot()).unwrap();
        let plan = plan_state_path(&path);
        save_plan_state(&plan, &a_plan_state()).unwrap();
        for file in [&path, &plan] {
            let mode = fs::metadata(file).unwrap().permissions().mode() & 0o7777;
            assert_eq!(mode, 0o600, "{}", file.display());
        }
        assert!(!stale.exists());
        assert!(load(&path).unwrap().is_some());
    }

    #[test]
    fn a_file_others_may_write_is_refused_naming_path_and_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        save(&path, &cp.snapshot()).unwrap();
        let plan = plan_state_path(&path);
        save_plan_state(&plan, &a_plan_state()).unwrap();
        for mode in [0o620, 0o602, 0o666] {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
            let err = load(&path).unwrap_err();
            assert!(matches!(err, StateError::Mode { .. }), "{err}");
            let text = err.to_string();
            let want = format!(
                "state file {}: mode {mode:04o} lets group or others write it",
                path.display()
            );
            assert!(text.starts_with(&want), "{text}");
            assert!(text.contains("expected: mode 0600"), "{text}");
        }
        fs::set_permissions(&plan, fs::Permissions::from_mode(0o646)).unwrap();
        assert!(matches!(load_plan_state(&plan), Err(StateError::Mode { .. })));
    }

    /// Needs root (to give the file away); as another user the owner
    /// check is covered by `ownership`'s tests alone.
    #[test]
    fn a_file_another_user_owns_is_refused_naming_path_and_owner() {
        let uid = ownership::effective_uid();
        if uid != 0 {
            eprintln!("skipped: not root, cannot chown a file to another user");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let cp = ControlPlane::new(ClusterConfig::default()).unwrap();
        save(&path, &cp.snapshot()).unwrap();
        std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
        let err = load(&path).unwrap_err();
        assert!(
            matches!(
                err,
                StateError::Owner {
                    owner: 65534,
                    expected: 0,
                    ..
                }
            ),
            "{err}"
        );
        let want = format!(
            "state file {}: owned by uid 65534, but the agent runs as uid 0",
            path.display()
        );
        assert!(err.to_string().starts_with(&want), "{err}");
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
