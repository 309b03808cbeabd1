//! The console as a playground user drives it: each test types lines and
//! checks what kubectl would print and what the cluster holds after.

use super::*;

fn cluster(range: &str) -> ControlPlane {
    preset::cluster(range, 0, preset::ControlPlaneShape::Single).unwrap()
}

fn text(cp: &mut ControlPlane, line: &str) -> String {
    run(cp, line, None).text
}

#[test]
fn create_service_writes_what_kubectl_writes_and_the_core_allocates() {
    let mut cp = cluster("10.96.0.0/12");
    let created = run(&mut cp, "kubectl create svc clusterip test --tcp=80", None);
    assert_eq!(
        (created.ok, created.text.as_str(), created.effect),
        (true, "service/test created", Effect::Change)
    );
    assert!(created.note.unwrap().contains("selector app=test"));
    let svc = cp.service("default", "test").unwrap().clone();
    let mut direct = cluster("10.96.0.0/12");
    let same = direct
        .apply_manifest("apiVersion: v1\nkind: Service\nmetadata: {name: test}\nspec: {ports: [{port: 80}]}\n")
        .unwrap()
        .remove(0)
        .unwrap();
    let Object::Service(direct_svc) = same.object else {
        panic!("not a Service")
    };
    assert_eq!(
        svc.spec.cluster_ip, direct_svc.spec.cluster_ip,
        "the same ClusterIP as a plain apply"
    );
    assert_eq!(
        svc.spec.ports[0].name, "80",
        "kubectl names a port after its --tcp value"
    );
    assert_eq!(
        svc.spec
            .selector
            .as_ref()
            .and_then(|s| s.get("app"))
            .map(String::as_str),
        Some("test")
    );
    assert_eq!(
        text(&mut cp, "kubectl create svc clusterip test --tcp=80"),
        "Error from server (AlreadyExists): services \"test\" already exists"
    );
}

#[test]
fn errors_are_kubernetes_own() {
    let mut cp = cluster("10.96.0.0/12");
    assert_eq!(
        text(&mut cp, "kubectl delete svc nope"),
        "Error from server (NotFound): services \"nope\" not found"
    );
    let invalid = text(&mut cp, "kubectl create svc clusterip Bad_Name --tcp=80");
    assert!(
        invalid.starts_with("The Service \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label"),
        "{invalid}"
    );
    assert_eq!(
        text(&mut cp, "kubectl get svc nope"),
        "Error from server (NotFound): services \"nope\" not found"
    );
    assert_eq!(
        text(&mut cp, "kubectl scale deployment nope --replicas=1"),
        "Error from server (NotFound): deployments.apps \"nope\" not found"
    );
    assert_eq!(
        text(&mut cp, "kubectl create deployment x"),
        "error: required flag(s) \"image\" not set"
    );
    let usage = run(&mut cp, "kubectl get frobs", None);
    assert_eq!((usage.ok, usage.effect), (false, Effect::Nothing));
    let mut small = cluster("10.96.0.0/29");
    for i in 0..5 {
        assert!(run(&mut small, &format!("kubectl create svc clusterip s{i} --tcp=80"), None).ok);
    }
    assert_eq!(
        text(&mut small, "kubectl create svc clusterip s5 --tcp=80"),
        "Error from server (InternalError): Internal error occurred: failed to allocate a serviceIP for Service \"s5\": range is full"
    );
}

