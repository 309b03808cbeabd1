//! The real side: a control plane started with `scripts/k8s.sh up`, spoken
//! to over its REST API (with `curl`, the admin client certificate) and
//! with the real `kubectl`.

use crate::case::ClusterFlags;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A running control plane.
pub struct RealCluster {
    root: PathBuf,
    /// Where it keeps its data, keys and logs (`SVCNET_K8S_RUN`).
    run: PathBuf,
    /// The values `scripts/k8s.sh up` wrote to the run folder's `env`.
    pub env: BTreeMap<String, String>,
}

/// Where one control plane lives: its run folder, and the ports `up` may
/// pick (`LOW-HIGH`). Two places with ranges that do not overlap can hold
/// control planes at the same time.
pub struct Place {
    /// The run folder (`SVCNET_K8S_RUN`).
    pub run: PathBuf,
    /// The port range (`SVCNET_K8S_PORTS`).
    pub ports: String,
}

/// An answer of the API server: the HTTP status and the JSON body.
#[derive(Debug)]
pub struct Answer {
    /// HTTP status code.
    pub code: u16,
    /// The body (a `Status` on errors).
    pub body: Value,
}

impl Answer {
    /// True for 2xx.
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.code)
    }

    /// The `message` of an error `Status`.
    pub fn message(&self) -> String {
        match self.body.get("message").and_then(Value::as_str) {
            Some(m) => m.to_string(),
            None => format!("HTTP {}: {}", self.code, self.body),
        }
    }
}

