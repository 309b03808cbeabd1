#!/usr/bin/env bash
# Build workspace crates for wasm32-unknown-unknown, on a developer laptop and
# on the project's machines alike.
#
# Two routes, tried in this order:
#
#   rustup  A `wasm32-unknown-unknown` target installed in rustup
#           (`rustup target list --installed`). Plain `cargo build --target`.
#   debian  The verified fallback from shared/BUILDING.md, for machines where
#           rustup cannot download the target: Debian's second toolchain
#           (packages rustc-web cargo-web rust-web-src lld-22: Rust at
#           /usr/bin/{rustc,cargo}, std sources, lld run as rust-lld), building std for
#           wasm32 itself with -Zbuild-std. Its artefacts go to
#           target/wasm-debian so the two toolchains never share a target dir.
#
# Usage: scripts/wasm-toolchain.sh <command> [args]
#
#   route                 print the route that will be used (rustup|debian)
#                         without installing anything
#   install               make sure a route is usable; installs the Debian
#                         packages (as root, or through sudo) only when no
#                         rustup target exists and the packages are missing
#   check <crate>         `cargo check` the crate for wasm32
#   build <crate> [--debug | --profile NAME]
#                         `cargo build --release` (or dev, or the named
#                         Cargo profile) the crate for wasm32; prints where
#                         the artefacts are
#   out-dir [--debug | --profile NAME]
#                         print the directory holding the built artefacts
#                         (the .wasm of a cdylib crate lands there)
#   env                   print the route, toolchain versions and target dir
#
# Environment:
#   SVCNET_WASM_ROUTE=rustup|debian   force a route (e.g. to try the fallback
#                                     on a machine that has the rustup target)
#
# The script can also be sourced (`. scripts/wasm-toolchain.sh`) to use its
# functions: wasm_route, wasm_install, wasm_cargo, wasm_out_dir, wasm_profile_dir.

WASM_TARGET=wasm32-unknown-unknown
# ca-certificates: cargo-web fetches crates over HTTPS (already on any usual
# machine; listed so a minimal Debian works too).
WASM_DEBIAN_PACKAGES=(rustc-web cargo-web rust-web-src lld-22 ca-certificates)
WASM_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WASM_DEBIAN_TARGET_DIR="$WASM_REPO_ROOT/target/wasm-debian"
WASM_RUSTUP_TARGET_DIR="$WASM_REPO_ROOT/target"

wasm_log() { printf '[wasm] %s\n' "$*" >&2; }
wasm_die() {
    printf '[wasm] error: %s\n' "$*" >&2
    exit 1
}

# True when rustup has the wasm32 target for the toolchain used in this repo.
wasm_rustup_has_target() {
    command -v rustup >/dev/null 2>&1 || return 1
    (cd "$WASM_REPO_ROOT" && rustup target list --installed 2>/dev/null) |
        grep -qx "$WASM_TARGET"
}

# The Debian packages of the fallback that are not installed (one a line).
wasm_debian_missing() {
    local pkg status
    for pkg in "${WASM_DEBIAN_PACKAGES[@]}"; do
        status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
        [[ "$status" == installed ]] || echo "$pkg"
    done
}

# True when the fallback toolchain is installed and complete.
wasm_debian_ready() {
    command -v dpkg-query >/dev/null 2>&1 || return 1
    [[ -z "$(wasm_debian_missing)" ]] &&
        [[ -x /usr/bin/cargo && -x /usr/bin/rustc ]] &&
        [[ -d /usr/lib/rustlib/src/rust/library ]]
}

# Prints the route to use: rustup or debian. Installs nothing.
wasm_route() {
    case "${SVCNET_WASM_ROUTE:-}" in
    rustup | debian)
        echo "$SVCNET_WASM_ROUTE"
        return
        ;;
    "") ;;
    *) wasm_die "SVCNET_WASM_ROUTE must be rustup or debian, not '$SVCNET_WASM_ROUTE'" ;;
    esac
    if wasm_rustup_has_target; then
        echo rustup
    else
        echo debian
    fi
}