#[test]
fn get_prints_tables_yaml_json_and_names() {
    let mut cp = cluster("10.96.0.0/12");
    run(&mut cp, "kubectl create svc nodeport web --tcp=80:8080", None);
    let table = text(&mut cp, "kubectl get svc");
    assert!(table.starts_with("NAME         TYPE        CLUSTER-IP"), "{table}");
    assert!(table.contains("\nweb          NodePort    10."), "{table}");
    let wide = text(&mut cp, "kubectl get svc web -o wide");
    assert!(
        wide.lines().next().unwrap().ends_with("SELECTOR") && wide.ends_with("app=web"),
        "{wide}"
    );
    let yaml = text(&mut cp, "kubectl get svc web -o yaml");
    assert!(yaml.starts_with("apiVersion: v1\nkind: Service\nmetadata:\n"), "{yaml}");
    let json = text(&mut cp, "kubectl get svc web -o json");
    assert!(
        json.starts_with("{\n    \"apiVersion\": \"v1\",\n    \"kind\": \"Service\""),
        "{json}"
    );
    let list = text(&mut cp, "kubectl get svc -o yaml");
    assert!(
        list.starts_with("apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Service"),
        "{list}"
    );
    assert_eq!(
        text(&mut cp, "kubectl get svc -o name"),
        "service/kubernetes\nservice/web"
    );
    assert_eq!(
        text(&mut cp, "kubectl get svc web nope"),
        format!(
            "{}\nError from server (NotFound): services \"nope\" not found",
            text(&mut cp, "kubectl get svc web")
        )
    );
    assert_eq!(
        text(&mut cp, "kubectl get pods"),
        "No resources found in default namespace."
    );
    assert_eq!(
        text(&mut cp, "kubectl get pods -n shop"),
        "No resources found in shop namespace."
    );
    assert_eq!(
        text(&mut cp, "kubectl get servicecidrs"),
        "NAME         CIDRS          AGE\nkubernetes   10.96.0.0/12   0s"
    );
    assert_eq!(
        text(&mut cp, "kubectl get nodes"),
        "NAME     STATUS   ROLES           AGE   VERSION\nnode-1   Ready    control-plane   0s    v1.37.2"
    );
    assert_eq!(run(&mut cp, "kubectl get svc", None).effect, Effect::Read);
}

#[test]
fn apply_reports_each_object_and_ipvsadm_shows_the_nodes_table() {
    let mut cp = cluster("10.96.0.0/12");
    let manifest = "apiVersion: v1\nkind: Service\nmetadata: {name: dns}\nspec: {ports: [{port: 53, protocol: UDP}]}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: bad}\nspec: {ports: [{port: 0}]}\n";
    assert_eq!(run(&mut cp, "kubectl apply -f -", None).effect, Effect::ReadStdin);
    let applied = run(&mut cp, "kubectl apply -f -", Some(manifest));
    assert!(!applied.ok);
    let lines: Vec<&str> = applied.text.lines().collect();
    assert_eq!(lines[0], "service/dns created");
    assert!(
        lines[1].starts_with("The Service \"bad\" is invalid: [spec.ports[0].port: Invalid value: 0"),
        "{}",
        lines[1]
    );
    let ip = cp.service("default", "dns").unwrap().spec.cluster_ip.clone();
    let save = text(&mut cp, "ipvsadm-save -n");
    assert!(save.contains(&format!("-A -u {ip}:53 -s rr")), "{save}");
    assert!(text(&mut cp, "ipvsadm -Ln").starts_with("IP Virtual Server version"));
    assert_eq!(run(&mut cp, "clear", None).effect, Effect::Clear);
    assert_eq!(run(&mut cp, "help", None).text, HELP);
}

#[test]
fn the_vocabulary_holds_commands_kinds_and_names() {
    let mut cp = cluster("10.96.0.0/12");
    run(&mut cp, "kubectl create svc clusterip web --tcp=80", None);
    let words = vocabulary(&cp);
    for word in [
        "kubectl",
        "svc",
        "endpointslices",
        "deploy",
        "web",
        "kubernetes",
        "node-1",
        "--tcp=",
    ] {
        assert!(words.iter().any(|w| w == word), "{word} missing from {words:?}");
    }
}

#[test]
fn a_selectorless_service_with_a_written_slice_has_no_endpoints_object() {
    let mut cp = cluster("10.96.0.0/12");
    let manifest = "apiVersion: v1\nkind: Service\nmetadata: {name: db}\nspec: {ports: [{port: 5432}]}\n---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: db-1, labels: {kubernetes.io/service-name: db}}\naddressType: IPv4\nports: [{port: 5432}]\nendpoints: [{addresses: [10.1.2.3]}]\n";
    assert!(run(&mut cp, "kubectl apply -f -", Some(manifest)).ok);
    assert_eq!(
        text(&mut cp, "kubectl get endpoints db"),
        format!(
            "{}\nError from server (NotFound): endpoints \"db\" not found",
            get::ENDPOINTS_DEPRECATED
        )
    );
    assert!(text(&mut cp, "kubectl get endpointslices db-1").contains("10.1.2.3"));
    let kubernetes_slice = text(&mut cp, "kubectl get endpointslices kubernetes -o yaml");
    assert!(!kubernetes_slice.contains("skip-mirror"), "{kubernetes_slice}");
    assert!(
        text(&mut cp, "kubectl get endpoints kubernetes -o yaml").contains("endpointslice.kubernetes.io/skip-mirror")
    );
}

