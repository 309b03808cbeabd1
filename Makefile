# svcnet: build, test and demo entry points.
#
#   make test    everything CI runs (.ci/run is `make test`)
#   make demo    the demo
#
# Every target that needs something installed installs it itself
# (idempotently), so these work on a fresh Debian 12 machine as root.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
# `make -j test` must still run the steps one after another, in order.
.NOTPARALLEL:

CARGO ?= cargo
WASM := scripts/wasm-toolchain.sh
WASM_PACKAGE := scripts/wasm-package.sh
NODE ?= node
# The Node runner of the wasm build (node --test): vectors and JS API.
NODE_TESTS := tests/node/vectors.test.mjs tests/node/cluster.test.mjs
BENCH_RESULTS := benchmarks

# Each step's start, by the clock: .ci/run sums the minutes each took.
step = @printf '\n==> make %s (%s)\n' '$@' "$$(date -u +%H:%M:%S)"

# One build per profile. Cargo unifies the features of dependencies over
# the packages and targets a command selects: `-p ipvs-agent` alone, or
# without its examples, turns a few off (either, rustix, syn), and
# everything above those is compiled again. Every dev build below selects
# the same as `cargo test --workspace` (make unit), and every release build
# the agent's binaries and examples, as the VM scripts' builds do (the
# features come out the same). Before, a cold make test compiled every
# dependency above either, rustix, syn and fastrand twice in each profile.
DEV_BUILD := $(CARGO) build --workspace --bins --examples
RELEASE_BUILD := $(CARGO) build --release -p ipvs-agent --bins --examples

.PHONY: help deps fmt fmt-check clippy doc-check netlink-dedup unit wasm-check wasm-env tour faults faults-manifests faults-api \
	wasm vectors wasm-vectors bench test demo

help: ## List the targets
	@echo 'Usage: make <target>'
	@echo
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-13s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

deps: ## Install what the tests need (the wasm32 toolchain fallback, wasm-bindgen-cli, wasm-opt); idempotent
	$(step)
	$(WASM) install
	$(WASM_PACKAGE) install-bindgen
	$(WASM_PACKAGE) install-opt

fmt: ## Format all Rust code (cargo fmt --all)
	$(step)
	$(CARGO) fmt --all

fmt-check: ## Check formatting (cargo fmt --all -- --check)
	$(step)
	$(CARGO) fmt --all -- --check

clippy: ## Lint, warnings are errors (cargo clippy --workspace --all-targets -- -D warnings)
	$(step)
	$(CARGO) clippy --workspace --all-targets -- -D warnings

doc-check: ## Build the API docs, warnings (such as broken links) are errors
	$(step)
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --workspace

# `cargo tree -d` must list no netlink crate: one netlink-packet-core,
# -generic, -route, -sys, -proto and rtnetlink across the workspace.
NETLINK_CRATES := ^(rt)?netlink
netlink-dedup: ## Check that cargo tree -d shows no netlink crate twice
	$(step)
	@dups="$$($(CARGO) tree --workspace -d --depth 0 --prefix none | grep -E '$(NETLINK_CRATES)' || true)"; \
	if [[ -n $$dups ]]; then printf 'netlink crates in more than one version:\n%s\n' "$$dups" >&2; exit 1; fi; \
	echo "one copy of each netlink crate: $$($(CARGO) tree -p ipvs-agent -e normal --prefix none | \
		grep -E '$(NETLINK_CRATES)' | sed 's/ (\*)$$//' | sort -u | paste -sd, | sed 's/,/, /g')"

unit: ## Unit and integration tests (cargo test --workspace)
	$(step)
	$(CARGO) test --workspace

wasm-check: ## Prove svcnet-core alone builds for wasm32-unknown-unknown (installs the toolchain if needed; make test's wasm step builds it inside svcnet-wasm)
	$(step)
	$(WASM) build svcnet-core

wasm-env: ## Show which wasm32 route (rustup or Debian fallback) is used
	@$(WASM) env

wasm: ## Build the wasm packages: target/wasm/web (browsers), target/wasm/node (Node); prints the bundle size
	$(step)
	$(WASM_PACKAGE) build

vectors: ## Run tests/vectors/ natively; reports in target/vector-reports/native/
	$(step)
	$(CARGO) test --workspace --test vectors

wasm-vectors: vectors wasm ## tests/vectors/ in the wasm build under Node, byte-identical to the native run; JS API tests
	$(step)
	@command -v $(NODE) >/dev/null || { echo 'make wasm-vectors needs Node 20 or later (node) on PATH' >&2; exit 1; }
	@$(NODE) -e 'if (+process.versions.node.split(".")[0] < 20) { console.error("make wasm-vectors needs Node 20 or later, found " + process.version); process.exit(1) }'
	$(NODE) --test $(NODE_TESTS)

