#!/usr/bin/env bash
# The browser playground (web/) and its browser tests: what `make
# playground` and `make browser-test` run.
#
# Usage: scripts/playground.sh prepare | offline | serve [PORT] | deps | test
#
#   prepare   copy the browser package `make wasm` wrote (target/wasm/web/)
#             into web/pkg/, where web/js/app.js imports it (git-ignored),
#             bundle web/js/ with it into web/pkg/playground.js, minified
#             (scripts/web-bundle/site.mjs; the one script index.html
#             loads), write .br and .gz copies beside them
#             (scripts/precompress.mjs) for serve, and print the page's
#             download size against issue 16's 350 KB
#   offline   the file:// build in target/playground-offline/: web/js/ and
#             web/pkg/ bundled into one classic script with the wasm inside
#             (scripts/web-bundle/bundle.mjs, with the pinned esbuild from
#             npm ci there); prints the path of its index.html and its size
#   serve     serve web/ on 127.0.0.1 (scripts/serve-precompressed.py:
#             python3's http.server, sending the .br or .gz copy of a file
#             with Content-Encoding when the browser accepts it), printing
#             the URL; PORT defaults to 8080, or the next free one
#   deps      Debian's Chromium (apt-get, only when /usr/bin/chromium is
#             missing) and the pinned playwright-core (npm ci in
#             tests/browser/); never lets a tool download a browser of its own
#   test      serve's answers checked (the wasm sent as Brotli, as gzip and
#             plain, each the same bytes), node --test
#             tests/browser/session.test.mjs and presentation.test.mjs (over
#             the Node build), then tests/browser/run.mjs in Chromium (needs
#             prepare, deps and target/wasm/node)

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WEB="$ROOT/web"
PKG_SRC="$ROOT/target/wasm/web"