#[test]
fn refused_requests_are_kept_but_change_nothing() {
    let mut cp = cluster("10.96.0.0/12");
    run(&mut cp, "kubectl create svc clusterip web --tcp=80", None);
    let before = cp.clone();
    for line in [
        "kubectl create svc clusterip web --tcp=80",
        "kubectl delete svc nope",
        "kubectl create svc clusterip Bad_Name --tcp=80",
        "simulate unready nope",
    ] {
        let outcome = run(&mut cp, line, None);
        assert_eq!((outcome.ok, outcome.effect), (false, Effect::Read), "{line}");
    }
    assert_eq!(cp, before);
    let partly = run(&mut cp, "kubectl delete svc web nope", None);
    assert_eq!((partly.ok, partly.effect), (false, Effect::Change));
}

/// `testdata/describe.yaml` applied to kube-apiserver v1.37.2, then
/// `kubectl describe svc web` and `kubectl describe endpointslice web-1`
/// (kubectl v1.37.2) saved as they printed.
#[test]
fn describe_prints_what_the_real_kubectl_printed() {
    let mut cp = cluster("10.96.0.0/12");
    let applied = run(
        &mut cp,
        "kubectl apply -f -",
        Some(include_str!("testdata/describe.yaml")),
    );
    assert!(applied.ok, "{}", applied.text);
    assert_eq!(
        text(&mut cp, "kubectl describe svc web"),
        include_str!("testdata/describe-service.txt").trim_end()
    );
    assert_eq!(
        text(&mut cp, "kubectl describe endpointslice web-1"),
        include_str!("testdata/describe-endpointslice.txt").trim_end()
    );
    assert_eq!(
        text(&mut cp, "kubectl describe svc nope"),
        "Error from server (NotFound): services \"nope\" not found"
    );
    assert!(!run(&mut cp, "kubectl describe pods", None).ok);
}

#[test]
fn endpoints_come_with_the_apiservers_deprecation_warning() {
    let mut cp = cluster("10.96.0.0/12");
    let out = text(&mut cp, "kubectl get endpoints");
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some(get::ENDPOINTS_DEPRECATED));
    assert!(lines.next().unwrap().starts_with("NAME         ENDPOINTS"), "{out}");
    assert!(!text(&mut cp, "kubectl get endpointslices").contains("deprecated"));
}

#[test]
fn a_hand_written_kubernetes_slice_is_rewritten_and_the_console_says_why() {
    let mut cp = preset::cluster("10.96.0.0/12", 0, preset::ControlPlaneShape::HighlyAvailable).unwrap();
    let slice = "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: kubernetes, namespace: default, labels: {kubernetes.io/service-name: kubernetes}}\naddressType: IPv4\nports: [{name: https, port: 6443, protocol: TCP}]\nendpoints: [{addresses: [10.9.9.9]}]\n";
    let outcome = run(&mut cp, "kubectl apply -f -", Some(slice));
    assert!(outcome.ok, "{}", outcome.text);
    let note = outcome.note.expect("a note");
    assert!(
        note.contains("192.168.49.11:6443, 192.168.49.12:6443, 192.168.49.13:6443"),
        "{note}"
    );
    let kept = text(&mut cp, "kubectl get endpointslices kubernetes");
    assert!(kept.contains("192.168.49.11,192.168.49.12,192.168.49.13"), "{kept}");
    assert!(!kept.contains("10.9.9.9"), "{kept}");
}

/// The Pods of `default` (CoreDNS runs in `kube-system`).
fn pods(cp: &ControlPlane) -> Vec<&crate::api::Pod> {
    cp.pods()
        .filter(|p| p.metadata.namespace_or_default() == "default")
        .collect()
}

fn pod_ips(cp: &ControlPlane) -> Vec<String> {
    let mut ips: Vec<String> = pods(cp).iter().flat_map(|p| p.ips()).collect();
    ips.sort();
    ips
}

