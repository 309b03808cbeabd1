//! Console command lines read into [`Command`]s, with kubectl's own
//! client-side errors (`exactly one NAME is required, got 0`, `required
//! flag(s) "image" not set`). Nothing here touches the cluster.

use super::selector::Selector;
use super::words::{integer, words, Args};
use super::UsageError;
use crate::api::Resource;

/// How `kubectl get` prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// The table.
    Table,
    /// `-o wide`: the table with more columns.
    Wide,
    /// `-o yaml`.
    Yaml,
    /// `-o json`.
    Json,
    /// `-o name`: `service/web`.
    Name,
    /// `-o jsonpath=TEMPLATE`.
    JsonPath(String),
}

/// One port of `kubectl create service --tcp=PORT[:TARGET]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpPort {
    /// The port's name: what was typed, `:` made `-` (`80`, `443-8443`).
    pub name: String,
    /// The Service port.
    pub port: i64,
    /// The pods' port.
    pub target_port: i64,
}

/// One command the console runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// An empty line.
    Noop,
    /// `help`.
    Help,
    /// `clear`: the page empties its console.
    Clear,
    /// `kubectl apply -f -` without its text yet: the page asks for it.
    ApplyPrompt,
    /// `kubectl apply -f -` with its text.
    Apply {
        /// YAML or JSON, one or more objects.
        manifest: String,
    },
    /// `kubectl create service TYPE NAME --tcp=...`.
    CreateService {
        /// The Service's name.
        name: String,
        /// `ClusterIP`, `NodePort`, `LoadBalancer` or `ExternalName`.
        service_type: &'static str,
        /// `--external-name`, for `ExternalName`.
        external_name: Option<String>,
        /// The ports, in the order given.
        ports: Vec<TcpPort>,
        /// `--clusterip` (`None` makes a headless Service).
        cluster_ip: Option<String>,
        /// `--node-port`, for the first port.
        node_port: Option<i64>,
    },
    /// `kubectl create deployment NAME --image=...`.
    CreateDeployment {
        /// The Deployment's name.
        name: String,
        /// The container image.
        image: String,
        /// `--replicas` (default 1).
        replicas: i64,
        /// `--port`: the container port it declares.
        port: Option<i64>,
    },
    /// `kubectl expose deployment NAME --port=...`.
    Expose {
        /// The Deployment exposed.
        deployment: String,
        /// The Service's name (`--name`, else the Deployment's).
        name: String,
        /// The Service port.
        port: i64,
        /// `--target-port`: a number or a container port's name.
        target_port: Option<String>,
        /// `--type`, as given.
        service_type: String,
        /// `--protocol` (default TCP).
        protocol: String,
    },
    /// `kubectl delete KIND NAME...`.
    Delete {
        /// The kind.
        resource: Resource,
        /// The objects' names.
        names: Vec<String>,
        /// `-n` (default `default`).
        namespace: String,
    },
    /// `kubectl scale deployment NAME --replicas=N`.
    Scale {
        /// The Deployment.
        name: String,
        /// The new count.
        replicas: i64,
    },
    /// `kubectl get KIND [NAME...]`.
    Get {
        /// The kind.
        resource: Resource,
        /// The names asked for (every object when empty).
        names: Vec<String>,
        /// How to print.
        output: Output,
        /// `-A`.
        all_namespaces: bool,
        /// `-n` (default `default`).
        namespace: String,
        /// `-l`: only objects whose labels match.
        selector: Option<Selector>,
    },
    /// `kubectl describe KIND [NAME...]`.
    Describe {
        /// The kind.
        resource: Resource,
        /// The names asked for (every object when empty).
        names: Vec<String>,
        /// `-n` (default `default`).
        namespace: String,
    },
    /// `kubectl exec POD -- env` or `-- printenv [NAME]`.
    Exec {
        /// The pod.
        pod: String,
        /// `-n` (default `default`).
        namespace: String,
        /// The variable `printenv` asked for; every one when `None`.
        variable: Option<String>,
    },
    /// `ipvsadm -Ln` (`save: false`) or `ipvsadm-save -n` (`save: true`).
    Ipvsadm {
        /// `ipvsadm-save` rather than `ipvsadm -Ln`.
        save: bool,
    },
    /// `iptables-save`: the rules kube-proxy's iptables mode would write.
    IptablesSave,
    /// `nft list ruleset`: kube-proxy's nftables-mode tables.
    NftListRuleset,
    /// `nft list table ip kube-proxy` (`ipv6: false`) or `ip6 kube-proxy`.
    NftListKubeProxy {
        /// The `ip6` table rather than the `ip` one.
        ipv6: bool,
    },
    /// `nft list table inet svcnet`: svcnet's own table beside IPVS mode.
    NftListSvcnet,
    /// `ip addr show kube-ipvs0` (or `ip addr`, `ip a`).
    IpAddrShow,
    /// `simulate ready|unready POD`: the playground's stand-in for a
    /// readiness probe that passes or fails.
    Readiness {
        /// The pod.
        pod: String,
        /// Whether it passes.
        ready: bool,
    },
}

