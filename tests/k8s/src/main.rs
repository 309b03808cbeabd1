//! `k8s-conformance`: runs every case of `tests/k8s/cases/` against the
//! real kube-apiserver and kube-controller-manager (started with
//! `scripts/k8s.sh up`) and against svcnet's core, compares each step's
//! output, and writes `target/k8s/conformance.md`.
//!
//! A difference passes only when `tests/k8s/KNOWN_DIFFERENCES.md` lists it
//! with a reason. The closing line is `k8s-conformance: N passed, M
//! failed`, counting cases.

mod case;
mod diff;
mod known;
mod normalize;
mod objects;
mod ours;
mod real;
mod report;
mod steps;
mod vectors;

use case::{Case, ClusterFlags};
use normalize::Ranges;
use ours::Ours;
use real::{Place, RealCluster};
use report::{CaseReport, StepOutcome, StepReport};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};

const USAGE: &str = "usage: k8s-conformance [--root DIR] [CASE ...]

Runs tests/k8s/cases/*.yaml and the replayable steps of tests/vectors/*.yaml
(cases vector-<name>), or only the named cases (a trailing * matches a
prefix: 'admission-*'), against the real
Kubernetes control plane (scripts/k8s.sh up, started and stopped here)
and against svcnet's core, and writes target/k8s/conformance.md.

Cases that need the same flags share a control plane. SVCNET_K8S_PARALLEL
(1 to 6, default 3) control planes run side by side, in
target/k8s/conformance-<i>, where each keeps its logs.";

fn main() -> ExitCode {
    let mut root = PathBuf::from(".");
    let mut only = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--root" => match args.next() {
                Some(dir) => root = PathBuf::from(dir),
                None => return usage("--root needs a folder"),
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            a if a.starts_with('-') => return usage(&format!("unknown flag {a}")),
            name => only.push(name.trim_end_matches(".yaml").to_string()),
        }
    }
    match run(&root, &only) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("k8s-conformance: {e}");
            ExitCode::from(2)
        }
    }
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("k8s-conformance: {problem}\n\n{USAGE}");
    ExitCode::from(2)
}

/// Runs the cases; true when every one passed.
fn run(root: &std::path::Path, only: &[String]) -> Result<bool, String> {
    let mut cases = case::load_cases(&root.join("tests/k8s/cases"))?;
    cases.extend(vectors::load(&root.join("tests/vectors"))?);
    if !only.is_empty() {
        // A name ending in `*` picks every case it starts.
        let picks = |pattern: &String, name: &str| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == pattern,
        };
        for pattern in only {
            if !cases.iter().any(|c| picks(pattern, &c.name)) {
                return Err(format!(
                    "no case named {pattern} in tests/k8s/cases (or vector-<name> in tests/vectors)"
                ));
            }
        }
        cases.retain(|c| only.iter().any(|p| picks(p, &c.name)));
    }
    let known = known::load(&root.join("tests/k8s/KNOWN_DIFFERENCES.md"))?;
    let groups = groups(&cases);
    let places = places(root, parallel()?);
    println!(
        "k8s-conformance: {} case(s) on {} control plane(s), {} at a time",
        cases.len(),
        groups.len(),
        places.len()
    );
    let reports: Vec<CaseReport> = run_groups(root, &places, &groups, &known)
        .into_iter()
        .flatten()
        .collect();
    let unused = known.unused(&reports);
    let path = root.join("target/k8s/conformance.md");
    report::write(&path, &reports, &unused)?;
    let passed = reports.iter().filter(|r| r.passed()).count();
    let failed = reports.len() - passed;
    for entry in &unused {
        println!("k8s-conformance: KNOWN_DIFFERENCES.md lists {entry}, but it is identical now: remove the entry");
    }
    println!("k8s-conformance: report in {}", path.display());
    println!("k8s-conformance: {passed} passed, {failed} failed");
    Ok(failed == 0 && unused.is_empty())
}

/// Cases grouped by the flags their control plane needs, in file order;
/// a `fresh` case gets a control plane of its own.
fn groups(cases: &[Case]) -> Vec<(&ClusterFlags, Vec<&Case>)> {
    let mut out: Vec<(&ClusterFlags, Vec<&Case>)> = Vec::new();
    for case in cases {
        match out.iter_mut().find(|(f, _)| !case.cluster.fresh && *f == &case.cluster) {
            Some((_, group)) => group.push(case),
            None => out.push((&case.cluster, vec![case])),
        }
    }
    out
}

/// How many control planes run side by side: `SVCNET_K8S_PARALLEL`, 3 by
/// default. A control plane's start (about 5 s, mostly waiting) then
/// overlaps other groups' starts and cases: on 2 cores the suite took
/// 289 s with 1, 194 s with 2 and 147 s with 3.
fn parallel() -> Result<usize, String> {
    match std::env::var("SVCNET_K8S_PARALLEL") {
        Err(_) => Ok(3),
        Ok(v) => match v.parse::<usize>() {
            Ok(n @ 1..=MAX_PARALLEL) => Ok(n),
            _ => Err(format!(
                "SVCNET_K8S_PARALLEL={v}: want a number of control planes from 1 to {MAX_PARALLEL}"
            )),
        },
    }
}

/// The most control planes side by side: each takes its own thousand
/// ports of 24000-29999 (`scripts/k8s.sh up` alone picks from 20000-23999).
const MAX_PARALLEL: usize = 6;

/// The places the control planes run in: `target/k8s/conformance-<i>`,
/// with ports `24000 + 1000 i` to `24999 + 1000 i`.
fn places(root: &std::path::Path, n: usize) -> Vec<Place> {
    (0..n)
        .map(|i| Place {
            run: root.join(format!("target/k8s/conformance-{i}")),
            ports: format!("{}-{}", 24000 + 1000 * i, 24999 + 1000 * i),
        })
        .collect()
}

/// Runs the groups, each on a control plane of its own, with one worker
/// per place taking the next group as it finishes one. A group's lines
/// are printed together when it ends; the reports come back in the
/// groups' order.
fn run_groups(
    root: &std::path::Path,
    places: &[Place],
    groups: &[(&ClusterFlags, Vec<&Case>)],
    known: &known::Known,
) -> Vec<Vec<CaseReport>> {
    let next = AtomicUsize::new(0);
    let mut finished: Vec<(usize, Vec<CaseReport>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = places
            .iter()
            .map(|place| {
                let next = &next;
                scope.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some((flags, group)) = groups.get(index) else { break };
                        let reports = run_group(root, place, flags, group, known);
                        let mut lines = format!(
                            "k8s-conformance: kube-apiserver --service-cluster-ip-range={} --service-node-port-range={} for {} case(s)\n",
                            flags.service_range(),
                            flags.node_port_range(),
                            group.len()
                        );
                        for report in &reports {
                            lines.push_str(&format!("  {}\n", report.summary_line()));
                        }
                        print!("{lines}");
                        mine.push((index, reports));
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    });
    finished.sort_by_key(|(index, _)| *index);
    finished.into_iter().map(|(_, reports)| reports).collect()
}

/// One group: a control plane in `place` with the group's flags, its
/// cases one after another, the control plane stopped.
fn run_group(
    root: &std::path::Path,
    place: &Place,
    flags: &ClusterFlags,
    group: &[&Case],
    known: &known::Known,
) -> Vec<CaseReport> {
    let real = RealCluster::up(root, place, flags);
    let reports = group
        .iter()
        .map(|case| match &real {
            Ok(real) => run_case(real, case, known),
            Err(e) => CaseReport::broken(case, e.clone()),
        })
        .collect();
    if let Ok(real) = real {
        real.down();
    }
    reports
}

fn run_case(real: &RealCluster, case: &Case, known: &known::Known) -> CaseReport {
    let flags = &case.cluster;
    let ours = match Ours::start(flags, real.apiserver()) {
        Ok(o) => o,
        Err(e) => return CaseReport::broken(case, format!("svcnet refused the flags the real apiserver took: {e}")),
    };
    let namespace = namespace_for(&case.name);
    let ranges = Ranges::new(flags.service_range(), flags.node_port_range());
    let mut run = match steps::CaseRun::new(real, ours, namespace, ranges) {
        Ok(r) => r,
        Err(e) => return CaseReport::broken(case, e),
    };
    let mut steps = Vec::new();
    for (i, step) in case.steps.iter().enumerate() {
        let number = i + 1;
        let listed = known.reason(&case.name, number).is_some();
        let outcome = match run.run(step, listed) {
            Err(e) => StepOutcome::Broken(e),
            Ok(out) if out.real == out.ours => StepOutcome::Identical,
            Ok(out) => {
                let diff = diff::lines(&out.real, &out.ours);
                match known.reason(&case.name, number) {
                    Some(reason) => StepOutcome::Known { reason, diff },
                    None => StepOutcome::Different(diff),
                }
            }
        };
        steps.push(StepReport {
            number,
            verb: step.verb(),
            outcome,
        });
    }
    run.cleanup();
    CaseReport::new(case, steps)
}

/// A namespace of the case's own: `c-<name>`, a DNS label.
fn namespace_for(case: &str) -> String {
    let mut ns: String = format!("c-{case}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    while ns.ends_with('-') {
        ns.pop();
    }
    ns
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_dns_labels() {
        assert_eq!(namespace_for("admission_Bad.IP"), "c-admission-bad-ip");
        assert_eq!(namespace_for(&"x".repeat(80)).len(), 63);
    }
}