impl RealCluster {
    /// Stops whatever runs in `place`, then starts a control plane there
    /// with these flags.
    pub fn up(root: &Path, place: &Place, flags: &ClusterFlags) -> Result<RealCluster, String> {
        let k8s = |verb: &str| {
            let mut cmd = Command::new(root.join("scripts/k8s.sh"));
            cmd.arg(verb)
                .env("SVCNET_K8S_RUN", &place.run)
                .env("SVCNET_K8S_PORTS", &place.ports)
                .stdin(Stdio::null());
            cmd
        };
        let _ = k8s("down").stdout(Stdio::null()).status();
        let out = k8s("up")
            .env("SVCNET_K8S_SERVICE_CIDR", flags.service_range())
            .env("SVCNET_K8S_NODE_PORT_RANGE", flags.node_port_range())
            .output()
            .map_err(|e| format!("cannot run scripts/k8s.sh: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "scripts/k8s.sh up failed:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let env_file = place.run.join("env");
        let env_text = std::fs::read_to_string(&env_file).map_err(|e| format!("{}: {e}", env_file.display()))?;
        let env = env_text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Ok(RealCluster {
            root: root.to_path_buf(),
            run: place.run.clone(),
            env,
        })
    }

    /// Stops the control plane.
    pub fn down(&self) {
        let _ = Command::new(self.root.join("scripts/k8s.sh"))
            .arg("down")
            .env("SVCNET_K8S_RUN", &self.run)
            .stdout(Stdio::null())
            .status();
    }

    fn var(&self, key: &str) -> &str {
        self.env.get(key).map(String::as_str).unwrap_or("")
    }

    /// The folder of the real binaries.
    pub fn bin(&self) -> PathBuf {
        PathBuf::from(self.var("SVCNET_K8S_BIN"))
    }

    /// The apiserver's advertised `ip:port` (the `kubernetes` endpoints).
    pub fn apiserver(&self) -> &str {
        self.var("SVCNET_K8S_APISERVER")
    }

    fn pki(&self, file: &str) -> String {
        self.run.join("pki").join(file).display().to_string()
    }

    /// One REST request; `body` is sent as is with `content_type`.
    pub fn request(&self, method: &str, path: &str, content_type: &str, body: Option<&str>) -> Result<Answer, String> {
        let url = format!("{}{path}", self.var("SVCNET_K8S_SERVER"));
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "--max-time", "30", "-X", method])
            .args(["--cacert", &self.pki("ca.crt")])
            .args(["--cert", &self.pki("admin.crt"), "--key", &self.pki("admin.key")])
            .args(["-H", "Accept: application/json", "-w", "\n%{http_code}"]);
        if body.is_some() {
            cmd.args(["-H", &format!("Content-Type: {content_type}"), "--data-binary", "@-"]);
        }
        cmd.arg(&url);
        let out = run_with_input(&mut cmd, body.unwrap_or(""))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let (json, code) = text.rsplit_once('\n').unwrap_or(("", &text));
        let code: u16 = code.trim().parse().map_err(|_| {
            format!(
                "{method} {path}: no HTTP status from curl: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
        let body = if json.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(json).map_err(|e| format!("{method} {path}: not JSON ({e}): {json}"))?
        };
        Ok(Answer { code, body })
    }

    /// `GET`, as JSON.
    pub fn get(&self, path: &str) -> Result<Answer, String> {
        self.request("GET", path, "", None)
    }

    /// The real `kubectl` with this cluster's kubeconfig; stdout, or the
    /// error it printed.
    pub fn kubectl(&self, args: &[&str]) -> Result<String, String> {
        self.kubectl_with_input(args, "")
    }

    /// `kubectl apply -f -` of one object: `Err` holds the server's (or
    /// kubectl's) message in the API's own form (see [`api_message`]).
    pub fn kubectl_apply(&self, object: &str) -> Result<Result<(), String>, String> {
        match self.kubectl_with_input(&["apply", "-f", "-"], object) {
            Ok(_) => Ok(Ok(())),
            Err(text) => Ok(Err(api_message(&text))),
        }
    }

    fn kubectl_with_input(&self, args: &[&str], input: &str) -> Result<String, String> {
        let mut cmd = Command::new(self.bin().join("kubectl"));
        cmd.arg("--kubeconfig").arg(self.var("KUBECONFIG")).args(args);
        let out = run_with_input(&mut cmd, input)?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }

    /// How the real kube-proxy reads a configuration file: its decoding
    /// or validation error (`failed complete: ...`, `failed validate:
    /// ...`), or, when it gets past them (to fail later for want of an
    /// apiserver), the unknown fields its lenient decoding ignored.
    pub fn kube_proxy_reads(&self, text: &str) -> Result<Value, String> {
        // The run folder is this control plane's own: control planes
        // side by side each read their files in theirs.
        let dir = self.run.join("kube-proxy-config");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let file = dir.join("config.yaml");
        std::fs::write(&file, text).map_err(|e| e.to_string())?;
        let mut child = Command::new(self.bin().join("kube-proxy"))
            .arg("--config")
            .arg(&file)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env_remove("KUBERNETES_SERVICE_PORT")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start kube-proxy: {e}"))?;
        wait_at_most(&mut child, Duration::from_secs(15))?;
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        let _ = std::fs::remove_dir_all(&dir);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let failed = command_failed_error(&stderr).unwrap_or_default();
        if failed.starts_with("failed complete:") || failed.starts_with("failed validate:") {
            return Ok(json!({"error": failed}));
        }
        let unknown: Vec<String> = klog_err(&stderr, "Using lenient decoding")
            .map(|err| {
                err.trim_start_matches("strict decoding error: ")
                    .split(", ")
                    .filter_map(|f| f.strip_prefix("unknown field "))
                    .filter_map(|f| serde_json::from_str::<String>(f).ok())
                    .collect()
            })
            .unwrap_or_default();
        Ok(json!({"accepted": true, "unknownFields": unknown}))
    }

    /// Starts kube-apiserver with `--service-cluster-ip-range=<range>` (no
    /// flag for `none`) against an etcd that does not exist: flags are
    /// checked before etcd is dialled, so a bad range ends it at once.
    /// Returns its startup error, or `None` if it started: it logged its
    /// `Version:` line (which it prints once its options are complete and
    /// valid) and was still running [`STARTED_GRACE`] later, or it was
    /// still running after 10 s.
    pub fn start_error(&self, range: &str) -> Result<Option<String>, String> {
        let port = free_port()?;
        let primary_is_v6 = range.split(',').next().is_some_and(|c| c.contains(':'));
        let advertise = if primary_is_v6 { "fd00:10::2" } else { "10.0.2.2" };
        let mut cmd = Command::new(self.bin().join("kube-apiserver"));
        cmd.args(["--etcd-servers", "http://127.0.0.1:1", "--bind-address", "127.0.0.1"])
            .args(["--secure-port", &port.to_string(), "--advertise-address", advertise])
            .args(["--cert-dir", &self.pki("start-check")])
            .args([
                "--service-account-issuer",
                "https://kubernetes.default.svc.cluster.local",
            ])
            .args(["--service-account-key-file", &self.pki("sa.pub")])
            .args(["--service-account-signing-key-file", &self.pki("sa.key")]);
        if range != "none" {
            cmd.arg(format!("--service-cluster-ip-range={range}"));
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start kube-apiserver: {e}"))?;
        // stderr is read on a thread, so the pipe never fills while we wait.
        let (lines, seen) = std::sync::mpsc::channel::<String>();
        let stderr = child.stderr.take().ok_or("kube-apiserver's stderr is not piped")?;
        let reader = std::thread::spawn(move || {
            use std::io::BufRead;
            let mut text = String::new();
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = lines.send(line.clone());
                text.push_str(&line);
                text.push('\n');
            }
            text
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut started_at: Option<Instant> = None;
        let exited = loop {
            if child.try_wait().map_err(|e| e.to_string())?.is_some() {
                break true;
            }
            let now = Instant::now();
            if now > deadline || started_at.is_some_and(|at| now > at + STARTED_GRACE) {
                break false;
            }
            if let Ok(line) = seen.recv_timeout(Duration::from_millis(50)) {
                if started_at.is_none() && line.contains("] Version: ") {
                    started_at = Some(Instant::now());
                }
            }
        };
        if !exited {
            let _ = child.kill();
            let _ = child.wait();
            let _ = reader.join();
            return Ok(None);
        }
        let stderr = reader.join().map_err(|_| "the stderr reader panicked")?;
        Ok(Some(
            command_failed_error(&stderr).unwrap_or_else(|| stderr.trim().to_string()),
        ))
    }
}

/// How long kube-apiserver must keep running after its `Version:` line
/// for a start check to count it as started.
const STARTED_GRACE: Duration = Duration::from_secs(2);

/// What kubectl printed for a refused object, back in the form of the
/// API's `Status` message: warnings and the `error when creating "STDIN": `
/// framing go, `The ` goes, and kubectl's `* cause` lines become the
/// API's `[cause, cause]`.
fn api_message(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.starts_with("Warning:")).collect();
    let head = lines.first().copied().unwrap_or_default();
    let head = head.rsplit("\"STDIN\": ").next().unwrap_or(head);
    let head = head.strip_prefix("The ").unwrap_or(head);
    let causes: Vec<&str> = lines.iter().filter_map(|l| l.strip_prefix("* ")).collect();
    if causes.is_empty() {
        head.to_string()
    } else {
        format!("{} [{}]", head.trim_end(), causes.join(", "))
    }
}

/// Waits for `child` to exit, at most `limit`; kills it then. Whether it
/// exited by itself.
fn wait_at_most(child: &mut std::process::Child, limit: Duration) -> Result<bool, String> {
    let deadline = Instant::now() + limit;
    while child.try_wait().map_err(|e| e.to_string())?.is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(true)
}

/// The `err="..."` text of the klog line holding `marker`.
fn klog_err(stderr: &str, marker: &str) -> Option<String> {
    let line = stderr.lines().find(|l| l.contains(marker))?;
    let quoted = &line[line.find("err=")? + 4..];
    serde_json::from_str::<String>(quoted.trim()).ok()
}

/// The `err="..."` of klog's `"command failed"` line, unquoted.
fn command_failed_error(stderr: &str) -> Option<String> {
    let line = stderr.lines().find(|l| l.contains("\"command failed\""))?;
    let quoted = &line[line.find("err=")? + 4..];
    serde_json::from_str::<String>(quoted.trim()).ok()
}

/// A TCP port nothing listens on, picked by the kernel.
fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

fn run_with_input(cmd: &mut Command, input: &str) -> Result<std::process::Output, String> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes()).map_err(|e| e.to_string())?;
    }
    child.wait_with_output().map_err(|e| e.to_string())
}

