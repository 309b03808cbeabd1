#!/usr/bin/env bash
# Build the initramfs a VM test boots with.
#
#   tests/vm/build-initramfs.sh [-o OUT.cpio] TEST-SCRIPT [EXTRA...]
#
# Contents:
#   /init                 tests/vm/init (busybox sh): mounts, modules, lo, runs
#                         /test.sh under bash, prints markers, powers off
#   /test.sh              TEST-SCRIPT
#   /vm/lib.sh            tests/vm/lib.sh, for the test to source
#   /lib/modules/svcnet/  the .ko files, load.order and netfilter.order from setup.sh
#   busybox-static        /usr/bin/busybox and a link for each applet that no
#                         real program below already takes
#   real programs         iproute2's ip and ss, ipvsadm, ipvsadm-save,
#                         ipvsadm-restore, bash, socat, with every library
#                         ldd lists, at the same paths as on this machine
#   EXTRA                 each argument is one of:
#                           FILE       executable: /usr/local/bin/NAME (plus
#                                      the libraries ldd lists); else /data/NAME
#                           DIR        /data/NAME, recursively
#                           SRC:DEST   SRC copied to DEST inside (recursively);
#                                      executables get their libraries too
#
# Needs tests/vm/setup.sh to have run. OUT defaults to
# $SVCNET_VM_DIR/initramfs.cpio (target/vm/initramfs.cpio).
#
# The archive is not compressed: the emulated CPU inflates slowly. With
# kube-proxy and kubectl inside (176 MB), kube-proxy-diff's VM was up in
# 4.1 s from the plain archive and in 10.1 s from a gzip -1 one (61 MB).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${SVCNET_VM_DIR:-$repo/target/vm}"
kdir="$cache/kernel"
out="$cache/initramfs.cpio"

die() { printf 'vm-initramfs: error: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }

while getopts 'o:h' opt; do
    case $opt in
        o) out="$OPTARG" ;;
        h) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
(($# >= 1)) || { usage >&2; exit 2; }
test_script="$1"
shift
[[ -f $test_script ]] || die "no test script $test_script"
[[ -f $kdir/modules/load.order ]] || die "no prepared kernel in $kdir: run tests/vm/setup.sh"

mkdir -p "$(dirname "$out")"
root="$(mktemp -d "$(dirname "$out")/initramfs.tmp.XXXXXX")"
trap 'rm -rf "$root"' EXIT

# Same top-level layout as this machine: Debian 12 is /usr-merged, so /bin,
# /sbin, /lib and /lib64 are links into /usr; copying a file to $root/PATH
# then lands where the program and its loader expect it.
mkdir -p "$root"/usr/{bin,sbin,lib,lib64} "$root"/usr/local/bin
for d in bin sbin lib lib64; do
    if [[ -L /$d ]]; then
        ln -s "$(readlink "/$d")" "$root/$d"
    else
        mkdir -p "$root/$d"
    fi
done
mkdir -p "$root"/{proc,sys,dev,run,tmp,etc,root,data,vm,var} "$root/lib/modules/svcnet"
ln -s /run "$root/var/run"
# The console the kernel opens for /init, before /init mounts devtmpfs. The
# kernel's own built-in initramfs has one too (verified with Debian's), so
# without root to mknod this is skipped.
mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true

# Copy one file to the same path inside, following links: the link's own
# path is what ldd and programs name.
put() {
    local src="$1" dest="${2:-$1}"
    mkdir -p "$(dirname "$root$dest")"
    cp -L "$src" "$root$dest"
}

# Libraries ldd lists for an ELF executable (nothing for scripts and static
# programs), each at the path ldd names.
declare -A have_lib=()
put_libs() {
    local bin="$1" line lib
    local out
    out="$(ldd "$bin" 2>/dev/null)" || return 0
    while read -r line; do
        case $line in
            *"=> not found"*) die "$bin: library not found: $line" ;;
            *"=> /"*) lib="${line#*=> }"; lib="${lib%% (*}" ;;
            /*) lib="${line%% (*}" ;;
            *) continue ;;
        esac
        [[ -n ${have_lib[$lib]:-} ]] && continue
        have_lib[$lib]=1
        put "$lib"
    done <<<"$out"
}

put_program() {
    local src="$1" dest="${2:-$1}"
    put "$src" "$dest"
    chmod 755 "$root$dest"
    put_libs "$src"
}

# Real programs first: the busybox applet links below skip names they take.
for p in ip ss ipvsadm ipvsadm-save ipvsadm-restore bash socat; do
    path="$(command -v "$p")" || die "$p not found: run tests/vm/setup.sh"
    # Debian's iproute2 ships /bin/ip with links in /sbin and /usr/sbin; put
    # it in /usr/bin (= /bin) and /usr/sbin.
    case $p in
        ip | ss)
            put_program "$path" "/usr/bin/$p"
            ln -sf "../bin/$p" "$root/usr/sbin/$p"
            ;;
        *) put_program "$path" "/usr${path#/usr}" ;;
    esac
done

busybox="$(command -v busybox)" || die "busybox not found: run tests/vm/setup.sh"
ldd "$busybox" >/dev/null 2>&1 && die "$busybox is dynamically linked: install busybox-static"
put "$busybox" /usr/bin/busybox
while read -r applet; do
    [[ -z $applet || -e $root/usr/bin/$applet || -e $root/usr/sbin/$applet ]] && continue
    ln -s busybox "$root/usr/bin/$applet"
done < <("$busybox" --list)

# Extras from the command line.
for extra in "$@"; do
    if [[ $extra == *:* ]]; then
        src="${extra%%:*}"
        dest="${extra#*:}"
    else
        src="$extra"
        if [[ -f $src && -x $src ]]; then
            dest="/usr/local/bin/$(basename "$src")"
        else
            dest="/data/$(basename "$src")"
        fi
    fi
    [[ -e $src ]] || die "extra $src does not exist"
    [[ $dest == /* ]] || die "extra $extra: destination must be absolute"
    mkdir -p "$(dirname "$root$dest")"
    cp -rL "$src" "$root$dest"
    # Libraries for every executable in it.
    while IFS= read -r -d '' f; do
        put_libs "$f"
    done < <(find "$src" -type f -perm -u+x -print0)
done

# Kernel modules, the test, the library, /init.
cp "$kdir"/modules/*.ko "$kdir"/modules/*.order "$root/lib/modules/svcnet/"
cp "$kdir/version" "$root/lib/modules/svcnet/version"
install -m 755 "$here/init" "$root/init"
install -m 755 "$test_script" "$root/test.sh"
install -m 644 "$here/lib.sh" "$root/vm/lib.sh"

# A few files programs look for.
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
printf '127.0.0.1 localhost\n::1 localhost\n' >"$root/etc/hosts"
printf 'hosts: files\n' >"$root/etc/nsswitch.conf"
for f in /etc/services /etc/protocols; do
    [[ -f $f ]] && put "$f"
done
echo svcnet-vm >"$root/etc/hostname"

tmp_out="$out.tmp"
(cd "$root" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
    cpio --null -o -H newc --quiet --owner=0:0) >"$tmp_out"
mv "$tmp_out" "$out"
printf 'vm-initramfs: %s (%s)\n' "${out#"$repo"/}" "$(du -h "$out" | cut -f1)"
