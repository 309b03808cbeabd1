#!/usr/bin/env bash
# What the real ipvsadm sends to the kernel and what the kernel answers, byte
# for byte: each command of tests/vm/ipvsadm-cases runs under strace in a
# fresh network namespace, and every netlink buffer it sent (sendmsg/sendto)
# or received (recvmsg/recvfrom) is written out as one hex line:
#
#     # ipvsadm -A -t 10.96.0.10:80 -s rr
#     # exit 0
#     > 24000000100005000b0b...      a buffer ipvsadm sent
#     < 5c0000001000000000...        a buffer the kernel answered
#
# The files (one per case, <case>.nl) leave the VM with vm_export; `make
# vm-ipvsadm` then runs ipvs-agent/tests/ipvsadm_captures.rs on them, which
# compares the agent's own requests with ipvsadm's and parses the kernel's
# answers. `make ipvsadm-goldens` copies them to
# ipvs-agent/tests/ipvsadm-captures/, the goldens that `cargo test` checks.
#
#   tests/vm/run.sh tests/vm/ipvsadm-capture.sh /usr/bin/strace tests/vm/ipvsadm-cases:/vm/ipvsadm-cases
#
# The scenario function is called through vm_scenario.
# shellcheck disable=SC2317
# shellcheck source=tests/vm/lib.sh
. /vm/lib.sh

CASES=/vm/ipvsadm-cases
OUT=/tmp/captures
NS=capture

# A namespace of its own: an empty IPVS table, and routes to everything so
# the kernel accepts NAT real servers.
namespace() {
    ip netns add "$NS"
    vm_in "$NS" ip link set lo up
    vm_in "$NS" ip link add uplink type dummy
    vm_in "$NS" ip link set uplink up
    vm_in "$NS" ip route add default dev uplink
    vm_in "$NS" ip -6 route add default dev uplink
}

capture_all() {
    local name want args status trace
    namespace
    mkdir -p "$OUT"
    while read -r name want args; do
        [[ -z $name || $name == \#* ]] && continue
        trace="$OUT/$name.strace"
        status=0
        # shellcheck disable=SC2086 # the arguments are words
        vm_in "$NS" strace -o "$trace" -e trace=sendmsg,sendto,recvmsg,recvfrom \
            -e write=all -e read=all -xx ipvsadm $args >"$OUT/$name.out" 2>&1 || status=$?
        {
            echo "# ipvsadm $args"
            echo "# exit $status"
            strace_to_hex "$trace"
        } >"$OUT/$name.nl"
        sed 's/^/    /' "$OUT/$name.out"
        # A failed check is counted; the remaining cases still run.
        vm_check_eq "$name-exit-status" "$want" "$status" || :
        vm_check "$name-sent-and-answered" bash -c "grep -q '^> ' '$OUT/$name.nl' && grep -q '^< ' '$OUT/$name.nl'" || :
        vm_export "$name.nl" "$OUT/$name.nl"
    done <"$CASES"
    vm_info "ipvsadm as the captures saw it: $(ipvsadm --version 2>&1)"
}

vm_scenario ipvsadm-capture capture_all
vm_finish
