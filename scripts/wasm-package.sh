#!/usr/bin/env bash
# Build the svcnet-wasm packages: what `make wasm` runs.
#
#   1. Build the svcnet-wasm crate for wasm32-unknown-unknown with the Cargo
#      profile `wasm` (small: opt-level "z", LTO) through
#      scripts/wasm-toolchain.sh (rustup's target when installed, else the
#      Debian fallback; installs the fallback's packages when missing).
#   2. Make sure wasm-bindgen-cli is the exact version of the wasm-bindgen
#      crate in Cargo.lock: `cargo install wasm-bindgen-cli --version <it>
#      --locked --debug`, only when it is missing or another version. An
#      unoptimised build: about 3½ minutes on 2 cores, against about 6
#      optimised, and its output is byte for byte the same (measured: 3.6 s
#      per run on this bundle against 0.75 s, and `make wasm` runs it twice).
#   3. wasm-bindgen --target web    --out-dir target/wasm/web   (browsers)
#      wasm-bindgen --target nodejs --out-dir target/wasm/node  (Node)
#      with the module name svcnet_wasm.
#   4. wasm-opt (binaryen 132, the npm package `binaryen` pinned in
#      scripts/wasm-opt/package-lock.json, installed there with npm ci: a
#      build of wasm-opt compiled to WebAssembly, run by Node, so nothing
#      native to install) on both .wasm files, -Os without inlining (see
#      WASM_OPT_FLAGS); the browser module without the vector runner, which
#      only the Node package needs (see NODE_ONLY_EXPORTS). The optimised
#      Node package (which keeps its function names) must still load and
#      run a manifest, else the build fails; `make wasm-vectors` and `make
#      browser-test` then run every vector and the playground on the
#      optimised modules. SVCNET_WASM_OPT=0 leaves the
#      packages as wasm-bindgen wrote them. (Debian 12's binaryen 108 is
#      not used: it writes a module that fails to instantiate.)
#   5. Print the bundle size, raw, gzip -9 and Brotli, before and after
#      wasm-opt, and whether the wasm and its glue are within the 350 KB
#      (350,000 bytes) gzip budget of issue 16, and write it to
#      target/wasm/size.txt. The page's whole download (the wasm and
#      web/pkg/playground.js: web/js and the glue, minified) is measured,
#      and held to the budget, by scripts/playground.sh prepare.
#
# Usage: scripts/wasm-package.sh [build | bindgen-version | install-bindgen | install-opt]
#
#   build            all of the above (the default)
#   bindgen-version  print the wasm-bindgen version Cargo.lock holds
#   install-bindgen  step 2 only
#   install-opt      install the pinned wasm-opt (npm ci in scripts/wasm-opt)
#
# Environment:
#   SVCNET_WASM_ROUTE=rustup|debian   as for scripts/wasm-toolchain.sh
#   SVCNET_WASM_OPT=0                 skip wasm-opt (see step 4)

set -euo pipefail

# shellcheck disable=SC1091 # scripts/wasm-toolchain.sh, checked on its own
. "$(dirname "${BASH_SOURCE[0]}")/wasm-toolchain.sh"

CRATE=svcnet-wasm
MODULE=svcnet_wasm
PROFILE=wasm
OUT="$WASM_REPO_ROOT/target/wasm"
CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"

log() { printf '[wasm] %s\n' "$*" >&2; }

