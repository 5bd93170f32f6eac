#!/usr/bin/env bash
# kernels.sh: fetch, unpack and cache Debian's amd64 kernels for the VM tests.
#
# USAGE: tests/vm/kernels.sh SERIES...        SERIES is 6.1 or 6.12
#        prints one line per series: KVER<TAB>/path/to/vmlinuz
#
# EXAMPLE:
#   $ tests/vm/kernels.sh 6.1 6.12
#   6.1.0-56-amd64          /var/lib/ftflame-vm/6.1.0-56-amd64/boot/vmlinuz-6.1.0-56-amd64
#   6.12.117+deb12-amd64    /var/lib/ftflame-vm/6.12.117+deb12-amd64/boot/vmlinuz-6.12.117+deb12-amd64
#
# For each series it picks the newest linux-image-*-amd64-unsigned package that
# apt knows (apt-cache search), downloads it with `apt-get download`, unpacks it
# with `dpkg -x` into $FTFLAME_VM_CACHE/KVER (default /var/lib/ftflame-vm) and
# runs `depmod -b` on the unpacked tree, so that a guest booted by virtme-ng on
# the host's root filesystem finds the kernel's modules (nfsd, ...). Nothing is
# installed into /boot or /lib/modules, and no package hook runs.
#
# The cache is kept between runs: a kernel already unpacked is reused at once,
# and when apt cannot be reached the newest cached kernel of the series is used.
# Why /var/lib and not /var/cache: virtme-ng mounts an empty tmpfs over the
# guest's /var/cache, which would hide the modules from the guest.
#
# Needs root (apt-get, writing the cache); about 180 MB of downloads and
# 1 GB of disk for both kernels.
set -euo pipefail

CACHE=${FTFLAME_VM_CACHE:-/var/lib/ftflame-vm}
PROG=${0##*/}

say()  { printf '%s: %s\n' "$PROG" "$*" >&2; }
die()  { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }

# The package-name pattern of a series (a regex over package names).
series_pattern() {
	case $1 in
	6.1)  echo '^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' ;;
	6.12) echo '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' ;;
	*)    die "unknown kernel series '$1' (known: 6.1 6.12)" ;;
	esac
}

# Newest package of a series that apt knows, or nothing.
newest_package() {
	apt-cache search --names-only "$(series_pattern "$1")" 2>/dev/null |
		awk '{print $1}' | sort -V | tail -n 1
}

# Newest kernel of a series already in the cache, or nothing.
newest_cached() {
	local d kver best=""
	for d in "$CACHE"/*/.ready; do
		[ -e "$d" ] || continue
		kver=$(basename "$(dirname "$d")")
		case $1 in
		6.1)  [[ $kver =~ ^6\.1\.0-[0-9]+-amd64$ ]] || continue ;;
		6.12) [[ $kver =~ ^6\.12\.[0-9]+\+deb12-amd64$ ]] || continue ;;
		esac
		best=$(printf '%s\n%s\n' "$best" "$kver" | sed '/^$/d' | sort -V | tail -n 1)
	done
	printf '%s' "$best"
}

# The downloaded .deb of a package, or nothing.
find_deb() {
	find "$CACHE/debs" -maxdepth 1 -name "${1}_*.deb" | sort -V | tail -n 1
}

# Download and unpack one package into $CACHE/KVER.
unpack() {
	local pkg=$1 kver=$2 deb tmp
	mkdir -p "$CACHE/debs"
	deb=$(find_deb "$pkg")
	if [ -z "$deb" ]; then
		say "downloading $pkg"
		# apt's sandbox user cannot write into a root-owned cache: that warning is harmless.
		if ! (cd "$CACHE/debs" && apt-get download -q "$pkg" 2>&1 | grep -v 'unsandboxed' >&2); then
			say "download failed; refreshing apt's lists and trying again"
			apt-get update -qq >&2
			(cd "$CACHE/debs" && apt-get download -q "$pkg" 2>&1 | grep -v 'unsandboxed' >&2) ||
				return 1
		fi
		deb=$(find_deb "$pkg")
		[ -n "$deb" ] || return 1
	fi
	say "unpacking $(basename "$deb")"
	tmp="$CACHE/.unpack-$kver"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	dpkg -x "$deb" "$tmp"
	[ -e "$tmp/boot/vmlinuz-$kver" ] || die "$deb holds no boot/vmlinuz-$kver"
	depmod -b "$tmp" "$kver"
	rm -rf "${CACHE:?}/$kver"
	mv "$tmp" "$CACHE/$kver"
	touch "$CACHE/$kver/.ready"
}

main() {
	local series pkg kver cached
	if [ $# -eq 0 ] || [ "$1" = -h ] || [ "$1" = --help ]; then usage; [ $# -gt 0 ]; exit; fi
	[ "$(id -u)" = 0 ] || die "must run as root (apt-get download, $CACHE)"
	mkdir -p "$CACHE"
	for series in "$@"; do
		series_pattern "$series" >/dev/null
		pkg=$(newest_package "$series")
		if [ -z "$pkg" ]; then
			say "apt knows no $series kernel package; refreshing apt's lists"
			apt-get update -qq >&2 || true
			pkg=$(newest_package "$series")
		fi
		kver=""
		if [ -n "$pkg" ]; then
			kver=${pkg#linux-image-}
			kver=${kver%-unsigned}
			if [ ! -e "$CACHE/$kver/.ready" ] && ! unpack "$pkg" "$kver"; then
				say "could not fetch $pkg"
				kver=""
			fi
		fi
		if [ -z "$kver" ]; then
			cached=$(newest_cached "$series")
			[ -n "$cached" ] || die "no $series kernel: none in apt, none cached in $CACHE"
			say "using cached $cached"
			kver=$cached
		fi
		printf '%s\t%s\n' "$kver" "$CACHE/$kver/boot/vmlinuz-$kver"
	done
}

main "$@"