# Makes sure the chosen route can build. Idempotent, and quick (no network)
# when everything is already there.
wasm_install() {
    local route
    route="$(wasm_route)"
    if [[ "$route" == rustup ]]; then
        wasm_rustup_has_target ||
            wasm_die "SVCNET_WASM_ROUTE=rustup but rustup has no $WASM_TARGET target (rustup target add $WASM_TARGET)"
        wasm_log "route: rustup ($WASM_TARGET target installed)"
        return
    fi
    if wasm_debian_ready; then
        wasm_log "route: debian fallback (${WASM_DEBIAN_PACKAGES[*]} already installed)"
        return
    fi
    command -v apt-get >/dev/null 2>&1 ||
        wasm_die "no $WASM_TARGET target in rustup and no apt-get for the Debian fallback; run: rustup target add $WASM_TARGET"
    local sudo=()
    if [[ "$(id -u)" != 0 ]]; then
        command -v sudo >/dev/null 2>&1 || wasm_die "installing ${WASM_DEBIAN_PACKAGES[*]} needs root"
        sudo=(sudo)
    fi
    local missing
    missing="$(wasm_debian_missing | tr '\n' ' ')"
    wasm_log "route: debian fallback; installing: ${missing:-${WASM_DEBIAN_PACKAGES[*]}}"
    export DEBIAN_FRONTEND=noninteractive
    local apt_opts=(-o DPkg::Lock::Timeout=300 -o Acquire::Retries=3)
    wasm_log "apt-get update"
    # A source that cannot be reached only warns; the install below decides.
    "${sudo[@]}" apt-get "${apt_opts[@]}" update -q ||
        wasm_log "apt-get update reported errors; trying the install anyway"
    wasm_log "apt-get install -y ${WASM_DEBIAN_PACKAGES[*]}"
    "${sudo[@]}" apt-get "${apt_opts[@]}" install -y -q --no-install-recommends \
        "${WASM_DEBIAN_PACKAGES[@]}"
    wasm_debian_ready || wasm_die "the Debian fallback is still incomplete after apt-get install"
    wasm_log "installed: $(/usr/bin/rustc --version)"
}

# Directory of the built artefacts for a profile (release|debug).
wasm_out_dir() {
    local profile="${1:-release}"
    if [[ "$(wasm_route)" == rustup ]]; then
        echo "${CARGO_TARGET_DIR:-$WASM_RUSTUP_TARGET_DIR}/$WASM_TARGET/$profile"
    else
        echo "$WASM_DEBIAN_TARGET_DIR/$WASM_TARGET/$profile"
    fi
}

# The target sub-directory of a Cargo profile: `dev` builds land in
# `debug`, every other profile in a directory of its own name.
wasm_profile_dir() {
    local profile="$1"
    [[ -n "$profile" ]] || wasm_die "--profile needs a Cargo profile name"
    if [[ "$profile" == dev ]]; then echo debug; else echo "$profile"; fi
}

# The linker rustc runs for wasm32 is `rust-lld` (lld's multiplexer, told
# `-flavor wasm`). Debian's Rust packages used to bring it as a link to
# lld-22; rustc-web 1.96.0+dfsg1-1~deb12u2 does not, so the build gets its own
# link to lld-22's lld, in target/wasm-debian/bin, first on PATH. Prints that
# folder.
wasm_debian_linker_dir() {
    local dir="$WASM_DEBIAN_TARGET_DIR/bin" lld
    for lld in /usr/lib/llvm-22/bin/lld /usr/bin/lld-22; do
        if [[ -x $lld ]]; then
            mkdir -p "$dir"
            ln -sfn "$lld" "$dir/rust-lld"
            echo "$dir"
            return
        fi
    done
    wasm_die "no lld to run as rust-lld: /usr/lib/llvm-22/bin/lld is missing (apt-get install lld-22)"
}

