use super::*;
use std::fs;
use std::sync::Arc;
use svcnet_core::controlplane::{ClusterConfig, ControlPlane};

const WEB: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n";
const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: web-1, labels: {app: web}}\n";

/// Reads and decodes everything.
fn load(paths: &[PathBuf]) -> Result<Manifests, ManifestError> {
    Sources::read(paths)?.decode(None)
}

fn apply(paths: &[PathBuf]) -> Result<ControlPlane, String> {
    let manifests = load(paths).map_err(|e| e.to_string())?;
    let batch = manifests.batch();
    let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
    cp.apply_set(&batch.objects)
        .map_err(|(i, e)| batch.refusal(i, e).to_string())?;
    Ok(cp)
}

#[test]
fn directories_give_their_manifest_files_in_name_order_skipping_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("b.yml"), POD).unwrap();
    fs::write(dir.path().join("a.yaml"), WEB).unwrap();
    fs::write(
        dir.path().join("c.json"),
        r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}}"#,
    )
    .unwrap();
    fs::write(dir.path().join("README.md"), "not a manifest").unwrap();
    fs::write(dir.path().join(".hidden.yaml"), "kind: [").unwrap();
    fs::create_dir(dir.path().join("sub.yaml")).unwrap();
    let manifests = load(&[dir.path().to_path_buf()]).unwrap();
    let manifests = manifests.batch();
    let described: Vec<String> = manifests.objects.iter().map(|o| o.describe()).collect();
    assert_eq!(described, vec!["Service default/web", "Pod default/web-1", "Node n"]);
    assert_eq!(manifests.origins[1].path, dir.path().join("b.yml"));
    assert_eq!(manifests.origins[1].document, 1);
}

#[test]
fn multi_document_files_number_their_documents() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("all.yaml");
    fs::write(&file, format!("# comment\n{WEB}---\n{POD}---\n")).unwrap();
    let manifests = load(std::slice::from_ref(&file)).unwrap();
    let manifests = manifests.batch();
    assert_eq!(manifests.objects.len(), 2);
    assert_eq!(manifests.origins[1].document, 2);
}

#[test]
fn a_refused_object_names_file_document_object_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("services.yaml");
    let bad = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 0, targetPort: 8080}]}\n";
    fs::write(&file, format!("{POD}---\n{POD}---\n{bad}")).unwrap();
    let err = apply(std::slice::from_ref(&file)).unwrap_err();
    assert_eq!(
        err,
        format!(
            "{}: document 3 (Service default/web): spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            file.display()
        )
    );
}

#[test]
fn decode_errors_name_file_document_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("typo.yaml");
    let typo =
        "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  ports:\n  - port: 80\n    targetport: 8080\n";
    fs::write(&file, format!("{WEB}---\n{typo}")).unwrap();
    assert_eq!(
        apply(std::slice::from_ref(&file)).unwrap_err(),
        format!(
            "{}: document 2: Service in version \"v1\" cannot be handled as a Service: strict decoding error: unknown field \"spec.ports[0].targetport\"",
            file.display()
        )
    );
    fs::write(
        &file,
        "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: eighty}]}\n",
    )
    .unwrap();
    let err = apply(std::slice::from_ref(&file)).unwrap_err();
    assert!(err.starts_with(&format!("{}: document 1: ", file.display())), "{err}");
    assert!(err.contains("spec.ports[0].port"), "{err}");
}

#[test]
fn missing_paths_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.yaml");
    let err = apply(std::slice::from_ref(&missing)).unwrap_err();
    assert!(err.starts_with(&format!("{}: ", missing.display())), "{err}");
    assert!(err.contains("No such file"), "{err}");
}

#[test]
fn allocation_failures_are_named_too() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("clash.yaml");
    let a = "apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {clusterIP: 10.96.0.10, ports: [{port: 53}]}\n";
    fs::write(&file, format!("{a}---\n{}", a.replace("name: a", "name: b"))).unwrap();
    assert_eq!(
        apply(std::slice::from_ref(&file)).unwrap_err(),
        format!(
            "{}: document 2 (Service default/b): spec.clusterIPs: Invalid value: [\"10.96.0.10\"]: failed to allocate IP 10.96.0.10: provided IP is already allocated",
            file.display()
        )
    );
}

#[test]
fn the_fingerprint_follows_content_not_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("svc.yaml");
    fs::write(&file, WEB).unwrap();
    let paths = [dir.path().to_path_buf()];
    let first = Sources::read(&paths).unwrap().fingerprint();
    fs::write(&file, WEB).unwrap();
    assert_eq!(Sources::read(&paths).unwrap().fingerprint(), first);
    // Replaced by rename, as a ConfigMap update does.
    let tmp = dir.path().join(".tmp");
    fs::write(&tmp, WEB.replace("80", "81")).unwrap();
    fs::rename(&tmp, &file).unwrap();
    assert_ne!(Sources::read(&paths).unwrap().fingerprint(), first);
}

fn slice(name: &str, service: &str, ip: &str) -> String {
    format!(
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: {name}, labels: {{kubernetes.io/service-name: {service}}}}}\naddressType: IPv4\nports: [{{port: 8080}}]\nendpoints: [{{addresses: [{ip}]}}]\n"
    )
}

fn described(batch: &Batch) -> Vec<String> {
    batch.objects.iter().map(|o| o.describe()).collect()
}

