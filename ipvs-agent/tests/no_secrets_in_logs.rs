//! No secret reaches the logs. API mode's code path (connect from a
//! kubeconfig, list, the three watch streams, and the agent handling their
//! errors) runs with a kubeconfig holding a bearer token and a client
//! certificate and key, against an apiserver that is not there
//! (https://127.0.0.1:1) and one that refuses the credentials (401, over
//! plain HTTP so the request is really sent); the token also comes from an
//! exec credential plugin, well formed or not. Every log line of every crate
//! (kube, hyper, rustls, the agent) is captured at TRACE, with span events,
//! as text and as JSON, together with the errors' messages (what `main`
//! prints); neither the token nor any 16-character piece of the key may
//! appear. Broken kubeconfigs (a key that is not a key, a token that is no
//! valid header) are refused with messages that hold no secret either.
//!
//! A test binary of its own, with one test: the capture is the process's
//! global subscriber, which a test beside it would race (tracing caches
//! per call site whether anyone listens).

use futures_util::StreamExt;
use ipvs_agent::api_agent::{ApiAgent, ApiSettings};
use ipvs_agent::dataplane::{ApplyReport, ConntrackReport, Dataplane, DataplaneError};
use ipvs_agent::kubeapi::watch::WatchUpdate;
use ipvs_agent::kubeapi::{self, list, watch, ApiSource};
use ipvs_agent::metrics::Metrics;
use ipvs_agent::sync::SyncSettings;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use svcnet_core::proxy::{IpvsTable, Operation, PlanState, ProxyConfig, UdpFrontends, VirtualServer, VirtualServerKey};
use svcnet_core::time::Time;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// A kernel that has nothing and accepts everything: the agent's syncs
/// are not what this test is about.
struct NoKernel;

impl Dataplane for NoKernel {
    async fn observe(&mut self) -> Result<IpvsTable, DataplaneError> {
        Ok(IpvsTable::default())
    }

    async fn observe_virtual_servers(
        &mut self,
        _keys: &BTreeSet<VirtualServerKey>,
    ) -> Result<BTreeMap<VirtualServerKey, VirtualServer>, DataplaneError> {
        Ok(BTreeMap::new())
    }

    async fn observe_outline(&mut self) -> Result<svcnet_core::proxy::sync_loop::TableOutline, DataplaneError> {
        Ok(Default::default())
    }

    async fn apply(&mut self, operations: &[Operation]) -> ApplyReport {
        ApplyReport {
            applied: operations.len(),
            failed: Vec::new(),
        }
    }

    async fn clean_udp_conntrack(&mut self, _frontends: &UdpFrontends) -> ConntrackReport {
        ConntrackReport::default()
    }
}

/// The bearer token: a marker that cannot occur by chance.
const TOKEN: &str = "svcnet-test-token.c2VjcmV0LXRva2Vu.Zm9yLXRlc3RzLW9ubHk";

/// A throwaway P-256 key and a self-signed certificate for it, made for
/// this test only (`openssl req -x509 -newkey ec -nodes`): they protect
/// nothing.
const KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgO1W9iYIxmLXnT9EW
HGBoRZguEKhtCVvyNyAopZpR1RahRANCAAQDQfhnjsN/CiFyJIfG99+/Lks0xsJ0
bGA9YbELLtNxbqnVd+ePSdN/bgARSyai3Tn7Kv1gWHBNyIAkgAr6jnE0
-----END PRIVATE KEY-----
";

/// See [`KEY_PEM`].
const CERT_PEM: &str = "-----BEGIN CERTIFICATE-----
MIIBkDCCATegAwIBAgIUYQVlYftKkGfcHfkSmI8bZZT/qwowCgYIKoZIzj0EAwIw
HTEbMBkGA1UEAwwSc3ZjbmV0LXRlc3QtY2xpZW50MCAXDTI2MTEyNTA5MjYzM1oY
DzIxMjYxMTAxMDkyNjMzWjAdMRswGQYDVQQDDBJzdmNuZXQtdGVzdC1jbGllbnQw
WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQDQfhnjsN/CiFyJIfG99+/Lks0xsJ0
bGA9YbELLtNxbqnVd+ePSdN/bgARSyai3Tn7Kv1gWHBNyIAkgAr6jnE0o1MwUTAd
BgNVHQ4EFgQUZKRqkd5tmV2rR0eA23ln2CYmYyUwHwYDVR0jBBgwFoAUZKRqkd5t
mV2rR0eA23ln2CYmYyUwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNHADBE
AiAK44N/I36+6+n0gS72/hpT9/aPtccDGbTFS5l+EeWFPQIgLQiSzr3OIVJDXhHF
Vq+88Bm77i2SueBEqqNfsnrULsw=
-----END CERTIFICATE-----
";

