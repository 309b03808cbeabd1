//! The churn of the soak test (`tests/vm/soak.sh`): a manifest directory
//! for `ipvs-agent run --manifests`, changed at a steady rate, every change
//! deterministic from a seed. Std only.
//!
//!     churn init DIR SEED SERVICES
//!         writes SERVICES Services, one file each (DIR/c-NNNNNN.yaml: a
//!         selector-less ClusterIP Service, allocated by the agent, and its
//!         EndpointSlice with 1 to 8 ready endpoints on port 8080; every
//!         fifth Service also has port 443, every tenth is a NodePort).
//!     churn run DIR SEED SERVICES RATE seconds=N|until=STOP_FILE
//!         the same base (SEED and SERVICES as given to init: it is
//!         recomputed, not read back), then RATE changes a second, each one
//!         file written (a temporary file renamed over it) or deleted:
//!           add        a new Service (a new number, never reused)
//!           remove     a Service deleted (its file removed)
//!           scale-up   a ready endpoint added (at most 12)
//!           scale-down an endpoint removed, a terminating one first
//!           terminate  a ready endpoint set terminating (ready false,
//!                      serving true, terminating true)
//!         The number of Services stays within 10 % of SERVICES. Changes
//!         are paced on a schedule (change k at k / RATE seconds); a change
//!         that is late is made at once. Ends after N seconds or once
//!         STOP_FILE exists, then prints one line of `key=value` counts:
//!         changes, seconds (measured), rate, each kind, services at the
//!         end, max_lag_ms (the latest a change was made behind its
//!         schedule).
//!
//! Endpoint addresses are 10.128.0.0/9, 16 per Service number (nothing
//! answers there: the soak's real backends are elsewhere). Exits 2 on a
//! usage error, 1 on a file error.

use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: churn init DIR SEED SERVICES | run DIR SEED SERVICES RATE seconds=N|until=STOP_FILE";

/// Endpoint slots per Service number: its addresses are
/// 10.128.0.0 + 16 × number + slot.
const SLOTS: u32 = 16;
/// The most endpoints a Service is scaled up to.
const MAX_ENDPOINTS: usize = 12;
/// Service numbers that fit in 10.128.0.0/9 at SLOTS addresses each.
const MAX_NUMBER: u32 = (1 << 23) / SLOTS;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let parsed = match words.as_slice() {
        ["init", dir, seed, services] => base(seed, services).map(|(seed, n)| (Command::Init, dir, seed, n)),
        ["run", dir, seed, services, rate, end] => base(seed, services).and_then(|(seed, n)| {
            let rate = number(rate, "RATE").and_then(|r| match r {
                0 => Err("RATE must be at least 1".to_string()),
                r => Ok(r),
            })?;
            let end = match end.split_once('=') {
                Some(("seconds", s)) => End::After(Duration::from_secs(number(s, "seconds")?)),
                Some(("until", path)) if !path.is_empty() => End::StopFile(PathBuf::from(path)),
                _ => return Err(format!("{end:?}: expected seconds=N or until=STOP_FILE")),
            };
            Ok((Command::Run { rate, end }, dir, seed, n))
        }),
        _ => Err(USAGE.to_string()),
    };
    let (command, dir, seed, services) = match parsed {
        Ok(p) => p,
        Err(message) => {
            eprintln!("churn: {message}");
            return ExitCode::from(2);
        }
    };
    let dir = Path::new(dir);
    let result = match command {
        Command::Init => init(dir, seed, services),
        Command::Run { rate, end } => run(dir, seed, services, rate, &end),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("churn: {message}");
            ExitCode::FAILURE
        }
    }
}

enum Command {
    Init,
    Run { rate: u64, end: End },
}

/// When `run` stops.
enum End {
    After(Duration),
    StopFile(PathBuf),
}

fn base(seed: &str, services: &str) -> Result<(u64, u32), String> {
    let seed = number(seed, "SEED")?;
    let services = u32::try_from(number(services, "SERVICES")?)
        .ok()
        .filter(|&n| (1..MAX_NUMBER / 2).contains(&n))
        .ok_or_else(|| format!("SERVICES must be between 1 and {}", MAX_NUMBER / 2 - 1))?;
    Ok((seed, services))
}

fn number(text: &str, what: &str) -> Result<u64, String> {
    text.parse().map_err(|_| format!("{what} {text:?} is not a number"))
}

/// SplitMix64: a small, fixed generator, so a seed gives the same changes
/// on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        // usize is at most 64 bits here, so the remainder fits.
        (self.next() % n as u64) as usize
    }
}