#[test]
fn deployments_make_pods_in_order_and_replace_a_deleted_one() {
    let mut cp = cluster("10.96.0.0/12");
    assert_eq!(
        text(
            &mut cp,
            "kubectl create deployment web --image=nginx --replicas=3 --port=8080"
        ),
        "deployment.apps/web created"
    );
    // CoreDNS took .2 and .3 when the cluster started, as on a kubeadm node.
    assert_eq!(pod_ips(&cp), ["10.244.0.4", "10.244.0.5", "10.244.0.6"]);
    let victim = pods(&cp)[0].metadata.name.clone();
    assert_eq!(
        text(&mut cp, &format!("kubectl delete pod {victim}")),
        format!("pod \"{victim}\" deleted")
    );
    assert_eq!(pods(&cp).len(), 3);
    assert!(
        pod_ips(&cp).contains(&"10.244.0.7".to_string()),
        "the replacement gets the next address: {:?}",
        pod_ips(&cp)
    );
    let exposed = run(
        &mut cp,
        "kubectl expose deployment web --port=80 --target-port=8080",
        None,
    );
    assert_eq!(exposed.text, "service/web exposed");
    assert!(exposed
        .note
        .unwrap()
        .contains("copied the selector app=web from deployment web"));
    let endpoints = text(&mut cp, "kubectl get endpoints web");
    assert_eq!(
        endpoints.lines().nth(2).unwrap().matches(":8080").count(),
        3,
        "{endpoints}"
    );
    let deployments = text(&mut cp, "kubectl get deployments");
    assert_eq!(
        deployments
            .lines()
            .nth(1)
            .map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["web", "3/3", "3", "3", "0s"])
    );
    assert_eq!(
        text(&mut cp, "kubectl scale deployment web --replicas=1"),
        "deployment.apps/web scaled"
    );
    assert_eq!(pods(&cp).len(), 1);
    assert_eq!(
        text(&mut cp, "kubectl delete deployment web"),
        "deployment.apps \"web\" deleted"
    );
    assert_eq!(pods(&cp).len(), 0);
    assert_eq!(
        text(&mut cp, "kubectl create deployment web --image=nginx"),
        "deployment.apps/web created"
    );
    assert_eq!(
        text(&mut cp, "kubectl create deployment web --image=nginx"),
        "Error from server (AlreadyExists): deployments.apps \"web\" already exists"
    );
}

#[test]
fn an_unready_pod_leaves_the_ipvs_table_but_stays_in_its_slice() {
    let mut cp = cluster("10.96.0.0/12");
    run(
        &mut cp,
        "kubectl create deployment web --image=nginx --replicas=2",
        None,
    );
    run(&mut cp, "kubectl expose deployment web --port=80", None);
    let ip = cp.service("default", "web").unwrap().spec.cluster_ip.clone();
    let reals = |cp: &ControlPlane| {
        let table = cp.node_ipvs_table(preset::NODE_NAME).unwrap();
        (table.virtual_servers.iter())
            .find(|(k, _)| k.to_string().contains(&format!("{ip}:80")))
            .map_or(0, |(_, vs)| vs.real_servers.len())
    };
    assert_eq!(reals(&cp), 2);
    let pod = pods(&cp)[0].metadata.name.clone();
    assert!(text(&mut cp, &format!("simulate unready {pod}")).ends_with("Ready=False"));
    assert_eq!(reals(&cp), 1);
    let in_slices: usize = cp
        .endpoint_slices()
        .filter(|s| s.metadata.name.starts_with("web-"))
        .map(|s| s.endpoints.len())
        .sum();
    assert_eq!(in_slices, 2);
    assert_eq!(pods(&cp).len(), 2, "an unready pod is not replaced");
    run(&mut cp, &format!("simulate ready {pod}"), None);
    assert_eq!(reals(&cp), 2);
}