bench: ## Benchmarks (cargo bench: svcnet-core, ipvs-agent's manifests, netlink_encode and watch_decode); figures written to benchmarks/*.md
	$(step)
	$(CARGO) bench -p svcnet-core
	$(CARGO) bench -p ipvs-agent --bench manifests
	$(CARGO) bench -p ipvs-agent --bench netlink_encode
	$(CARGO) bench -p ipvs-agent --bench watch_decode
	@echo
	@shopt -s nullglob; results=($(BENCH_RESULTS)/*.md); \
	if (( $${#results[@]} )); then \
		echo "Benchmark results:"; printf '  %s\n' "$${results[@]}"; \
	else \
		echo "No benchmark results written yet (expected in $(BENCH_RESULTS)/*.md)."; \
	fi

# The Go build of Kubernetes (about 12 minutes of 2 cores, cold) starts
# first, in the background at nice 19, and takes the CPU the other steps
# leave idle; the steps that need Kubernetes come after the ones that do
# not (the VM suites that wait most, faults-manifests and soak-short, last
# of those), and `make k8s` waits for what is left of it. make test's
# faults run against FAULTS_SHORT_SERVICES Services (see faults below).
test: FAULTS_SERVICES = $(FAULTS_SHORT_SERVICES)
test: k8s-background fmt-check clippy doc-check netlink-dedup unit wasm-vectors browser-test fuzz-smoke vm-smoke vm-kernel vm-ipvsadm vm-nft vm-conntrack vm-agent faults-manifests soak-short k8s-conformance k8s-deploy-check kube-proxy-diff traffic-diff faults-api ## Everything CI runs: k8s-background fmt-check clippy doc-check netlink-dedup unit wasm-vectors browser-test fuzz-smoke vm-smoke vm-kernel vm-ipvsadm vm-nft vm-conntrack vm-agent faults-manifests soak-short k8s-conformance k8s-deploy-check kube-proxy-diff traffic-diff faults-api
	@printf '\n==> make test: all steps passed\n'

demo: demo-vm ## The demo: ipvs-agent programs examples/ into a real kernel under QEMU, with traffic and a pod draining, narrated

tour: ## The narrated tour of the core alone (no kernel): CIDRs, ClusterIPs, EndpointSlices, the IPVS table, DNS
	$(step)
	$(CARGO) run -q -p svcnet-core --example tour -- examples/services.yaml examples/pods.yaml

# Real Kubernetes as the reference (scripts/k8s.sh, tests/k8s/): v1.37.2
# built from the Go module proxy, cached by version outside the repo.
.PHONY: k8s k8s-background k8s-up k8s-down k8s-conformance k8s-deploy-check
k8s: ## Build kube-apiserver, kube-controller-manager, kube-proxy, kubectl v1.37.2 and etcd (cached in ~/.cache/svcnet/k8s); waits for a background build
	$(step)
	scripts/k8s.sh build

# The build follows the process that started make (make is the recipe
# shell's parent, and /proc's stat names make's parent): it stops when that
# ends, as .ci/run does right after a failed make test, and carries on for
# a shell that stays.
k8s-background: ## Start make k8s's build in the background at nice 19 (make test's first step) and return; make k8s waits for it
	$(step)
	scripts/k8s.sh build-background "$$(awk '{print $$4}' /proc/$$PPID/stat)"

k8s-up: k8s ## Start a real control plane on 127.0.0.1 (etcd, kube-apiserver, kube-controller-manager); prints KUBECONFIG=
	scripts/k8s.sh up

k8s-down: ## Stop the control plane k8s-up started and remove its data
	scripts/k8s.sh down

k8s-conformance: k8s ## svcnet's core against the real kube-apiserver and kube-controller-manager: tests/k8s/cases, report in target/k8s/conformance.md
	$(step)
	$(DEV_BUILD) -q
	target/debug/k8s-conformance

k8s-deploy-check: k8s ## deploy/ through kubectl apply --dry-run=server, and ipvs-agent plan --kubeconfig on a real cluster made from examples/
	$(step)
	$(DEV_BUILD) -q
	tests/k8s/deploy-check.sh target/debug/ipvs-agent

# The real kube-proxy and the agent side by side in one kernel (QEMU), both
# following one real apiserver: identical IPVS tables, through a churn script.
.PHONY: kube-proxy-diff
kube-proxy-diff: k8s ## kube-proxy v1.37.2 (IPVS mode) and ipvs-agent (API mode) in one VM kernel: identical tables (tests/vm/kube-proxy-diff.sh)
	$(step)
	tests/vm/kube-proxy-diff.sh

# The same traffic through a node run by kube-proxy, then by the agent (IPVS
# and nftables): every frontend from every kind of client, and a UDP rollout.
.PHONY: traffic-diff
traffic-diff: k8s ## Traffic matrix through kube-proxy v1.37.2 and through ipvs-agent, and a UDP rollout: identical (tests/vm/traffic-diff.sh)
	$(step)
	tests/vm/traffic-diff.sh

# make faults runs every fault against FAULTS_SERVICES (5,000) Services;
# make test runs them against FAULTS_SHORT_SERVICES (2,000): each fault is
# made and judged the same, and fewer Services make each first sync
# shorter, which a cold make test needs to keep within CI's time (README,
# Reliability).
FAULTS_SERVICES ?= 5000
FAULTS_SHORT_SERVICES ?= 2000
faults: k8s ## Fault injection in the VM under traffic, FAULTS_SERVICES (5000) Services: kill -9 mid-sync, torn state file, netlink ENOBUFS, concurrent edits, disk full, fd exhaustion, apiserver loss with 410 (tests/vm/faults.sh)
	$(step)
	SVCNET_FAULTS_SERVICES=$(FAULTS_SERVICES) tests/vm/faults.sh

faults-manifests: ## The manifest-mode faults of make faults (tests/vm/faults.sh manifests): about 9 minutes with 5,000 Services, 4 with 2,000
	$(step)
	SVCNET_FAULTS_SERVICES=$(FAULTS_SERVICES) tests/vm/faults.sh manifests

faults-api: k8s ## The API-mode fault of make faults (tests/vm/faults.sh api): kube-apiserver stopped 60 s, etcd compacted, 410; about 8 minutes with 5,000 Services, 5 with 2,000
	$(step)
	SVCNET_FAULTS_SERVICES=$(FAULTS_SERVICES) tests/vm/faults.sh api

.PHONY: bench-vs-kube-proxy
bench-vs-kube-proxy: k8s ## Benchmark against kube-proxy in one VM kernel: N=1000,5000,10000 Services x 10 (BENCH_SIZES); writes benchmarks/kube-proxy.md and .json
	$(step)
	tests/vm/bench-kube-proxy.sh $(BENCH_SIZES)

.PHONY: vm-smoke
vm-smoke: ## Boot Debian's kernel with IPVS under QEMU, run tests/vm/smoke.sh (installs what it needs)
	$(step)
	tests/vm/setup.sh
	tests/vm/run.sh tests/vm/smoke.sh

.PHONY: vm-kernel
vm-kernel: ## The agent's kernel side against real IPVS in the VM: tests/vm/kernel.sh (installs what it needs)
	$(step)
	tests/vm/setup.sh
	$(RELEASE_BUILD)
	tests/vm/run.sh tests/vm/kernel.sh target/release/examples/kernel_check

# What the real ipvsadm sends and the kernel answers, captured in the VM
# (tests/vm/ipvsadm-capture.sh), against the agent's own requests and parser
# (ipvs-agent/tests/ipvsadm_captures.rs). `cargo test` checks the committed
# captures; this target checks a fresh set.
IPVSADM_CAPTURES := target/vm/out/ipvsadm-capture
.PHONY: vm-ipvsadm ipvsadm-goldens
vm-ipvsadm: ## Capture ipvsadm's netlink traffic in the VM (strace) and compare the agent's requests with it, byte for byte
	$(step)
	tests/vm/setup.sh
	tests/vm/run.sh tests/vm/ipvsadm-capture.sh /usr/bin/strace tests/vm/ipvsadm-cases:/vm/ipvsadm-cases
	SVCNET_IPVSADM_CAPTURES=$(CURDIR)/$(IPVSADM_CAPTURES) \
		$(CARGO) test --workspace --test ipvsadm_captures -- --nocapture

ipvsadm-goldens: vm-ipvsadm ## Refresh the committed captures (ipvs-agent/tests/ipvsadm-captures/) from a fresh vm-ipvsadm run
	rm -f ipvs-agent/tests/ipvsadm-captures/*.nl
	cp $(IPVSADM_CAPTURES)/*.nl ipvs-agent/tests/ipvsadm-captures/
	@echo "ipvs-agent/tests/ipvsadm-captures/ refreshed: review with git diff"

# What the real `nft -f` sends and the kernel answers, captured in the VM
# (tests/vm/nft-capture.sh), against the agent's nf_tables transactions
# (ipvs-agent/tests/nft_captures.rs). `cargo test` checks the committed
# captures; this target checks a fresh set.
NFT_CAPTURES := target/vm/out/nft-capture
.PHONY: vm-nft nft-goldens
vm-nft: ## Capture nft -f's netlink traffic in the VM (strace) and compare the agent's nftables transactions with it, byte for byte
	$(step)
	tests/vm/setup.sh
	tests/vm/run.sh tests/vm/nft-capture.sh /usr/bin/strace /usr/sbin/nft tests/vm/nft-cases:/vm/nft-cases \
		ipvs-agent/tests/golden/examples.nft:/vm/nft-cases/examples.nft
	SVCNET_NFT_CAPTURES=$(CURDIR)/$(NFT_CAPTURES) \
		$(CARGO) test --workspace --test nft_captures -- --nocapture

nft-goldens: vm-nft ## Refresh the committed captures (ipvs-agent/tests/nft-captures/) from a fresh vm-nft run
	rm -f ipvs-agent/tests/nft-captures/*.nl
	cp $(NFT_CAPTURES)/*.nl ipvs-agent/tests/nft-captures/
	@echo "ipvs-agent/tests/nft-captures/ refreshed: review with git diff"

# Fuzzing (scripts/fuzz.sh, fuzz/): cargo fuzz targets over the netlink
# parsers and builders (IPVS, rtnetlink, nf_tables, ctnetlink), manifests,
# watch events, the playground's operations, CIDRs, the state files, and a
# stateful cluster + kernel-drift simulation. Seeds in
# fuzz/corpus/; new inputs go to target/fuzz-corpus/, crashes to fuzz/artifacts/.
FUZZ_SECONDS ?= 300
.PHONY: fuzz fuzz-smoke
fuzz: ## Run every fuzz target for FUZZ_SECONDS each (default 300); installs cargo-fuzz if needed
	$(step)
	scripts/fuzz.sh run $(FUZZ_SECONDS)

# make test's bounded run: a fixed seed, so a run replays the same
# mutations, and the dev profile (FUZZ_BUILD=dev), which builds from cold in
# 2 to 3½ minutes on 2 cores where the optimised build `make fuzz` uses takes
# about 9 (benchmarks/fuzz.md). Any crash fails the step.
FUZZ_SMOKE_SECONDS ?= 10
fuzz-smoke: ## Run every fuzz target for FUZZ_SMOKE_SECONDS (default 10) with seed 1, dev build: the bounded run in make test
	$(step)
	FUZZ_BUILD=dev FUZZ_SEED=1 FUZZ_PARALLEL=2 scripts/fuzz.sh run $(FUZZ_SMOKE_SECONDS)

# The browser playground (web/) and its browser tests (tests/browser/).
PLAYGROUND_PORT ?= 8080
.PHONY: playground-site playground browser-deps browser-test
playground-site: wasm ## Build the playground: web/pkg/ for web/ (a static site) and the file:// build in target/playground-offline/
	$(step)
	scripts/playground.sh prepare
	scripts/playground.sh offline

playground: playground-site ## Build the playground and serve web/ on localhost (PLAYGROUND_PORT=8080), printing the URL
	scripts/playground.sh serve $(PLAYGROUND_PORT)

browser-deps: ## Install Debian's Chromium (apt-get) and the pinned playwright-core (npm ci); idempotent
	$(step)
	scripts/playground.sh deps

browser-test: playground-site browser-deps ## The playground in headless Chromium (tests/browser/); screenshots in target/browser/
	$(step)
	scripts/playground.sh test

# ipvs-agent in the QEMU kernel: the end-to-end suite, the narrated demo and
# the benchmark (tests/vm/agent.sh, demo.sh, bench.sh). The binary goes in
# stripped (target/vm/ipvs-agent): a smaller initramfs boots faster.
AGENT_VM_BIN := target/vm/ipvs-agent
.PHONY: agent-vm-bin vm-agent vm-conntrack demo-vm bench-vm
agent-vm-bin: ## Build ipvs-agent (release) and a stripped copy for the VM; installs the VM tools
	$(step)
	tests/vm/setup.sh
	$(RELEASE_BUILD)
	@mkdir -p $(dir $(AGENT_VM_BIN))
	strip -o $(AGENT_VM_BIN) target/release/ipvs-agent

vm-agent: agent-vm-bin ## ipvs-agent end to end in the VM: scenarios a-h, IPv6, UDP, /healthz, /metrics (tests/vm/agent.sh)
	$(step)
	VM_TIMEOUT=$${VM_TIMEOUT:-600} tests/vm/run.sh tests/vm/agent.sh $(AGENT_VM_BIN) \
		examples:/examples tests/vm/manifests:/vm-manifests

vm-conntrack: ## UDP conntrack cleanup in the VM's kernel: the real-kernel test, and the agent deleting a stale entry end to end (tests/vm/conntrack.sh)
	$(step)
	tests/vm/setup.sh
	$(DEV_BUILD)
	@mkdir -p target/vm
	strip -o target/vm/ipvs-agent-debug target/debug/ipvs-agent
	strip -o target/vm/conntrack_list target/debug/examples/conntrack_list
	strip -o target/vm/conntrack_netns "$$($(CARGO) test --workspace --test conntrack_netns --no-run --message-format=json 2>/dev/null \
		| sed -n 's/.*"executable":"\([^"]*conntrack_netns[^"]*\)".*/\1/p' | tail -n 1)"
	VM_TIMEOUT=$${VM_TIMEOUT:-400} tests/vm/run.sh tests/vm/conntrack.sh target/vm/ipvs-agent-debug:/usr/local/bin/ipvs-agent \
		target/vm/conntrack_list target/vm/conntrack_netns /usr/sbin/nft

demo-vm: agent-vm-bin ## The demo: the agent programs examples/ into a real kernel's IPVS, with traffic and a pod draining, narrated (VM_QUIET=0: the whole console)
	$(step)
	VM_QUIET=$${VM_QUIET:-1} VM_TIMEOUT=$${VM_TIMEOUT:-400} tests/vm/run.sh tests/vm/demo.sh $(AGENT_VM_BIN) examples:/examples

bench-vm: agent-vm-bin ## Benchmark in the VM: 5,000 Services x 10 endpoints, agent vs ipvsadm -R; writes benchmarks/agent.md and .json
	$(step)
	tests/vm/bench-host.sh target/release/ipvs-agent

# Why the soak's syncs cost milliseconds an operation: every real server add
# walks IPVS's trash of recently deleted ones (tests/vm/ipvs-trash.sh).
.PHONY: bench-ipvs-trash
bench-ipvs-trash: ## Time IPVS real-server adds against the kernel's trash of deleted ones (empty, 10,000, 31,000, expired) in the VM; writes benchmarks/ipvs-trash.md
	$(step)
	tests/vm/setup.sh
	VM_TIMEOUT=$${VM_TIMEOUT:-900} tests/vm/run.sh tests/vm/ipvs-trash.sh
	{ cat target/vm/out/ipvs-trash/ipvs-trash.md; echo; \
	  echo "Host: $$(awk -F': ' '/^model name/ { print $$2; exit }' /proc/cpuinfo), $$(nproc) cores, QEMU $$(cat target/vm/accel 2>/dev/null || echo unknown); commit $$(git rev-parse --short HEAD)."; \
	} >$(BENCH_RESULTS)/ipvs-trash.md
	@echo "written: $(BENCH_RESULTS)/ipvs-trash.md"

# The churn soak under traffic (issue 15, tests/vm/soak.sh): in the VM the
# agent follows about 1,000 Services changed 100 times a second while
# clients hold and open connections to four stable Services; no connection
# may fail or break, the agent's RSS and fds must stay flat, its table must
# equal the plan at the end. `make soak` (15 minutes of churn) writes
# benchmarks/soak.md and .json; `make soak-short` (90 s) writes its report
# to target/soak/ only. A minute of samples cannot tell an RSS slope from
# the agent's swing, so the short run bounds the rise of the peak (VmHWM)
# after warm-up instead: SOAK_RSS_GROWTH_MAX KiB.
SOAK_SECONDS ?= 900
SOAK_SHORT_SECONDS ?= 90
.PHONY: soak soak-short
soak: ## Churn soak in the VM: SOAK_SECONDS (900) of 100 changes/s under traffic; 0 failed connections, flat RSS and fds; writes benchmarks/soak.md and .json
	$(step)
	SOAK_SECONDS=$(SOAK_SECONDS) SOAK_WRITE=1 tests/vm/soak.sh

soak-short: ## The soak's short run (for make test): SOAK_SHORT_SECONDS (90) of churn, report in target/soak/
	$(step)
	SOAK_SECONDS=$(SOAK_SHORT_SECONDS) SOAK_WRITE=0 SOAK_WARMUP_S=$${SOAK_WARMUP_S:-30} \
		SOAK_RSS_GROWTH_MAX=$${SOAK_RSS_GROWTH_MAX:-16384} tests/vm/soak.sh