/// `nft list ruleset` and `nft list table FAMILY NAME`, for the tables a
/// node has; anything else fails the way nft does.
fn parse_nft(rest: &[String]) -> Result<Command, UsageError> {
    let args: Vec<&str> = rest.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["list", "ruleset"] => Ok(Command::NftListRuleset),
        ["list", "table", "ip", "kube-proxy"] => Ok(Command::NftListKubeProxy { ipv6: false }),
        ["list", "table", "ip6", "kube-proxy"] => Ok(Command::NftListKubeProxy { ipv6: true }),
        ["list", "table", "inet", "svcnet"] => Ok(Command::NftListSvcnet),
        ["list", "table", family, name] if ["ip", "ip6", "inet", "arp", "bridge", "netdev"].contains(family) => {
            let line = format!("list table {family} {name}");
            let marks = "^".repeat(name.len());
            Err(UsageError::new(format!(
                "Error: No such file or directory\n{line}\n{:width$}{marks}",
                "",
                width = line.len() - name.len()
            )))
        }
        [] => Err(UsageError::new(
            "Error: syntax error, unexpected end of file\n(this console lists: nft list ruleset, nft list table ip kube-proxy, nft list table inet svcnet)",
        )),
        _ => Err(UsageError::new(format!(
            "Error: this console only lists rules: nft list ruleset, nft list table ip kube-proxy, nft list table ip6 kube-proxy, nft list table inet svcnet (not: nft {})",
            args.join(" ")
        ))),
    }
}

/// Reads one command line; `stdin` is the text for `kubectl apply -f -`.
pub fn parse(line: &str, stdin: Option<&str>) -> Result<Command, UsageError> {
    let w = words(line.trim())?;
    let Some((first, rest)) = w.split_first() else {
        return Ok(Command::Noop);
    };
    match first.as_str() {
        "help" | "?" => return Ok(Command::Help),
        "clear" => return Ok(Command::Clear),
        "ipvsadm" => return parse_ipvsadm(rest),
        "ipvsadm-save" => return Ok(Command::Ipvsadm { save: true }),
        "iptables-save" => return Ok(Command::IptablesSave),
        "nft" => return parse_nft(rest),
        "ip" => {
            return match rest.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
                ["a" | "addr" | "address"]
                | ["a" | "addr" | "address", "show" | "list" | "s"]
                | ["a" | "addr" | "address", "show" | "list" | "s", "kube-ipvs0"]
                | ["a" | "addr" | "address", "show" | "list" | "s", "dev", "kube-ipvs0"] => Ok(Command::IpAddrShow),
                _ => Err(UsageError::new("this console shows addresses: ip addr show kube-ipvs0")),
            }
        }
        "simulate" => return parse_simulate(rest),
        "kubectl" | "k" => {}
        other => {
            return Err(UsageError::new(format!(
                "command not found: {other} (type \"help\" for the commands this console knows)"
            )))
        }
    }
    let Some((verb, rest)) = rest.split_first() else {
        return Ok(Command::Help);
    };
    match verb.as_str() {
        "create" => parse_create(rest),
        "expose" => parse_expose(rest),
        "apply" => parse_apply(rest, stdin),
        "delete" => parse_delete(rest),
        "scale" => parse_scale(rest),
        "get" => parse_get(rest),
        "describe" => parse_describe(rest),
        "exec" => parse_exec(rest),
        other => Err(UsageError::new(format!(
            "unknown command {other:?} for \"kubectl\" (this console knows create, expose, apply, delete, scale, get, describe, exec)"
        ))),
    }
}

