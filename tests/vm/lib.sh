# shellcheck shell=bash
# Helpers for test scripts that run inside the svcnet test VM (tests/vm/run.sh).
# A test script starts with
#
#     . /vm/lib.sh
#
# and runs as root under bash in the VM's root network namespace, which plays
# the Kubernetes node. Everything below stays inside the VM: it has no network
# card, and every address lives in a namespace the test creates.
#
# Results: vm_pass, vm_fail, vm_check, vm_check_eq, vm_scenario; vm_finish last.
# Topology: vm_node_init, vm_kube_ipvs0, vm_vip_add, vm_netns_add, vm_reset.
# Backends: vm_tcp_backend, vm_udp_backend (they answer with their name).
# Clients: vm_tcp_request, vm_udp_request, vm_expect_backends, vm_conn_*.
# Misc: vm_in, vm_wait_until, vm_export, vm_ipvs_save, vm_info, vm_sysctl.
# Network: vm_load_netfilter, vm_user_net (run.sh with VM_NET=user).
# The real kube-proxy: vm_kube_prepare, vm_kube_node.
# Logs: vm_kubeconfig_secrets, vm_no_secrets_in_logs.
# See tests/vm/README.md for the full list with arguments.

# Addresses of the node (the VM's root namespace), on the dummy "node0" that
# also carries the default routes. Documentation ranges: nothing answers there.
VM_NODE_IF=node0
VM_NODE_IP4=${VM_NODE_IP4:-192.0.2.10}
VM_NODE_IP6=${VM_NODE_IP6:-2001:db8::10}
# What a namespace's default route points at: 169.254.1.1 (answered by proxy
# ARP on the node's end of the veth) and fe80::1 (on the node's end).
VM_GW4=169.254.1.1
VM_GW6=fe80::1

VM_STATE=/run/svcnet-vm
mkdir -p "$VM_STATE"
: >>"$VM_STATE/results"
: >>"$VM_STATE/pids"

# --- results -----------------------------------------------------------------
# Every result is one console line, "SVCNET-VM: PASS name" or
# "SVCNET-VM: FAIL name (why)", and one line in $VM_STATE/results, so that
# checks made in subshells (vm_scenario) count too.

# vm_info TEXT...: a narration line.
vm_info() { echo "SVCNET-VM: INFO $*"; }

# vm_pass NAME [DETAIL...]
vm_pass() {
    local name="$1"
    shift
    echo "PASS $name" >>"$VM_STATE/results"
    echo "SVCNET-VM: PASS $name${*:+ ($*)}"
}

# vm_fail NAME [WHY...]; returns 1, so `vm_fail x why || true` if going on.
vm_fail() {
    local name="$1"
    shift
    echo "FAIL $name" >>"$VM_STATE/results"
    echo "SVCNET-VM: FAIL $name${*:+ ($*)}"
    return 1
}

# vm_skip NAME WHY...: counted neither way.
vm_skip() {
    local name="$1"
    shift
    echo "SVCNET-VM: SKIP $name${*:+ ($*)}"
}

# vm_check NAME CMD [ARGS...]: PASS if CMD succeeds, else FAIL with its status
# (CMD's output goes to the console). Returns CMD's status.
vm_check() {
    local name="$1" status=0
    shift
    "$@" || status=$?
    if ((status == 0)); then
        vm_pass "$name"
    else
        vm_fail "$name" "exit status $status: $*" || true
    fi
    return "$status"
}

# vm_check_eq NAME EXPECTED ACTUAL: string equality; a diff on failure.
vm_check_eq() {
    local name="$1" expected="$2" actual="$3"
    if [[ $expected == "$actual" ]]; then
        vm_pass "$name"
        return 0
    fi
    printf '%s\n' "$expected" >"$VM_STATE/expected"
    printf '%s\n' "$actual" >"$VM_STATE/actual"
    echo "--- $name: expected"
    cat "$VM_STATE/expected"
    echo "--- $name: actual"
    cat "$VM_STATE/actual"
    echo "--- $name: diff"
    (cd "$VM_STATE" && diff -u expected actual) || true
    vm_fail "$name" "differs"
}

