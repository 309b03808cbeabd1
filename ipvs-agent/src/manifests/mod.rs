//! Manifest files: finding them (`--manifests` files and directories),
//! reading them, noticing when they change, and decoding them into
//! objects that remember their file and document, so any error can name
//! both. Decoding itself is the core's ([`parse_documents`]); a file whose
//! text did not change since the last read is not decoded again
//! (`decoded`), and files whose [`Stamps`] did not change need not be
//! read at all.
//!
//! A directory contributes its `*.yaml`, `*.yml` and `*.json` entries in
//! name order, not recursively, skipping hidden entries (names starting
//! with `.`): a Kubernetes ConfigMap volume works as it is, since its
//! visible names are symlinks into a hidden `..data` directory that is
//! swapped by rename.

mod decoded;

pub use decoded::{Batch, ManifestFile, Manifests};

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use svcnet_core::api::limits::{check_file_size, LimitError};
use svcnet_core::api::manifest::parse_documents;
use svcnet_core::controlplane::ApiError;
use svcnet_core::field::FieldError;
use thiserror::Error;

/// Why the manifests could not be used.
#[derive(Debug, Error)]
pub enum ManifestError {
    /// A path could not be read (missing, unreadable, not UTF-8).
    #[error("{path}: {message}")]
    Read {
        /// The path as given or found.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A document does not decode (bad YAML, unknown field, wrong type).
    #[error("{path}: document {document}: {message}")]
    Decode {
        /// The file.
        path: PathBuf,
        /// 1-based document number in the file.
        document: usize,
        /// The core's message, with the field path.
        message: String,
    },
    /// A file, or one of its documents, breaks an input limit (size,
    /// nesting, aliases, objects).
    #[error("{path}: {}{limit}", .document.map(|d| format!("document {d}: ")).unwrap_or_default())]
    Limit {
        /// The file.
        path: PathBuf,
        /// 1-based document number in the file, when one document is at
        /// fault rather than the whole file.
        document: Option<usize>,
        /// The limit broken.
        limit: LimitError,
    },
    /// The control plane refused an object (validation, allocation).
    #[error("{path}: document {document} ({object}): {}", refusal(.error))]
    Refused {
        /// The file.
        path: PathBuf,
        /// 1-based document number in the file.
        document: usize,
        /// `Kind namespace/name`.
        object: String,
        /// The control plane's error.
        error: Box<ApiError>,
    },
    /// An object no longer in the manifests could not be deleted.
    #[error("cannot delete what the manifests no longer hold: {0}")]
    Prune(Box<ApiError>),
}

/// The field errors of an `Invalid` refusal, `; `-separated (the object is
/// named already); any other error as the control plane words it.
fn refusal(error: &ApiError) -> String {
    match error {
        ApiError::Invalid { errors, .. } => errors.iter().map(FieldError::to_string).collect::<Vec<_>>().join("; "),
        other => other.to_string(),
    }
}

/// One manifest file's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The file, as given or as found in a given directory.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

/// Where an object came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file.
    pub path: PathBuf,
    /// 1-based document number.
    pub document: usize,
}

/// Every manifest file's text, read in one go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    /// The files in order.
    pub files: Vec<Source>,
}

impl Sources {
    /// Reads every `--manifests` path (files and directories).
    pub fn read(paths: &[PathBuf]) -> Result<Sources, ManifestError> {
        Sources::read_files(&manifest_files(paths)?)
    }

    /// Reads the files [`Stamps`] were taken of, without listing the
    /// directories again: what is read is what was stamped.
    pub fn read_stamped(stamps: &Stamps) -> Result<Sources, ManifestError> {
        let files: Vec<FoundFile> = (stamps.files.iter())
            .map(|stamp| FoundFile {
                path: stamp.path.clone(),
                listed: stamp.listed,
            })
            .collect();
        Sources::read_files(&files)
    }

    /// Reads `files`; one found by listing a directory that is gone by now
    /// was deleted meanwhile and is left out, as the next listing would.
    fn read_files(files: &[FoundFile]) -> Result<Sources, ManifestError> {
        let mut sources = Vec::with_capacity(files.len());
        for file in files {
            if let Some(text) = read_limited(file)? {
                sources.push(Source {
                    path: file.path.clone(),
                    text,
                });
            }
        }
        Ok(Sources { files: sources })
    }