/// One endpoint of a Service: its slot (address) and whether it is
/// terminating.
#[derive(Clone, Copy)]
struct Endpoint {
    slot: u32,
    terminating: bool,
}

/// One churned Service and its EndpointSlice.
struct Service {
    number: u32,
    endpoints: Vec<Endpoint>,
    /// The slot the next endpoint added tries first.
    next_slot: u32,
}

impl Service {
    fn new(number: u32, endpoints: usize) -> Service {
        let mut service = Service {
            number,
            endpoints: Vec::new(),
            next_slot: 0,
        };
        for _ in 0..endpoints {
            service.add_endpoint();
        }
        service
    }

    fn file_name(&self) -> String {
        format!("c-{:06}.yaml", self.number)
    }

    /// Adds a ready endpoint on the next free slot (there is one: at most
    /// MAX_ENDPOINTS < SLOTS are in use).
    fn add_endpoint(&mut self) {
        while self.endpoints.iter().any(|e| e.slot == self.next_slot) {
            self.next_slot = (self.next_slot + 1) % SLOTS;
        }
        self.endpoints.push(Endpoint {
            slot: self.next_slot,
            terminating: false,
        });
        self.next_slot = (self.next_slot + 1) % SLOTS;
    }

    fn address(&self, slot: u32) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 128, 0, 0)) + self.number * SLOTS + slot)
    }

    /// The Service and its EndpointSlice, as one YAML file.
    fn manifest(&self) -> String {
        let name = format!("c-{:06}", self.number);
        let https = self.number % 5 == 0;
        let mut text = String::new();
        let _ = writeln!(text, "# written by ipvs-agent/examples/churn.rs");
        let _ = writeln!(text, "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\nspec:");
        if self.number % 10 == 0 {
            let _ = writeln!(text, "  type: NodePort");
        }
        let _ = writeln!(
            text,
            "  ports:\n  - {{name: http, port: 80, targetPort: 8080, protocol: TCP}}"
        );
        if https {
            let _ = writeln!(text, "  - {{name: https, port: 443, targetPort: 8443, protocol: TCP}}");
        }
        let _ = writeln!(
            text,
            "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n\
             metadata: {{name: {name}-churn, labels: {{kubernetes.io/service-name: {name}}}}}\naddressType: IPv4"
        );
        let _ = writeln!(text, "ports:\n- {{name: http, port: 8080, protocol: TCP}}");
        if https {
            let _ = writeln!(text, "- {{name: https, port: 8443, protocol: TCP}}");
        }
        if self.endpoints.is_empty() {
            let _ = writeln!(text, "endpoints: []");
        } else {
            let _ = writeln!(text, "endpoints:");
        }
        for e in &self.endpoints {
            let conditions = if e.terminating {
                "{ready: false, serving: true, terminating: true}"
            } else {
                "{ready: true}"
            };
            let _ = writeln!(
                text,
                "- {{addresses: [{}], conditions: {conditions}}}",
                self.address(e.slot)
            );
        }
        text
    }
}

/// The base: SERVICES Services numbered 0.., each with 1 to 8 endpoints.
fn base_services(seed: u64, services: u32) -> Vec<Service> {
    let mut rng = Rng(seed);
    (0..services).map(|n| Service::new(n, 1 + rng.below(8))).collect()
}

fn init(dir: &Path, seed: u64, services: u32) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let base = base_services(seed, services);
    for service in &base {
        write_atomically(dir, service)?;
    }
    println!("churn: {} Services in {}", base.len(), dir.display());
    Ok(())
}

/// Writes a Service's file as a hidden temporary file (the agent skips
/// names starting with `.`) renamed over the real one.
fn write_atomically(dir: &Path, service: &Service) -> Result<(), String> {
    let temporary = dir.join(".churn.tmp");
    let path = dir.join(service.file_name());
    std::fs::write(&temporary, service.manifest()).map_err(|e| format!("{}: {e}", temporary.display()))?;
    std::fs::rename(&temporary, &path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The kinds of change; their names, in this order, are the summary's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Add,
    Remove,
    ScaleUp,
    ScaleDown,
    Terminate,
}

const KINDS: [&str; 5] = ["added", "removed", "scaled_up", "scaled_down", "set_terminating"];

/// What `run` changes and how many of each kind it has made.
struct Churn<'a> {
    dir: &'a Path,
    services: Vec<Service>,
    target: usize,
    next_number: u32,
    rng: Rng,
    counts: [u64; 5],
}