/// Standard base64, as kubeconfigs hold `*-data` fields.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// What must never be logged: the token, the key's `client-key-data` and
/// every 16-character piece of the key's PEM body.
fn secrets(key_pem: &str) -> Vec<String> {
    let body: String = (key_pem.lines()).filter(|l| !l.starts_with("-----")).collect();
    let mut out = vec![TOKEN.to_string(), base64(key_pem.as_bytes())];
    let chars: Vec<char> = body.chars().collect();
    out.extend(chars.windows(16).step_by(4).map(|w| w.iter().collect()));
    out
}

/// The kubeconfig user with the token and `key_pem` as its key
/// (`client-key-data`), and a certificate.
fn user(token: &str, key_pem: &str) -> String {
    format!(
        "{{token: \"{token}\", client-certificate-data: {cert}, client-key-data: {key}}}",
        cert = base64(CERT_PEM.as_bytes()),
        key = base64(key_pem.as_bytes()),
    )
}

/// A kubeconfig user whose credential comes from an exec plugin (as for
/// EKS, GKE or OIDC login helpers): the shell script `script`, written to
/// `dir/name`.
fn exec_user(dir: &Path, name: &str, script: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!(
        "{{exec: {{apiVersion: client.authentication.k8s.io/v1, command: \"{}\", interactiveMode: Never}}}}",
        path.display()
    )
}

