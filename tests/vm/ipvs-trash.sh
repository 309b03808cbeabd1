#!/usr/bin/env bash
# What adding a real server costs in IPVS while deleted ones wait in the
# kernel's "trash" (`make bench-ipvs-trash`; run with
#   tests/vm/run.sh tests/vm/ipvs-trash.sh).
#
# Why: under the soak's churn the agent's syncs cost about 3 ms an
# operation in the kernel, against about 50 µs when it programs from empty.
# IPVS keeps every deleted real server (on its own, or with its virtual
# server) on one list, the trash, for 2 to 3 minutes, so that connections
# still pointing at it stay valid. Adding a real server first walks that
# whole list to see if the same one can be taken back, so each add costs
# time in proportion to how many were deleted in the last minutes, whoever
# programs the kernel (the agent, kube-proxy or ipvsadm). The soak deletes
# real servers all the time.
#
# The measurement, with ipvsadm -R (one netlink request per line, as
# kube-proxy and the agent send them): 100 new virtual servers, then 1,000
# new real servers on them, with the trash empty, about 10,000 and about
# 31,000 deep, and once more after waiting for it to expire. The same adds
# on kube-ipvs0's addresses (the other suspect: 100 /32s added and deleted
# beside 1,000) are timed too. The figures go to ipvs-trash.md (exported;
# the Makefile copies it to benchmarks/).
# shellcheck disable=SC2317 # the scenarios are called through vm_scenario
# shellcheck source=tests/vm/lib.sh
. /vm/lib.sh
set -u

W=/run/ipvs-trash
mkdir -p "$W"
# How long a deleted real server can stay in the trash: a pass every 60 s
# marks it idle, and the first pass 120 s (IP_VS_DEST_TRASH_PERIOD) after
# that frees it, so up to 4 minutes; a 200 s wait left some behind.
EXPIRY_WAIT_S=270

# timed_ms COMMAND...: run COMMAND, print the whole milliseconds it took.
timed_ms() {
    local t0 t1
    t0=$(vm_now_us)
    "$@" || return 1
    t1=$(vm_now_us)
    echo $(((t1 - t0) / 1000))
}

# fill COUNT BASE: COUNT real servers on one virtual server, then the
# virtual server deleted: COUNT real servers into the trash. BASE (0-9) keeps
# every round's addresses apart.
fill() {
    local count="$1" base="$2"
    awk -v n="$count" -v b="$base" 'BEGIN {
        printf "-A -t 10.97.%d.1:80 -s rr\n", b
        for (i = 0; i < n; i++)
            printf "-a -t 10.97.%d.1:80 -r 10.%d.%d.%d:8080 -m -w 1\n", b, 200 + b, int(i / 250), i % 250 + 1
    }' >"$W/fill-$base.txt"
    ipvsadm -R <"$W/fill-$base.txt"
    ipvsadm -D -t "10.97.$base.1:80"
}

# measure LABEL ROUND TRASH: time 100 virtual servers, then 1,000 real
# servers on them (all new), then delete them (1,000 more into the trash).
# Rows go to files: each scenario runs in a subshell of its own.
measure() {
    local label="$1" round="$2" trash="$3" vs_ms rs_ms
    awk -v r="$round" 'BEGIN { for (j = 1; j <= 100; j++) printf "-A -t 10.98.%d.%d:80 -s rr\n", r, j }' >"$W/vs-$round.txt"
    awk -v r="$round" 'BEGIN {
        for (j = 1; j <= 100; j++)
            for (k = 0; k < 10; k++)
                printf "-a -t 10.98.%d.%d:80 -r 10.%d.%d.%d:8080 -m -w 1\n", r, j, 100 + r, j, k + 1
    }' >"$W/rs-$round.txt"
    vs_ms=$(timed_ms ipvsadm -R <"$W/vs-$round.txt") || return 1
    rs_ms=$(timed_ms ipvsadm -R <"$W/rs-$round.txt") || return 1
    [[ $(ipvsadm -Ln | grep -c "^  -> 10\.$((100 + round))\.") == 1000 ]] || { echo "expected 1,000 real servers"; return 1; }
    sed 's/^-A/-D/; s/ -s rr$//' "$W/vs-$round.txt" | ipvsadm -R
    # 1,000 real servers: their milliseconds are each one's microseconds.
    vm_info "$label: 100 virtual servers in $vs_ms ms, 1,000 real servers in $rs_ms ms ($rs_ms µs each)"
    echo "| $label | $trash | $vs_ms | $rs_ms |" >>"$W/rows.md"
    echo "$rs_ms" >"$W/rs-ms-$round"
}