#[test]
fn exec_env_shows_the_services_a_pod_saw_when_it_started() {
    let mut cp = cluster("10.96.0.0/12");
    run(&mut cp, "kubectl create svc clusterip before --tcp=80", None);
    run(&mut cp, "kubectl create deployment web --image=nginx", None);
    run(&mut cp, "kubectl create svc clusterip after --tcp=8080", None);
    let old = pods(&cp)[0].metadata.name.clone();
    let before = cp.service("default", "before").unwrap().spec.cluster_ip.clone();
    let env = run(&mut cp, &format!("kubectl exec -it {old} -- env"), None);
    assert!(env.ok, "{}", env.text);
    let lines: Vec<&str> = env.text.lines().collect();
    assert_eq!(
        lines[0],
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    );
    assert_eq!(lines[1], format!("HOSTNAME={old}"));
    assert!(
        lines.contains(&format!("BEFORE_SERVICE_HOST={before}").as_str()),
        "{}",
        env.text
    );
    assert!(lines.contains(&format!("BEFORE_PORT_80_TCP=tcp://{before}:80").as_str()));
    assert!(lines.contains(&"KUBERNETES_SERVICE_HOST=10.96.0.1"));
    assert!(lines.contains(&"KUBERNETES_SERVICE_PORT=443"));
    assert!(!env.text.contains("AFTER_"), "{}", env.text);
    assert!(env
        .note
        .unwrap()
        .contains("Not here: after, created after the pod started"));
    assert_eq!(
        text(
            &mut cp,
            &format!("kubectl exec {old} -- printenv KUBERNETES_SERVICE_HOST")
        ),
        "10.96.0.1"
    );
    // A pod started now sees both.
    run(&mut cp, "kubectl scale deployment web --replicas=2", None);
    let new = pods(&cp)
        .into_iter()
        .map(|p| p.metadata.name.clone())
        .find(|n| *n != old)
        .unwrap();
    assert!(text(&mut cp, &format!("kubectl exec {new} -- env")).contains("AFTER_SERVICE_PORT=8080"));
    // kube-dns lives in kube-system: a default pod does not see it.
    assert!(!text(&mut cp, &format!("kubectl exec {new} -- env")).contains("KUBE_DNS"));
    let coredns = cp
        .pods()
        .find(|p| p.metadata.namespace == "kube-system")
        .unwrap()
        .metadata
        .name
        .clone();
    assert!(text(&mut cp, &format!("kubectl exec {coredns} -n kube-system -- env"))
        .contains("KUBE_DNS_SERVICE_HOST=10.96.0.10"));
    assert_eq!(
        text(&mut cp, "kubectl exec nope -- env"),
        "Error from server (NotFound): pods \"nope\" not found"
    );
    assert_eq!(
        text(&mut cp, &format!("kubectl exec {old} -- ls")),
        "error: this console's containers run env and printenv [NAME] only: kubectl exec POD -- env"
    );
    let restored = ControlPlane::restore(cp.snapshot()).unwrap();
    assert_eq!(
        restored.container_env("default", &old),
        cp.container_env("default", &old)
    );
}

#[test]
fn jsonpath_reads_one_object_or_the_list() {
    let mut cp = cluster("10.96.0.0/12");
    run(&mut cp, "kubectl create svc clusterip web --tcp=80", None);
    assert_eq!(
        text(&mut cp, "kubectl get svc kubernetes -o jsonpath='{.spec.clusterIP}'"),
        "10.96.0.1"
    );
    assert_eq!(
        text(&mut cp, "kubectl get svc -ojsonpath={.items[*].metadata.name}"),
        "kubernetes web"
    );
    let ip = cp.service("default", "web").unwrap().spec.cluster_ip.clone();
    assert_eq!(
        text(
            &mut cp,
            r#"kubectl get svc -o 'jsonpath={range .items[*]}{.metadata.name}={.spec.clusterIP}{"\n"}{end}'"#
        ),
        format!("kubernetes=10.96.0.1\nweb={ip}")
    );
    let bad = run(&mut cp, "kubectl get svc -o jsonpath={.items[x]}", None);
    assert!(
        !bad.ok
            && bad
                .text
                .starts_with("error: error parsing jsonpath {.items[x]}, unrecognized JSONPath"),
        "{}",
        bad.text
    );
}

#[test]
fn starting_pods_does_not_move_the_clusterips_of_later_services() {
    let mut plain = cluster("10.96.0.0/12");
    let mut with_pods = cluster("10.96.0.0/12");
    run(
        &mut with_pods,
        "kubectl create deployment api --image=nginx --replicas=3",
        None,
    );
    for cp in [&mut plain, &mut with_pods] {
        run(cp, "kubectl create svc clusterip web --tcp=80", None);
    }
    let ip = |cp: &ControlPlane| cp.service("default", "web").unwrap().spec.cluster_ip.clone();
    assert_eq!(ip(&plain), ip(&with_pods));
}

