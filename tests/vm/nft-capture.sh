#!/usr/bin/env bash
# What the real `nft -f` sends to the kernel and what the kernel answers,
# byte for byte, as tests/vm/ipvsadm-capture.sh does for ipvsadm: each case
# of tests/vm/nft-cases/cases runs `nft -f FILE` under strace in one fresh
# network namespace (in order: later cases see the table earlier ones left),
# and every netlink buffer it sent or received is written as a hex line:
#
#     # nft -f small.nft
#     # exit 0
#     > 14000000100a0100...      a buffer nft sent
#     < 2c0000000f0a0000...      a buffer the kernel answered
#
# The files (<case>.nl) leave the VM with vm_export; `make vm-nft` then runs
# ipvs-agent/tests/nft_captures.rs on them, which compares the agent's
# transaction with nft's. `make nft-goldens` copies them to
# ipvs-agent/tests/nft-captures/, the goldens `cargo test` checks.
#
#   tests/vm/run.sh tests/vm/nft-capture.sh /usr/bin/strace /usr/sbin/nft \
#       tests/vm/nft-cases:/vm/nft-cases ipvs-agent/tests/golden/examples.nft:/vm/nft-cases/examples.nft
#
# The scenario function is called through vm_scenario.
# shellcheck disable=SC2317
# shellcheck source=tests/vm/lib.sh
. /vm/lib.sh

CASES=/vm/nft-cases
OUT=/tmp/captures
NS=capture

capture_all() {
    local name want file status trace
    vm_load_netfilter || return 1
    ip netns add "$NS"
    vm_in "$NS" ip link set lo up
    mkdir -p "$OUT"
    while read -r name want file; do
        [[ -z $name || $name == \#* ]] && continue
        trace="$OUT/$name.strace"
        status=0
        vm_in "$NS" strace -o "$trace" -e trace=sendmsg,sendto,recvmsg,recvfrom \
            -e write=all -e read=all -xx nft -f "$CASES/$file" >"$OUT/$name.out" 2>&1 || status=$?
        {
            echo "# nft -f $file"
            echo "# exit $status"
            strace_to_hex "$trace"
        } >"$OUT/$name.nl"
        sed 's/^/    /' "$OUT/$name.out"
        # A failed check is counted; the remaining cases still run.
        vm_check_eq "$name-exit-status" "$want" "$status" || :
        vm_check "$name-sent-and-answered" bash -c "grep -q '^> ' '$OUT/$name.nl' && grep -q '^< ' '$OUT/$name.nl'" || :
        vm_export "$name.nl" "$OUT/$name.nl"
    done <"$CASES/cases"
    vm_info "nft as the captures saw it: $(nft --version 2>&1), kernel $(uname -r)"
}

vm_scenario nft-capture capture_all
vm_finish
