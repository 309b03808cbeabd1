#!/usr/bin/env bash
# Install what the IPVS VM tests need and prepare a Debian kernel with IPVS.
#
#   tests/vm/setup.sh          idempotent; quick (no network) when already done
#
# 1. Debian packages: QEMU, busybox-static, ipvsadm, iproute2, kmod (modprobe,
#    depmod), cpio, gzip, socat (UDP backends and clients; busybox nc has no UDP),
#    strace (tests/vm/ipvsadm-capture.sh records what ipvsadm sends),
#    iptables and ipset (what the real kube-proxy runs in the VM, for
#    tests/vm/kube-proxy-diff.sh; nothing is changed on the host), nftables
#    (`nft`, whose netlink traffic tests/vm/nft-capture.sh records).
#    `apt-get update` runs only when a package or the kernel cannot be had
#    from the package lists as they are.
# 2. The kernel linux-image-amd64 points at (or $SVCNET_VM_KERNEL_PKG): the .deb
#    is fetched with `apt-get download` (nothing is installed on the host),
#    unpacked with `dpkg -x`, `depmod -b` builds its modules.dep, and
#    `modprobe --show-depends` resolves the load order of the modules the VM
#    needs. Only vmlinuz and those .ko files are kept, in
#    $SVCNET_VM_DIR/kernel (default target/vm/kernel):
#      vmlinuz  version  modules/*.ko  modules/load.order  stamp
#    load.order is what /init loads in every VM; modules/netfilter.order
#    (loaded by a test with vm_load_netfilter) adds the NIC for QEMU's user
#    networking and what kube-proxy's iptables and ipset half needs.
#
# Environment:
#   SVCNET_VM_DIR           cache folder (default <repo>/target/vm)
#   SVCNET_VM_KERNEL_PKG    kernel package to use instead of linux-image-amd64's
#   SVCNET_VM_EXTRA_MODULES more modules to resolve and load (space separated)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${SVCNET_VM_DIR:-$repo/target/vm}"
kdir="$cache/kernel"

# Host packages. qemu-system-x86 without its recommends (GUI, OVMF, ...).
packages=(qemu-system-x86 busybox-static ipvsadm iproute2 kmod cpio gzip socat bash strace iptables ipset nftables)

# Modules, by name. Every IPVS scheduler Debian builds, so a test can pick any;
# dummy for kube-ipvs0 and the node's uplink, veth for the namespaces.
# crc32c_generic goes first and crc32c-intel is dropped: the latter needs
# SSE4.2, which QEMU's default CPU model lacks, and fails to load.
modules=(crc32c_generic ip_vs
    ip_vs_rr ip_vs_wrr ip_vs_lc ip_vs_wlc ip_vs_fo ip_vs_ovf ip_vs_lblc
    ip_vs_lblcr ip_vs_dh ip_vs_sh ip_vs_mh ip_vs_sed ip_vs_nq
    dummy veth)
# shellcheck disable=SC2206 # word splitting is the point
modules+=(${SVCNET_VM_EXTRA_MODULES:-})
# Loaded on demand (vm_load_netfilter): e1000, the NIC QEMU's user networking
# gives the guest (-nic user), and what kube-proxy's IPVS mode needs besides
# IPVS (../shared/REFERENCE.md): nf_tables under iptables-nft with the xt_*
# matches and targets it uses, ipset's set types, conntrack over netlink,
# br_netfilter for xt_physdev.
netfilter_modules=(e1000 nf_tables nft_compat nft_chain_nat nft_reject_inet nft_ct nft_masq
    nf_nat xt_MASQUERADE xt_mark xt_comment xt_conntrack xt_addrtype xt_set
    ip_set_hash_ip ip_set_hash_ipport ip_set_hash_ipportip ip_set_hash_ipportnet
    ip_set_hash_net ip_set_bitmap_port xt_ipvs xt_physdev ipt_REJECT ip6t_REJECT
    xt_nat xt_tcpudp xt_multiport xt_statistic nf_conntrack_netlink br_netfilter)
skip_modules=(crc32c-intel crc32c_intel)
# Parameters, by .ko file name. No stray dummy0.
declare -A module_params=([dummy.ko]="numdummies=0")

