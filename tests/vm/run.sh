#!/usr/bin/env bash
# Boot the Debian kernel with IPVS under QEMU and run one test script in it.
#
#   tests/vm/run.sh TEST-SCRIPT [EXTRA...]
#
# TEST-SCRIPT runs as root in the VM, under bash, as /test.sh; it sources
# /vm/lib.sh (tests/vm/lib.sh) for topology, backends and PASS/FAIL lines.
# EXTRA: programs, files or SRC:DEST pairs to put in the VM (see
# build-initramfs.sh), e.g. target/release/ipvs-agent examples:/examples.
#
# Prints the VM's console as it comes (also saved to the log file) and exits
# with the status on the "SVCNET-VM: EXIT <status>" line; 1 instead of 0 if
# a "SVCNET-VM: FAIL" line, or no "SVCNET-VM: PASS" line, was printed; 124 if
# the VM did not finish in time; 1 if it stopped without an EXIT line. Ends
# with "<test>: N passed, M failed", counting the PASS and FAIL lines.
#
# Environment:
#   VM_TIMEOUT  seconds before QEMU is killed (default 180)
#   VM_MEM      memory in MiB (default 512)
#   VM_SMP      virtual CPUs (default 1)
#   VM_ACCEL    kvm, tcg or auto (default): kvm when /dev/kvm is usable. A
#               /dev/kvm that opens but hangs the guest exists (nested
#               virtualisation), so auto boots a tiny probe VM once and
#               remembers the answer in $SVCNET_VM_DIR/accel.
#   VM_NET      none (default): no network card; user: QEMU's user networking
#               (an e1000 card: load it with vm_load_netfilter, configure it
#               with vm_user_net); the guest's 10.0.2.2 is the host's loopback
#   VM_APPEND   more kernel command-line words; NAME=VALUE words the kernel
#               does not know become environment variables of the test
#   VM_LOG      console log file (default $SVCNET_VM_DIR/logs/<test>.log)
#   VM_QUIET    1: show only what the test itself prints (its narration), not
#               the firmware, the kernel or the "SVCNET-VM:" result lines
#               (FAIL and INFO lines still show); the log keeps everything, and
#               the closing lines say how many checks passed (make demo)
# Files the test sends with vm_export land in $SVCNET_VM_DIR/out/<test>/.
#   SVCNET_VM_DIR  cache folder (default <repo>/target/vm)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
export SVCNET_VM_DIR="${SVCNET_VM_DIR:-$repo/target/vm}"
cache="$SVCNET_VM_DIR"
kdir="$cache/kernel"

timeout_s="${VM_TIMEOUT:-180}"
mem="${VM_MEM:-512}"
smp="${VM_SMP:-1}"
accel="${VM_ACCEL:-auto}"
net="${VM_NET:-none}"
quiet="${VM_QUIET:-0}"

say() { printf 'vm-run: %s\n' "$*"; }
die() { printf 'vm-run: error: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }

case ${1:-} in
    -h | --help) usage; exit 0 ;;
    '') usage >&2; exit 2 ;;
esac
test_script="$1"
shift
[[ -f $test_script ]] || die "no test script $test_script"
name="$(basename "$test_script" .sh)"
log="${VM_LOG:-$cache/logs/$name.log}"

started=$SECONDS
if [[ ! -f $kdir/stamp ]]; then
    "$here/setup.sh"
fi
mkdir -p "$cache/runs" "$(dirname "$log")"
run_dir="$(mktemp -d "$cache/runs/$name.XXXXXX")"
trap 'rm -rf "$run_dir"' EXIT

"$here/build-initramfs.sh" -o "$run_dir/initramfs.cpio" "$test_script" "$@"

# Console filter: no carriage returns, no terminal control sequences (the
# firmware clears the screen), line by line so the console shows live.
console_filter() {
    sed -u -e 's/\r//g' -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1b[A-Za-z]//g'
}

# awk reading a pipe line by line: mawk (Debian's awk) fills a whole buffer
# before it handles the first line unless told -W interactive, which held
# the console back in bursts.
line_awk() {
    if awk -W version 2>/dev/null | grep -q mawk; then
        awk -W interactive "$@"
    else
        awk "$@"
    fi
}