/// The kind a word names, or kubectl's error.
fn resource(word: &str) -> Result<Resource, UsageError> {
    Resource::from_word(word)
        .ok_or_else(|| UsageError::new(format!("the server doesn't have a resource type {word:?}")))
}

fn one_name(args: &Args) -> Result<String, UsageError> {
    match args.positional.as_slice() {
        [name] => Ok(name.clone()),
        other => Err(UsageError::new(format!(
            "exactly one NAME is required, got {}",
            other.len()
        ))),
    }
}

fn parse_create(args: &[String]) -> Result<Command, UsageError> {
    let (what, rest) = args.split_first().map_or(("", &[][..]), |(w, r)| (w.as_str(), r));
    match what {
        "service" | "svc" => {
            let (kind, more) = rest.split_first().map_or(("", &[][..]), |(w, r)| (w.as_str(), r));
            let service_type = match kind {
                "clusterip" => "ClusterIP",
                "nodeport" => "NodePort",
                "loadbalancer" => "LoadBalancer",
                "externalname" => "ExternalName",
                "" => {
                    return Err(UsageError::new(
                        "kubectl create service needs a type: clusterip, nodeport, loadbalancer or externalname",
                    ))
                }
                _ => {
                    return Err(UsageError::new(format!(
                        "unknown command {:?}\nSee 'kubectl create service -h' for help and examples",
                        rest.join(" ")
                    )))
                }
            };
            let args = Args::split(more, &[])?;
            args.only(&["tcp", "clusterip", "node-port", "external-name", "dry-run"])?;
            let name = one_name(&args)?;
            let cluster_ip = args.flag(&["clusterip"]).map(str::to_string);
            let external_name = args.flag(&["external-name"]).map(str::to_string);
            if service_type == "ExternalName" && external_name.is_none() {
                return Err(UsageError::new("required flag(s) \"external-name\" not set"));
            }
            let specs: Vec<&str> = args.all("tcp").into_iter().flat_map(|t| t.split(',')).collect();
            if specs.is_empty() && cluster_ip.as_deref() != Some("None") && service_type != "ExternalName" {
                return Err(UsageError::new("at least one tcp port specifier must be provided"));
            }
            let ports = specs.into_iter().map(tcp_port).collect::<Result<_, _>>()?;
            let node_port = args.flag(&["node-port"]).map(|v| integer(v, "node-port")).transpose()?;
            Ok(Command::CreateService {
                name,
                service_type,
                external_name,
                ports,
                cluster_ip,
                node_port,
            })
        }
        "deployment" | "deploy" => {
            let args = Args::split(rest, &[])?;
            args.only(&["image", "replicas", "r", "port"])?;
            let name = one_name(&args)?;
            let image = (args.flag(&["image"]))
                .ok_or_else(|| UsageError::new("required flag(s) \"image\" not set"))?
                .to_string();
            let replicas = integer(args.flag(&["replicas", "r"]).unwrap_or("1"), "replicas")?;
            if replicas < 0 {
                return Err(UsageError::new("--replicas must be 0 or more"));
            }
            let port = args.flag(&["port"]).map(|v| integer(v, "port")).transpose()?;
            Ok(Command::CreateDeployment {
                name,
                image,
                replicas,
                port,
            })
        }
        _ => Err(UsageError::new(
            "this console creates \"service\" (svc) and \"deployment\" objects; use kubectl apply -f - for anything else",
        )),
    }
}

