//! Who may have written a state file. The state file decides which
//! ClusterIPs and NodePorts the agent (root, on every node) programs, so
//! one that another user owns, or that group or others may write, is
//! refused rather than trusted; and the agent creates its own files with
//! mode 0600 ([`create_private`]).

use super::StateError;
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The mode state files are created with: read and write for the owner.
pub const MODE: u32 = 0o600;

/// The permission bits that let group or others write.
const WRITABLE_BY_OTHERS: u32 = 0o022;

/// The effective uid of this process: the one state files must belong to.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid takes no arguments, touches no memory and always
    // succeeds (POSIX: "shall always be successful").
    unsafe { libc::geteuid() }
}

/// Refuses `path` unless `meta` (its metadata, from the open file) says it
/// belongs to `uid` and neither group nor others may write it.
pub fn check(path: &Path, meta: &Metadata, uid: u32) -> Result<(), StateError> {
    check_fields(path, meta.uid(), meta.mode(), uid)
}

/// [`check`] on the owner and mode themselves.
fn check_fields(path: &Path, owner: u32, mode: u32, uid: u32) -> Result<(), StateError> {
    if owner != uid {
        return Err(StateError::Owner {
            path: path.to_path_buf(),
            owner,
            expected: uid,
        });
    }
    if mode & WRITABLE_BY_OTHERS != 0 {
        return Err(StateError::Mode {
            path: path.to_path_buf(),
            mode: mode & 0o7777,
        });
    }
    Ok(())
}

/// Creates `path`, which must not exist (a link there is not followed),
/// with mode [`MODE`] from the start: the contents are never readable by
/// others, not even before a `chmod`.
pub fn create_private(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).create_new(true).mode(MODE).open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn owner_and_mode_are_checked() {
        let path = Path::new("/var/lib/ipvs-agent/state.json");
        assert!(check_fields(path, 0, 0o100600, 0).is_ok());
        assert!(check_fields(path, 1000, 0o100644, 1000).is_ok(), "others may read");
        assert!(check_fields(path, 0, 0o100400, 0).is_ok());
        let err = check_fields(path, 1000, 0o100600, 0).unwrap_err();
        assert!(
            matches!(
                err,
                StateError::Owner {
                    owner: 1000,
                    expected: 0,
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "state file /var/lib/ipvs-agent/state.json: owned by uid 1000, but the agent runs as uid 0; \
             refusing a state file another user owns (expected: owned by uid 0, mode 0600; \
             chown it, or move it away to start from scratch)"
        );
        for mode in [0o100620, 0o100602, 0o100666, 0o100777] {
            let err = check_fields(path, 0, mode, 0).unwrap_err();
            assert!(matches!(err, StateError::Mode { .. }), "{mode:o}: {err}");
        }
        assert_eq!(
            check_fields(path, 0, 0o100664, 0).unwrap_err().to_string(),
            "state file /var/lib/ipvs-agent/state.json: mode 0664 lets group or others write it; \
             refusing it (expected: mode 0600; chmod 600 it, or move it away to start from scratch)"
        );
    }

    #[test]
    fn created_files_are_private_and_new() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let file = create_private(&path).unwrap();
        assert_eq!(file.metadata().unwrap().permissions().mode() & 0o777, MODE);
        let err = create_private(&path).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), &link).unwrap();
        assert!(create_private(&link).is_err(), "a link is not followed");
        assert!(!dir.path().join("elsewhere").exists());
    }
}
