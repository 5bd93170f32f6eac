#!/usr/bin/env bash
# fixtures-guest.sh: the guest side of `make fixtures` (tests/vm/fixtures.sh
# boots the VM). Runs as root inside the virtual machine, on the host's root
# filesystem (read-only, under a tmpfs overlay); OUTDIR is a writable share.
#
# USAGE: fixtures-guest.sh OUTDIR      (only inside the VM: it starts an NFS server)
#
# Starts the loopback NFS server the corpus was recorded with (tmpfs export,
# 8 nfsd threads, 50 files in tree/ for the stat loops), then runs
# OUTDIR/scenario.sh in OUTDIR with tests/vm/fixtures/common.sh, gzips text
# traces over 1 MB, and leaves guest.log, guest.rc and (on success) guest.done.
set -euo pipefail

OUTDIR=${1:?usage: fixtures-guest.sh OUTDIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W=/run/ftflame-fixtures
export NFS_EXPORT=$W/export NFS_MNT=$W/nfs OUT=$OUTDIR

exec >"$OUTDIR/guest.log" 2>&1
trap 'echo $? >"$OUTDIR/guest.rc"' EXIT
set -x
# another trace-cmd than the host's (fixtures.sh: vm.env's VM_TRACE_CMD)
[ -n "${FTFLAME_TRACE_CMD_DIR:-}" ] && export PATH=$FTFLAME_TRACE_CMD_DIR:$PATH

ip link set lo up
modprobe nfsd
mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
mkdir -p /run/rpc_pipefs /run/rpcbind "$NFS_EXPORT" "$NFS_MNT"
mountpoint -q /run/rpc_pipefs || mount -t rpc_pipefs sunrpc /run/rpc_pipefs
mount -t tmpfs -o size=512m tmpfs "$NFS_EXPORT"
mkdir -p "$NFS_EXPORT/tree"
for i in $(seq 0 49); do echo "$i" >"$NFS_EXPORT/tree/f$i"; done
rpcbind
echo "$NFS_EXPORT 127.0.0.1(rw,sync,fsid=0,no_subtree_check,no_root_squash,insecure)" >/etc/exports
exportfs -ra
rpc.mountd
# NFSv4's grace period after a start (90 s) would hold the first OPEN of a v4
# scenario for as long: the shortest the kernel takes (no client state to reclaim)
echo 10 >/proc/fs/nfsd/nfsv4gracetime || true
rpc.nfsd 8

cd "$OUTDIR"
# (--version exits 1 once it has printed the version)
{ trace-cmd --version 2>&1 || true; } | sed -n '/version/{p;q}' >trace-cmd-version.txt
cp "$HERE/fixtures/common.sh" common.sh
bash scenario.sh
rm -f common.sh
for f in *.txt; do
	[ "$(stat -c %s "$f")" -gt 1000000 ] && gzip -9n "$f"
done
touch guest.done