/// `--tcp=80` or `--tcp=80:8080`.
fn tcp_port(spec: &str) -> Result<TcpPort, UsageError> {
    let bad = || UsageError::new(format!("--tcp must be PORT or PORT:TARGETPORT, got {spec:?}"));
    let number = |s: &str| -> Result<i64, UsageError> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
            .ok_or_else(bad)
    };
    let (port, target) = spec.split_once(':').unwrap_or((spec, spec));
    Ok(TcpPort {
        name: spec.replace(':', "-"),
        port: number(port)?,
        target_port: number(target)?,
    })
}

/// `deployment NAME` or `deployment/NAME` (any word for Deployments).
fn deployment_name(positional: &[String]) -> Option<String> {
    match positional {
        [one] => {
            let (kind, name) = one.split_once('/')?;
            (Resource::from_word(kind) == Some(Resource::Deployment)).then(|| name.to_string())
        }
        [kind, name] => (Resource::from_word(kind) == Some(Resource::Deployment)).then(|| name.clone()),
        _ => None,
    }
}

fn parse_expose(args: &[String]) -> Result<Command, UsageError> {
    let args = Args::split(args, &[])?;
    args.only(&["port", "target-port", "type", "name", "protocol"])?;
    let deployment = deployment_name(&args.positional).ok_or_else(|| {
        UsageError::new(
            "this console exposes deployments: kubectl expose deployment NAME --port=P [--target-port=T] [--type=ClusterIP|NodePort|LoadBalancer]",
        )
    })?;
    let port =
        (args.flag(&["port"])).ok_or_else(|| UsageError::new("couldn't find port via --port flag or introspection"))?;
    Ok(Command::Expose {
        name: args.flag(&["name"]).unwrap_or(&deployment).to_string(),
        deployment,
        port: integer(port, "port")?,
        target_port: args.flag(&["target-port"]).map(str::to_string),
        service_type: args.flag(&["type"]).unwrap_or("ClusterIP").to_string(),
        protocol: args.flag(&["protocol"]).unwrap_or("TCP").to_string(),
    })
}

fn parse_apply(args: &[String], stdin: Option<&str>) -> Result<Command, UsageError> {
    let args = Args::split(args, &[])?;
    args.only(&["f", "filename"])?;
    if !args.positional.is_empty() {
        return Err(UsageError::new(format!(
            "unexpected args: [{}]",
            args.positional.join(" ")
        )));
    }
    if args.flag(&["f", "filename"]) != Some("-") {
        return Err(UsageError::new(
            "this console reads manifests from standard input only: kubectl apply -f - (paste the YAML in the box that opens)",
        ));
    }
    Ok(match stdin {
        None => Command::ApplyPrompt,
        Some(text) => Command::Apply {
            manifest: text.to_string(),
        },
    })
}

/// `KIND NAME...` or `KIND/NAME`.
fn kind_and_names(positional: &[String]) -> Result<(Resource, Vec<String>), UsageError> {
    match positional {
        [] => Err(UsageError::new(
            "You must specify the type of resource to get. Try kubectl get svc, endpoints, endpointslices or pods.",
        )),
        [one] if one.contains('/') => {
            let (kind, name) = one.split_once('/').unwrap_or((one, ""));
            Ok((resource(kind)?, vec![name.to_string()]))
        }
        [kind, names @ ..] => Ok((resource(kind)?, names.to_vec())),
    }
}

fn parse_delete(args: &[String]) -> Result<Command, UsageError> {
    let args = Args::split(args, &[])?;
    args.only(&["n", "namespace"])?;
    if args.positional.is_empty() {
        return Err(UsageError::new(
            "You must provide one or more resources by argument or filename.",
        ));
    }
    let (resource, names) = kind_and_names(&args.positional)?;
    if names.is_empty() {
        return Err(UsageError::new("resource(s) were provided, but no name was specified"));
    }
    Ok(Command::Delete {
        resource,
        names,
        namespace: args.flag(&["n", "namespace"]).unwrap_or("default").to_string(),
    })
}

