//! The playground's console: `kubectl` and `ipvsadm` command lines run
//! against a [`ControlPlane`] and answered the way those tools answer
//! (`service/web created`, `Error from server (NotFound): services "x" not
//! found`, tables, YAML). What kubectl's client adds before a request
//! reaches the apiserver (the Service `kubectl create service` writes, the
//! selector and ports `kubectl expose` copies from a Deployment, the patch
//! `kubectl scale` sends) is here too; everything the apiserver and the
//! controllers decide is the control plane's. The page only prints the
//! [`Outcome`].

pub mod command;
pub mod describe;
pub mod get;
pub mod jsonpath;
pub mod kube_proxy;
pub mod modes;
pub mod preset;
pub mod selector;
pub mod walk;
pub mod words;
pub mod yaml;

use crate::api::{Object, Resource};
use crate::controlplane::{ApiError, ControlPlane};
use crate::family::IpFamily;
use crate::proxy::{ipvsadm_list, ipvsadm_save};
use command::{parse, Command, TcpPort};
use serde::Serialize;
use serde_json::{json, Value};
use std::fmt;

/// A mistake in the command line itself, caught before any request, as
/// kubectl's client catches it; printed as `error: <message>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageError(String);

impl UsageError {
    /// An error with kubectl's message.
    pub fn new(message: impl Into<String>) -> Self {
        UsageError(message.into())
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a command line did, for the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Effect {
    /// Nothing to keep (an empty line, `help`, a usage error).
    Nothing,
    /// The page clears its console.
    Clear,
    /// The page asks for the text of `kubectl apply -f -`.
    ReadStdin,
    /// Kept in the history; the cluster is as it was: a read (`get`,
    /// `ipvsadm`) or a request the apiserver refused.
    Read,
    /// The cluster may have changed: views redraw.
    Change,
}

/// The answer to one command line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// False when the tool would exit non-zero.
    pub ok: bool,
    /// What the tool prints.
    pub text: String,
    /// A line of plain words on what just happened, for people learning
    /// (not part of kubectl's output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What the page does next.
    pub effect: Effect,
}

impl Outcome {
    fn new(ok: bool, text: impl Into<String>, effect: Effect) -> Self {
        Outcome {
            ok,
            text: text.into(),
            note: None,
            effect,
        }
    }

