#!/usr/bin/env bash
# sid-trace-cmd.sh: Debian sid's trace-cmd (3.4), unpacked beside sid's own
# libraries and C library, never installed: for recording a fixture with the
# newest trace.dat writer on a host of an older Debian.
#
# USAGE: tests/vm/sid-trace-cmd.sh       prints the folder that holds a
#        `trace-cmd` wrapper (put it first in PATH)
#
# EXAMPLE:
#   $ PATH=$(tests/vm/sid-trace-cmd.sh):$PATH trace-cmd --version
#   trace-cmd version 3.4.0 (not-a-git-repo)
#
# Downloads trace-cmd, libtracecmd1, libtraceevent1, libtracefs1, libzstd1,
# zlib1g, libc6 and libgcc-s1 from sid through the private apt state of
# tests/vm/apt-private.sh, unpacks them with `dpkg -x` into
# $FTFLAME_VM_CACHE/trace-cmd-sid (default /var/lib/ftflame-vm, which a
# virtme-ng guest on the host's root filesystem sees too) and writes the
# wrapper: it runs sid's trace-cmd through sid's loader (ld-linux-x86-64.so.2
# --library-path), so sid's libraries serve trace-cmd alone; what trace-cmd
# runs (the recorded command) keeps the host's libraries. Reused once made.
set -euo pipefail

CACHE=${FTFLAME_VM_CACHE:-/var/lib/ftflame-vm}
PROG=${0##*/}
# shellcheck source=tests/vm/apt-private.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt-private.sh"
PKGS="trace-cmd libtracecmd1 libtraceevent1 libtracefs1 libzstd1 zlib1g libc6 libgcc-s1"
DEST=$CACHE/trace-cmd-sid

die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
	exit
fi
if [ ! -e "$DEST/.ready" ]; then
	[ "$(id -u)" = 0 ] || die "must run as root (apt-get download, $CACHE)"
	apt_other_known || apt_other apt-get update -qq >&2
	tmp=$CACHE/.unpack-trace-cmd-sid
	rm -rf "$tmp"
	mkdir -p "$tmp/debs"
	# sid's version of each (the private apt's candidate: the newest of its suites)
	for p in $PKGS; do
		v=$(apt_other apt-cache madison "$p" | awk '$6 == "sid/main" {print $3; exit}')
		[ -n "$v" ] || die "sid has no $p"
		download_in "$tmp/debs" apt_other apt-get download -q "$p=$v" ||
			die "could not download $p $v"
	done
	for d in "$tmp"/debs/*.deb; do dpkg -x "$d" "$tmp/root"; done
	ld=$tmp/root/usr/lib64/ld-linux-x86-64.so.2
	[ -e "$ld" ] || ld=$tmp/root/lib64/ld-linux-x86-64.so.2
	[ -e "$ld" ] || die "sid's libc6 holds no ld-linux-x86-64.so.2"
	ld=${ld#"$tmp"/}
	cat >"$tmp/trace-cmd" <<WRAP
#!/bin/sh
# sid's trace-cmd with sid's libraries (tests/vm/sid-trace-cmd.sh)
R=$DEST/root
exec "$DEST/$ld" --library-path "\$R/usr/lib/x86_64-linux-gnu:\$R/lib/x86_64-linux-gnu" "\$R/usr/bin/trace-cmd" "\$@"
WRAP
	chmod +x "$tmp/trace-cmd"
	rm -rf "$tmp/debs" "$DEST"
	mv "$tmp" "$DEST"
	# (--version exits 1 once it has printed the version)
	v=$("$DEST/trace-cmd" --version 2>&1 || true)
	[[ $v == *"trace-cmd version"* ]] || { printf '%s\n' "$v" >&2; die "sid's trace-cmd does not run here"; }
	touch "$DEST/.ready"
fi
echo "$DEST"