#[test]
fn age_grows_with_the_clusters_clock() {
    let mut cp = cluster("10.96.0.0/12");
    preset::advance(&mut cp, crate::time::Time(90_000));
    run(&mut cp, "kubectl create svc clusterip web --tcp=80", None);
    preset::advance(&mut cp, crate::time::Time(90_000 + 150_000));
    let table = text(&mut cp, "kubectl get svc");
    let rows: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0].last(), Some(&"AGE"));
    assert_eq!(rows[1][0..1], ["kubernetes"]);
    assert_eq!(rows[1].last(), Some(&"4m"), "{table}");
    assert_eq!(rows[2].last(), Some(&"2m30s"), "{table}");
    assert_eq!(
        cp.apiserver_leases().endpoints().len(),
        1,
        "the apiserver kept its lease"
    );
    let wide = text(&mut cp, "kubectl get svc web -o wide");
    assert!(wide.lines().next().unwrap().ends_with("AGE     SELECTOR"), "{wide}");
}

#[test]
fn the_three_modes_show_where_a_clusterip_lives() {
    let mut cp = cluster("10.96.0.0/12");
    run(
        &mut cp,
        "kubectl create deployment web --image=nginx --replicas=2 --port=8080",
        None,
    );
    run(
        &mut cp,
        "kubectl expose deployment web --port=80 --target-port=8080",
        None,
    );
    run(&mut cp, "kubectl create svc clusterip lonely --tcp=80", None);
    let web = cp.service("default", "web").unwrap().spec.cluster_ip.clone();
    let lonely = cp.service("default", "lonely").unwrap().spec.cluster_ip.clone();

    let ip = run(&mut cp, "ip addr show kube-ipvs0", None);
    assert!(
        ip.text.contains(&format!("inet {web}/32 scope global kube-ipvs0")),
        "{}",
        ip.text
    );
    assert!(ip.text.contains("inet 10.96.0.1/32"));
    assert!(ip.note.unwrap().contains("binds every ClusterIP"));

    let rules = run(&mut cp, "iptables-save", None);
    let text = &rules.text;
    assert!(text.starts_with("*filter\n") && text.ends_with("COMMIT"), "{text}");
    assert!(text.contains(
        "-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment \"default/kubernetes:https cluster IP\" -m tcp --dport 443 -j KUBE-SVC-NPX46M4PTMTKRN6Y"
    ), "{text}");
    assert!(text.contains(&format!(
        "-A KUBE-SERVICES -d {lonely}/32 -p tcp -m comment --comment \"default/lonely:80 has no endpoints\" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable"
    )), "{text}");
    assert!(
        text.contains("-m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-"),
        "{text}"
    );
    assert!(
        text.contains("-m tcp -j DNAT --to-destination 10.244.0.4:8080"),
        "{text}"
    );
    assert!(
        text.contains(&format!("! -s 10.244.0.0/16 -d {web}/32 -p tcp")),
        "{text}"
    );
    assert!(rules.note.unwrap().contains("no interface holds a ClusterIP"));

    let nft = run(&mut cp, "nft list ruleset", None);
    let text = &nft.text;
    assert!(
        nft.ok && text.starts_with("table ip kube-proxy {\n\tcomment \"rules for kube-proxy\""),
        "{text}"
    );
    assert!(
        !text.contains("table ip6 kube-proxy"),
        "an IPv4 cluster shows one table:\n{text}"
    );
    assert!(
        text.contains("10.96.0.1 . tcp . 443 : goto service-2QRHZV4L-default/kubernetes/tcp/https"),
        "{text}"
    );
    assert!(text.contains(&format!("{web} . tcp . 80 : goto service-")), "{text}");
    assert!(
        text.contains(&format!(
            "{lonely} . tcp . 80 comment \"default/lonely:80\" : goto reject-chain"
        )),
        "{text}"
    );
    assert!(
        text.contains("ip saddr != 10.244.0.0/16 meta mark set meta mark | 0x00004000"),
        "{text}"
    );
    let note = nft.note.unwrap();
    assert!(
        note.contains("nftables mode") && note.contains("no interface holds a ClusterIP"),
        "{note}"
    );
    let v4 = run(&mut cp, "nft list table ip kube-proxy", None);
    assert_eq!(v4.text, nft.text);
    let v6 = run(&mut cp, "nft list table ip6 kube-proxy", None);
    assert!(v6.ok && v6.text.starts_with("table ip6 kube-proxy {"), "{}", v6.text);

    let svcnet = run(&mut cp, "nft list table inet svcnet", None);
    assert!(
        svcnet.ok && svcnet.text.starts_with("table inet svcnet {"),
        "{}",
        svcnet.text
    );
    assert!(svcnet.text.contains(&web), "{}", svcnet.text);
    assert!(svcnet.note.unwrap().contains("kube-ipvs0"));

    let missing = run(&mut cp, "nft list table inet filter", None);
    assert!(!missing.ok);
    assert_eq!(
        missing.text,
        "Error: No such file or directory\nlist table inet filter\n                ^^^^^^"
    );
    assert!(!run(&mut cp, "nft flush ruleset", None).ok);
}

