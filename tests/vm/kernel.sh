#!/usr/bin/env bash
# The agent's kernel side (ipvs_agent::kernel) against a real IPVS kernel,
# cross-checked with the real ipvsadm, ipvsadm-save and ip. Run it with
# `make vm-kernel`, or
#   cargo build --release -p ipvs-agent --example kernel_check
#   tests/vm/run.sh tests/vm/kernel.sh target/release/examples/kernel_check
# kernel_check (ipvs-agent/examples/kernel_check.rs) does one thing per
# subcommand; this script sets the scene and compares.
# The scenario functions are called through vm_scenario.
# shellcheck disable=SC2317
# shellcheck source=tests/vm/lib.sh
. /vm/lib.sh

POD_A4=10.244.1.11 POD_A6=fd00:10:244:1::11
POD_B4=10.244.1.12 POD_B6=fd00:10:244:1::12
CLIENT4=10.244.2.20 CLIENT6=fd00:10:244:2::20

topology() {
    vm_netns_add pod-a "$POD_A4" "$POD_A6"
    vm_netns_add pod-b "$POD_B4" "$POD_B6"
    vm_netns_add client "$CLIENT4" "$CLIENT6"
    for pod in pod-a pod-b; do
        vm_tcp_backend "$pod" 8080
        vm_udp_backend "$pod" 5353
    done
}

# Before vm_node_init, which sets some of them itself.
sysctls() {
    local out key value
    out="$(kernel_check sysctls --strict-arp)"
    printf '%s\n' "$out"
    vm_check sysctls-report-changes grep -q '^net.ipv4.vs.expire_nodest_conn 0 -> 1$' <<<"$out"
    for key in net/ipv4/vs/conntrack net/ipv4/vs/expire_nodest_conn net/ipv4/vs/expire_quiescent_template \
        net/ipv4/ip_forward net/ipv4/conf/all/arp_ignore; do
        vm_check_eq "sysctl-${key//\//.}" 1 "$(cat "/proc/sys/$key")"
    done
    vm_check_eq sysctl-net.ipv4.conf.all.arp_announce 2 "$(cat /proc/sys/net/ipv4/conf/all/arp_announce)"
    vm_check_eq sysctls-idempotent "0 changed" "$(kernel_check sysctls --strict-arp)"
}

family() {
    local out version size
    out="$(kernel_check family)"
    vm_info "$out"
    version="$(awk '{print $4}' <<<"$out")"
    size="$(awk '{print $6}' <<<"$out")"
    vm_check_eq get-info-matches-ipvsadm "IP Virtual Server version $version (size=$size)" "$(ipvsadm -Ln | head -n 1)"
}

plan() {
    topology
    vm_check no-kube-ipvs0-before bash -c '! ip link show kube-ipvs0 >/dev/null 2>&1'
    vm_check plan-applied-in-one-batch kernel_check plan
    ipvsadm -Ln
    vm_check_eq kube-ipvs0-created-down down "$(kernel_check link-state)"
    vm_check kube-ipvs0-down-per-ip bash -c "! ip -o link show kube-ipvs0 | grep -q '<[^>]*UP'"
    vm_check_eq kube-ipvs0-addresses-per-ip \
        "$(printf '%s\n' 10.96.0.10/32 10.96.0.11/32 10.96.0.12/32 fd00:10:96::20/128)" \
        "$(ip -o addr show dev kube-ipvs0 | awk '$3 == "inet" || $3 == "inet6" {print $4}' | grep -v '^fe80' | sort)"
    # The cross-check: the kernel's ipvsadm-save -n against the core's
    # rendering of the same table, byte for byte (order included).
    vm_check_eq ipvsadm-save-matches-core-rendering "$(kernel_check expected-save)" "$(ipvsadm-save -n)"
    vm_expect_backends plan-tcp-ipv4 tcp client 10.96.0.10 80 4 pod-a pod-b
    vm_expect_backends plan-tcp-ipv6-weight-0-skipped tcp client fd00:10:96::20 80 3 pod-a
    vm_expect_backends plan-udp-ipv4-persistent udp client 10.96.0.10 53 2 pod-a
    vm_expect_backends plan-udp-ipv6-persistent udp client fd00:10:96::20 53 2 pod-a

    vm_check_eq observe-addresses \
        "$(printf '%s\n' 10.96.0.10 10.96.0.11 10.96.0.12 fd00:10:96::20)" "$(kernel_check addresses)"
    vm_check unbind-address kernel_check unbind 10.96.0.12 fd00:10:96::20
    vm_check unbound-gone-per-ip bash -c '! ip -o addr show dev kube-ipvs0 | grep -E "10\.96\.0\.12/|fd00:10:96::20/" >/dev/null'
    vm_check unbind-absent-is-ok kernel_check unbind 10.96.0.12 fd00:10:96::20
    vm_check bind-twice-is-ok kernel_check bind 10.96.0.12 10.96.0.12 fd00:10:96::20
    vm_check_eq rebound-once-per-ip 2 "$(ip -o addr show dev kube-ipvs0 | grep -cE ' (10\.96\.0\.12/32|fd00:10:96::20/128) ')"
    vm_check_eq link-delete "deleted" "$(kernel_check link-delete)"
    vm_check link-gone-per-ip bash -c '! ip link show kube-ipvs0 >/dev/null 2>&1'
    vm_check_eq observe-without-link-no-addresses "" "$(kernel_check addresses)"
    vm_check_eq link-delete-absent "absent" "$(kernel_check link-delete)"
}