    fn with_note(mut self, note: String) -> Self {
        self.note = Some(note);
        self
    }
}

/// kubectl's line for an error the apiserver returned: the message alone
/// for `Invalid` (kubectl prints those as they come), else
/// `Error from server (<reason>): <message>`.
pub fn server_error(error: &ApiError) -> String {
    match error {
        ApiError::Invalid { .. } => error.to_string(),
        other => format!("Error from server ({}): {other}", other.reason()),
    }
}

/// The `help` text.
pub const HELP: &str = "Commands (the same as kubectl's; the default namespace unless -n says otherwise):
  kubectl create svc clusterip|nodeport|loadbalancer NAME --tcp=PORT[:TARGET]
  kubectl create svc externalname NAME --external-name=HOST
  kubectl create deployment NAME --image=IMAGE [--replicas=N] [--port=P]
  kubectl expose deployment NAME --port=P [--target-port=T] [--type=NodePort]
  kubectl apply -f -             (opens a box for YAML; Ctrl+Enter applies it)
  kubectl delete svc|pod|deployment|endpointslice NAME
  kubectl scale deployment NAME --replicas=N
  kubectl get svc|endpoints|endpointslices|pods|deployments|nodes|servicecidrs [NAME] [-l SELECTOR] [-o wide|yaml|json|name]
  kubectl describe svc|endpointslice [NAME]
  kubectl exec POD -- env        the Service variables the kubelet gave the pod when it started
  ipvsadm -Ln                    the IPVS table kube-proxy programs on the first node
  ipvsadm-save -n                the same, as ipvs-agent plan --format ipvsadm-save
  ip addr show kube-ipvs0        where IPVS mode binds every ClusterIP
  iptables-save                  the rules kube-proxy's iptables mode would write instead
  nft list ruleset               the tables kube-proxy's nftables mode would write instead
  nft list table inet svcnet     svcnet's own nftables table (masquerade and filter, beside IPVS)
Playground only:
  simulate unready POD           the pod's readiness probe starts failing
  simulate ready POD             and passes again
  clear                          clear the screen (the cluster stays)
Keys: Up/Down walk the history, Tab completes a word, Ctrl+L clears.";

/// Runs one command line; `stdin` is the text for `kubectl apply -f -`.
pub fn run(cp: &mut ControlPlane, line: &str, stdin: Option<&str>) -> Outcome {
    match parse(line, stdin) {
        Ok(command) => execute(cp, command),
        // nft's own messages already start with `Error:`.
        Err(usage) if usage.0.starts_with("Error: ") => Outcome::new(false, usage.0, Effect::Nothing),
        Err(usage) => Outcome::new(false, format!("error: {usage}"), Effect::Nothing),
    }
}

fn execute(cp: &mut ControlPlane, command: Command) -> Outcome {
    match command {
        Command::Noop => Outcome::new(true, "", Effect::Nothing),
        Command::Help => Outcome::new(true, HELP, Effect::Nothing),
        Command::Clear => Outcome::new(true, "", Effect::Clear),
        Command::ApplyPrompt => Outcome::new(true, "", Effect::ReadStdin),
        Command::Apply { manifest } => apply(cp, &manifest),
        Command::CreateService {
            name,
            service_type,
            external_name,
            ports,
            cluster_ip,
            node_port,
        } => {
            let spec = ServiceSpec {
                service_type,
                external_name,
                ports,
                cluster_ip,
                node_port,
            };
            create_service(cp, &name, spec)
        }
        Command::CreateDeployment {
            name,
            image,
            replicas,
            port,
        } => create_deployment(cp, &name, &image, replicas, port),
        Command::Expose {
            deployment,
            name,
            port,
            target_port,
            service_type,
            protocol,
        } => expose(cp, &deployment, &name, port, target_port, &service_type, &protocol),
        Command::Delete {
            resource,
            names,
            namespace,
        } => delete(cp, resource, &names, &namespace),
        Command::Scale { name, replicas } => scale(cp, &name, replicas),
        Command::Get {
            resource,
            names,
            output,
            all_namespaces,
            namespace,
            selector,
        } => {
            let request = get::Get {
                resource,
                names: &names,
                output,
                all_namespaces,
                namespace: &namespace,
                selector: selector.as_ref(),
            };
            let (ok, text) = get::get(cp, &request);
            Outcome::new(ok, text, Effect::Read)
        }
        Command::Describe {
            resource,
            names,
            namespace,
        } => describe_objects(cp, resource, &names, &namespace),
        Command::Exec {
            pod,
            namespace,
            variable,
        } => exec(cp, &pod, &namespace, variable.as_deref()),
        Command::Ipvsadm { save } => ipvsadm(cp, save),
        Command::IptablesSave => modes::iptables_save(cp),
        Command::NftListRuleset => modes::nft_list_ruleset(cp, None),
        Command::NftListKubeProxy { ipv6 } => {
            modes::nft_list_ruleset(cp, Some(if ipv6 { IpFamily::IPv6 } else { IpFamily::IPv4 }))
        }
        Command::NftListSvcnet => modes::nft_list_svcnet(cp),
        Command::IpAddrShow => modes::ip_addr_show(cp),
        Command::Readiness { pod, ready } => readiness(cp, &pod, ready),
    }
}

fn apply(cp: &mut ControlPlane, manifest: &str) -> Outcome {
    let mut reconciled = false;
    let lines: Vec<Result<String, String>> = match cp.apply_manifest(manifest) {
        Ok(results) => (results.into_iter())
            .map(|r| {
                r.map(|a| {
                    reconciled |= is_kubernetes_endpoints(&a.object);
                    a.kubectl_line()
                })
                .map_err(|e| server_error(&e))
            })
            .collect(),
        Err(e) => vec![Err(server_error(&e))],
    };
    let ok = lines.iter().all(Result::is_ok);
    let effect = changed_if(lines.iter().any(Result::is_ok));
    let text: Vec<String> = lines.into_iter().map(|l| l.unwrap_or_else(|e| e)).collect();
    let outcome = Outcome::new(ok, text.join("\n"), effect);
    if !reconciled {
        return outcome;
    }
    let endpoints: Vec<String> = cp
        .apiserver_leases()
        .endpoints()
        .iter()
        .map(ToString::to_string)
        .collect();
    outcome.with_note(format!(
        "default/kubernetes belongs to kube-apiserver: its endpoint reconciler writes it from the apiservers' leases and rewrites any other content (within seconds on a real cluster, at once here), so it lists {} again. To change it, change the apiservers.",
        endpoints.join(", ")
    ))
}

/// The `kubernetes` Service's Endpoints or EndpointSlice in `default`.
fn is_kubernetes_endpoints(object: &Object) -> bool {
    matches!(object.resource(), Resource::Endpoints | Resource::EndpointSlice)
        && object.namespace() == "default"
        && object.name() == "kubernetes"
}

/// `Change` when something was stored or deleted, else `Read`.
fn changed_if(changed: bool) -> Effect {
    if changed {
        Effect::Change
    } else {
        Effect::Read
    }
}

/// Applies one object the console built, as kubectl's client sends it;
/// kubectl's line with `created` replaced by `verb` when given.
fn send(cp: &mut ControlPlane, object: Value, verb: Option<&str>) -> Outcome {
    let text = object.to_string();
    let result = cp
        .apply_manifest(&text)
        .and_then(|mut r| r.pop().unwrap_or_else(|| Err(ApiError::BadRequest("no object".into()))));
    match result {
        Ok(applied) => {
            let line = applied.kubectl_line();
            let line = match verb {
                Some(verb) => format!("{}/{} {verb}", applied.object.kubectl_resource(), applied.object.name()),
                None => line,
            };
            Outcome::new(true, line, Effect::Change)
        }
        Err(e) => Outcome::new(false, server_error(&e), Effect::Read),
    }
}

/// kube-apiserver's refusal of a create for a name in use.
fn already_exists(cp: &ControlPlane, resource: Resource, name: &str) -> Option<Outcome> {
    cp.get(resource, "default", name).ok().map(|_| {
        Outcome::new(
            false,
            format!(
                "Error from server (AlreadyExists): {} {name:?} already exists",
                resource.qualified_plural()
            ),
            Effect::Read,
        )
    })
}

/// What `kubectl create service` puts in the Service's spec.
struct ServiceSpec {
    service_type: &'static str,
    external_name: Option<String>,
    ports: Vec<TcpPort>,
    cluster_ip: Option<String>,
    node_port: Option<i64>,
}

fn create_service(cp: &mut ControlPlane, name: &str, spec: ServiceSpec) -> Outcome {
    if let Some(exists) = already_exists(cp, Resource::Service, name) {
        return exists;
    }
    let mut ports: Vec<Value> = (spec.ports.iter())
        .map(|p| {
            json!({
                "name": p.name,
                "port": p.port,
                "protocol": "TCP",
                "targetPort": p.target_port,
            })
        })
        .collect();
    if let (Some(node_port), Some(first)) = (spec.node_port, ports.first_mut()) {
        first["nodePort"] = node_port.into();
    }
    let mut service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"type": spec.service_type, "selector": {"app": name}},
    });
    if !ports.is_empty() {
        service["spec"]["ports"] = ports.into();
    }
    if let Some(ip) = spec.cluster_ip {
        service["spec"]["clusterIP"] = ip.into();
    }
    if let Some(external) = &spec.external_name {
        service["spec"]["externalName"] = external.as_str().into();
    }
    let outcome = send(cp, service, None);
    if !outcome.ok {
        return outcome;
    }
    let note = match &spec.external_name {
        Some(external) => format!(
            "An ExternalName Service gets no ClusterIP and no endpoints: cluster DNS answers {name}.default.svc.cluster.local with a CNAME to {external}, and kube-proxy programs nothing for it."
        ),
        None => format!(
            "kubectl create service made the selector app={name} from the name, and named each port after its --tcp value (PORT, or PORT-TARGET); no Pod carries that label unless you give it one."
        ),
    };
    outcome.with_note(note)
}

