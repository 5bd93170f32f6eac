#!/usr/bin/env bash
# kernels.sh: fetch, unpack and cache Debian's amd64 kernels for the VM tests.
#
# USAGE: tests/vm/kernels.sh SERIES...        SERIES is 5.10, 6.1, 6.12 or 7.x
#        prints one line per series: KVER<TAB>/path/to/vmlinuz
#
# EXAMPLE:
#   $ tests/vm/kernels.sh 5.10 6.1 6.12 7.x
#   5.10.0-32-amd64         /var/lib/ftflame-vm/5.10.0-32-amd64/boot/vmlinuz-5.10.0-32-amd64
#   6.1.0-56-amd64          /var/lib/ftflame-vm/6.1.0-56-amd64/boot/vmlinuz-6.1.0-56-amd64
#   6.12.117+deb12-amd64    /var/lib/ftflame-vm/6.12.117+deb12-amd64/boot/vmlinuz-6.12.117+deb12-amd64
#   7.3.4+deb13-amd64       /var/lib/ftflame-vm/7.3.4+deb13-amd64/boot/vmlinuz-7.3.4+deb13-amd64
#
# The series and where they come from:
#   5.10  Debian bullseye: linux-image-5.10.0-N-amd64-unsigned
#   6.1   Debian bookworm (the host's own apt sources): linux-image-6.1.0-N-amd64-unsigned
#   6.12  bookworm: linux-image-6.12.N+deb12-amd64-unsigned
#   7.x   the newest 7.x of trixie-backports and sid: linux-binary-7.M.N+debV-amd64
#         (the image), linux-modules-... (modules, compressed .ko.xz) and
#         linux-base-... (config, modules.builtin, modules.order)
# 5.10 and 7.x are fetched through a private apt state over the suites of
# tests/vm/other-suites.sources (tests/vm/apt-private.sh): the host's apt
# sources and lists are left as they are, and nothing is installed.
#
# For each series it picks the newest package that apt knows (apt-cache
# search), downloads it with `apt-get download`, unpacks it with `dpkg -x` into
# $FTFLAME_VM_CACHE/KVER (default /var/lib/ftflame-vm) and runs `depmod -b` on
# the unpacked tree, so that a guest booted by virtme-ng on the host's root
# filesystem finds the kernel's modules (nfsd, ...). A merged-/usr kernel (7.x:
# usr/lib/modules/KVER/vmlinuz) is laid out as the older ones (boot/vmlinuz-KVER,
# lib/modules/KVER). Nothing is installed into /boot or /lib/modules, and no
# package hook runs.
#
# The cache is kept between runs: a kernel already unpacked is reused at once,
# and when apt cannot be reached the newest cached kernel of the series is used.
# Why /var/lib and not /var/cache: virtme-ng mounts an empty tmpfs over the
# guest's /var/cache, which would hide the modules from the guest.
#
# Needs root (apt-get, writing the cache); about 80-180 MB of downloads and
# 500 MB of disk a kernel, and 30 MB of package lists for 5.10 and 7.x.
set -euo pipefail

CACHE=${FTFLAME_VM_CACHE:-/var/lib/ftflame-vm}
PROG=${0##*/}
# shellcheck source=tests/vm/apt-private.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt-private.sh"

say()  { printf '%s: %s\n' "$PROG" "$*" >&2; }
die()  { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }

# The name pattern of a series' kernel package (a regex over package names):
# the package whose name holds the kernel version.
series_pattern() {
	case $1 in
	5.10) echo '^linux-image-5\.10\.0-[0-9]+-amd64-unsigned$' ;;
	6.1)  echo '^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' ;;
	6.12) echo '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' ;;
	7.x)  echo '^linux-binary-7\.[0-9]+\.[0-9]+\+deb[0-9]+-amd64$' ;;
	*)    die "unknown kernel series '$1' (known: 5.10 6.1 6.12 7.x)" ;;
	esac
}