fn parse_scale(args: &[String]) -> Result<Command, UsageError> {
    let args = Args::split(args, &[])?;
    args.only(&["replicas"])?;
    let name = deployment_name(&args.positional).ok_or_else(|| {
        UsageError::new("this console scales deployments: kubectl scale deployment NAME --replicas=N")
    })?;
    let replicas =
        (args.flag(&["replicas"])).ok_or_else(|| UsageError::new("required flag(s) \"replicas\" not set"))?;
    let replicas = integer(replicas, "replicas")?;
    if replicas < 0 {
        return Err(UsageError::new(
            "The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0",
        ));
    }
    Ok(Command::Scale { name, replicas })
}

fn parse_get(args: &[String]) -> Result<Command, UsageError> {
    let args = Args::split(args, &["A", "all-namespaces"])?;
    args.only(&["o", "output", "A", "all-namespaces", "n", "namespace", "l", "selector"])?;
    let (resource, names) = kind_and_names(&args.positional)?;
    let selector = (args.flag(&["l", "selector"]))
        .map(|text| Selector::parse(text).map_err(UsageError::new))
        .transpose()?;
    if selector.is_some() && !names.is_empty() {
        return Err(UsageError::new(
            "selectors and the all flag cannot be used when passing resource/name arguments",
        ));
    }
    let output = match args.flag(&["o", "output"]).unwrap_or("") {
        "" => Output::Table,
        "wide" => Output::Wide,
        "yaml" => Output::Yaml,
        "json" => Output::Json,
        "name" => Output::Name,
        other if other.starts_with("jsonpath=") => Output::JsonPath(other["jsonpath=".len()..].to_string()),
        "jsonpath" => return Err(UsageError::new("template format specified but no template given")),
        other => {
            return Err(UsageError::new(format!(
                "unable to match a printer suitable for the output format {other:?}, allowed formats are: json,jsonpath,name,wide,yaml"
            )))
        }
    };
    Ok(Command::Get {
        resource,
        names,
        output,
        all_namespaces: args.has(&["A", "all-namespaces"]),
        namespace: args.flag(&["n", "namespace"]).unwrap_or("default").to_string(),
        selector,
    })
}

fn parse_describe(args: &[String]) -> Result<Command, UsageError> {
    let args = Args::split(args, &[])?;
    args.only(&["n", "namespace"])?;
    if args.positional.is_empty() {
        return Err(UsageError::new(
            "You must specify the type of resource to describe. Try kubectl describe svc or endpointslices.",
        ));
    }
    let (resource, names) = kind_and_names(&args.positional)?;
    if !matches!(resource, Resource::Service | Resource::EndpointSlice) {
        return Err(UsageError::new(format!(
            "this console describes services and endpointslices, not {}",
            resource.plural()
        )));
    }
    Ok(Command::Describe {
        resource,
        names,
        namespace: args.flag(&["n", "namespace"]).unwrap_or("default").to_string(),
    })
}

fn parse_exec(args: &[String]) -> Result<Command, UsageError> {
    let dash = args.iter().position(|a| a == "--");
    let (before, command) = match dash {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    let args = Args::split(before, &["i", "t", "it", "ti", "stdin", "tty"])?;
    args.only(&["i", "t", "it", "ti", "stdin", "tty", "n", "namespace", "c", "container"])?;
    let pod = match args.positional.as_slice() {
        [pod] => pod.strip_prefix("pod/").unwrap_or(pod).to_string(),
        [] => return Err(UsageError::new("pod or type/name must be specified")),
        _ => return Err(UsageError::new("exactly one POD is required before --")),
    };
    let variable = match command.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["env"] | ["printenv"] => None,
        ["printenv", name] => Some(name.to_string()),
        [] => {
            return Err(UsageError::new(
                "you must specify at least one command for the container",
            ))
        }
        _ => {
            return Err(UsageError::new(
                "this console's containers run env and printenv [NAME] only: kubectl exec POD -- env",
            ))
        }
    };
    Ok(Command::Exec {
        pod,
        namespace: args.flag(&["n", "namespace"]).unwrap_or("default").to_string(),
        variable,
    })
}