/// The container name kubectl derives from an image: its last path part
/// without tag or digest.
fn container_name(image: &str) -> &str {
    let last = image.rsplit('/').next().unwrap_or(image);
    last.split([':', '@']).next().unwrap_or(last)
}

fn create_deployment(cp: &mut ControlPlane, name: &str, image: &str, replicas: i64, port: Option<i64>) -> Outcome {
    if let Some(exists) = already_exists(cp, Resource::Deployment, name) {
        return exists;
    }
    let mut container = json!({"name": container_name(image), "image": image});
    if let Some(port) = port {
        container["ports"] = json!([{"containerPort": port}]);
    }
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [container]},
            },
        },
    });
    send(cp, deployment, None)
}

fn expose(
    cp: &mut ControlPlane,
    deployment: &str,
    name: &str,
    port: i64,
    target_port: Option<String>,
    service_type: &str,
    protocol: &str,
) -> Outcome {
    let found = match cp.get(Resource::Deployment, "default", deployment) {
        Ok(object) => to_value(&object),
        Err(e) => return Outcome::new(false, server_error(&e), Effect::Read),
    };
    if let Some(exists) = already_exists(cp, Resource::Service, name) {
        return exists;
    }
    let selector = found["spec"]["selector"]["matchLabels"].clone();
    let labels = found["metadata"]["labels"].clone();
    let service_type = match service_type.to_ascii_lowercase().as_str() {
        "clusterip" => "ClusterIP".to_string(),
        "nodeport" => "NodePort".to_string(),
        "loadbalancer" => "LoadBalancer".to_string(),
        _ => service_type.to_string(),
    };
    let target: Value = match target_port {
        Some(t) => t.parse::<i64>().map_or_else(|_| Value::from(t), Value::from),
        None => port.into(),
    };
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "type": service_type,
            "selector": selector,
            "ports": [{"port": port, "protocol": protocol, "targetPort": target}],
        },
    });
    let selector_text = (selector.as_object().into_iter().flatten())
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join(",");
    send(cp, service, Some("exposed")).with_note(format!(
        "kubectl expose copied the selector {selector_text} from deployment {deployment}'s spec.selector, so the Service selects its Pods; the port is --port and the target port {target}."
    ))
}