# The version of the wasm-bindgen crate in Cargo.lock.
bindgen_version() {
    local version
    version="$(awk '/^\[\[package\]\]/ { name = "" }
        /^name = / { name = $3 }
        /^version = / && name == "\"wasm-bindgen\"" { gsub(/"/, "", $3); print $3; exit }' \
        "$WASM_REPO_ROOT/Cargo.lock")"
    [[ -n "$version" ]] || wasm_die "no wasm-bindgen package in Cargo.lock"
    echo "$version"
}

# The version a wasm-bindgen binary reports (`wasm-bindgen 0.2.129`), or nothing.
bindgen_version_of() {
    "$1" --version 2>/dev/null | awk '{ print $2; exit }' || true
}

# Prints the path of a wasm-bindgen of the wanted version, installing it
# with cargo when there is none.
ensure_bindgen() {
    local want candidate have
    want="$(bindgen_version)"
    for candidate in "$(command -v wasm-bindgen || true)" "$CARGO_BIN/wasm-bindgen"; do
        [[ -n "$candidate" && -x "$candidate" ]] || continue
        have="$(bindgen_version_of "$candidate")"
        if [[ "$have" == "$want" ]]; then
            log "wasm-bindgen $want: $candidate"
            echo "$candidate"
            return
        fi
        log "found wasm-bindgen ${have:-of unknown version} at $candidate, need $want"
    done
    log "installing wasm-bindgen-cli $want with cargo, unoptimised (about 2 minutes the first time; cargo prints each crate it compiles)"
    local started=$SECONDS
    # cargo's own progress goes to stderr, with the rest of this script's log.
    # No default features: they give wasm-bindgen-test-runner TLS for its
    # downloads (rustls and ring), which nothing here uses; 73 s instead of
    # 85 s on 2 cores.
    (cd "$WASM_REPO_ROOT" && cargo install wasm-bindgen-cli --version "$want" --locked --debug --force --no-default-features) >&2
    have="$(bindgen_version_of "$CARGO_BIN/wasm-bindgen")"
    [[ "$have" == "$want" ]] ||
        wasm_die "cargo installed wasm-bindgen ${have:-of unknown version} at $CARGO_BIN, need $want"
    log "installed wasm-bindgen $want in $((SECONDS - started)) s: $CARGO_BIN/wasm-bindgen"
    echo "$CARGO_BIN/wasm-bindgen"
}

# The pinned wasm-opt: the npm package binaryen in scripts/wasm-opt/.
WASM_OPT_DIR="$WASM_REPO_ROOT/scripts/wasm-opt"
WASM_OPT_VERSION=132
# -Os without its inlining pass (inlining-optimizing): inlining copies code
# gzip had found repeated, so the full levels write fewer bytes that gzip
# to many more. Measured on this module (1,789,142 bytes, 492,859 gzip -9
# as wasm-bindgen writes it): -O2 1,648,489 bytes, 605,065 gzip; -O1
# 1,737,390 and 490,681; without inlining, -Oz 1,676,396 and 487,567, -Os
# 1,697,435 and 486,784 (23 s), -O3 1,698,001 and 486,688 (48 s).
WASM_OPT_FLAGS=(-Os --skip-pass=inlining-optimizing)
# What only the Node package needs: the behaviour-vector runner (`runVector`,
# svcnet_core::scenario and the proxy simulation under it) and the parts of
# the JS API the playground never calls (it drives the cluster through
# `kubectl` lines and replays them to restore one, so it needs no `new
# Cluster(config)`, `apply`, `delete`, snapshots, `advance`/`heartbeat`,
# `repair`, `dnsZone` or the ipvsadm texts; wasm/README.md lists what each
# package has). wasm-opt drops those exports from the browser module and,
# with them, the code nothing else reaches: measured, the vector runner
# 486,785 -> 434,167 B gzip, the rest 355,035 -> 324,853. One Cargo build
# for both packages (a Cargo feature would mean a second LTO build of the
# whole module, a minute or more, in every make wasm); the browser
# package's glue still declares them, and calling one throws there.
NODE_ONLY_EXPORTS=(runVector cluster_new cluster_apply cluster_delete cluster_advance cluster_heartbeat
    cluster_now cluster_dnsZone cluster_ipvsadmList cluster_ipvsadmSave cluster_repair cluster_restore
    cluster_snapshot cluster_snapshotJson)

# Issue 16: the browser download, wasm and JS together, at most 350 KB gzip.
# (Here the wasm-bindgen package; scripts/playground.sh checks the page.)
BUDGET_GZIP=350000

# Prints the path of the pinned wasm-opt, installing it (npm ci in
# scripts/wasm-opt, once per lock file) when it is missing.
ensure_wasm_opt() {
    local lock="$WASM_OPT_DIR/package-lock.json" stamp="$WASM_OPT_DIR/node_modules/.svcnet-lock"
    local bin="$WASM_OPT_DIR/node_modules/.bin/wasm-opt"
    if [[ ! -x "$bin" || ! -f "$stamp" ]] || ! cmp -s "$lock" "$stamp"; then
        command -v npm >/dev/null || wasm_die "npm is needed to install wasm-opt (Node 20 and npm come with the machine); SVCNET_WASM_OPT=0 skips it"
        log "installing wasm-opt: npm ci in scripts/wasm-opt (binaryen $WASM_OPT_VERSION, pinned in its package-lock.json)"
        (cd "$WASM_OPT_DIR" && npm ci --ignore-scripts --no-audit --no-fund) >&2
        cp "$lock" "$stamp"
    fi
    local version
    version="$("$bin" --version 2>/dev/null || true)"
    [[ "$version" == "wasm-opt version $WASM_OPT_VERSION "* ]] ||
        wasm_die "$bin reports '${version:-nothing}', expected wasm-opt version $WASM_OPT_VERSION"
    log "$version: ${bin#"$WASM_REPO_ROOT"/}"
    echo "$bin"
}

# wasm-opt on one .wasm file ("$2" in, "$3" out; flags after them run
# before WASM_OPT_FLAGS); false when wasm-opt fails.
wasm_opt() {
    local bin="$1" file="$2" out="$3"
    shift 3
    # Rust's wasm32 target emits these features; wasm-opt must accept them.
    "$bin" --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
        --enable-nontrapping-float-to-int --enable-reference-types --enable-multivalue \
        "$@" "${WASM_OPT_FLAGS[@]}" "$file" -o "$out"
}

# True when the Node package in "$1" loads, allocates a ClusterIP and
# runs a console command.
node_smoke_test() {
    node -e '
        const { Cluster } = require(process.argv[1] + "/'"$MODULE"'.js");
        const c = new Cluster({ serviceClusterIpRange: "10.0.0.0/24", seed: 1 });
        const [svc] = c.apply("apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {ports: [{port: 80}]}\n");
        if (!svc.spec.clusterIP) throw new Error("no ClusterIP");
        const get = c.kubectl("kubectl get svc a -o yaml");
        if (!get.ok || !get.text.includes(svc.spec.clusterIP)) throw new Error("kubectl get: " + get.text);' "$1"
}

# Step 4: optimises both packages with the pinned wasm-opt, the Node one
# first, which must still work. Keeps the unoptimised web module as
# target/wasm/web-unoptimised.wasm for the size table.
optimise() {
    local node_wasm="$OUT/node/${MODULE}_bg.wasm" web_wasm="$OUT/web/${MODULE}_bg.wasm"
    cp "$web_wasm" "$OUT/web-unoptimised.wasm"
    if [[ "${SVCNET_WASM_OPT:-1}" == 0 ]]; then
        log "SVCNET_WASM_OPT=0: packages left as wasm-bindgen wrote them"
        return
    fi
    local bin started=$SECONDS
    bin="$(ensure_wasm_opt)"
    # The pass takes one argument: the export names, comma-separated.
    local names drop
    names="$(IFS=,; echo "${NODE_ONLY_EXPORTS[*]}")"
    drop=(--remove-exports "--pass-arg=remove-exports@$names")
    log "+ wasm-opt -g ${WASM_OPT_FLAGS[*]} on target/wasm/node and ${drop[*]} ${WASM_OPT_FLAGS[*]} on target/wasm/web, side by side"
    # -g keeps the Node package's function names.
    wasm_opt "$bin" "$node_wasm" "$node_wasm.opt" -g &
    local node_job=$!
    wasm_opt "$bin" "$web_wasm" "$web_wasm.opt" "${drop[@]}" || wasm_die "wasm-opt failed on $web_wasm"
    wait "$node_job" || wasm_die "wasm-opt failed on $node_wasm"
    mv "$node_wasm.opt" "$node_wasm"
    mv "$web_wasm.opt" "$web_wasm"
    node_smoke_test "$OUT/node" >"$OUT/wasm-opt.log" 2>&1 ||
        wasm_die "the module wasm-opt wrote does not work in Node (target/wasm/wasm-opt.log); SVCNET_WASM_OPT=0 builds without it"
    rm -f "$OUT/wasm-opt.log"
    log "wasm-opt: web module $(wc -c <"$OUT/web-unoptimised.wasm") -> $(wc -c <"$web_wasm") bytes, in $((SECONDS - started)) s"
}

# "raw gzip brotli" byte counts of a file (gzip -9; Brotli quality 11, as
# scripts/precompress.mjs writes them for the served playground).
sizes() {
    local file="$1"
    printf '%s %s %s' "$(wc -c <"$file")" "$(gzip -9 -c "$file" | wc -c)" \
        "$(node -e 'const z = require("zlib"), d = require("fs").readFileSync(process.argv[1]);
            process.stdout.write(String(z.brotliCompressSync(d, { params: {
                [z.constants.BROTLI_PARAM_QUALITY]: 11, [z.constants.BROTLI_PARAM_SIZE_HINT]: d.length } }).length))' "$file")"
}

# Step 5: the size table (target/wasm/size.txt), with the budget.
report_size() {
    local web_wasm="$OUT/web/${MODULE}_bg.wasm" web_js="$OUT/web/$MODULE.js"
    local wasm_raw wasm_gz wasm_br js_raw js_gz js_br before_raw before_gz before_br
    read -r wasm_raw wasm_gz wasm_br <<<"$(sizes "$web_wasm")"
    read -r js_raw js_gz js_br <<<"$(sizes "$web_js")"
    read -r before_raw before_gz before_br <<<"$(sizes "$OUT/web-unoptimised.wasm")"
    local total_gz=$((wasm_gz + js_gz)) row='%-28s %10s %10s %10s\n'
    {
        echo "svcnet-wasm bundle for browsers (target/wasm/web, wasm-bindgen $(bindgen_version), profile $PROFILE, route $(wasm_route))"
        printf "$row" "file (bytes)" "raw" "gzip -9" "brotli"
        printf "$row" "${MODULE}_bg.wasm" "$wasm_raw" "$wasm_gz" "$wasm_br"
        printf "$row" "$MODULE.js" "$js_raw" "$js_gz" "$js_br"
        printf "$row" "total" "$((wasm_raw + js_raw))" "$total_gz" "$((wasm_br + js_br))"
        if [[ "${SVCNET_WASM_OPT:-1}" != 0 ]]; then
            printf "$row" "(wasm before wasm-opt)" "$before_raw" "$before_gz" "$before_br"
        fi
        if ((total_gz <= BUDGET_GZIP)); then
            echo "budget (issue 16): wasm and glue at most $BUDGET_GZIP bytes gzip -9; $total_gz is within it"
        else
            echo "budget (issue 16): wasm and glue at most $BUDGET_GZIP bytes gzip -9; OVER by $((total_gz - BUDGET_GZIP)) ($((total_gz * 100 / BUDGET_GZIP)) % of it)"
        fi
    } >"$OUT/size.txt"
    echo
    cat "$OUT/size.txt"
}

build() {
    local started=$SECONDS
    wasm_main build "$CRATE" --profile "$PROFILE"
    local wasm
    wasm="$(wasm_out_dir "$(wasm_profile_dir "$PROFILE")")/$MODULE.wasm"
    [[ -f "$wasm" ]] || wasm_die "the build left no $wasm"

    local bindgen
    bindgen="$(ensure_bindgen)"
    local target dir extra
    for target in web nodejs; do
        dir="$OUT/web"
        # The browser bundle drops the function names (about as large as the
        # code); the Node package keeps them for readable stack traces.
        extra=(--remove-name-section --remove-producers-section)
        if [[ "$target" == nodejs ]]; then
            dir="$OUT/node"
            extra=()
        fi
        rm -rf "$dir"
        log "+ wasm-bindgen --target $target --out-dir ${dir#"$WASM_REPO_ROOT"/} --out-name $MODULE ${extra[*]}"
        "$bindgen" --target "$target" --out-dir "$dir" --out-name "$MODULE" "${extra[@]}" "$wasm"
    done
    optimise
    report_size
    echo "packages: target/wasm/web (--target web), target/wasm/node (--target nodejs); built in $((SECONDS - started)) s"
}

case "${1:-build}" in
build) build ;;
bindgen-version) bindgen_version ;;
install-bindgen) ensure_bindgen >/dev/null ;;
install-opt) ensure_wasm_opt >/dev/null ;;
-h | --help | help) sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' ;;
*)
    echo "usage: $0 [build | bindgen-version | install-bindgen | install-opt]" >&2
    exit 2
    ;;
esac