#[test]
fn unchanged_files_are_not_decoded_again_and_only_changes_are_given() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.yaml"), dir.path().join("b.yaml"));
    fs::write(&a, format!("{WEB}---\n{}", slice("web-1", "web", "10.244.0.1"))).unwrap();
    fs::write(
        &b,
        format!(
            "{}---\n{}",
            slice("db-1", "db", "10.244.1.1"),
            slice("db-2", "db", "10.244.1.2")
        ),
    )
    .unwrap();
    let paths = [dir.path().to_path_buf()];
    let first = Sources::read(&paths).unwrap().decode(None).unwrap();

    // b changes: db-1 moves, db-2 goes; a is shared, not decoded again.
    fs::write(&b, slice("db-1", "db", "10.244.1.9")).unwrap();
    let second = Sources::read(&paths).unwrap().decode(Some(&first)).unwrap();
    assert!(Arc::ptr_eq(&first.files()[0], &second.files()[0]));
    assert!(!Arc::ptr_eq(&first.files()[1], &second.files()[1]));
    let changes = second.changes_since(&first).unwrap();
    assert_eq!(described(&changes), ["EndpointSlice default/db-1"]);
    assert_eq!(changes.origins[0].path, b);
    let removed: Vec<String> = changes
        .removed
        .iter()
        .map(|r| format!("{} {}", r.kind, r.name))
        .collect();
    assert_eq!(removed, ["EndpointSlice db-2"]);

    // web-1 moves, unchanged, from a to a new file c: nothing to do.
    fs::write(&a, WEB).unwrap();
    fs::write(dir.path().join("c.yaml"), slice("web-1", "web", "10.244.0.1")).unwrap();
    let third = Sources::read(&paths).unwrap().decode(Some(&second)).unwrap();
    let changes = third.changes_since(&second).unwrap();
    assert!(changes.objects.is_empty() && changes.removed.is_empty(), "{changes:?}");
    assert_eq!(third.objects().count(), 3);

    // An object named twice: only a whole-set apply gets "last wins" right.
    fs::write(dir.path().join("d.yaml"), WEB.replace("port: 80", "port: 81")).unwrap();
    let fourth = Sources::read(&paths).unwrap().decode(Some(&third)).unwrap();
    assert!(fourth.changes_since(&third).is_none());
    assert_eq!(fourth.batch().objects.len(), 4);
}

#[test]
fn stamps_settle_a_second_after_the_last_change_and_follow_every_change() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("svc.yaml");
    fs::write(&file, "a: 1\n").unwrap();
    // Written an hour ago, as far as its modification time goes, so the
    // same-size rewrite below cannot fall in the same clock tick.
    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(an_hour_ago)
        .unwrap();
    let paths = vec![dir.path().to_path_buf()];
    let now = SystemTime::now();
    let later = now + Duration::from_secs(60);

    let fresh = Stamps::take(&paths, now).unwrap();
    assert!(!fresh.settled(), "a file changed this very second is not settled yet");
    let settled = Stamps::take(&paths, later).unwrap();
    assert!(settled.settled());
    assert_eq!(Stamps::take(&paths, later).unwrap(), settled, "untouched");

    fs::write(&file, "a: 2\n").unwrap();
    assert_ne!(
        Stamps::take(&paths, later).unwrap(),
        settled,
        "same size, new text: a new mtime"
    );
    let rewritten = Stamps::take(&paths, later).unwrap();
    fs::write(dir.path().join("more.yaml"), "b: 1\n").unwrap();
    assert_ne!(Stamps::take(&paths, later).unwrap(), rewritten, "a file more");
}

#[test]
fn files_decoded_on_every_core_keep_file_order_and_the_first_error() {
    let dir = tempfile::tempdir().unwrap();
    let service = |name: &str| {
        format!("apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\nspec: {{ports: [{{port: 80}}]}}\n")
    };
    // Sizes that differ, so the largest-first order differs from the file order.
    for i in 0..12 {
        let docs: Vec<String> = (0..=i % 4).map(|d| service(&format!("s{i:02}-{d}"))).collect();
        fs::write(dir.path().join(format!("f{i:02}.yaml")), docs.join("---\n")).unwrap();
    }
    let paths = vec![dir.path().to_path_buf()];
    let names: Vec<String> = load(&paths).unwrap().objects().map(|o| o.name().to_owned()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "objects in file and document order");
    assert_eq!(names.len(), 30);

    fs::write(dir.path().join("f03.yaml"), "kind: [\n").unwrap();
    fs::write(dir.path().join("f09.yaml"), "kind: [\n").unwrap();
    let err = load(&paths).unwrap_err().to_string();
    assert!(err.contains("f03.yaml: document 1"), "the first failing file: {err}");
}

/// Found by `make soak`: a file deleted between the directory's listing
/// and its reading (the churn renames and deletes files all the time)
/// made the whole poll fail ("No such file or directory").
#[test]
fn a_listed_file_deleted_before_it_is_read_counts_as_deleted_but_a_named_one_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.yaml"), WEB).unwrap();
    fs::write(dir.path().join("b.yaml"), POD).unwrap();
    let stamps = Stamps::take(&[dir.path().to_path_buf()], SystemTime::now()).unwrap();
    fs::remove_file(dir.path().join("b.yaml")).unwrap();
    let sources = Sources::read_stamped(&stamps).unwrap();
    let read: Vec<&Path> = sources.files.iter().map(|f| f.path.as_path()).collect();
    assert_eq!(read, [dir.path().join("a.yaml")]);

    // Named on the command line, the same file must be there.
    let named = dir.path().join("a.yaml");
    let stamps = Stamps::take(std::slice::from_ref(&named), SystemTime::now()).unwrap();
    fs::remove_file(&named).unwrap();
    let err = Sources::read_stamped(&stamps).unwrap_err().to_string();
    assert!(err.contains("a.yaml") && err.contains("No such file"), "{err}");
    let err = Stamps::take(&[named], SystemTime::now()).unwrap_err().to_string();
    assert!(err.contains("No such file"), "{err}");
}