#[test]
fn create_service_externalname_gets_a_cname_and_no_cluster_ip() {
    let mut cp = cluster("10.96.0.0/12");
    assert_eq!(
        text(&mut cp, "kubectl create svc externalname ext"),
        "error: required flag(s) \"external-name\" not set"
    );
    let created = run(
        &mut cp,
        "kubectl create svc externalname ext --external-name=example.com",
        None,
    );
    assert_eq!((created.ok, created.text.as_str()), (true, "service/ext created"));
    assert!(created.note.unwrap().contains("CNAME to example.com"));
    assert!(text(&mut cp, "kubectl get svc ext").contains("ext    ExternalName   <none>       example.com   <none>"));
    let cname = (cp.dns_records().into_iter())
        .find(|r| r.name == "ext.default.svc.cluster.local." && r.data.record_type() == "CNAME");
    assert!(cname.is_some(), "{:?}", cp.dns_records());
    assert_eq!(
        text(&mut cp, "kubectl create svc headless db"),
        "error: unknown command \"headless db\"\nSee 'kubectl create service -h' for help and examples"
    );
}

#[test]
fn a_refused_create_prints_kubectls_error_alone() {
    let mut cp = cluster("10.96.0.0/12");
    run(
        &mut cp,
        "kubectl create svc nodeport a --tcp=80 --node-port=30080",
        None,
    );
    let refused = run(
        &mut cp,
        "kubectl create svc nodeport b --tcp=80 --node-port=30080",
        None,
    );
    assert!(!refused.ok);
    assert_eq!(
        refused.text,
        "The Service \"b\" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"
    );
    assert_eq!(refused.note, None);
}

#[test]
fn an_added_service_cidr_has_an_age() {
    let mut cp = cluster("10.96.0.0/24");
    let manifest =
        "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: extra}\nspec: {cidrs: [10.97.0.0/24]}\n";
    assert!(run(&mut cp, "kubectl apply -f -", Some(manifest)).ok);
    let table = text(&mut cp, "kubectl get servicecidrs");
    assert!(
        table.contains("extra        10.97.0.0/24   0s\nkubernetes   10.96.0.0/24   0s"),
        "listed by name: {table}"
    );
    let yaml = text(&mut cp, "kubectl get servicecidr extra -o yaml");
    assert!(yaml.contains("creationTimestamp: \"1970-01-01T00:00:00Z\""), "{yaml}");
}

#[test]
fn get_with_a_label_selector_lists_what_matches() {
    let mut cp = cluster("10.96.0.0/12");
    run(
        &mut cp,
        "kubectl create deployment web --image=nginx --replicas=2 --port=80",
        None,
    );
    run(&mut cp, "kubectl expose deployment web --port=80", None);
    let slices = text(&mut cp, "kubectl get endpointslices -l kubernetes.io/service-name=web");
    assert!(
        slices.starts_with("NAME        ADDRESSTYPE   PORTS   ENDPOINTS"),
        "{slices}"
    );
    assert_eq!(slices.lines().count(), 2, "web's one slice only: {slices}");
    let pods = text(&mut cp, "kubectl get pods -A -l k8s-app=kube-dns -o name");
    assert_eq!(pods.lines().count(), 2, "{pods}");
    assert!(pods.lines().all(|l| l.starts_with("pod/coredns-")), "{pods}");
    assert_eq!(
        text(&mut cp, "kubectl get svc -l app=nothing"),
        "No resources found in default namespace."
    );
    assert_eq!(
        text(&mut cp, "kubectl get svc -l 'app in (web'"),
        "error: unclosed '(' in \"app in (web\""
    );
    assert_eq!(
        text(&mut cp, "kubectl get svc -x 1"),
        "error: unknown shorthand flag: 'x' in -x"
    );
}