# The kernel versions (directory names in the cache) of a series, as a regex.
series_kver_re() {
	case $1 in
	5.10) echo '^5\.10\.0-[0-9]+-amd64$' ;;
	6.1)  echo '^6\.1\.0-[0-9]+-amd64$' ;;
	6.12) echo '^6\.12\.[0-9]+\+deb12-amd64$' ;;
	7.x)  echo '^7\.[0-9]+\.[0-9]+\+deb[0-9]+-amd64$' ;;
	esac
}

# The apt that knows a series: the host's own, or the private one.
series_apt() {
	case $1 in
	6.1 | 6.12) "${@:2}" ;;
	*) apt_other "${@:2}" ;;
	esac
}

# The packages to unpack for a kernel package of series_pattern.
series_packages() {
	case $1 in
	linux-binary-*) echo "$1" "linux-modules-${1#linux-binary-}" "linux-base-${1#linux-binary-}" ;;
	*) echo "$1" ;;
	esac
}

# Newest package of a series that apt knows, or nothing.
newest_package() {
	series_apt "$1" apt-cache search --names-only "$(series_pattern "$1")" 2>/dev/null |
		awk '{print $1}' | sort -V | tail -n 1
}

# Refresh the package lists of the apt that knows a series.
refresh_lists() {
	series_apt "$1" apt-get update -qq >&2
}

# Newest kernel of a series already in the cache, or nothing.
newest_cached() {
	local d kver best="" re
	re=$(series_kver_re "$1")
	for d in "$CACHE"/*/.ready; do
		[ -e "$d" ] || continue
		kver=$(basename "$(dirname "$d")")
		[[ $kver =~ $re ]] || continue
		best=$(printf '%s
%s
' "$best" "$kver" | sed '/^$/d' | sort -V | tail -n 1)
	done
	printf '%s' "$best"
}

# The downloaded .deb of a package, or nothing.
find_deb() {
	find "$CACHE/debs" -maxdepth 1 -name "${1}_*.deb" | sort -V | tail -n 1
}

# download SERIES PKG: the .deb of PKG into $CACHE/debs (kept: a later run
# unpacks it again without the network).
download() {
	local series=$1 pkg=$2
	[ -n "$(find_deb "$pkg")" ] && return 0
	say "downloading $pkg"
	if ! download_in "$CACHE/debs" series_apt "$series" apt-get download -q "$pkg"; then
		say "download failed; refreshing apt's lists and trying again"
		refresh_lists "$series"
		download_in "$CACHE/debs" series_apt "$series" apt-get download -q "$pkg" || return 1
	fi
	[ -n "$(find_deb "$pkg")" ]
}

# Download and unpack a kernel's packages into $CACHE/KVER.
unpack() {
	local series=$1 pkg=$2 kver=$3 p tmp
	mkdir -p "$CACHE/debs"
	tmp="$CACHE/.unpack-$kver"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	for p in $(series_packages "$pkg"); do
		download "$series" "$p" || return 1
		say "unpacking $(basename "$(find_deb "$p")")"
		dpkg -x "$(find_deb "$p")" "$tmp"
	done
	# merged /usr (7.x): the image beside the modules, all under usr/
	if [ -e "$tmp/usr/lib/modules/$kver/vmlinuz" ] && [ ! -e "$tmp/lib/modules" ]; then
		mkdir -p "$tmp/boot" "$tmp/lib"
		mv "$tmp/usr/lib/modules/$kver/vmlinuz" "$tmp/boot/vmlinuz-$kver"
		mv "$tmp/usr/lib/modules" "$tmp/lib/modules"
	fi
	[ -e "$tmp/boot/vmlinuz-$kver" ] || die "$pkg holds no boot/vmlinuz-$kver"
	depmod -b "$tmp" "$kver"
	[ -s "$tmp/lib/modules/$kver/modules.dep" ] || die "depmod made no modules.dep for $kver"
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
			refresh_lists "$series" || true
			pkg=$(newest_package "$series")
		fi
		kver=""
		if [ -n "$pkg" ]; then
			kver=${pkg#linux-image-}
			kver=${kver#linux-binary-}
			kver=${kver%-unsigned}
			if [ ! -e "$CACHE/$kver/.ready" ] && ! unpack "$series" "$pkg" "$kver"; then
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