impl Churn<'_> {
    /// Makes one change, chosen by weight (add and remove 10 % each, scale
    /// up 30 %, scale down and terminate 25 % each), turned into another
    /// kind where it cannot be made (no Service left, too many or too few
    /// Services or endpoints, no ready endpoint).
    fn change(&mut self) -> Result<(), String> {
        let len = self.services.len();
        let low = self.target - self.target / 10;
        let high = self.target + self.target / 10;
        let kind = match self.rng.below(100) {
            0..=9 if len >= high => Kind::Remove,
            0..=9 => Kind::Add,
            10..=19 if len <= low.max(1) => Kind::Add,
            10..=19 => Kind::Remove,
            20..=49 => Kind::ScaleUp,
            50..=74 => Kind::ScaleDown,
            _ => Kind::Terminate,
        };
        if kind == Kind::Add || len == 0 {
            return self.add();
        }
        let i = self.rng.below(len);
        if kind == Kind::Remove {
            let service = self.services.swap_remove(i);
            let path = self.dir.join(service.file_name());
            std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            self.counts[Kind::Remove as usize] += 1;
            return Ok(());
        }
        let service = &mut self.services[i];
        let ready: Vec<usize> = (0..service.endpoints.len())
            .filter(|&e| !service.endpoints[e].terminating)
            .collect();
        let kind = match kind {
            Kind::ScaleUp if service.endpoints.len() >= MAX_ENDPOINTS => Kind::ScaleDown,
            Kind::ScaleDown if service.endpoints.is_empty() => Kind::ScaleUp,
            Kind::Terminate if ready.is_empty() => Kind::ScaleUp,
            other => other,
        };
        match kind {
            Kind::ScaleUp => service.add_endpoint(),
            Kind::ScaleDown => {
                let terminating = service.endpoints.iter().position(|e| e.terminating);
                let e = terminating.unwrap_or_else(|| self.rng.below(service.endpoints.len()));
                service.endpoints.remove(e);
            }
            _ => service.endpoints[ready[self.rng.below(ready.len())]].terminating = true,
        }
        self.counts[kind as usize] += 1;
        write_atomically(self.dir, &self.services[i])
    }

    fn add(&mut self) -> Result<(), String> {
        if self.next_number >= MAX_NUMBER {
            return Err(format!(
                "out of Service numbers ({MAX_NUMBER}): a lower RATE or a shorter run"
            ));
        }
        let endpoints = 1 + self.rng.below(8);
        let service = Service::new(self.next_number, endpoints);
        self.next_number += 1;
        write_atomically(self.dir, &service)?;
        self.services.push(service);
        self.counts[Kind::Add as usize] += 1;
        Ok(())
    }
}

fn run(dir: &Path, seed: u64, services: u32, rate: u64, end: &End) -> Result<(), String> {
    let base = base_services(seed, services);
    if let Some(missing) = base.iter().find(|s| !dir.join(s.file_name()).is_file()) {
        return Err(format!(
            "{}: missing; run `churn init` with the same DIR, SEED and SERVICES first",
            dir.join(missing.file_name()).display()
        ));
    }
    let mut churn = Churn {
        dir,
        target: base.len(),
        next_number: services,
        services: base,
        // Another stream than the base's.
        rng: Rng(seed ^ 0x5eed_c4a2_0000_0001),
        counts: [0; 5],
    };
    let start = Instant::now();
    let mut made: u64 = 0;
    let mut max_lag = Duration::ZERO;
    loop {
        let due = start + Duration::from_secs_f64(made as f64 / rate as f64);
        let now = Instant::now();
        let stop = match end {
            End::After(length) => due >= start + *length,
            // Checked once per RATE changes (about a second).
            End::StopFile(path) => made % rate == 0 && path.exists(),
        };
        if stop {
            break;
        }
        if due > now {
            std::thread::sleep(due - now);
        } else {
            max_lag = max_lag.max(now - due);
        }
        churn.change()?;
        made += 1;
    }
    let seconds = start.elapsed().as_secs_f64();
    let mut line = format!(
        "changes={made} seconds={seconds:.1} rate={:.1}",
        made as f64 / seconds.max(f64::EPSILON)
    );
    for (kind, count) in KINDS.iter().zip(churn.counts) {
        let _ = write!(line, " {kind}={count}");
    }
    let _ = write!(
        line,
        " services={} max_lag_ms={}",
        churn.services.len(),
        max_lag.as_millis()
    );
    println!("{line}");
    Ok(())
}
