//! Errors the control plane returns, worded as kube-apiserver words them.

use crate::api::manifest::ManifestError;
use crate::field::{invalid_object_message, FieldError};
use thiserror::Error;

/// Why an API request was refused.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// The object failed validation or admission: kubectl's
    /// `The Service "x" is invalid: ...`.
    #[error("{}", invalid_object_message(kind, name, errors))]
    Invalid {
        /// The object's kind.
        kind: String,
        /// The object's name.
        name: String,
        /// Every field error found.
        errors: Vec<FieldError>,
    },
    /// Allocation failed for a reason that is not the object's fault, such
    /// as a full range: `Internal error occurred: failed to allocate a serviceIP: range is full`.
    #[error("Internal error occurred: {0}")]
    Internal(String),
    /// The object does not exist: `services "x" not found`.
    #[error("{resource} {name:?} not found")]
    NotFound {
        /// The plural lower-case resource name, qualified by its API group
        /// outside the core group: `services`, `servicecidrs.networking.k8s.io`.
        resource: String,
        /// The object's name.
        name: String,
    },
    /// The request could not be understood, such as an unknown field or a
    /// broken manifest.
    #[error("{0}")]
    BadRequest(String),
}

impl ApiError {
    /// The reason kubectl shows in `Error from server (<reason>): ...`.
    pub fn reason(&self) -> &'static str {
        match self {
            ApiError::Invalid { .. } => "Invalid",
            ApiError::Internal(_) => "InternalError",
            ApiError::NotFound { .. } => "NotFound",
            ApiError::BadRequest(_) => "BadRequest",
        }
    }

    /// An `Invalid` error for `kind`/`name`. Kinds outside the core API
    /// group are named with their group, as kube-apiserver names them
    /// (`EndpointSlice.discovery.k8s.io "x" is invalid`).
    pub fn invalid(kind: &str, name: &str, errors: Vec<FieldError>) -> ApiError {
        let kind = match kind {
            "EndpointSlice" => "EndpointSlice.discovery.k8s.io",
            "ServiceCIDR" => "ServiceCIDR.networking.k8s.io",
            "Deployment" => "Deployment.apps",
            "Scale" => "Scale.autoscaling",
            core => core,
        };
        ApiError::Invalid {
            kind: kind.to_string(),
            name: name.to_string(),
            errors,
        }
    }
}

impl From<ManifestError> for ApiError {
    fn from(e: ManifestError) -> Self {
        ApiError::BadRequest(e.to_string())
    }
}