# addresses EXISTING: time 100 /32 adds and 100 deletes on kube-ipvs0 with
# EXISTING others bound (ip -batch, one request each).
addresses() {
    local existing="$1" add_ms del_ms
    ip link del kube-ipvs0 2>/dev/null || true
    ip link add kube-ipvs0 type dummy
    awk -v n="$existing" 'BEGIN { for (i = 0; i < n; i++) printf "address add 10.96.%d.%d/32 dev kube-ipvs0\n", int(i / 250), i % 250 + 1 }' >"$W/addr-base.txt"
    [[ $existing == 0 ]] || ip -batch "$W/addr-base.txt"
    awk 'BEGIN { for (i = 0; i < 100; i++) printf "address add 10.111.0.%d/32 dev kube-ipvs0\n", i + 1 }' >"$W/addr-add.txt"
    sed 's/^address add/address del/' "$W/addr-add.txt" >"$W/addr-del.txt"
    add_ms=$(timed_ms ip -batch "$W/addr-add.txt") || return 1
    del_ms=$(timed_ms ip -batch "$W/addr-del.txt") || return 1
    vm_info "kube-ipvs0 with $existing addresses: 100 added in $add_ms ms, deleted in $del_ms ms"
    echo "| $existing | $add_ms | $del_ms |" >>"$W/addr-rows.md"
}

prepare() {
    modprobe ip_vs 2>/dev/null || true
    ipvsadm -C
}

rounds() {
    measure "trash empty" 1 "0" || return 1
    fill 9000 1 || return 1
    measure "trash about 10,000" 2 "about 10,000" || return 1
    fill 20000 2 || return 1
    measure "trash about 31,000" 3 "about 31,000" || return 1
    vm_info "waiting ${EXPIRY_WAIT_S} s for the trash to expire"
    sleep "$EXPIRY_WAIT_S"
    measure "after ${EXPIRY_WAIT_S} s (trash expired)" 4 "0 (expired)" || return 1
}

address_rounds() {
    addresses 0
    addresses 1000
    ip link del kube-ipvs0
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }'; }

report() {
    local empty full expired ratio
    empty=$(cat "$W/rs-ms-1") full=$(cat "$W/rs-ms-3") expired=$(cat "$W/rs-ms-4")
    ratio=$(ratio "$full" "$empty")
    {
        echo "# IPVS: the cost of adding real servers against the trash"
        echo
        echo "From \`make bench-ipvs-trash\` (tests/vm/ipvs-trash.sh): kernel $(uname -r) in QEMU, $(nproc) CPU,"
        echo "\`ipvsadm -R\` (one netlink request per line), 100 new virtual servers then"
        echo "1,000 new real servers on them per row; the trash is filled by adding real"
        echo "servers to one virtual server and deleting it."
        echo
        echo "| trash | deleted real servers waiting | 100 virtual servers (ms) | 1,000 real servers (ms) |"
        echo "| --- | ---: | ---: | ---: |"
        cat "$W/rows.md"
        echo
        echo "With about 31,000 in the trash a real server's add costs ${ratio}x what it costs with it"
        echo "empty. After ${EXPIRY_WAIT_S} s of waiting it costs $(ratio "$expired" "$empty")x (the trash expires"
        echo "between 2 and 4 minutes after a delete)."
        echo
        echo "kube-ipvs0 (the other suspect), 100 /32 addresses added then deleted:"
        echo
        echo "| addresses already bound | add 100 (ms) | delete 100 (ms) |"
        echo "| ---: | ---: | ---: |"
        cat "$W/addr-rows.md"
    } >"$W/ipvs-trash.md"
    vm_export ipvs-trash.md "$W/ipvs-trash.md"
    vm_info "a real server's add with about 31,000 in the trash: ${ratio}x its cost with the trash empty"
    vm_pass report
}

vm_scenario prepare prepare
vm_scenario addresses address_rounds
vm_scenario rounds rounds
vm_scenario report report
vm_finish