# What is shown (the log keeps everything): vm_export's base64 lines hidden.
hide_exports() {
    line_awk '/^SVCNET-VM: FILE-END / { hide = 0 }
        !hide { print; fflush() }
        /^SVCNET-VM: FILE-BEGIN / { hide = 1; print "(base64 lines: see the log)"; fflush() }'
}

# VM_QUIET=1: only the test's own lines, from the BEGIN line to the EXIT
# line; no kernel messages ("[   12.345678] ..."), no SVCNET-VM: lines but
# FAIL and INFO (a check that failed, and why).
quiet_filter() {
    if [[ $quiet != 1 ]]; then
        cat
        return
    fi
    line_awk '/^SVCNET-VM: BEGIN / { on = 1; next }
        /^SVCNET-VM: EXIT / { on = 0; next }
        !on { next }
        /^\[ *[0-9]+\.[0-9]+\] / { next }
        /^SVCNET-VM: (FAIL|INFO) / { print; fflush(); next }
        /^SVCNET-VM: / { next }
        { print; fflush() }'
}

# A guest kernel that has locked up (a CPU stuck in the kernel for a minute
# or more: "watchdog: BUG: soft lockup - CPU#N stuck for 60s!") never
# recovers, and the VM would sit there until VM_TIMEOUT (30 minutes for the
# Kubernetes suites). The watch stops QEMU at once, and leaves the line in
# $run_dir/lockup for the closing message. Shorter stalls pass unremarked:
# an emulated CPU the host starves for a while can report one.
lockup_watch() {
    line_awk -v pidfile="$run_dir/qemu.pid" -v mark="$run_dir/lockup" '
        { print; fflush() }
        !killed && match($0, /soft lockup - CPU#[0-9]+ stuck for [0-9]+s/) {
            n = substr($0, RSTART, RLENGTH); sub(/.* for /, "", n); sub(/s$/, "", n)
            if (n + 0 >= 60) {
                killed = 1
                print $0 > mark; close(mark)
                getline pid < pidfile
                if (pid != "") system("kill " pid)
            }
        }'
}

case $net in
    none) nic=(-nic none) ;;
    user) nic=(-nic user,model=e1000) ;;
    *) die "VM_NET must be none or user, not $net" ;;
esac
qemu_base=(qemu-system-x86_64 -m "$mem" -smp "$smp" -nographic -no-reboot
    -kernel "$kdir/vmlinuz")
append_base="console=ttyS0 quiet panic=-1"

kvm_usable() {
    [[ -c /dev/kvm && -r /dev/kvm && -w /dev/kvm ]] || return 1
    local memo="$cache/accel"
    if [[ -f $memo ]]; then
        [[ "$(cat "$memo")" == kvm ]]
        return
    fi
    # A probe VM: busybox and an /init that prints one line and powers off.
    # Under working KVM it is done in about a second.
    say "probing /dev/kvm (once; answer kept in ${memo#"$repo"/})"
    local probe="$run_dir/probe"
    mkdir -p "$probe/root/bin" "$probe/root/dev"
    cp "$(command -v busybox)" "$probe/root/bin/busybox"
    mknod -m 600 "$probe/root/dev/console" c 5 1 2>/dev/null || true
    printf '#!/bin/busybox sh\n/bin/busybox echo SVCNET-VM-PROBE-OK\n/bin/busybox poweroff -f\n' >"$probe/root/init"
    chmod 755 "$probe/root/init"
    (cd "$probe/root" && find . -mindepth 1 | cpio -o -H newc --quiet --owner=0:0) |
        gzip -1 >"$probe/initrd.gz"
    local answer=tcg
    timeout -k 2 10 "${qemu_base[@]}" -nic none -accel kvm -initrd "$probe/initrd.gz" \
        -append "$append_base" </dev/null >"$probe/console" 2>&1 || true
    if grep -qa SVCNET-VM-PROBE-OK "$probe/console"; then
        answer=kvm
    fi
    echo "$answer" >"$memo"
    say "/dev/kvm: $([[ $answer == kvm ]] && echo usable || echo "not usable here (a guest does not boot with it, as under nested virtualisation): QEMU emulates the CPU (tcg) instead, slower but fine")"
    [[ $answer == kvm ]]
}