RULES=/tmp/rules.txt

restore() {
    topology
    vm_kube_ipvs0
    vm_vip_add 10.96.0.50
    vm_vip_add fd00:10:96::50
    # Direct routing (-g) keeps the virtual port: ipvsadm ignores another.
    cat >"$RULES" <<'EOF'
-A -t 10.96.0.50:80 -s rr
-a -t 10.96.0.50:80 -r 10.244.1.11:8080 -m -w 1
-a -t 10.96.0.50:80 -r 10.244.1.12:8080 -m -w 1
-A -u 10.96.0.50:53 -s wrr -p 60 -M 255.255.0.0
-a -u 10.96.0.50:53 -r 10.244.1.11:5353 -m -w 5
-A -t [fd00:10:96::50]:80 -s sh -b sh-port
-a -t [fd00:10:96::50]:80 -r [fd00:10:244:1::11]:8080 -m -w 0
-a -t [fd00:10:96::50]:80 -r [fd00:10:244:1::12]:80 -g -w 1
-A --sctp-service 10.96.0.51:9000 -s lc
-a --sctp-service 10.96.0.51:9000 -r 10.244.1.12:9000 -m -w 2
-A -t 10.96.0.52:443 -s mh -b mh-fallback,mh-port -p 1800
-A -u [fd00:10:96::50]:53 -s rr -p 300 -M 64
EOF
    ipvsadm -R <"$RULES"
    ipvsadm-save -n
    vm_check observe-reads-ipvsadm-restore kernel_check observe-matches "$RULES"
    # One connection held open (active), one finished (inactive).
    vm_conn_open held client 10.96.0.50 80
    vm_tcp_request client 10.96.0.50 80 >/dev/null
    ipvsadm -Ln
    vm_check observe-counters-match-ipvsadm kernel_check counters --nonzero
    # A few virtual servers read on their own (what the sync loop does on a
    # removal and while real servers drain) equal the whole-table read,
    # counters included; one the kernel does not have is absent.
    local out status=0
    out="$(kernel_check reread TCP/10.96.0.50:80 'TCP/[fd00:10:96::50]:80' UDP/10.96.0.50:53 TCP/10.96.0.98:80)" || status=$?
    printf '%s\n' "$out"
    vm_check_eq reread-equals-observe 0 "$status"
    vm_check reread-counters grep -qE '^TCP/10\.96\.0\.50:80: present, 2 real servers, [1-9]' <<<"$out"
    vm_check reread-ipv6 grep -qx 'TCP/\[fd00:10:96::50\]:80: present, 2 real servers, 0 connections' <<<"$out"
    vm_check reread-absent grep -qx 'TCP/10.96.0.98:80: absent' <<<"$out"
    vm_conn_close held
}

errors() {
    local out
    vm_node_init
    out="$(kernel_check errors)" || true
    printf '%s\n' "$out"
    for case in eexist esrch enoent-dest enoent-scheduler esrch-delete others-applied one-sendmsg; do
        vm_check "errors-$case" grep -qx "$case ok" <<<"$out"
    done
    vm_check_eq errors-left-nothing "" "$(ipvsadm-save -n)"
}

foreign() {
    vm_node_init
    ipvsadm -A -f 7 -s rr
    ipvsadm -a -f 7 -r 10.244.1.11:0 -m
    ipvsadm -A --sctp-service 10.96.0.77:9000 -s lc
    local before
    before="$(ipvsadm-save -n)"
    vm_check foreign-observe-and-apply kernel_check foreign
    vm_check_eq foreign-untouched "$before" "$(ipvsadm-save -n)"
}

timeouts() {
    local original
    original="$(kernel_check timeouts)"
    vm_check_eq get-config-matches-ipvsadm "Timeout (tcp tcpfin udp): $original" "$(ipvsadm -L --timeout)"
    kernel_check set-timeouts 901 121 301
    vm_check_eq set-config-seen-by-ipvsadm "Timeout (tcp tcpfin udp): 901 121 301" "$(ipvsadm -L --timeout)"
    vm_check_eq get-config-after-set "901 121 301" "$(kernel_check timeouts)"
    # shellcheck disable=SC2086 # three numbers
    kernel_check set-timeouts $original
    vm_check_eq set-config-restored "Timeout (tcp tcpfin udp): $original" "$(ipvsadm -L --timeout)"
}

