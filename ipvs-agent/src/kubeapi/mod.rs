//! API mode's I/O: connecting to the apiserver, and listing and watching
//! Services, EndpointSlices and this node's Node with kube-rs. Every event
//! becomes a call on the core's
//! [`WatchCache`](svcnet_core::proxy::watch_cache::WatchCache), which
//! decides what it means; objects are decoded from the apiserver's JSON
//! straight into the core's types ([`objects`]) and checked against
//! Kubernetes' limits ([`convert`]).
//!
//! - [`connect`]: `--kubeconfig FILE` (and `--master URL` over it, as
//!   kube-proxy has them), or the in-cluster configuration of a Pod.
//! - [`list`]: one complete list of each kind (`plan --kubeconfig`).
//! - [`watch`]: the three watch streams, resuming from bookmarks, relisting
//!   after `410 Gone`, reconnecting with backoff.
//!
//! Everything but [`objects`], [`convert`] and [`ApiSource`] needs the
//! crate's feature `api` (kube-rs), on by default.

pub mod convert;
#[cfg(feature = "api")]
pub mod list;
pub mod objects;
#[cfg(feature = "api")]
pub mod watch;

use std::path::PathBuf;

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
#[cfg(feature = "api")]
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
    /// The kubeconfig file is not a kubeconfig (bad YAML, or a field of
    /// the wrong type). Only the position is kept: the parser's message
    /// quotes the lines around the error and serde's quote values, either
    /// of which may be a credential.
    #[error(
        "--kubeconfig {path}: not a valid kubeconfig{}; the parser's message is left out, as it may quote \
         credentials",
        position.map_or(String::new(), |(line, column)| format!(" at line {line} column {column}"))
    )]
    KubeconfigSyntax {
        /// The file.
        path: PathBuf,
        /// Line and column of the error, when the parser knows them.
        position: Option<(u64, u64)>,
    },
    /// The kubeconfig user's token is not a valid HTTP header value
    /// (kube-rs would panic on it). The token is not quoted.
    #[error(
        "--kubeconfig {path}: the user's token is not a valid HTTP header value (it holds a control character \
         or a byte outside ASCII); the token is not shown"
    )]
    KubeconfigToken {
        /// The file.
        path: PathBuf,
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

/// A kube-rs error as text for logs and messages, without what an exec
/// credential plugin printed: kube-rs quotes the plugin's output when it
/// fails or when its output is not an `ExecCredential`, and that output
/// may hold the credential. Every kube-rs error the agent shows goes
/// through here.
#[cfg(feature = "api")]
pub fn error_text(error: &(dyn std::error::Error + 'static)) -> String {
    use kube::client::AuthError;
    let mut cause = Some(error);
    while let Some(e) = cause {
        match e.downcast_ref::<AuthError>() {
            Some(AuthError::AuthExecRun { out, .. }) => {
                return format!(
                    "auth error: the kubeconfig's exec credential plugin failed ({}); what it printed is not \
                     shown, as it may hold a credential",
                    out.status
                )
            }
            Some(AuthError::AuthExecParse(_)) => {
                return "auth error: the kubeconfig's exec credential plugin printed no ExecCredential; what it \
                        printed is not shown, as it may hold a credential"
                    .into()
            }
            _ => cause = e.source(),
        }
    }
    error.to_string()
}

/// A client for the apiserver `source` names.
#[cfg(feature = "api")]
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
        message: error_text(&e),
    })
}

#[cfg(feature = "api")]
async fn from_kubeconfig(path: &std::path::Path) -> Result<kube::Config, ApiModeError> {
    let bad = |message: String| ApiModeError::Kubeconfig {
        path: path.to_path_buf(),
        message,
    };
    let file = kube::config::Kubeconfig::read_from(path).map_err(|e| match e {
        kube::config::KubeconfigError::Parse(e) => ApiModeError::KubeconfigSyntax {
            path: path.to_path_buf(),
            position: e.location().map(|at| (at.line(), at.column())),
        },
        e => bad(e.to_string()),
    })?;
    let config = kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
        .await
        .map_err(|e| bad(error_text(&e)))?;
    if !token_is_a_header_value(&config.auth_info) {
        return Err(ApiModeError::KubeconfigToken {
            path: path.to_path_buf(),
        });
    }
    Ok(config)
}

/// Whether the user's static token (if any) makes a valid `Authorization`
/// header, checked as tower-http's `AddAuthorizationLayer::bearer` does,
/// which kube-rs calls and which panics when it does not.
#[cfg(feature = "api")]
fn token_is_a_header_value(user: &kube::config::AuthInfo) -> bool {
    use secrecy::ExposeSecret;
    user.token
        .as_ref()
        .is_none_or(|token| http::HeaderValue::try_from(format!("Bearer {}", token.expose_secret())).is_ok())
}