fn to_value(object: &Object) -> Value {
    crate::api::value::to_value(object)
}

fn delete(cp: &mut ControlPlane, resource: Resource, names: &[String], namespace: &str) -> Outcome {
    let mut deleted = 0;
    let mut lines = Vec::new();
    for name in names {
        match cp.delete_resource(resource, namespace, name) {
            Ok(object) => {
                deleted += 1;
                lines.push(format!("{} {:?} deleted", object.kubectl_resource(), object.name()));
            }
            Err(e) => lines.push(server_error(&e)),
        }
    }
    Outcome::new(deleted == names.len(), lines.join("\n"), changed_if(deleted > 0))
}

/// `kubectl scale`: the Deployment's `spec.replicas` changed, as kubectl's
/// scale subresource request does.
fn scale(cp: &mut ControlPlane, name: &str, replicas: i64) -> Outcome {
    let mut deployment = match cp.get(Resource::Deployment, "default", name) {
        Ok(object) => to_value(&object),
        Err(e) => return Outcome::new(false, server_error(&e), Effect::Read),
    };
    deployment["spec"]["replicas"] = replicas.into();
    send(cp, deployment, Some("scaled"))
}

/// `kubectl describe`: each object's description, a blank line between
/// them; a `NotFound` line for each name missing.
fn describe_objects(cp: &ControlPlane, resource: Resource, names: &[String], namespace: &str) -> Outcome {
    let mut objects = cp.list(resource, Some(namespace));
    let mut errors = Vec::new();
    if !names.is_empty() {
        for name in names {
            if let Err(e) = cp.get(resource, namespace, name) {
                errors.push(server_error(&e));
            }
        }
        objects.retain(|o| names.iter().any(|n| n == o.name()));
    }
    let texts: Vec<String> = (objects.iter())
        .filter_map(|o| match o {
            Object::Service(svc) => Some(describe::service(svc, &describe::slices_of(svc, cp.endpoint_slices()))),
            Object::EndpointSlice(slice) => Some(describe::endpoint_slice(slice)),
            _ => None,
        })
        .collect();
    let mut text = texts.join("\n").trim_end().to_string();
    if objects.is_empty() && names.is_empty() {
        text = format!("No resources found in {namespace} namespace.");
    }
    for e in &errors {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(e);
    }
    Outcome::new(errors.is_empty(), text, Effect::Read)
}