say() { printf 'vm-setup: %s\n' "$*"; }
die() { printf 'vm-setup: error: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "run as root (apt-get install, and the VM tests need it)"

export DEBIAN_FRONTEND=noninteractive
updated=0
apt_update() {
    if ((updated)); then return 1; fi
    say "apt-get update"
    apt-get update -qq
    updated=1
}

installed() {
    [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

# --- 1. packages -------------------------------------------------------------
missing=()
for p in "${packages[@]}"; do
    installed "$p" || missing+=("$p")
done
if ((${#missing[@]})); then
    # Lists with no candidate for a package (a fresh image often has none):
    # update before trying.
    for p in "${missing[@]}"; do
        if ! grep -q 'Candidate: [^(]' <<<"$(apt-cache policy "$p" 2>/dev/null)"; then
            apt_update
            break
        fi
    done
    say "apt-get install ${missing[*]}"
    install() {
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$cache/apt.log" 2>&1
    }
    mkdir -p "$cache"
    if ! install; then
        # Stale lists point at files the mirror no longer has: update, retry.
        apt_update || { cat "$cache/apt.log" >&2; die "apt-get install failed"; }
        install || { cat "$cache/apt.log" >&2; die "apt-get install failed"; }
    fi
    rm -f "$cache/apt.log"
else
    say "packages: already installed (${packages[*]})"
fi

# --- 2. kernel ---------------------------------------------------------------
kernel_pkg() {
    apt-cache depends linux-image-amd64 2>/dev/null |
        awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }'
}
pkg="${SVCNET_VM_KERNEL_PKG:-}"
if [[ -z $pkg ]]; then
    pkg="$(kernel_pkg)"
    if [[ -z $pkg ]]; then
        apt_update || true
        pkg="$(kernel_pkg)"
    fi
    [[ -n $pkg ]] || die "apt-cache depends linux-image-amd64 names no kernel package"
fi

stamp="pkg=$pkg modules=${modules[*]} netfilter=${netfilter_modules[*]}"
if [[ -f $kdir/stamp && "$(cat "$kdir/stamp")" == "$stamp" && -f $kdir/vmlinuz ]]; then
    say "kernel: $pkg already prepared in ${kdir#"$repo"/}"
    exit 0
fi

say "kernel: preparing $pkg"
mkdir -p "$cache"
work="$(mktemp -d "$cache/kernel.tmp.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# apt-get download as root warns that the _apt user cannot write here; the
# download still happens (unsandboxed). Keep that one warning out of the log.
chmod 755 "$work"
download() {
    (
        cd "$work" || exit 1
        apt-get download -qq "$pkg" 2>&1 | grep -v 'Download is performed unsandboxed' || true
    )
    compgen -G "$work/*.deb" >/dev/null
}
if ! download; then
    apt_update || die "apt-get download $pkg failed"
    download || die "apt-get download $pkg failed"
fi
deb="$(compgen -G "$work/*.deb" | head -n 1)"
say "kernel: unpacking $(basename "$deb")"
dpkg -x "$deb" "$work/root"

version="$(basename "$(compgen -G "$work/root/lib/modules/*" | head -n 1)")"
[[ -n $version && -d $work/root/lib/modules/$version ]] || die "no lib/modules in $pkg"
vmlinuz="$work/root/boot/vmlinuz-$version"
[[ -f $vmlinuz ]] || die "no boot/vmlinuz-$version in $pkg"

say "kernel: depmod $version"
depmod -b "$work/root" "$version"

# Load order: modprobe --show-depends prints the chain, dependencies first,
# as "insmod /path/to/x.ko" (or "builtin x" for what is built in). -C
# /dev/null keeps the host's /etc/modprobe.d out of it.
mkdir -p "$work/out/modules"
declare -A seen=()
# resolve ORDER-FILE MODULE...: copies each module and what it needs (not
# yet copied for an earlier list) and writes their load order.
resolve() {
    local order_file="$1" m deps kind path name base s
    shift
    local order=()
    for m in "$@"; do
        deps="$(modprobe -C /dev/null -d "$work/root" -S "$version" --show-depends "$m")" ||
            die "modprobe --show-depends $m failed"
        while read -r kind path _; do
            [[ $kind == insmod ]] || continue
            name="$(basename "$path")"
            base="${name%.ko*}"
            for s in "${skip_modules[@]}"; do
                [[ $base == "$s" ]] && continue 2
            done
            [[ -n ${seen[$name]:-} ]] && continue
            [[ $name == *.ko ]] || die "$name: compressed modules are not handled (busybox insmod takes plain .ko)"
            seen[$name]=1
            cp "$path" "$work/out/modules/$name"
            order+=("$name${module_params[$name]:+ ${module_params[$name]}}")
        done <<<"$deps"
    done
    printf '%s\n' "${order[@]}" >"$order_file"
}
resolve "$work/out/modules/load.order" "${modules[@]}"
resolve "$work/out/modules/netfilter.order" "${netfilter_modules[@]}"
cp "$vmlinuz" "$work/out/vmlinuz"
echo "$version" >"$work/out/version"
echo "$stamp" >"$work/out/stamp"

rm -rf "$kdir"
mv "$work/out" "$kdir"
say "kernel: $version ready in ${kdir#"$repo"/} ($(wc -l <"$kdir/modules/load.order") modules, $(wc -l <"$kdir/modules/netfilter.order") more on demand)"
say "module load order: $(tr '\n' ' ' <"$kdir/modules/load.order")"