# The core's own planner against observe(), with foreign virtual servers
# (a fwmark one, one on the node IP outside the NodePort range) present.
converge() {
    topology
    ipvsadm -A -f 7 -s rr
    ipvsadm -A -t 192.0.2.10:8080 -s wlc
    ipvsadm -a -t 192.0.2.10:8080 -r 10.244.1.11:8080 -m
    local foreign out
    foreign="$(ipvsadm-save -n)"
    out="$(kernel_check converge)"
    printf '%s\n' "$out"
    for step in initial changed cleanup; do
        vm_check "converge-$step-re-plan-empty" grep -qx "$step: re-plan after apply is empty" <<<"$out"
    done
    vm_check_eq converge-cleanup-left-foreign-only "$foreign" "$(ipvsadm-save -n)"
    vm_check_eq converge-cleanup-unbound-all "" "$(kernel_check addresses)"
}

flush() {
    vm_node_init
    ipvsadm -A -t 10.96.0.70:80 -s rr
    ipvsadm -a -t 10.96.0.70:80 -r 10.244.1.11:8080 -m
    ipvsadm -A -f 9 -s rr
    vm_check flush kernel_check flush
    vm_check_eq flush-emptied-the-table "" "$(ipvsadm-save -n)"
}

# Not a check: what the kernel does with two dumps in one sendmsg (why
# observe() sends one GET_DEST dump per round trip).
two_dumps() {
    vm_node_init
    ipvsadm -A -t 10.96.0.60:80 -s rr
    ipvsadm -a -t 10.96.0.60:80 -r 10.244.1.11:8080 -m
    ipvsadm -A -t 10.96.0.61:80 -s rr
    ipvsadm -a -t 10.96.0.61:80 -r 10.244.1.12:8080 -m
    local line
    while read -r line; do vm_info "two GET_DEST dumps in one sendmsg: $line"; done < <(kernel_check two-dumps)
}

# Many operations in one apply: cut into several batches, every answer read.
scale() {
    local out
    vm_node_init
    out="$(kernel_check scale 1500)"
    printf '%s\n' "$out"
    vm_check scale-all-applied grep -q '^apply: 4500 operations, 4500 applied, 0 failed' <<<"$out"
    vm_check scale-several-batches grep -qE ' ([2-9]|[1-9][0-9]) sendmsg calls' <<<"$out"
    vm_check scale-observed grep -q '^observe: 1500 virtual servers, 3000 real servers' <<<"$out"
    vm_check scale-deleted grep -q '^delete: 1500 applied, 0 failed' <<<"$out"
    vm_check_eq scale-left-nothing "" "$(ipvsadm-save -n)"
}

# Many addresses on kube-ipvs0 in one apply: cut into a few batches, every
# answer read; binding them again (EEXIST) and unbinding them succeed.
bind_many() {
    local out n=4000
    vm_node_init
    out="$(kernel_check bind-many $n)"
    printf '%s\n' "$out"
    vm_check bind-many-applied grep -qE "^bind: $n applied, 0 failed, [2-9] sendmsg calls, 0 lost" <<<"$out"
    vm_check bind-many-all-bound grep -qx "bind: $n of the $n addresses on kube-ipvs0" <<<"$out"
    vm_check bind-many-again-ok grep -qE "^bind-again: $n applied, 0 failed" <<<"$out"
    vm_check_eq bind-many-bound-per-ip "$n" "$(ip -o addr show dev kube-ipvs0 | grep -c ' inet 10\.120\.')"
    out="$(kernel_check unbind-many $n)"
    printf '%s\n' "$out"
    vm_check bind-many-unbound grep -qE "^unbind: $n applied, 0 failed, [2-9] sendmsg calls, 0 lost" <<<"$out"
    vm_check_eq bind-many-none-left-per-ip 0 "$(ip -o addr show dev kube-ipvs0 | grep -c ' inet 10\.120\.' || true)"
}

# Last: unload IPVS and expect the clear message.
no_ip_vs() {
    local module out status=0
    ipvsadm -C
    for module in $(awk '$1 ~ /^ip_vs_/ {print $1}' /proc/modules) ip_vs; do
        rmmod "$module" 2>/dev/null || true
    done
    if grep -q '^ip_vs ' /proc/modules; then
        vm_skip no-ip-vs-message "ip_vs could not be unloaded"
        return 0
    fi
    out="$(kernel_check family 2>&1)" || status=$?
    vm_info "$out"
    vm_check_eq no-ip-vs-exit-status 1 "$status"
    vm_check no-ip-vs-message grep -q 'the IPVS family is not registered: load the ip_vs kernel module (modprobe ip_vs)' <<<"$out"
}

vm_scenario sysctls sysctls
vm_scenario family family
vm_scenario plan plan
vm_reset
vm_scenario restore restore
vm_reset
vm_scenario errors errors
vm_reset
vm_scenario foreign foreign
vm_reset
vm_scenario timeouts timeouts
vm_scenario converge converge
vm_reset
vm_scenario flush flush
vm_scenario two-dumps two_dumps
vm_reset
vm_scenario scale scale
vm_reset
vm_scenario bind-many bind_many
vm_reset
vm_scenario no-ip-vs no_ip_vs
vm_finish