case $accel in
    kvm | tcg) ;;
    auto) if kvm_usable; then accel=kvm; else accel=tcg; fi ;;
    *) die "VM_ACCEL must be kvm, tcg or auto, not $accel" ;;
esac

say "booting $(cat "$kdir/version") ($accel, ${mem} MiB, $smp cpu, timeout ${timeout_s} s): $test_script${*:+ with $*}"
boot_started=$SECONDS
set +e
timeout -k 5 "$timeout_s" "${qemu_base[@]}" "${nic[@]}" -accel "$accel" \
    -initrd "$run_dir/initramfs.cpio" -pidfile "$run_dir/qemu.pid" \
    -append "$append_base${VM_APPEND:+ $VM_APPEND}" </dev/null 2>&1 |
    console_filter | lockup_watch | tee "$log" | hide_exports | quiet_filter
qemu_status=${PIPESTATUS[0]}
set -e
boot_s=$((SECONDS - boot_started))

passed="$(grep -ac 'SVCNET-VM: PASS ' "$log" || true)"
failed="$(grep -ac 'SVCNET-VM: FAIL ' "$log" || true)"
exit_line="$(grep -ao 'SVCNET-VM: EXIT [0-9]*' "$log" | tail -n 1 || true)"
# The VM's own tally (vm_finish) counts the same checks from its results
# file: a PASS or FAIL line that did not reach the console (a check run with
# its output sent elsewhere) makes the two differ.
vm_summary="$(grep -ao 'SVCNET-VM: SUMMARY [0-9]* passed, [0-9]* failed' "$log" | tail -n 1 || true)"

# Files the test sent out with vm_export.
out_dir="$cache/out/$name"
rm -rf "$out_dir"
exported="$(sed -n 's/^SVCNET-VM: FILE-BEGIN \([A-Za-z0-9._-]*\)$/\1/p' "$log")"
for f in $exported; do
    mkdir -p "$out_dir"
    if sed -n "/^SVCNET-VM: FILE-BEGIN $f\$/,/^SVCNET-VM: FILE-END $f\$/{/^SVCNET-VM: /d;p}" "$log" |
        base64 -d >"$out_dir/$f" 2>/dev/null; then
        say "file from the VM: ${out_dir#"$repo"/}/$f"
    else
        say "file from the VM: $f arrived damaged (see the console)"
        failed=$((failed + 1))
    fi
done

echo
if [[ -n $vm_summary && ${vm_summary#SVCNET-VM: SUMMARY } != "$passed passed, $failed failed" ]]; then
    say "the VM counted ${vm_summary#SVCNET-VM: SUMMARY } but the console shows $passed PASS and $failed FAIL lines: a check's line did not reach the console"
fi
if [[ -n $exit_line ]]; then
    status="${exit_line##* }"
    if [[ $status == 0 && $failed != 0 ]]; then
        say "the test exited 0 but printed FAIL lines"
        status=1
    elif [[ $status == 0 && $passed == 0 ]]; then
        say "the test exited 0 but printed no PASS line: it checked nothing"
        status=1
    fi
elif [[ -s $run_dir/lockup ]]; then
    say "no EXIT line: the guest kernel locked up ($(sed 's/^\[ *[0-9.]*\] //' "$run_dir/lockup")), so QEMU was stopped after ${boot_s} s instead of at VM_TIMEOUT"
    status=1
elif [[ $qemu_status == 124 || $qemu_status == 137 ]]; then
    say "no EXIT line: the VM was killed after ${timeout_s} s (VM_TIMEOUT)"
    status=124
else
    say "no EXIT line: QEMU stopped with status $qemu_status (see the console above)"
    status=1
fi
if [[ $quiet == 1 ]]; then
    say "the test checked itself as it went: its SVCNET-VM: PASS and FAIL lines are in the console log, counted below"
fi
say "console log: ${log#"$repo"/}"
say "VM ran ${boot_s} s, ${name} took $((SECONDS - started)) s in all; exit status $status"
echo "$name: $passed passed, $failed failed"
exit "$status"
