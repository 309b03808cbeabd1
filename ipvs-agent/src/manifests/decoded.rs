//! Decoded manifests, file by file, and what differs between two reads.
//!
//! The agent re-reads its manifests whenever they may have changed. A file
//! whose text is the same as last time keeps its decoded objects (shared,
//! not copied), and [`Manifests::changes_since`] gives the control plane
//! only the objects that are new or changed and the ones that are gone,
//! so one edited EndpointSlice costs one file's decoding and one object's
//! apply, however many Services the other files hold.

use super::{ManifestError, Origin, Source};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use svcnet_core::api::manifest::ManifestError as CoreError;
use svcnet_core::api::manifest::Object;
use svcnet_core::controlplane::{ApiError, ObjectRef};

/// One file's objects.
#[derive(Debug, PartialEq)]
pub struct ManifestFile {
    /// The file.
    pub path: PathBuf,
    /// Its text, to tell whether a later read changed it.
    text: String,
    /// Each object with the 1-based number of its document.
    pub objects: Vec<(usize, Object)>,
    /// The objects' references, in the same order.
    refs: Vec<ObjectRef>,
}

impl ManifestFile {
    /// Decodes every document of `source`.
    pub(super) fn decode(source: &Source) -> Result<ManifestFile, ManifestError> {
        let objects = super::parse_documents(&source.text).map_err(|e| match e {
            CoreError::Text(limit) => ManifestError::Limit {
                path: source.path.clone(),
                document: None,
                limit,
            },
            CoreError::Limit { document, limit } => ManifestError::Limit {
                path: source.path.clone(),
                document: Some(document),
                limit,
            },
            CoreError::Invalid { document, message } => ManifestError::Decode {
                path: source.path.clone(),
                document,
                message,
            },
        })?;
        let refs = objects.iter().map(|(_, o)| ObjectRef::of(o)).collect();
        Ok(ManifestFile {
            path: source.path.clone(),
            text: source.text.clone(),
            objects,
            refs,
        })
    }

    fn origin(&self, document: usize) -> Origin {
        Origin {
            path: self.path.clone(),
            document,
        }
    }
}

/// Every file's objects, in file and document order.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifests {
    files: Vec<Arc<ManifestFile>>,
    /// Some object is named twice (then the last one wins, and only a
    /// whole-set apply gets that right).
    duplicates: bool,
}

impl Manifests {
    pub(super) fn new(files: Vec<Arc<ManifestFile>>) -> Manifests {
        let mut seen = BTreeSet::new();
        let duplicates = !files.iter().flat_map(|f| &f.refs).all(|r| seen.insert(r));
        Manifests { files, duplicates }
    }

    /// The decoded file `path`, if its text was `text`.
    pub(super) fn file(&self, path: &Path, text: &str) -> Option<Arc<ManifestFile>> {
        self.files.iter().find(|f| f.path == path && f.text == text).cloned()
    }

    /// The files.
    pub fn files(&self) -> &[Arc<ManifestFile>] {
        &self.files
    }

    /// Every object, in order.
    pub fn objects(&self) -> impl Iterator<Item = &Object> {
        self.files.iter().flat_map(|f| f.objects.iter().map(|(_, o)| o))
    }

    /// Every object, for `ControlPlane::apply_set`.
    pub fn batch(&self) -> Batch<'_> {
        let mut batch = Batch::default();
        for file in &self.files {
            for (document, object) in &file.objects {
                batch.objects.push(object);
                batch.origins.push(file.origin(*document));
            }
        }
        batch
    }

    /// What `ControlPlane::apply_changes` needs to go from `previous`
    /// (applied with success) to these manifests: the objects that are new
    /// or differ, and the ones no file holds any more. `None` when either
    /// names some object twice: then apply the whole [`Manifests::batch`].
    pub fn changes_since(&self, previous: &Manifests) -> Option<Batch<'_>> {
        if self.duplicates || previous.duplicates {
            return None;
        }
        let kept = |file: &Arc<ManifestFile>, other: &Manifests| other.files.iter().any(|f| Arc::ptr_eq(f, file));
        let old: BTreeMap<&ObjectRef, &Object> = previous
            .files
            .iter()
            .filter(|f| !kept(f, self))
            .flat_map(|f| f.refs.iter().zip(f.objects.iter().map(|(_, o)| o)))
            .collect();
        let mut batch = Batch::default();
        for file in self.files.iter().filter(|f| !kept(f, previous)) {
            for (r, (document, object)) in file.refs.iter().zip(&file.objects) {
                if old.get(r) != Some(&object) {
                    batch.objects.push(object);
                    batch.origins.push(file.origin(*document));
                }
            }
        }
        let now: BTreeSet<&ObjectRef> = self.files.iter().flat_map(|f| &f.refs).collect();
        batch.removed = old
            .keys()
            .filter(|r| !now.contains(**r))
            .map(|r| (*r).clone())
            .collect();
        Some(batch)
    }
}

/// Objects to apply, each with its origin (same index), and objects to
/// delete.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch<'a> {
    /// The objects in file and document order.
    pub objects: Vec<&'a Object>,
    /// Where each came from.
    pub origins: Vec<Origin>,
    /// Objects the manifests no longer hold.
    pub removed: Vec<ObjectRef>,
}

impl Batch<'_> {
    /// Names the object at `index` in a control plane refusal (as
    /// returned by `ControlPlane::apply_set` or `apply_changes`); an index
    /// past the end is a failed deletion.
    pub fn refusal(&self, index: usize, error: ApiError) -> ManifestError {
        match (self.objects.get(index), self.origins.get(index)) {
            (Some(object), Some(origin)) => ManifestError::Refused {
                path: origin.path.clone(),
                document: origin.document,
                object: object.describe(),
                error: Box::new(error),
            },
            _ => ManifestError::Prune(Box::new(error)),
        }
    }
}
