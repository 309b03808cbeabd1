//! The report, `target/k8s/conformance.md`: one line per case and step
//! (identical, different with the diff, or a known difference), grouped by
//! area, with the counts per area.

use crate::case::{Area, Case};
use std::fmt::Write as _;
use std::path::Path;

/// How one step compared.
#[derive(Debug)]
pub enum StepOutcome {
    /// Both sides gave the same output.
    Identical,
    /// The outputs differ: the diff.
    Different(String),
    /// The outputs differ as `KNOWN_DIFFERENCES.md` says they may.
    Known {
        /// Why svcnet differs on purpose.
        reason: String,
        /// The diff.
        diff: String,
    },
    /// The step could not run (the suite's own failure).
    Broken(String),
}

/// One step's line.
#[derive(Debug)]
pub struct StepReport {
    /// 1-based.
    pub number: usize,
    /// The step's verb.
    pub verb: &'static str,
    /// How it compared.
    pub outcome: StepOutcome,
}

/// One case's result.
#[derive(Debug)]
pub struct CaseReport {
    /// The case's name.
    pub name: String,
    /// Its area.
    pub area: Area,
    /// Its description.
    pub description: String,
    /// Per step.
    pub steps: Vec<StepReport>,
    /// Why the case could not run at all.
    pub broken: Option<String>,
}

impl CaseReport {
    /// A case that ran.
    pub fn new(case: &Case, steps: Vec<StepReport>) -> CaseReport {
        CaseReport {
            name: case.name.clone(),
            area: case.area,
            description: case.description.trim().to_string(),
            steps,
            broken: None,
        }
    }

    /// A case that could not run.
    pub fn broken(case: &Case, why: String) -> CaseReport {
        CaseReport {
            broken: Some(why),
            ..CaseReport::new(case, Vec::new())
        }
    }

    /// Every step identical or a known difference.
    pub fn passed(&self) -> bool {
        self.broken.is_none()
            && self
                .steps
                .iter()
                .all(|s| matches!(s.outcome, StepOutcome::Identical | StepOutcome::Known { .. }))
    }

    /// True when some step differs as listed.
    pub fn has_known(&self) -> bool {
        self.steps
            .iter()
            .any(|s| matches!(s.outcome, StepOutcome::Known { .. }))
    }

    /// True when step `n` ran and was identical.
    pub fn identical_step(&self, n: usize) -> bool {
        self.steps
            .iter()
            .any(|s| s.number == n && matches!(s.outcome, StepOutcome::Identical))
    }

    /// `PASS name (3 steps identical)` or what went wrong, for the console.
    pub fn summary_line(&self) -> String {
        if let Some(why) = &self.broken {
            return format!("FAIL {}: could not run: {why}", self.name);
        }
        let mut words = Vec::new();
        for s in &self.steps {
            match &s.outcome {
                StepOutcome::Identical => {}
                StepOutcome::Known { .. } => words.push(format!("step {} known difference", s.number)),
                StepOutcome::Different(diff) => {
                    words.push(format!("step {} ({}) differs:\n{}", s.number, s.verb, indent(diff)))
                }
                StepOutcome::Broken(e) => words.push(format!("step {} ({}) could not run: {e}", s.number, s.verb)),
            }
        }
        let verdict = if self.passed() { "PASS" } else { "FAIL" };
        if words.is_empty() {
            format!("{verdict} {} ({} steps identical)", self.name, self.steps.len())
        } else {
            format!("{verdict} {}: {}", self.name, words.join("; "))
        }
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("      {l}\n")).collect()
}

/// Writes the report.
pub fn write(path: &Path, reports: &[CaseReport], unused: &[String]) -> Result<(), String> {
    let mut out = String::from(
        "# svcnet against Kubernetes v1.37.2\n\n\
         Each case ran against the real kube-apiserver and kube-controller-manager \
         (`scripts/k8s.sh up`) and against svcnet's core. `-` lines are Kubernetes', \
         `+` lines svcnet's.\n\n| area | cases | identical | known differences | failed |\n|---|---|---|---|---|\n",
    );
    for area in Area::ALL {
        let of_area: Vec<_> = reports.iter().filter(|r| r.area == area).collect();
        let identical = of_area.iter().filter(|r| r.passed() && !r.has_known()).count();
        let known = of_area.iter().filter(|r| r.passed() && r.has_known()).count();
        let failed = of_area.iter().filter(|r| !r.passed()).count();
        let _ = writeln!(
            out,
            "| {} | {} | {identical} | {known} | {failed} |",
            area.title(),
            of_area.len()
        );
    }
    for area in Area::ALL {
        let _ = writeln!(out, "\n## {}\n", area.title());
        for r in reports.iter().filter(|r| r.area == area) {
            let _ = writeln!(
                out,
                "### `{}`: {}\n",
                r.name,
                if r.passed() { "passed" } else { "FAILED" }
            );
            let _ = writeln!(out, "{}\n", r.description);
            if let Some(why) = &r.broken {
                let _ = writeln!(out, "- could not run: {why}");
            }
            for s in &r.steps {
                let _ = match &s.outcome {
                    StepOutcome::Identical => writeln!(out, "- step {} `{}`: identical", s.number, s.verb),
                    StepOutcome::Different(diff) => {
                        writeln!(
                            out,
                            "- step {} `{}`: different\n\n```diff\n{diff}```\n",
                            s.number, s.verb
                        )
                    }
                    StepOutcome::Known { reason, diff } => writeln!(
                        out,
                        "- step {} `{}`: known difference: {reason}\n\n```diff\n{diff}```\n",
                        s.number, s.verb
                    ),
                    StepOutcome::Broken(e) => writeln!(out, "- step {} `{}`: could not run: {e}", s.number, s.verb),
                };
            }
            out.push('\n');
        }
    }
    for entry in unused {
        let _ = writeln!(out, "KNOWN_DIFFERENCES.md lists {entry}, which is now identical.");
    }
    let passed = reports.iter().filter(|r| r.passed()).count();
    let _ = writeln!(
        out,
        "\nk8s-conformance: {passed} passed, {} failed",
        reports.len() - passed
    );
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))
}
