#!/usr/bin/env bash
# Build the svcnet-wasm packages: what `make wasm` runs.
#
#   1. Build the svcnet-wasm crate for wasm32-unknown-unknown with the Cargo
#      profile `wasm` (small: opt-level "z", LTO) through
#      scripts/wasm-toolchain.sh (rustup's target when installed, else the
#      Debian fallback; installs the fallback's packages when missing).
#   2. Make sure wasm-bindgen-cli is the exact version of the wasm-bindgen
#      crate in Cargo.lock: `cargo install wasm-bindgen-cli --version <it>
#      --locked`, only when it is missing or another version (about 6
#      minutes the first time).
#   3. wasm-bindgen --target web    --out-dir target/wasm/web   (browsers)
#      wasm-bindgen --target nodejs --out-dir target/wasm/node  (Node)
#      with the module name svcnet_wasm.
#   4. Only when asked (SVCNET_WASM_OPT=1) and wasm-opt (binaryen) is on
#      PATH: wasm-opt -Oz on both .wasm files, kept only if the optimised Node
#      package still loads and allocates. Off by default: Debian 12's
#      binaryen 108 writes a module that fails to instantiate
#      ("WebAssembly.Table.grow(): failed to grow table") and gzips larger.
#   5. Print the bundle size, raw and gzip, and write it to target/wasm/size.txt.
#
# Usage: scripts/wasm-package.sh [build | bindgen-version | install-bindgen]
#
#   build            all of the above (the default)
#   bindgen-version  print the wasm-bindgen version Cargo.lock holds
#   install-bindgen  step 2 only
#
# Environment:
#   SVCNET_WASM_ROUTE=rustup|debian   as for scripts/wasm-toolchain.sh
#   SVCNET_WASM_OPT=1                 run wasm-opt (see step 4)

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
    log "installing wasm-bindgen-cli $want with cargo (about 6 minutes the first time; cargo prints each crate it compiles)"
    local started=$SECONDS
    # cargo's own progress goes to stderr, with the rest of this script's log.
    (cd "$WASM_REPO_ROOT" && cargo install wasm-bindgen-cli --version "$want" --locked --force) >&2
    have="$(bindgen_version_of "$CARGO_BIN/wasm-bindgen")"
    [[ "$have" == "$want" ]] ||
        wasm_die "cargo installed wasm-bindgen ${have:-of unknown version} at $CARGO_BIN, need $want"
    log "installed wasm-bindgen $want in $((SECONDS - started)) s: $CARGO_BIN/wasm-bindgen"
    echo "$CARGO_BIN/wasm-bindgen"
}

# wasm-opt -Oz on one .wasm file into "$2" (extra flags after); false when
# wasm-opt fails.
wasm_opt() {
    local file="$1" out="$2"
    shift 2
    # Rust's wasm32 target emits these features; wasm-opt must accept them.
    wasm-opt -Oz --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
        --enable-nontrapping-float-to-int --enable-reference-types --enable-multivalue \
        "$@" "$file" -o "$out"
}

# True when the Node package in "$1" loads and allocates a ClusterIP.
node_smoke_test() {
    node -e '
        const { Cluster } = require(process.argv[1] + "/'"$MODULE"'.js");
        const c = new Cluster({ serviceClusterIpRange: "10.0.0.0/24", seed: 1 });
        const [svc] = c.apply("apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {ports: [{port: 80}]}\n");
        if (!svc.spec.clusterIP) throw new Error("no ClusterIP");' "$1"
}

# Step 4: optimises both packages with wasm-opt when asked and possible.
maybe_wasm_opt() {
    [[ "${SVCNET_WASM_OPT:-0}" == 1 ]] || return 0
    if ! command -v wasm-opt >/dev/null 2>&1; then
        log "SVCNET_WASM_OPT=1 but no wasm-opt on PATH (apt-get install binaryen); packages left as wasm-bindgen wrote them"
        return 0
    fi
    local node_wasm="$OUT/node/${MODULE}_bg.wasm" web_wasm="$OUT/web/${MODULE}_bg.wasm"
    log "$(wasm-opt --version)"
    cp "$node_wasm" "$node_wasm.orig"
    # -g keeps the Node package's function names.
    if wasm_opt "$node_wasm.orig" "$node_wasm" -g && node_smoke_test "$OUT/node" 2>"$OUT/wasm-opt.log"; then
        wasm_opt "$web_wasm" "$web_wasm.opt" && mv "$web_wasm.opt" "$web_wasm"
        log "wasm-opt -Oz: $(wc -c <"$node_wasm.orig") -> $(wc -c <"$node_wasm") bytes (node), web $(wc -c <"$web_wasm") bytes"
        rm -f "$node_wasm.orig" "$OUT/wasm-opt.log"
    else
        log "wasm-opt's module does not work (see target/wasm/wasm-opt.log); packages left as wasm-bindgen wrote them"
        mv "$node_wasm.orig" "$node_wasm"
    fi
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
    maybe_wasm_opt

    local web_wasm="$OUT/web/${MODULE}_bg.wasm" web_js="$OUT/web/$MODULE.js"
    local raw gz js_raw js_gz
    raw="$(wc -c <"$web_wasm")"
    gz="$(gzip -9 -c "$web_wasm" | wc -c)"
    js_raw="$(wc -c <"$web_js")"
    js_gz="$(gzip -9 -c "$web_js" | wc -c)"
    {
        echo "svcnet-wasm bundle for browsers (target/wasm/web, wasm-bindgen $(bindgen_version), profile $PROFILE, route $(wasm_route))"
        printf '%-22s %10s bytes raw %10s bytes gzip -9\n' "${MODULE}_bg.wasm" "$raw" "$gz"
        printf '%-22s %10s bytes raw %10s bytes gzip -9\n' "$MODULE.js" "$js_raw" "$js_gz"
        printf '%-22s %10s bytes raw %10s bytes gzip -9\n' "total" "$((raw + js_raw))" "$((gz + js_gz))"
    } >"$OUT/size.txt"
    echo
    cat "$OUT/size.txt"
    echo "packages: target/wasm/web (--target web), target/wasm/node (--target nodejs); built in $((SECONDS - started)) s"
}

case "${1:-build}" in
build) build ;;
bindgen-version) bindgen_version ;;
install-bindgen) ensure_bindgen >/dev/null ;;
-h | --help | help) sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' ;;
*)
    echo "usage: $0 [build | bindgen-version | install-bindgen]" >&2
    exit 2
    ;;
esac
