#!/usr/bin/env bash
# What `conntrack -D` (conntrack-tools) sends and the kernel answers, for
# ipvs-agent/tests/conntrack_captures.rs, captured with strace in a network
# namespace of its own (its conntrack table is empty and private: the
# host's flows are never listed or deleted).
#
#   sudo scripts/conntrack-capture.sh [OUT-DIR]
#
# Default OUT-DIR: ipvs-agent/tests/conntrack-captures. Needs root,
# unshare, ip, nft (a rule using conntrack turns tracking on in the
# namespace), socat, strace and conntrack. For each family: one UDP
# datagram to an address nobody listens on (a black-holed entry: its reply
# source is the destination itself) and one to another, then
# `conntrack -D -p udp --orig-dst DST --reply-src DST` under strace. Each
# buffer sent (`> `) or received (`< `) becomes one hex line of
# `delete-udp4.nl` / `delete-udp6.nl`, after two comment lines (the command,
# the tool's version and the kernel).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ ${1:-} != --inside ]]; then
    out="$(realpath -m "${1:-$here/../ipvs-agent/tests/conntrack-captures}")"
    [[ $(id -u) == 0 ]] || { echo "conntrack-capture: run as root" >&2; exit 1; }
    for tool in unshare ip nft socat strace conntrack; do
        command -v "$tool" >/dev/null || { echo "conntrack-capture: $tool is missing" >&2; exit 1; }
    done
    mkdir -p "$out"
    exec unshare -n "$0" --inside "$out"
fi
out="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# strace's dump of each syscall's buffers, as strace_to_hex in tests/vm/lib.sh reads it
# (that file sets up the guest when sourced, so the host keeps this copy).
strace_to_hex() {
    awk '
        function flush() { if (hex != "") print dir, hex; hex = "" }
        /^(sendmsg|sendto|recvmsg|recvfrom)\(/ {
            flush()
            dir = ($0 ~ /^send/) ? ">" : "<"
            keep = ($0 !~ /MSG_PEEK/)
            next
        }
        /^ \| [0-9a-f]+  / {
            if (keep) { s = substr($0, 11, 48); gsub(/ /, "", s); hex = hex s }
            next
        }
        /^[a-z_0-9]+\(/ { flush() }
        END { flush() }
    ' "$1"
}

ip link set lo up
ip -6 addr add fd00::1/128 dev lo
ip -6 addr add fd00::2/128 dev lo
ip -6 addr add fd00::3/128 dev lo
nft 'add table inet t; add chain inet t out { type filter hook output priority 0; }; add rule inet t out ct state new counter'
sleep 1 # duplicate address detection

capture() { # NAME FAMILY STALE-DST KEPT-DST BIND-STALE BIND-KEPT
    local name=$1 family=$2 stale=$3 kept=$4 bind_stale=$5 bind_kept=$6 proto=UDP4
    [[ $family == ipv6 ]] && proto=UDP6
    echo q | socat -u - "$proto-SENDTO:$stale:53,bind=$bind_stale" || :
    echo q | socat -u - "$proto-SENDTO:$kept:53,bind=$bind_kept" || :
    local dst=${stale#[}
    dst=${dst%]}
    strace -o "$work/$name.strace" -e trace=sendmsg,sendto,recvmsg,recvfrom -e write=all -e read=all -xx \
        conntrack -f "$family" -D -p udp --orig-dst "$dst" --reply-src "$dst" >"$work/$name.out" 2>&1
    {
        echo "# conntrack -f $family -D -p udp --orig-dst $dst --reply-src $dst"
        echo "# $(conntrack --version 2>&1), kernel $(uname -r)"
        strace_to_hex "$work/$name.strace"
    } >"$out/$name.nl"
    sed 's/^/    /' "$work/$name.out"
    conntrack -f "$family" -L -p udp 2>&1 | sed 's/^/    left: /'
}

capture delete-udp4 ipv4 127.0.0.2 127.0.0.3 127.0.0.1:40000 127.0.0.1:40001
capture delete-udp6 ipv6 '[fd00::2]' '[fd00::3]' '[fd00::1]:40000' '[fd00::1]:40001'
echo "conntrack-capture: wrote $out/delete-udp4.nl and delete-udp6.nl"