    /// A fingerprint of the file names and contents: equal fingerprints,
    /// same manifests (however the files were replaced).
    pub fn fingerprint(&self) -> u64 {
        let mut hasher = DefaultHasher::new();
        self.files.hash(&mut hasher);
        hasher.finish()
    }

    /// Decodes every document of every file, in order. Files with the same
    /// path and text as in `previous` are taken from it, not decoded again;
    /// the others are decoded on every core (`decode_files`). An error
    /// is the first failing file's, in file order.
    pub fn decode(&self, previous: Option<&Manifests>) -> Result<Manifests, ManifestError> {
        let mut files: Vec<Option<Arc<ManifestFile>>> = (self.files.iter())
            .map(|source| previous.and_then(|p| p.file(&source.path, &source.text)))
            .collect();
        let todo: Vec<usize> = (0..files.len()).filter(|&i| files[i].is_none()).collect();
        let sources: Vec<&Source> = todo.iter().map(|&i| &self.files[i]).collect();
        for (i, decoded) in todo.into_iter().zip(decode_files(&sources)) {
            files[i] = Some(Arc::new(decoded?));
        }
        Ok(Manifests::new(files.into_iter().flatten().collect()))
    }
}

/// Decodes files on as many threads as there are cores (files decode
/// independently, and YAML decoding is most of a cold start), largest
/// first so one big file does not finish last; the results are in the
/// order of `sources`.
fn decode_files(sources: &[&Source]) -> Vec<Result<ManifestFile, ManifestError>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(sources.len());
    if threads <= 1 {
        return sources.iter().map(|source| ManifestFile::decode(source)).collect();
    }
    let mut largest_first: Vec<usize> = (0..sources.len()).collect();
    largest_first.sort_by_key(|&i| std::cmp::Reverse(sources[i].text.len()));
    let next = AtomicUsize::new(0);
    let mut results: Vec<Option<Result<ManifestFile, ManifestError>>> = (0..sources.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    while let Some(&i) = largest_first.get(next.fetch_add(1, Ordering::Relaxed)) {
                        done.push((i, ManifestFile::decode(sources[i])));
                    }
                    done
                })
            })
            .collect();
        for worker in workers {
            // A decoder that panicked broke an invariant: let it go on up.
            let done = worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            for (i, decoded) in done {
                results[i] = Some(decoded);
            }
        }
    });
    // Every index was taken by exactly one worker.
    results.into_iter().flatten().collect()
}

impl Hash for Source {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.path.hash(state);
        self.text.hash(state);
    }
}

/// What `stat` says of the manifest files, without reading them: each
/// file's path, size, device and inode, and its modification and change
/// times. A poll compares these first and reads the files only when they
/// differ ([`crate::cluster::Cluster::refresh_if_touched`]). A ConfigMap
/// volume's swap changes the inodes the links lead to; any write changes
/// the change time, which no one can set back.
///
/// The kernel stamps files from a coarse clock (a tick of a few
/// milliseconds), so a same-size rewrite in the same tick as a change the
/// stamps saw would leave them equal. Stamps taken less than
/// [`Stamps::SETTLE`] after a file's last change are therefore not
/// [`settled`](Stamps::settled) and must not be relied on (git calls such
/// index entries "racily clean"); the agent also reads every file every
/// sync period, whatever the stamps say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamps {
    files: Vec<Stamp>,
    settled: bool,
}

/// A manifest file, and whether it was found by listing a directory (a
/// file named by `--manifests` itself must be there; a listed one may be
/// deleted between the listing and its reading, by whatever changes the
/// directory).
#[derive(Debug, Clone, PartialEq, Eq)]
struct FoundFile {
    path: PathBuf,
    listed: bool,
}

impl FoundFile {
    /// Whether `e`, met stat'ing or opening this file, means it was
    /// deleted since its directory was listed.
    fn gone(&self, e: &std::io::Error) -> bool {
        self.listed && e.kind() == std::io::ErrorKind::NotFound
    }
}