# Runs `cargo <subcommand> --target wasm32-unknown-unknown <args>` with the
# chosen route's toolchain. Call wasm_install first.
wasm_cargo() {
    local subcommand="$1"
    shift
    local cmd
    if [[ "$(wasm_route)" == rustup ]]; then
        cmd=(cargo "$subcommand" --target "$WASM_TARGET" "$@")
        wasm_log "+ ${cmd[*]}"
        (cd "$WASM_REPO_ROOT" && "${cmd[@]}")
    else
        # Debian's cargo and rustc (Rust 1.96), not rustup's proxies; it
        # compiles std for wasm32 from /usr/lib/rustlib/src/rust, which needs
        # the unstable -Zbuild-std (RUSTC_BOOTSTRAP=1).
        # Since std is compiled here anyway, it is compiled for size
        # (optimize_for_size: std's smaller algorithms) and a panic is a
        # bare trap (-Cpanic=immediate-abort, -Zlocation-detail=none: no
        # panic formatting or file names in the module; measured alone,
        # 11,876 B less gzip). The core must not panic; a panic in the
        # playground was an error to report before and is one still.
        # shellcheck disable=SC2054 # "std,panic_abort" is one argument
        cmd=(/usr/bin/cargo "$subcommand" --target "$WASM_TARGET"
            -Zbuild-std=std,panic_abort -Zbuild-std-features=optimize_for_size
            --target-dir "$WASM_DEBIAN_TARGET_DIR" "$@")
        local rustflags="-Zunstable-options -Cpanic=immediate-abort -Zlocation-detail=none"
        local linker_dir
        linker_dir="$(wasm_debian_linker_dir)"
        wasm_log "+ PATH=${linker_dir#"$WASM_REPO_ROOT"/}:/usr/bin:\$PATH RUSTFLAGS='$rustflags' RUSTC_BOOTSTRAP=1 ${cmd[*]}"
        (cd "$WASM_REPO_ROOT" &&
            env -u RUSTC_WRAPPER -u RUSTUP_TOOLCHAIN -u CARGO_TARGET_DIR \
                PATH="$linker_dir:/usr/bin:$PATH" RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc \
                RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }$rustflags" RUSTC_BOOTSTRAP=1 "${cmd[@]}")
    fi
}

wasm_env() {
    local route
    route="$(wasm_route)"
    echo "route:      $route"
    echo "target:     $WASM_TARGET"
    if [[ "$route" == rustup ]]; then
        echo "cargo:      $(cd "$WASM_REPO_ROOT" && cargo --version)"
        echo "rustc:      $(cd "$WASM_REPO_ROOT" && rustc --version)"
    else
        echo "packages:   ${WASM_DEBIAN_PACKAGES[*]} (missing: $(wasm_debian_missing | tr '\n' ' '))"
        [[ -x /usr/bin/cargo ]] && echo "cargo:      $(/usr/bin/cargo --version)"
        [[ -x /usr/bin/rustc ]] && echo "rustc:      $(/usr/bin/rustc --version)"
    fi
    echo "out dir:    $(wasm_out_dir release)"
}

wasm_usage() {
    sed -n '/^# Usage:/,/^# The script can also/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' | sed '$d'
}

wasm_main() {
    local command="${1:-}"
    [[ $# -gt 0 ]] && shift
    case "$command" in
    route) wasm_route ;;
    install) wasm_install ;;
    env) wasm_env ;;
    out-dir)
        case "${1:-}" in
        --debug) wasm_out_dir debug ;;
        --profile) wasm_out_dir "$(wasm_profile_dir "${2:-}")" ;;
        *) wasm_out_dir release ;;
        esac
        ;;
    check | build)
        local crate="${1:-}"
        [[ -n "$crate" ]] || wasm_die "usage: $0 $command <crate> [--debug]"
        shift
        local profile=release profile_flag=(--release)
        if [[ "${1:-}" == --debug ]]; then
            profile=debug
            profile_flag=()
            shift
        elif [[ "${1:-}" == --profile ]]; then
            [[ -n "${2:-}" ]] || wasm_die "--profile needs a Cargo profile name"
            profile="$(wasm_profile_dir "$2")"
            profile_flag=(--profile "$2")
            shift 2
        fi
        [[ $# -eq 0 ]] || wasm_die "unexpected arguments: $*"
        wasm_install
        local started=$SECONDS
        wasm_log "$command $crate for $WASM_TARGET ($profile, route $(wasm_route))"
        wasm_cargo "$command" "${profile_flag[@]}" -p "$crate"
        local done_verb=checked
        [[ "$command" == build ]] && done_verb=built
        wasm_log "ok: $crate $done_verb for $WASM_TARGET in $((SECONDS - started)) s"
        if [[ "$command" == build ]]; then
            wasm_log "artefacts: $(wasm_out_dir "$profile")"
        fi
        ;;
    -h | --help | help | "") wasm_usage ;;
    *)
        wasm_usage >&2
        exit 2
        ;;
    esac
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    set -euo pipefail
    wasm_main "$@"
fi