/// A kubeconfig for `server` whose user is `user` (YAML).
fn kubeconfig(dir: &Path, server: &str, user: &str) -> PathBuf {
    let path = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: test\n\
         clusters: [{{name: test, cluster: {{server: \"{server}\", insecure-skip-tls-verify: true}}}}]\n\
         users: [{{name: test, user: {user}}}]\n\
         contexts: [{{name: test, context: {{cluster: test, user: test}}}}]\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// Everything written to it, shared with the test.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Capture {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// A server that answers every request with kube-apiserver's 401, as it
/// refuses a token it does not know, and never echoes what it got.
async fn refusing_apiserver() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                let _ = stream.read(&mut buf).await;
                let body = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#;
                let answer = format!(
                    "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    addr
}

/// API mode's path against `server`, as `plan --kubeconfig` and `run
/// --kubeconfig` take it: connect, list, then the watch streams' first
/// updates handed to the agent, which logs their errors. Returns the
/// errors' messages, as `main` would print them.
async fn api_mode(kubeconfig: PathBuf) -> Vec<String> {
    let mut printed = Vec::new();
    let source = ApiSource {
        kubeconfig: Some(kubeconfig),
        master: None,
    };
    let client = match kubeapi::connect(&source).await {
        Ok(client) => client,
        Err(e) => {
            tracing::error!(error = %e, debug = ?e, "cannot connect");
            printed.push(e.to_string());
            return printed;
        }
    };
    if let Err(e) = list::list(&client, "node-a").await {
        tracing::error!(error = %e, debug = ?e, "cannot list");
        printed.push(e.to_string());
    }
    let settings = ApiSettings {
        node_name: "node-a".into(),
        node_ips: Vec::new(),
        host_ips: Vec::new(),
        proxy: ProxyConfig::default(),
        sync: SyncSettings::new(Duration::from_secs(1), Duration::from_secs(30)),
        plan_state_file: None,
        conntrack_cleanup: true,
        nftables: false,
    };
    let metrics = Arc::new(Metrics::new(Duration::from_secs(60)));
    let mut agent = ApiAgent::new(settings, PlanState::default(), NoKernel, metrics);
    // Each of the three streams begins a list, fails, then backs off.
    let mut updates = watch::watch(client, "node-a");
    let mut failures = 0;
    while failures < 3 {
        let update = tokio::time::timeout(Duration::from_secs(10), updates.next())
            .await
            .expect("the watch streams report their failures")
            .expect("the watch streams do not end");
        if let WatchUpdate::Error(e) = &update {
            printed.push(e.clone());
            failures += 1;
        }
        agent.handle(update);
    }
    agent.step(Time::ZERO).await;
    printed
}

#[tokio::test]
async fn no_token_or_key_is_logged_at_any_level() {
    let (text, json) = (Capture::default(), Capture::default());
    let (t, j) = (text.clone(), json.clone());
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(move || t.clone())
                .with_span_events(FmtSpan::FULL)
                .with_ansi(false),
        )
        .with(
            tracing_subscriber::fmt::layer()
                .json()
                .with_writer(move || j.clone())
                .with_span_events(FmtSpan::FULL)
                .with_span_list(true),
        )
        .try_init()
        .expect("the only subscriber of this test binary");

    let dir = tempfile::tempdir().unwrap();
    let refusing = refusing_apiserver().await;
    let not_a_key = KEY_PEM.replace("MIGHAgEAMBMG", "AAAAAAAAAAAA");
    let mut printed = Vec::new();
    let absent = "https://127.0.0.1:1";
    let refusing = format!("http://{refusing}");
    let cases = [
        // A good kubeconfig: the apiserver is not there, or refuses.
        (absent, user(TOKEN, KEY_PEM)),
        (&refusing, user(TOKEN, KEY_PEM)),
        // A key that does not parse, a token that is no valid header value.
        (absent, user(TOKEN, &not_a_key)),
        (absent, user(&format!("{TOKEN}\\x01"), KEY_PEM)),
        // Not YAML (a raw control character), and the token where a
        // mapping belongs: the YAML parser's messages quote both.
        (absent, user(&format!("{TOKEN}\u{1}"), KEY_PEM)),
        (absent, format!("\"{TOKEN}\"")),
        // The token from an exec plugin, sent to an apiserver that refuses
        // it; a plugin whose output is not an ExecCredential but holds the
        // token, and one that prints it on stderr and fails: kube-rs
        // quotes both outputs in its errors.
        (
            &refusing,
            exec_user(
                dir.path(),
                "good-plugin",
                &format!(
                    r#"echo '{{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {{"token": "{TOKEN}"}}}}'"#
                ),
            ),
        ),
        (
            absent,
            exec_user(dir.path(), "bad-output", &format!("echo 'token={TOKEN} is not JSON'")),
        ),
        (
            absent,
            exec_user(
                dir.path(),
                "failing",
                &format!("echo '{TOKEN}'; echo '{TOKEN}' >&2; exit 3"),
            ),
        ),
    ];
    for (server, user) in &cases {
        let path = kubeconfig(dir.path(), server, user);
        let errors = api_mode(path).await;
        assert!(!errors.is_empty(), "{server} {user}: no error to check");
        printed.extend(errors);
    }

    let (text, json, printed) = (text.text(), json.text(), printed.join("\n"));
    assert!(text.contains("TRACE"), "TRACE lines are captured:\n{text}");
    assert!(
        text.contains("watch failed"),
        "the agent's warning is captured:\n{text}"
    );
    assert!(printed.contains("401") || printed.contains("Unauthorized"), "{printed}");
    // The exec plugin ran: its token was sent (the 401 of the refusing
    // apiserver, above, comes for it too) and its failures are told.
    assert!(
        printed.contains("exec credential plugin printed no ExecCredential"),
        "{printed}"
    );
    assert!(
        printed.contains("exec credential plugin failed (exit status: 3)"),
        "{printed}"
    );
    for secret in secrets(KEY_PEM).iter().chain(&secrets(&not_a_key)) {
        for (what, out) in [("text log", &text), ("JSON log", &json), ("error messages", &printed)] {
            if let Some(at) = out.find(secret.as_str()) {
                let from = out[..at].rfind('\n').map_or(0, |n| n + 1);
                let to = out[at..].find('\n').map_or(out.len(), |n| at + n);
                panic!("{what} holds {secret:?}:\n{}", &out[from..to]);
            }
        }
    }
}