fn parse_ipvsadm(args: &[String]) -> Result<Command, UsageError> {
    match args.join(" ").as_str() {
        "" | "-n" | "-Ln" | "-nL" | "-L -n" | "-n -L" => Ok(Command::Ipvsadm { save: false }),
        "-S" | "-S -n" | "-Sn" => Ok(Command::Ipvsadm { save: true }),
        _ => Err(UsageError::new(
            "this console shows the table: ipvsadm -Ln, or ipvsadm-save -n",
        )),
    }
}

fn parse_simulate(args: &[String]) -> Result<Command, UsageError> {
    match args {
        [what, pod] if what == "ready" || what == "unready" => Ok(Command::Readiness {
            pod: pod.clone(),
            ready: what == "ready",
        }),
        _ => Err(UsageError::new("simulate unready POD | simulate ready POD")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(line: &str) -> String {
        parse(line, None).unwrap_err().to_string()
    }

    #[test]
    fn reads_what_kubectl_users_type() {
        assert_eq!(
            parse("kubectl create svc nodeport a --tcp=80:8080,443", None).unwrap(),
            Command::CreateService {
                name: "a".into(),
                service_type: "NodePort",
                external_name: None,
                ports: vec![
                    TcpPort {
                        name: "80-8080".into(),
                        port: 80,
                        target_port: 8080
                    },
                    TcpPort {
                        name: "443".into(),
                        port: 443,
                        target_port: 443
                    }
                ],
                cluster_ip: None,
                node_port: None,
            }
        );
        let Command::Get {
            resource,
            names,
            output,
            ..
        } = parse("k get po/web-1 -owide", None).unwrap()
        else {
            panic!("not a get");
        };
        assert_eq!(
            (resource, names, output),
            (Resource::Pod, vec!["web-1".to_string()], Output::Wide)
        );
        assert_eq!(
            parse("kubectl scale deploy/web --replicas=3", None).unwrap(),
            Command::Scale {
                name: "web".into(),
                replicas: 3
            }
        );
        assert_eq!(parse("kubectl apply -f -", None).unwrap(), Command::ApplyPrompt);
        assert_eq!(parse("ipvsadm -L -n", None).unwrap(), Command::Ipvsadm { save: false });
        assert_eq!(parse("", None).unwrap(), Command::Noop);
    }

    #[test]
    fn refuses_with_kubectls_words() {
        assert_eq!(
            error("kubectl get frobs"),
            "the server doesn't have a resource type \"frobs\""
        );
        assert_eq!(
            error("kubectl create svc clusterip"),
            "exactly one NAME is required, got 0"
        );
        assert_eq!(
            error("kubectl create deployment x"),
            "required flag(s) \"image\" not set"
        );
        assert_eq!(
            error("kubectl create svc clusterip a"),
            "at least one tcp port specifier must be provided"
        );
        assert_eq!(
            error("kubectl create svc clusterip a --tcp=eighty"),
            "--tcp must be PORT or PORT:TARGETPORT, got \"eighty\""
        );
        assert_eq!(
            error("kubectl delete svc"),
            "resource(s) were provided, but no name was specified"
        );
        assert_eq!(error("kubectl get svc -o table"), "unable to match a printer suitable for the output format \"table\", allowed formats are: json,jsonpath,name,wide,yaml");
        assert_eq!(
            error("kubectl expose deployment web"),
            "couldn't find port via --port flag or introspection"
        );
        assert_eq!(
            error("ls"),
            "command not found: ls (type \"help\" for the commands this console knows)"
        );
        assert_eq!(
            error("kubectl scale deployment web --replicas=-1"),
            "The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0"
        );
    }
}