#[test]
fn a_bare_pod_is_scheduled_and_a_named_target_port_resolves_per_pod() {
    let mut cp = cluster("10.96.0.0/24");
    let manifest = "apiVersion: v1\nkind: Pod\nmetadata: {name: a, labels: {app: named}}\n\
        spec: {containers: [{name: c, image: nginx, ports: [{name: http, containerPort: 8080}]}]}\n---\n\
        apiVersion: v1\nkind: Pod\nmetadata: {name: b, labels: {app: named}}\n\
        spec: {containers: [{name: c, image: nginx, ports: [{name: http, containerPort: 9090}]}]}\n---\n\
        apiVersion: v1\nkind: Service\nmetadata: {name: named}\nspec: {selector: {app: named}, ports: [{port: 80, targetPort: http}]}\n";
    assert!(run(&mut cp, "kubectl apply -f -", Some(manifest)).ok);
    let pods = text(&mut cp, "kubectl get pods -o wide");
    assert!(
        pods.contains("a      1/1     Running   0          0s    10.244.0.4   node-1"),
        "{pods}"
    );
    let slices = text(
        &mut cp,
        "kubectl get endpointslices -l kubernetes.io/service-name=named",
    );
    // One slice per set of ports, as the EndpointSlice controller groups
    // endpoints.
    assert!(slices.contains("IPv4          8080    10.244.0.4"), "{slices}");
    assert!(slices.contains("IPv4          9090    10.244.0.5"), "{slices}");
    let ipvs = text(&mut cp, "ipvsadm -Ln");
    assert!(
        ipvs.contains("  -> 10.244.0.4:8080") && ipvs.contains("  -> 10.244.0.5:9090"),
        "{ipvs}"
    );
}

#[test]
fn svcnets_table_highlights_one_services_elements_and_says_what_each_rule_is_for() {
    let mut cp = cluster("10.96.0.0/12");
    run(
        &mut cp,
        "kubectl create deployment web --image=nginx --replicas=2 --port=80",
        None,
    );
    run(&mut cp, "kubectl expose deployment web --port=80 --type=NodePort", None);
    let web = cp.service("default", "web").unwrap().spec.cluster_ip.clone();
    let lines = modes::svcnet_lines(&cp, Some("default/web")).unwrap();
    let text: String = lines.iter().map(|l| l.text.clone() + "\n").collect();
    assert_eq!(
        text,
        run(&mut cp, "nft list table inet svcnet", None).text + "\n",
        "the same text"
    );
    let marked: Vec<&str> = lines.iter().filter(|l| l.highlight).map(|l| l.text.trim()).collect();
    assert!(
        marked.iter().any(|l| l.contains(&format!("{web} . tcp . 80"))),
        "{marked:?}"
    );
    assert!(
        marked.iter().any(|l| l.contains("10.244.0.4 . tcp . 80 . 10.244.0.4")),
        "{marked:?}"
    );
    assert!(marked.iter().any(|l| l.contains("tcp . 3")), "the NodePort: {marked:?}");
    assert!(
        !marked.iter().any(|l| l.contains("10.96.0.10")),
        "not kube-dns: {marked:?}"
    );
    let hairpin = lines
        .iter()
        .find(|l| l.text.contains("@hairpin-v4 masquerade"))
        .unwrap();
    assert!(hairpin.purpose.unwrap().contains("hairpin"));
    assert!(
        lines
            .iter()
            .filter(|l| l.text.starts_with("\t\t") && l.purpose.is_some())
            .count()
            > 10
    );
    assert!(modes::svcnet_lines(&cp, None).unwrap().iter().all(|l| !l.highlight));
}