# vm_scenario NAME FUNCTION [ARGS...]: run FUNCTION in a subshell under
# `set -eE -o pipefail`; PASS NAME if it returns 0 and reported no FAIL, else
# FAIL NAME, after a line naming the command that failed. The subshell keeps
# the scenario's variables and `cd` from leaking; background processes it
# starts (vm_*_backend) stay until vm_reset or the end.
# Call it as a plain command, not in `if`, `&&`, `||` or `!`: bash ignores
# set -e inside those, so a failing command would not stop the scenario (it
# says so and fails if called that way).
vm_scenario() {
    local name="$1" start fails_before fails_after status=0 had_e=0 probe took
    shift
    [[ $- == *e* ]] && had_e=1
    set +e
    probe="$(set -e; false; echo ignored)"
    fails_before="$(grep -c '^FAIL ' "$VM_STATE/results")"
    start="$(vm_uptime)"
    echo "SVCNET-VM: SCENARIO $name"
    if [[ $probe == ignored ]]; then
        vm_fail "$name" "vm_scenario was called inside if/&&/||/!, where set -e cannot work"
        status=1
    else
        (
            set -eE -o pipefail
            trap 'echo "SVCNET-VM: INFO $name: \`$BASH_COMMAND\` failed with status $? (line $LINENO)"' ERR
            "$@"
        )
        status=$?
        fails_after="$(grep -c '^FAIL ' "$VM_STATE/results")"
        took="$(awk -v a="$start" -v b="$(vm_uptime)" 'BEGIN { printf "%.1f", b - a }')"
        if ((status != 0)); then
            vm_fail "$name" "status $status after ${took} s"
        elif ((fails_after > fails_before)); then
            vm_fail "$name" "$((fails_after - fails_before)) check(s) failed, ${took} s"
            status=1
        else
            vm_pass "$name" "${took} s"
        fi
    fi
    ((had_e)) && set -e
    return "$status"
}

# vm_finish: print the tally and exit: 0 if something passed and nothing
# failed, else 1. The last line of a test script.
vm_finish() {
    local passed failed
    passed="$(grep -c '^PASS ' "$VM_STATE/results" || true)"
    failed="$(grep -c '^FAIL ' "$VM_STATE/results" || true)"
    echo "SVCNET-VM: SUMMARY $passed passed, $failed failed"
    if ((failed == 0 && passed > 0)); then exit 0; fi
    ((passed > 0)) || echo "SVCNET-VM: INFO no check passed"
    exit 1
}

# --- small tools -------------------------------------------------------------

# vm_uptime: seconds since boot, with hundredths.
vm_uptime() { cut -d' ' -f1 /proc/uptime; }

# vm_now_us: microseconds since the epoch (bash's EPOCHREALTIME).
vm_now_us() { local t=$EPOCHREALTIME; echo "${t/./}"; }

