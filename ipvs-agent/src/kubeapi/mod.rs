//! API mode's I/O: connecting to the apiserver, and listing and watching
//! Services, EndpointSlices and this node's Node with kube-rs. Every event
//! becomes a call on the core's
//! [`WatchCache`](svcnet_core::proxy::watch_cache::WatchCache), which
//! decides what it means; objects are carried over as JSON into the core's
//! types ([`convert`]).
//!
//! - [`connect`]: `--kubeconfig FILE` (and `--master URL` over it, as
//!   kube-proxy has them), or the in-cluster configuration of a Pod.
//! - [`list`]: one complete list of each kind (`plan --kubeconfig`).
//! - [`watch`]: the three watch streams, resuming from bookmarks, relisting
//!   after `410 Gone`, reconnecting with backoff.

pub mod convert;
pub mod list;
pub mod watch;

use std::path::{Path, PathBuf};

/// Where the apiserver is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiSource {
    /// `--kubeconfig`: a kubeconfig file; its current context is used.
    pub kubeconfig: Option<PathBuf>,
    /// `--master`: the apiserver's URL, over the kubeconfig's.
    pub master: Option<String>,
}

impl ApiSource {
    /// API mode is on when either flag is given, or the agent runs in a
    /// Pod (the in-cluster variables are set) and no manifests were given.
    pub fn is_enabled(&self) -> bool {
        self.kubeconfig.is_some() || self.master.is_some()
    }
}

/// Why the apiserver could not be reached or read.
#[derive(Debug, thiserror::Error)]
pub enum ApiModeError {
    /// The kubeconfig file could not be read or used.
    #[error("--kubeconfig {path}: {message}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// `--master` is not a URL.
    #[error("--master {url:?}: {message}")]
    Master {
        /// The value given.
        url: String,
        /// Why.
        message: String,
    },
    /// Neither flag was given and the in-cluster configuration is missing.
    #[error("no --kubeconfig or --master, and not running in a Pod: {0}")]
    InCluster(String),
    /// A request to the apiserver failed.
    #[error("{what}: {message}")]
    Request {
        /// What was asked (`list services`).
        what: String,
        /// Why it failed.
        message: String,
    },
}

/// A client for the apiserver `source` names.
pub async fn connect(source: &ApiSource) -> Result<kube::Client, ApiModeError> {
    let master = match &source.master {
        Some(url) => Some(url.parse::<http::Uri>().map_err(|e| ApiModeError::Master {
            url: url.clone(),
            message: e.to_string(),
        })?),
        None => None,
    };
    let mut config = match (&source.kubeconfig, &master) {
        (Some(path), _) => from_kubeconfig(path).await?,
        (None, Some(url)) => kube::Config::new(url.clone()),
        (None, None) => kube::Config::incluster().map_err(|e| ApiModeError::InCluster(e.to_string()))?,
    };
    if let Some(url) = master {
        config.cluster_url = url;
    }
    kube::Client::try_from(config).map_err(|e| ApiModeError::Request {
        what: "building the client".into(),
        message: e.to_string(),
    })
}

async fn from_kubeconfig(path: &Path) -> Result<kube::Config, ApiModeError> {
    let bad = |message: String| ApiModeError::Kubeconfig {
        path: path.to_path_buf(),
        message,
    };
    let file = kube::config::Kubeconfig::read_from(path).map_err(|e| bad(e.to_string()))?;
    kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
        .await
        .map_err(|e| bad(e.to_string()))
}