/// What `env` prints in a container: the image's `PATH`, the runtime's
/// `HOSTNAME`, the Service variables the kubelet set when the container
/// started (sorted here; a real container's order is the runtime's), and
/// `HOME`.
fn exec(cp: &ControlPlane, pod: &str, namespace: &str, variable: Option<&str>) -> Outcome {
    if let Err(e) = cp.get(Resource::Pod, namespace, pod) {
        return Outcome::new(false, server_error(&e), Effect::Read);
    }
    let Some(services) = cp.container_env(namespace, pod) else {
        return Outcome::new(
            false,
            format!("error: unable to upgrade connection: pod {pod} is not running: its containers have not started"),
            Effect::Read,
        );
    };
    let mut env: Vec<(String, String)> = vec![
        (
            "PATH".into(),
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
        ),
        ("HOSTNAME".into(), pod.to_string()),
    ];
    env.extend(services.iter().map(|(k, v)| (k.clone(), v.clone())));
    env.push(("HOME".into(), "/root".into()));
    if let Some(name) = variable {
        return match env.iter().find(|(k, _)| k == name) {
            Some((_, value)) => Outcome::new(true, value.clone(), Effect::Read),
            None => Outcome::new(false, "command terminated with exit code 1", Effect::Read),
        };
    }
    let text: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let names: Vec<String> = (cp.services())
        .filter(|s| s.metadata.namespace_or_default() == namespace)
        .filter(|s| !s.spec.cluster_ip.is_empty() && !s.is_headless())
        .map(|s| s.metadata.name.clone())
        .collect();
    let seen = |name: &String| {
        let prefix = format!("{}_SERVICE_HOST", name.to_ascii_uppercase().replace('-', "_"));
        services.contains_key(&prefix)
    };
    let missing: Vec<&String> = names.iter().filter(|n| !seen(n)).collect();
    let mut note = "The kubelet set the *_SERVICE_HOST, *_PORT* variables when this pod's containers started: one set per Service of its namespace that had a ClusterIP then, plus kubernetes.".to_string();
    if !missing.is_empty() {
        let list: Vec<&str> = missing.iter().map(|n| n.as_str()).collect();
        note.push_str(&format!(
            " Not here: {}, created after the pod started; a pod started now would see it. DNS names have no such gap.",
            list.join(", ")
        ));
    }
    Outcome::new(true, text.join("\n"), Effect::Read).with_note(note)
}

/// The IPVS table of the first node, as `ipvsadm` prints it there.
fn ipvsadm(cp: &ControlPlane, save: bool) -> Outcome {
    let Some(node) = cp.nodes().next().map(|n| n.metadata.name.clone()) else {
        return Outcome::new(
            false,
            "ipvsadm: this cluster has no node to show the table of",
            Effect::Read,
        );
    };
    match cp.node_ipvs_table(&node) {
        Ok(table) if save => Outcome::new(true, ipvsadm_save(&table).trim_end(), Effect::Read),
        Ok(table) => Outcome::new(true, ipvsadm_list(&table).trim_end(), Effect::Read),
        Err(e) => Outcome::new(false, format!("ipvsadm: {e}"), Effect::Read),
    }
}

/// `simulate ready|unready POD`: the pod's Ready condition set as its
/// kubelet would after the readiness probe passed or failed.
fn readiness(cp: &mut ControlPlane, name: &str, ready: bool) -> Outcome {
    let mut pod = match cp.get(Resource::Pod, "default", name) {
        Ok(object) => to_value(&object),
        Err(e) => return Outcome::new(false, server_error(&e), Effect::Read),
    };
    let mut conditions: Vec<Value> = (pod["status"]["conditions"].as_array().cloned().unwrap_or_default())
        .into_iter()
        .filter(|c| c["type"] != "Ready")
        .collect();
    conditions.push(json!({"type": "Ready", "status": if ready { "True" } else { "False" }}));
    pod["status"]["conditions"] = conditions.into();
    let sent = send(cp, pod, None);
    if !sent.ok {
        return sent;
    }
    let result = if ready {
        "succeeded, Ready=True"
    } else {
        "failed, Ready=False"
    };
    Outcome::new(true, format!("pod/{name}: readiness probe {result}"), Effect::Change)
}

/// Words Tab completes: the console's commands, verbs, kinds and flags,
/// and the names of the objects in the cluster.
pub fn vocabulary(cp: &ControlPlane) -> Vec<String> {
    let fixed = [
        "kubectl",
        "create",
        "expose",
        "apply",
        "delete",
        "scale",
        "get",
        "clusterip",
        "nodeport",
        "loadbalancer",
        "--tcp=",
        "--image=",
        "--replicas=",
        "--port=",
        "--target-port=",
        "--type=",
        "-o",
        "wide",
        "yaml",
        "json",
        "help",
        "ipvsadm",
        "-Ln",
        "ipvsadm-save",
        "iptables-save",
        "nft",
        "list",
        "ruleset",
        "table",
        "kube-proxy",
        "svcnet",
        "inet",
        "simulate",
        "unready",
        "ready",
    ];
    let mut words: Vec<String> = fixed.iter().map(|w| w.to_string()).collect();
    for resource in Resource::ALL {
        words.extend(resource.words().into_iter().map(str::to_string));
        words.extend(cp.list(resource, Some("default")).iter().map(|o| o.name().to_string()));
    }
    crate::sort::sort(&mut words);
    words.dedup();
    words
}

#[cfg(test)]
mod tests;