# vm_insert_sorted ARRAY VALUE: VALUE put into the array named ARRAY, which
# stays in byte order (sort's under LC_ALL=C). Bash's builtins only, for the
# short lists a guest script sorts often: a process costs about a tenth of
# a second in the emulated VM.
vm_insert_sorted() {
    local -n _vm_sorted="$1"
    local _vm_value="$2" _vm_i LC_ALL=C
    for ((_vm_i = ${#_vm_sorted[@]}; _vm_i > 0; _vm_i--)); do
        [[ ${_vm_sorted[_vm_i - 1]} > $_vm_value ]] || break
        _vm_sorted[_vm_i]="${_vm_sorted[_vm_i - 1]}"
    done
    _vm_sorted[_vm_i]="$_vm_value"
}

# vm_sysctl KEY VALUE: write /proc/sys (KEY with dots or slashes; device
# names in KEY may contain dots only if written with slashes).
vm_sysctl() {
    local key="$1" value="$2"
    [[ $key == */* ]] || key="${key//.//}"
    echo "$value" >"/proc/sys/$key"
}

# vm_in NS CMD [ARGS...]: run CMD in network namespace NS ("" or "root": the
# node itself).
vm_in() {
    local ns="$1"
    shift
    if [[ -z $ns || $ns == root ]]; then
        "$@"
    else
        ip netns exec "$ns" "$@"
    fi
}

# vm_wait_until TIMEOUT-SECONDS CMD [ARGS...]: run CMD (quietly) every 0.2 s
# until it succeeds; 1 if it never did in time.
vm_wait_until() {
    local timeout="$1" deadline
    shift
    deadline="$(awk -v u="$(vm_uptime)" -v t="$timeout" 'BEGIN { print u + t }')"
    while true; do
        "$@" >/dev/null 2>&1 && return 0
        awk -v u="$(vm_uptime)" -v d="$deadline" 'BEGIN { exit !(u >= d) }' && return 1
        sleep 0.2
    done
}

# vm_bg NS CMD [ARGS...]: start CMD in namespace NS ("" = node) in the
# background, output to the console; remembered for vm_reset. Sets VM_BG_PID.
vm_bg() {
    local ns="$1"
    shift
    if [[ -z $ns || $ns == root ]]; then
        "$@" &
    else
        # `ip netns exec` execs CMD itself: $! is CMD's process.
        ip netns exec "$ns" "$@" &
    fi
    VM_BG_PID=$!
    echo "$VM_BG_PID" >>"$VM_STATE/pids"
}

# vm_export NAME FILE: send FILE out of the VM: run.sh writes it to
# $SVCNET_VM_DIR/out/<test>/NAME (target/vm/out/...). It travels over the
# serial console as base64 between "SVCNET-VM: FILE-BEGIN NAME" and
# "SVCNET-VM: FILE-END NAME" lines, at about 250 KB/s under TCG; run.sh
# shows the markers, not the base64, and keeps it all in the log.
vm_export() {
    local name="$1" file="$2"
    [[ $name =~ ^[A-Za-z0-9._-]+$ ]] || { echo "vm_export: bad name $name" >&2; return 1; }
    echo "SVCNET-VM: FILE-BEGIN $name"
    base64 <"$file"
    echo "SVCNET-VM: FILE-END $name"
}

# vm_load_netfilter: load modules/netfilter.order (setup.sh): the NIC of
# QEMU's user networking (run.sh with VM_NET=user) and what the real
# kube-proxy's iptables and ipset half needs. Idempotent.
vm_load_netfilter() {
    local mods=/lib/modules/svcnet ko params
    [[ -f $VM_STATE/netfilter-loaded ]] && return 0
    while read -r ko params; do
        [[ -n $ko ]] || continue
        # shellcheck disable=SC2086 # params are words
        insmod "$mods/$ko" $params || { vm_fail "insmod $ko"; return 1; }
    done <"$mods/netfilter.order"
    : >"$VM_STATE/netfilter-loaded"
}

# vm_user_net: bring up eth0 of QEMU's user networking (run.sh with
# VM_NET=user) at QEMU's fixed addresses: the guest is 10.0.2.15, and a
# connection to 10.0.2.2 reaches the host's loopback. Needs vm_load_netfilter.
vm_user_net() {
    ip link set eth0 up || return 1
    ip addr add 10.0.2.15/24 dev eth0
    ip route add default via 10.0.2.2 dev eth0
}

# vm_kube_prepare API_PORT: make the VM a place where the real kube-proxy
# runs and reaches the test apiserver on the host's loopback port API_PORT
# (tests/vm/kube-proxy-diff.sh, bench-kube-proxy.sh): the netfilter modules
# and user networking, iptables-nft under its usual names, a modprobe that
# answers for the loaded modules (busybox's has no index here, and
# `kube-proxy --cleanup` does nothing when `modprobe -va ip_vs` fails),
# /run/kubeconfig-vm (the host's apiserver) and /run/kubeconfig-node
# (127.0.0.1:6443 inside a namespace made by vm_kube_node) from
# /data/kubeconfig, and the Unix socket those namespaces reach it through.
vm_kube_prepare() {
    local port="$1" t
    vm_load_netfilter || return 1
    vm_user_net || { vm_fail "user networking" "eth0 did not come up"; return 1; }
    rm -f /usr/sbin/modprobe /usr/bin/modprobe
    cat >/usr/sbin/modprobe <<'EOF'
#!/bin/sh
for m in "$@"; do
    case $m in -*) continue ;; esac
    [ -d "/sys/module/$(echo "$m" | tr - _)" ] || { echo "modprobe: FATAL: Module $m not found." >&2; exit 1; }
done
EOF
    chmod 755 /usr/sbin/modprobe
    # Debian's iptables is iptables-nft: one binary, named by how it is called.
    for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
        ln -sf xtables-nft-multi "/usr/sbin/$t"
    done
    sed "s|__SERVER__|https://10.0.2.2:$port|" /data/kubeconfig >/run/kubeconfig-vm
    sed "s|__SERVER__|https://127.0.0.1:6443|" /data/kubeconfig >/run/kubeconfig-node
    # File system paths are shared by all namespaces: socat here connects
    # the socket to the host, socat in each namespace listens on its own
    # 127.0.0.1:6443.
    socat UNIX-LISTEN:/run/apiserver.sock,fork TCP:10.0.2.2:"$port" &
    echo $! >>"$VM_STATE/pids"
}

# vm_kube_node NS IP4 [IP6]: a network namespace shaped like a node: a dummy
# eth0 with the node's addresses carrying the default routes (the kernel
# refuses NAT real servers it cannot route), and the apiserver at
# 127.0.0.1:6443 (/run/kubeconfig-node; needs vm_kube_prepare).
vm_kube_node() {
    local ns="$1" ip4="$2" ip6="${3:-}"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip netns exec "$ns" sh -c 'echo 0 >/proc/sys/net/ipv6/conf/default/accept_dad'
    ip -n "$ns" link add eth0 type dummy
    ip -n "$ns" link set eth0 up
    ip -n "$ns" addr add "$ip4/24" dev eth0
    ip -n "$ns" route add default dev eth0
    if [[ -n $ip6 ]]; then
        ip -n "$ns" addr add "$ip6/64" dev eth0 nodad
        ip -n "$ns" -6 route add default dev eth0
    fi
    ip netns exec "$ns" socat TCP-LISTEN:6443,bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:/run/apiserver.sock &
    echo $! >>"$VM_STATE/pids"
}

# vm_ipvs_save: what `ipvsadm-save -n` prints.
vm_ipvs_save() { ipvsadm-save -n; }

# --- topology ----------------------------------------------------------------

# vm_node_init: make the root namespace a node. Idempotent.
#  - sysctls traffic through IPVS needs: net.ipv4.ip_forward=1,
#    net.ipv6.conf.all.forwarding=1, net.ipv4.vs.conntrack=1 (what else
#    kube-proxy sets is left to the code under test);
#  - no duplicate address detection (addresses usable at once);
#  - dummy "node0" with $VM_NODE_IP4/24 and $VM_NODE_IP6/64, and IPv4 and IPv6
#    default routes through it: the kernel refuses NAT real servers it cannot
#    route ("address not unicast" / EINVAL), and the node IPs serve NodePorts.
vm_node_init() {
    [[ -e $VM_STATE/node-init ]] && return 0
    vm_sysctl net.ipv4.ip_forward 1
    vm_sysctl net.ipv6.conf.all.forwarding 1
    vm_sysctl net.ipv4.vs.conntrack 1
    vm_sysctl net.ipv6.conf.all.accept_dad 0
    vm_sysctl net.ipv6.conf.default.accept_dad 0
    ip link add "$VM_NODE_IF" type dummy
    ip link set "$VM_NODE_IF" up
    ip addr add "$VM_NODE_IP4/24" dev "$VM_NODE_IF"
    ip -6 addr add "$VM_NODE_IP6/64" dev "$VM_NODE_IF" nodad
    ip route add default dev "$VM_NODE_IF"
    ip -6 route add default dev "$VM_NODE_IF"
    touch "$VM_STATE/node-init"
}

# vm_kube_ipvs0: create the dummy kube-ipvs0, down, as the agent and
# kube-proxy create it (for tests that program IPVS without the agent).
# Idempotent.
vm_kube_ipvs0() {
    ip link show kube-ipvs0 >/dev/null 2>&1 || ip link add kube-ipvs0 type dummy
}

# vm_vip_add ADDR [DEV]: bind ADDR as /32 (IPv4) or /128 (IPv6) on DEV
# (default kube-ipvs0), as kube-proxy binds service IPs.
vm_vip_add() {
    local addr="$1" dev="${2:-kube-ipvs0}"
    if [[ $addr == *:* ]]; then
        ip -6 addr add "$addr/128" dev "$dev" nodad
    else
        ip addr add "$addr/32" dev "$dev"
    fi
}

# vm_netns_add NAME ADDR4 [ADDR6]: a namespace NAME (a pod, or a client)
# joined to the node by a veth pair: "v-NAME" on the node, "eth0" inside.
# NAME is at most 13 characters. Inside: lo up, ADDR4/32 and ADDR6/128 on
# eth0, default routes via 169.254.1.1 and fe80::1. On the node: a /32 and a
# /128 route to the addresses through v-NAME, proxy ARP for 169.254.1.1 and
# fe80::1 on v-NAME. Any number of namespaces may share a subnet (several
# pods of one node's pod CIDR), as with Calico's routing. Calls vm_node_init.
vm_netns_add() {
    local ns="$1" addr4="$2" addr6="${3:-}" host="v-$1"
    ((${#host} <= 15)) || { echo "vm_netns_add: name $ns is too long (13 characters at most)" >&2; return 1; }
    vm_node_init
    ip netns add "$ns"
    ip link add "$host" type veth peer name eth0 netns "$ns"
    vm_sysctl "net/ipv4/conf/$host/proxy_arp" 1
    ip link set "$host" up
    ip route add "$addr4/32" dev "$host"
    ip -n "$ns" link set lo up
    ip -n "$ns" link set eth0 up
    ip -n "$ns" addr add "$addr4/32" dev eth0
    ip -n "$ns" route add "$VM_GW4" dev eth0 scope link
    ip -n "$ns" route add default via "$VM_GW4" dev eth0
    if [[ -n $addr6 ]]; then
        ip -6 addr add "$VM_GW6/64" dev "$host" nodad
        ip -6 route add "$addr6/128" dev "$host"
        ip -n "$ns" -6 addr add "$addr6/128" dev eth0 nodad
        ip -n "$ns" -6 route add default via "$VM_GW6" dev eth0
    fi
}

# vm_reset: back to a bare VM for the next scenario: stop the background
# processes, delete every namespace, clear IPVS (ipvsadm -C), delete
# kube-ipvs0 and node0 (vm_node_init runs again on next use).
vm_reset() {
    local pid ns
    while read -r pid; do
        [[ -n $pid ]] && { kill "$pid" 2>/dev/null || true; }
    done <"$VM_STATE/pids"
    : >"$VM_STATE/pids"
    for ns in $(ip netns list | awk '{print $1}'); do
        # Whatever still runs in it (connection handlers forked by nc).
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            kill "$pid" 2>/dev/null || true
        done
        ip netns del "$ns"
    done
    ipvsadm -C
    ip link del kube-ipvs0 2>/dev/null || true
    ip link del "$VM_NODE_IF" 2>/dev/null || true
    rm -f "$VM_STATE/node-init"
    return 0
}

# --- backends ----------------------------------------------------------------
# A backend answers every request with one line, its NAME (default: the
# namespace's name). TCP backends then echo whatever the client sends until
# the client closes, so a connection can be held open (vm_conn_*).

# _vm_listening NS PROTO PORT: a socket listens (tcp) or is bound (udp) on
# PORT in NS.
_vm_listening() {
    local flag=-Htln
    [[ $2 == udp ]] && flag=-Huln
    [[ -n "$(vm_in "$1" ss "$flag" "sport = :$3")" ]]
}

# _vm_wait_port NS PROTO PORT: wait (5 s) until _vm_listening.
_vm_wait_port() {
    vm_wait_until 5 _vm_listening "$@" || {
        echo "no $2 socket on port $3 in namespace ${1:-root}" >&2
        return 1
    }
}

# vm_tcp_backend NS PORT [NAME]: busybox nc, one process per connection,
# listening on every IPv4 and IPv6 address of NS. Waits until it listens.
vm_tcp_backend() {
    local ns="$1" port="$2" name="${3:-$1}"
    # cat's complaint when a client resets the connection is not news.
    vm_bg "$ns" nc -ll -p "$port" -e /bin/sh -c "echo $name; exec cat 2>/dev/null"
    _vm_wait_port "$ns" tcp "$port"
}

# vm_udp_backend NS PORT [NAME]: socat, one process per datagram, IPv4 and
# IPv6; the answer is followed by an empty datagram that ends the client's
# wait (socat shut-null / null-eof). The answering shell reads the request
# before it answers: socat writes the datagram to the shell's input, and a
# shell that has already answered and exited makes that write fail (EPIPE),
# which can end socat before it sends the answer (seen once in a .ci/run of the
# conntrack test: "socat E write(6, …, 8): Broken pipe", no answer).
vm_udp_backend() {
    local ns="$1" port="$2" name="${3:-$1}"
    vm_bg "$ns" socat "UDP6-RECVFROM:$port,fork,ipv6only=0,shut-null" "SYSTEM:head -c 1 >/dev/null; echo $name"
    _vm_wait_port "$ns" udp "$port"
}

# --- clients -----------------------------------------------------------------

# vm_tcp_request NS ADDR PORT [TIMEOUT]: connect from NS ("" = node), print
# the first line the server sends; non-zero if none came in TIMEOUT (5) s.
# With VM_TCP_CLOSE=reset, the client (socat, SO_LINGER 0) is killed once
# the answer came, so the connection ends with a reset: IPVS then forgets it
# in 10 s (CLOSE), where a normal close leaves it counted as an inactive
# connection of its real server for 2 minutes (TIME_WAIT), which holds up
# graceful termination.
vm_tcp_request() {
    local ns="$1" addr="$2" port="$3" t="${4:-5}" reply target
    if [[ ${VM_TCP_CLOSE:-} == reset ]]; then
        if [[ $addr == *:* ]]; then target="TCP6:[$addr]:$port"; else target="TCP4:$addr:$port"; fi
        local out="$VM_STATE/request.$BASHPID" pid i
        : >"$out"
        # Not through vm_in: $! must be socat itself, not a subshell.
        if [[ -z $ns || $ns == root ]]; then
            socat -u "$target,linger=0" STDOUT >"$out" 2>/dev/null &
        else
            ip netns exec "$ns" socat -u "$target,linger=0" STDOUT >"$out" 2>/dev/null &
        fi
        pid=$!
        for ((i = 0; i < t * 20; i++)); do
            [[ -s $out && "$(tail -c 1 "$out")" == "" ]] && break
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.05
        done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        reply="$(head -n 1 "$out")"
        rm -f "$out"
    else
        reply="$(vm_in "$ns" timeout "$t" nc -w "$t" "$addr" "$port" </dev/null 2>/dev/null | head -n 1)" || true
    fi
    [[ -n $reply ]] || return 1
    printf '%s\n' "$reply"
}

# vm_udp_request NS ADDR PORT [TIMEOUT]: send one datagram from NS, print the
# first line of the answer; non-zero if none came in TIMEOUT (5) s.
vm_udp_request() {
    local ns="$1" addr="$2" port="$3" t="${4:-5}" reply target
    if [[ $addr == *:* ]]; then target="UDP6:[$addr]:$port"; else target="UDP4:$addr:$port"; fi
    reply="$(echo request | vm_in "$ns" timeout "$t" socat -t "$t" - "$target,null-eof" 2>/dev/null | head -n 1)" || true
    # No answer now and then before vm_udp_backend read the request first
    # (the backend's socat: "write: Broken pipe"): one more try all the same.
    [[ -n $reply ]] || reply="$(echo request | vm_in "$ns" timeout "$t" socat -t "$t" - "$target,null-eof" 2>/dev/null | head -n 1)" || true
    [[ -n $reply ]] || return 1
    printf '%s\n' "$reply"
}

# vm_expect_backends CHECK PROTO NS ADDR PORT COUNT BACKEND...: COUNT
# requests (PROTO tcp or udp) from NS to ADDR:PORT; PASS CHECK if every one
# was answered and the set of answers is exactly the BACKEND names, else
# FAIL. Prints how many answers each backend gave.
vm_expect_backends() {
    local check="$1" proto="$2" ns="$3" addr="$4" port="$5" count="$6" i reply
    shift 6
    local -A seen=()
    local lost=0 got want
    for ((i = 0; i < count; i++)); do
        if reply="$("vm_${proto}_request" "$ns" "$addr" "$port")"; then
            seen[$reply]=$((${seen[$reply]:-0} + 1))
        else
            lost=$((lost + 1))
        fi
    done
    got="$(for b in "${!seen[@]}"; do echo "$b"; done | sort | tr '\n' ' ')"
    want="$(printf '%s\n' "$@" | sort -u | tr '\n' ' ')"
    local tally
    tally="$(for b in "${!seen[@]}"; do printf '%s=%s ' "$b" "${seen[$b]}"; done)"
    tally="${tally% }"
    [[ $addr == *:* ]] && addr="[$addr]"
    [[ -z $ns || $ns == root ]] && ns=node
    if ((lost == 0)) && [[ $got == "$want" ]]; then
        vm_pass "$check" "$count $proto requests to $addr:$port from $ns: $tally"
    else
        vm_fail "$check" "$count $proto requests to $addr:$port from $ns: $tally${tally:+, }$lost unanswered; wanted ${want% }"
    fi
}

# Held TCP connections, for draining and restart scenarios. One client nc
# reads from a FIFO this shell keeps open; closing it closes the connection.
declare -gA VM_CONN_FD=() VM_CONN_PID=()

# vm_conn_open ID NS ADDR PORT: open connection ID from NS and wait (5 s) for
# the backend's first line (its name), which it prints and also leaves in
# VM_CONN_BACKEND (see vm_conn_backend). Call it directly, never inside
# $( ): the connection belongs to the shell that opened it.
vm_conn_open() {
    local id="$1" ns="$2" addr="$3" port="$4" fd
    local fifo="$VM_STATE/conn-$id.in" out="$VM_STATE/conn-$id.out"
    rm -f "$fifo" "$out"
    mkfifo "$fifo"
    # Read-write: opening does not wait for a reader, and the client's
    # read-only open then does not wait either.
    exec {fd}<>"$fifo"
    VM_CONN_FD[$id]=$fd
    (
        # The client must not hold the writing end itself, or it never sees
        # the end of its input.
        exec {fd}>&-
        if [[ -z $ns || $ns == root ]]; then
            exec nc "$addr" "$port"
        else
            exec ip netns exec "$ns" nc "$addr" "$port"
        fi
    ) <"$fifo" >"$out" 2>&1 &
    VM_CONN_PID[$id]=$!
    echo "$!" >>"$VM_STATE/pids"
    if ! vm_wait_until 5 test -s "$out"; then
        echo "vm_conn_open $id: no answer from $addr:$port" >&2
        return 1
    fi
    VM_CONN_BACKEND="$(vm_conn_backend "$id")"
    echo "$VM_CONN_BACKEND"
}

# vm_conn_backend ID: the first line connection ID received (the backend's
# name).
vm_conn_backend() { head -n 1 "$VM_STATE/conn-$1.out"; }

# vm_conn_alive ID [TIMEOUT]: send a line on connection ID and wait (5 s)
# for the backend to echo it back.
vm_conn_alive() {
    local id="$1" t="${2:-5}" token
    token="ping-$id-$RANDOM$RANDOM"
    [[ -n ${VM_CONN_FD[$id]:-} ]] || { echo "vm_conn_alive: no connection $id in this shell" >&2; return 1; }
    echo "$token" >&"${VM_CONN_FD[$id]}" || return 1
    vm_wait_until "$t" grep -qx "$token" "$VM_STATE/conn-$id.out"
}

# vm_conn_close ID: close connection ID (the client half-closes, the backend
# closes) and wait for the client to end.
vm_conn_close() {
    local id="$1" fd="${VM_CONN_FD[$1]:-}" pid="${VM_CONN_PID[$1]:-}"
    [[ -n $fd ]] || { echo "vm_conn_close: no connection $id in this shell" >&2; return 1; }
    exec {fd}>&-
    vm_wait_until 5 _vm_gone "$pid" || kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    unset "VM_CONN_FD[$id]" "VM_CONN_PID[$id]"
}

# _vm_gone PID: the process has ended.
_vm_gone() { ! kill -0 "$1" 2>/dev/null; }

# --- connections that end with a reset ----------------------------------------
# A connection closed normally stays in the IPVS table in TIME_WAIT for two
# minutes, counted as inactive on its real server (graceful termination waits
# for it). One ended by a reset goes to CLOSE, which expires in 10 s.

# vm_conn_open_abortable ID NS ADDR PORT: like vm_conn_open, but the client is
# socat with SO_LINGER 0, so vm_conn_abort ends it with a reset.
vm_conn_open_abortable() {
    local id="$1" ns="$2" addr="$3" port="$4" fd target
    local fifo="$VM_STATE/conn-$id.in" out="$VM_STATE/conn-$id.out"
    if [[ $addr == *:* ]]; then target="TCP6:[$addr]:$port"; else target="TCP4:$addr:$port"; fi
    rm -f "$fifo" "$out"
    mkfifo "$fifo"
    exec {fd}<>"$fifo"
    VM_CONN_FD[$id]=$fd
    (
        exec {fd}>&-
        if [[ -z $ns || $ns == root ]]; then
            exec socat - "$target,linger=0"
        else
            exec ip netns exec "$ns" socat - "$target,linger=0"
        fi
    ) <"$fifo" >"$out" 2>&1 &
    VM_CONN_PID[$id]=$!
    echo "$!" >>"$VM_STATE/pids"
    if ! vm_wait_until 5 test -s "$out"; then
        echo "vm_conn_open_abortable $id: no answer from $addr:$port" >&2
        return 1
    fi
    VM_CONN_BACKEND="$(vm_conn_backend "$id")"
    echo "$VM_CONN_BACKEND"
}

# vm_conn_abort ID: end connection ID (opened by vm_conn_open_abortable) with
# a TCP reset: the client is killed, and its socket, lingering 0 s, resets.
vm_conn_abort() {
    local id="$1" fd="${VM_CONN_FD[$1]:-}" pid="${VM_CONN_PID[$1]:-}"
    [[ -n $pid ]] || { echo "vm_conn_abort: no connection $id in this shell" >&2; return 1; }
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    [[ -n $fd ]] && exec {fd}>&-
    unset "VM_CONN_FD[$id]" "VM_CONN_PID[$id]"
}

# --- HTTP ----------------------------------------------------------------------

# vm_http_get ADDR:PORT PATH [NS]: an HTTP/1.0 GET with socat (busybox wget
# crashes in the VM); prints the response, headers and body. Non-zero if
# nothing came back in 5 s. shut-none: the request is sent without closing
# our side, as an HTTP client does (Go servers, kube-proxy's among them,
# take a half-closed connection for a client gone and answer nothing).
vm_http_get() {
    local hostport="$1" path="$2" ns="${3:-}" out
    out="$(printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$path" "$hostport" |
        vm_in "$ns" timeout 5 socat -t 5 - "TCP:$hostport,shut-none" 2>/dev/null | tr -d '\r')" || true
    [[ -n $out ]] || return 1
    printf '%s\n' "$out"
}

# vm_http_status ADDR:PORT PATH [NS]: only the status code (200, 503, ...).
vm_http_status() {
    vm_http_get "$@" | awk 'NR == 1 { print $2 }'
}

# --- ipvs-agent ------------------------------------------------------------------
# The agent's `run` logs one line per sync, containing "sync complete" and
# "full=... operations=N failed=M duration_ms=X". Its logs are kept in files;
# these helpers read them (colour codes stripped).

# vm_agent_log FILE: the log without terminal colour codes.
vm_agent_log() { sed -e 's/\x1b\[[0-9;]*m//g' "$1"; }

# vm_agent_syncs FILE: how many syncs the log reports.
vm_agent_syncs() { vm_agent_log "$1" | grep -c 'sync complete' || true; }

# vm_agent_sync_field FILE FIELD [N]: FIELD's value in the N-th sync line
# (default: the last), e.g. operations, failed, duration_ms, full.
vm_agent_sync_field() {
    local file="$1" field="$2" n="${3:-}" lines
    lines="$(vm_agent_log "$file" | grep 'sync complete')" || return 1
    if [[ -n $n ]]; then lines="$(sed -n "${n}p" <<<"$lines")"; else lines="$(tail -n 1 <<<"$lines")"; fi
    [[ -n $lines ]] || return 1
    sed -n "s/.*[[:space:]]$field=\([^[:space:]]*\).*/\1/p" <<<"$lines" | tr -d '"'
}

# vm_agent_start LOG ARGS...: `ipvs-agent run ARGS` in the background (in
# namespace $VM_AGENT_NETNS if set), its output (stdout and stderr) in LOG;
# waits (60 s, or $VM_AGENT_START_TIMEOUT) for its first sync. Sets
# VM_AGENT_PID. vm_reset kills it.
vm_agent_start() {
    local log="$1"
    shift
    : >"$log"
    if [[ -n ${VM_AGENT_NETNS:-} ]]; then
        NO_COLOR=1 ip netns exec "$VM_AGENT_NETNS" ipvs-agent run "$@" >>"$log" 2>&1 &
    else
        NO_COLOR=1 ipvs-agent run "$@" >>"$log" 2>&1 &
    fi
    VM_AGENT_PID=$!
    echo "$VM_AGENT_PID" >>"$VM_STATE/pids"
    echo "$VM_AGENT_PID" >"$VM_STATE/agent.pid"
    if ! vm_wait_until "${VM_AGENT_START_TIMEOUT:-60}" _vm_agent_synced "$log" 1; then
        echo "vm_agent_start: no sync in ${VM_AGENT_START_TIMEOUT:-60} s; the log:" >&2
        vm_agent_log "$log" | tail -n 20 >&2
        return 1
    fi
}

# _vm_agent_synced LOG N: the log reports at least N syncs.
_vm_agent_synced() { (($(vm_agent_syncs "$1") >= $2)); }

# vm_agent_wait_syncs LOG N [TIMEOUT]: wait (default 30 s) until LOG reports
# N more syncs than it does now.
vm_agent_wait_syncs() {
    local log="$1" n="$2" t="${3:-30}" have
    have="$(vm_agent_syncs "$log")"
    vm_wait_until "$t" _vm_agent_synced "$log" $((have + n))
}

# vm_agent_stop [SIGNAL]: stop the agent vm_agent_start started (TERM by
# default) and wait (10 s) for it to end.
vm_agent_stop() {
    local sig="${1:-TERM}" pid
    pid="$(cat "$VM_STATE/agent.pid" 2>/dev/null)" || return 0
    [[ -n $pid ]] || return 0
    kill "-$sig" "$pid" 2>/dev/null || true
    vm_wait_until 10 _vm_gone "$pid" || kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -f "$VM_STATE/agent.pid"
}

# vm_rs_weight VS RS: the weight of real server RS (ADDR:PORT, IPv6 in
# brackets) of virtual server VS (-t ADDR:PORT or -u ADDR:PORT), as
# `ipvsadm -Ln` shows it; nothing if it is not there.
vm_rs_weight() { _vm_rs_column "$1" "$2" 4; }

# vm_rs_conns VS RS: "ACTIVE INACTIVE" connection counts of that real server.
# shellcheck disable=SC2016 # awk code
vm_rs_conns() { _vm_rs_column "$1" "$2" '5 " " $6'; }

_vm_rs_column() {
    local vs="$1" rs="$2" col="$3"
    # shellcheck disable=SC2086 # "-t ADDR:PORT" is two words
    ipvsadm -Ln $vs 2>/dev/null | awk -v rs="$rs" "\$1 == \"->\" && \$2 == rs { print \$$col }"
}

# --- secrets in logs -----------------------------------------------------------

# vm_kubeconfig_secrets KUBECONFIG: what of its credentials must never be
# logged, one fixed string per line: every token, password and
# client-key-data value, and every body line (16 characters or more) of its
# client keys, decoded from client-key-data or read from a client-key file.
vm_kubeconfig_secrets() {
    local kc="$1" value
    _vm_kubeconfig_values "$kc" '(token|password|client-key-data)'
    for value in $(_vm_kubeconfig_values "$kc" client-key-data); do
        base64 -d <<<"$value" 2>/dev/null | grep -v -- '-----' | awk 'length >= 16'
    done
    for value in $(_vm_kubeconfig_values "$kc" client-key); do
        grep -v -- '-----' "$value" | awk 'length >= 16'
    done
}

# _vm_kubeconfig_values KUBECONFIG KEY_REGEX: the values of those keys, in
# block or flow style, quoted or not.
_vm_kubeconfig_values() {
    grep -oE "$2:[[:space:]]*\"?[^\",}[:space:]]+" "$1" | sed -E 's/^[a-z-]+:[[:space:]]*"?//'
}

# vm_no_secrets_in_logs NAME KUBECONFIG LOG...: PASS when no credential of
# KUBECONFIG (vm_kubeconfig_secrets) is in any LOG; a FAIL names the files
# and lines, never the secret. A kubeconfig without credentials to look for
# fails too, so that a change of its form cannot turn the check off.
vm_no_secrets_in_logs() {
    local name="$1" kc="$2" patterns count found
    shift 2
    patterns="$(mktemp)"
    vm_kubeconfig_secrets "$kc" >"$patterns"
    count="$(grep -c . "$patterns" || true)"
    found="$(grep -HnF -f "$patterns" "$@" | cut -d: -f1,2 | head -n 5 | tr '\n' ' ')"
    rm -f "$patterns"
    if ((count == 0)); then
        vm_fail "$name" "no credentials found in $kc to look for"
    elif [[ -n $found ]]; then
        vm_fail "$name" "credentials of $kc logged at ${found% }"
    else
        vm_pass "$name" "$count strings from $kc, none in $*"
    fi
}

# strace's dump (-e write=all -e read=all) of one syscall's data looks like
#    | 00000  30 00 00 00 12 00 01 00  f1 d2 04 6b 00 00 00 00  0..........k.... |
# (offset, 16 bytes in two groups, ASCII). Prints one line per syscall: `>`
# (sent) or `<` (received), then its bytes in hex; every buffer of a
# sendmsg is appended (nft sends a batch as several iovecs). Peeks
# (MSG_PEEK) are left out: the same bytes come again in the read that
# follows. Used by ipvsadm-capture.sh and nft-capture.sh.
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