/// The REST path of a kind's collection (`name` empty) or of one object.
pub fn resource_path(kind: &str, namespace: &str, name: &str) -> Result<String, String> {
    let (prefix, plural, namespaced) = match kind {
        "Service" => ("/api/v1", "services", true),
        "Pod" => ("/api/v1", "pods", true),
        "Endpoints" => ("/api/v1", "endpoints", true),
        "Node" => ("/api/v1", "nodes", false),
        "Namespace" => ("/api/v1", "namespaces", false),
        "EndpointSlice" => ("/apis/discovery.k8s.io/v1", "endpointslices", true),
        "ServiceCIDR" => ("/apis/networking.k8s.io/v1", "servicecidrs", false),
        "IPAddress" => ("/apis/networking.k8s.io/v1", "ipaddresses", false),
        other => return Err(format!("the suite does not know the kind {other:?}")),
    };
    let mut path = prefix.to_string();
    if namespaced {
        path.push_str(&format!("/namespaces/{namespace}"));
    }
    path.push('/');
    path.push_str(plural);
    if !name.is_empty() {
        path.push('/');
        path.push_str(name);
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_of_a_failed_start_is_unquoted() {
        let stderr = "I1124 log line\nE1124 19:04:48.124124   17124 run.go:72] \"command failed\" err=\"error determining service IP ranges for primary service cidr: the service cluster IP range must be at least 8 IP addresses\"\n";
        assert_eq!(
            command_failed_error(stderr).as_deref(),
            Some("error determining service IP ranges for primary service cidr: the service cluster IP range must be at least 8 IP addresses")
        );
    }

    #[test]
    fn kubectl_errors_go_back_to_the_api_form() {
        let one = "Warning: resource services/p is missing the annotation.\nThe Service \"p\" is invalid: spec.clusterIPs[0]: Invalid value: [\"10.96.1.1\"]: may not change once set";
        assert_eq!(
            api_message(one),
            "Service \"p\" is invalid: spec.clusterIPs[0]: Invalid value: [\"10.96.1.1\"]: may not change once set"
        );
        let many = "The Service \"ports\" is invalid: \n* spec.ports[1].name: Required value\n* spec.ports[1].port: Invalid value: 70000: x";
        assert_eq!(
            api_message(many),
            "Service \"ports\" is invalid: [spec.ports[1].name: Required value, spec.ports[1].port: Invalid value: 70000: x]"
        );
        let framed = "Error from server (BadRequest): error when creating \"STDIN\": Service in version \"v1\" cannot be handled";
        assert_eq!(api_message(framed), "Service in version \"v1\" cannot be handled");
    }

    #[test]
    fn paths_follow_the_api_groups() {
        assert_eq!(
            resource_path("Service", "ns", "web").unwrap(),
            "/api/v1/namespaces/ns/services/web"
        );
        assert_eq!(
            resource_path("EndpointSlice", "ns", "").unwrap(),
            "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices"
        );
        assert_eq!(
            resource_path("ServiceCIDR", "ns", "x").unwrap(),
            "/apis/networking.k8s.io/v1/servicecidrs/x"
        );
        assert!(resource_path("Deployment", "ns", "x").is_err());
    }
}