/// One file's [`Stamps`] entry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    path: PathBuf,
    listed: bool,
    len: u64,
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamps {
    /// How long after a file's last change its stamp can be relied on.
    pub const SETTLE: Duration = Duration::from_secs(1);

    /// Stats every file the `--manifests` paths stand for (following
    /// links), in the order they are read, at wall-clock time `now`.
    pub fn take(paths: &[PathBuf], now: SystemTime) -> Result<Stamps, ManifestError> {
        use std::os::unix::fs::MetadataExt;
        let settle_before = now
            .checked_sub(Stamps::SETTLE)
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .unwrap_or(Duration::ZERO);
        let mut files = Vec::new();
        let mut settled = true;
        for file in manifest_files(paths)? {
            let meta = match std::fs::metadata(&file.path) {
                Ok(meta) => meta,
                Err(e) if file.gone(&e) => continue,
                Err(e) => return Err(read_error(&file.path, e)),
            };
            let ctime = (meta.ctime(), meta.ctime_nsec());
            let changed = u64::try_from(ctime.0)
                .map(|secs| Duration::new(secs, u32::try_from(ctime.1).unwrap_or(0)))
                .unwrap_or(Duration::ZERO);
            settled &= changed < settle_before;
            files.push(Stamp {
                path: file.path,
                listed: file.listed,
                len: meta.len(),
                dev: meta.dev(),
                ino: meta.ino(),
                mtime: (meta.mtime(), meta.mtime_nsec()),
                ctime,
            });
        }
        Ok(Stamps { files, settled })
    }

    /// Whether every file's last change was at least [`Stamps::SETTLE`]
    /// before the stamps were taken, so that equal stamps taken later mean
    /// untouched files.
    pub fn settled(&self) -> bool {
        self.settled
    }
}

/// The manifest files the `--manifests` paths stand for, in order.
fn manifest_files(paths: &[PathBuf]) -> Result<Vec<FoundFile>, ManifestError> {
    let mut files = Vec::new();
    for path in paths {
        files.extend(expand(path)?);
    }
    Ok(files)
}

/// A manifest file's text, refused before it is read when it is larger
/// than the limit (and, should it grow while being read, after reading
/// no more than one byte past it); `None` for a listed file deleted
/// since the listing.
fn read_limited(listed: &FoundFile) -> Result<Option<String>, ManifestError> {
    use std::io::Read;
    let file = listed.path.as_path();
    let too_large = |size: usize| {
        check_file_size(size).map_err(|limit| ManifestError::Limit {
            path: file.to_path_buf(),
            document: None,
            limit,
        })
    };
    let opened = match std::fs::File::open(file) {
        Ok(opened) => opened,
        Err(e) if listed.gone(&e) => return Ok(None),
        Err(e) => return Err(read_error(file, e)),
    };
    let size = opened.metadata().map_err(|e| read_error(file, e))?.len();
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    too_large(size)?;
    // Room for the whole file (and the byte that would show it grew past
    // the limit while read), so reading it copies it once.
    let mut text = String::with_capacity(size.saturating_add(1));
    let limit = svcnet_core::api::limits::MAX_FILE_BYTES as u64 + 1;
    opened
        .take(limit)
        .read_to_string(&mut text)
        .map_err(|e| read_error(file, e))?;
    too_large(text.len())?;
    Ok(Some(text))
}

/// A file or directory that could not be read or stat'ed, by name.
fn read_error(path: &Path, e: std::io::Error) -> ManifestError {
    ManifestError::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// The manifest files a path stands for.
fn expand(path: &Path) -> Result<Vec<FoundFile>, ManifestError> {
    let read_error = |e: std::io::Error| read_error(path, e);
    let meta = std::fs::metadata(path).map_err(read_error)?;
    if !meta.is_dir() {
        return Ok(vec![FoundFile {
            path: path.to_path_buf(),
            listed: false,
        }]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).map_err(read_error)? {
        let entry = entry.map_err(read_error)?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let wanted = [".yaml", ".yml", ".json"].iter().any(|ext| name.ends_with(ext));
        if name.starts_with('.') || !wanted {
            continue;
        }
        let file = entry.path();
        // Follow symlinks: a ConfigMap volume's entries are links.
        if std::fs::metadata(&file).map(|m| m.is_file()).unwrap_or(false) {
            files.push(FoundFile {
                path: file,
                listed: true,
            });
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

#[cfg(test)]
mod tests;