log() { printf '[playground] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

prepare() {
    [[ -f "$PKG_SRC/svcnet_wasm.js" && -f "$PKG_SRC/svcnet_wasm_bg.wasm" ]] ||
        die "no browser package in $PKG_SRC: run make wasm first"
    rm -rf "$WEB/pkg"
    mkdir -p "$WEB/pkg"
    cp "$PKG_SRC/svcnet_wasm.js" "$PKG_SRC/svcnet_wasm_bg.wasm" "$WEB/pkg/"
    [[ -f "$PKG_SRC/svcnet_wasm.d.ts" ]] && cp "$PKG_SRC/svcnet_wasm.d.ts" "$WEB/pkg/"
    npm_ci "$ROOT/scripts/web-bundle"
    node "$ROOT/scripts/web-bundle/site.mjs"
    node "$ROOT/scripts/precompress.mjs" "$WEB/pkg/svcnet_wasm_bg.wasm" "$WEB/pkg/svcnet_wasm.js" "$WEB/pkg/playground.js" |
        sed 's/^/[playground] web\/pkg\//' >&2
    page_size
    log "web/pkg/ is ready for any static host (.br and .gz beside the files for one that sends them)"
}

# Issue 16: what the page downloads besides its HTML and CSS, the wasm and
# its one script, at most 350,000 bytes gzip -9 together
# (SVCNET_PAGE_BUDGET=N for another limit, e.g. on rustup's wasm32 route,
# whose std is not built for size). Prints the sizes, writes them to
# target/wasm/page-size.txt and fails when the page is over.
page_size() {
    local wasm js budget="${SVCNET_PAGE_BUDGET:-350000}"
    wasm="$(gzip -9c "$WEB/pkg/svcnet_wasm_bg.wasm" | wc -c)"
    js="$(gzip -9c "$WEB/pkg/playground.js" | wc -c)"
    {
        echo "the page's download, gzip -9: svcnet_wasm_bg.wasm $wasm B + playground.js (web/js and the glue, minified) $js B = $((wasm + js)) B"
        if ((wasm + js <= budget)); then
            echo "budget (issue 16): at most $budget B; within it"
        else
            echo "budget (issue 16): at most $budget B; OVER by $((wasm + js - budget))"
        fi
    } | tee "$ROOT/target/wasm/page-size.txt" | sed 's/^/[playground] /' >&2
    ((wasm + js <= budget)) || die "the page is over its budget (target/wasm/page-size.txt)"
}

# npm ci in "$1" unless node_modules/ was installed from the same lock file.
npm_ci() {
    local dir="$1" lock="$1/package-lock.json" stamp="$1/node_modules/.svcnet-lock"
    if [[ -f "$stamp" ]] && cmp -s "$lock" "$stamp"; then
        log "${dir#"$ROOT"/}: already installed from package-lock.json"
    else
        command -v npm >/dev/null || die "npm is needed in ${dir#"$ROOT"/} (Node 20 and npm come with the machine)"
        (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund >&2)
        cp "$lock" "$stamp"
    fi
}

offline() {
    [[ -f "$WEB/pkg/svcnet_wasm.js" ]] || die "web/pkg/ is missing: run make playground-site (or scripts/playground.sh prepare)"
    npm_ci "$ROOT/scripts/web-bundle"
    node "$ROOT/scripts/web-bundle/bundle.mjs" "$ROOT/target/playground-offline"
}

port_free() {
    python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
PY
}

serve() {
    local port="${1:-8080}"
    [[ -f "$WEB/pkg/svcnet_wasm.js" ]] || die "web/pkg/ is missing: run make playground (or scripts/playground.sh prepare)"
    command -v python3 >/dev/null || die "python3 is needed to serve web/ (apt-get install -y python3), or serve web/ with any static server"
    local tries=0
    until port_free "$port"; do
        port=$((port + 1)); tries=$((tries + 1))
        ((tries < 50)) || die "no free port found"
    done
    echo
    echo "  Playground: http://localhost:$port/"
    echo "  (serving $WEB; Ctrl+C stops it)"
    echo
    exec python3 "$ROOT/scripts/serve-precompressed.py" "$port" "$WEB"
}

deps() {
    if [[ ! -x /usr/bin/chromium ]]; then
        log "installing Debian's chromium"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 ||
            { apt-get update >/dev/null && apt-get install -y --no-install-recommends chromium >/dev/null; }
    fi
    log "$(/usr/bin/chromium --version 2>/dev/null || echo 'chromium: version unknown')"
    npm_ci "$ROOT/tests/browser"
}

# Starts serve's server on a free port, asks for the wasm with each
# Accept-Encoding, and checks the Content-Encoding and that the bytes,
# decoded, are the file's.
serve_check() {
    local port=8180
    until port_free "$port"; do port=$((port + 1)); done
    python3 "$ROOT/scripts/serve-precompressed.py" "$port" "$WEB" 2>/dev/null &
    local server=$!
    local status=0
    python3 - "$port" "$WEB/pkg/svcnet_wasm_bg.wasm" <<'PY' || status=1
import gzip, subprocess, sys, time, urllib.request
port, path = sys.argv[1], sys.argv[2]
want = open(path, "rb").read()
url = f"http://127.0.0.1:{port}/pkg/svcnet_wasm_bg.wasm"
def fetch(accept):
    for _ in range(50):
        try:
            request = urllib.request.Request(url, headers={"Accept-Encoding": accept})
            with urllib.request.urlopen(request) as r:
                return r.headers.get("Content-Encoding"), r.headers.get("Content-Type"), r.read()
        except OSError:
            time.sleep(0.1)
    sys.exit("the server did not answer")
decode = {
    "br": lambda b: subprocess.run(["node", "-e", "process.stdout.write(require('zlib').brotliDecompressSync(require('fs').readFileSync(0)))"], input=b, capture_output=True, check=True).stdout,
    "gzip": gzip.decompress,
    None: lambda b: b,
}
for accept, coding in (("gzip, deflate, br", "br"), ("gzip", "gzip"), ("identity", None)):
    got, kind, body = fetch(accept)
    assert got == coding, f"Accept-Encoding {accept!r}: Content-Encoding {got!r}, expected {coding!r}"
    assert kind == "application/wasm", f"Content-Type {kind!r}"
    assert decode[coding](body) == want, f"Accept-Encoding {accept!r}: not the file's bytes"
    print(f"[playground] serve: Accept-Encoding {accept!r} -> {coding or 'identity'}, {len(body)} bytes", file=sys.stderr)
PY
    kill "$server"
    wait "$server" 2>/dev/null || true
    return "$status"
}

run_tests() {
    [[ -f "$ROOT/target/wasm/node/svcnet_wasm.js" ]] || die "no Node package in target/wasm/node: run make wasm first"
    [[ -f "$ROOT/target/playground-offline/index.html" ]] || die "no file:// build in target/playground-offline: run make playground-site first"
    cd "$ROOT/tests/browser"
    # The session and the presentation-only guard over the Node build first
    # (no browser), then Chromium.
    local status=0
    serve_check || status=1
    node --test session.test.mjs presentation.test.mjs || status=1
    node run.mjs || status=1
    return "$status"
}

case "${1:-}" in
    prepare) prepare ;;
    offline) offline ;;
    serve) serve "${2:-8080}" ;;
    deps) deps ;;
    test) run_tests ;;
    *) echo "usage: $0 prepare | offline | serve [PORT] | deps | test" >&2; exit 2 ;;
esac
