#!/usr/bin/env bash
# guest.sh: the VM test's guest side. Runs as root inside the virtual machine
# that tests/vm/run.sh boots (the host's root filesystem, read-only, under a
# tmpfs overlay; RESULTS is a writable share of a host folder).
#
# USAGE: guest.sh RESULTS        (only inside the test VM: it starts an NFS server)
#
# It starts a loopback NFS server (a tmpfs export, 8 nfsd threads, NFSv3 client
# mount), then runs collect/collect.sh as a user would and leaves everything in
# RESULTS for tests/vm/check_vm.py to assert on, on the host:
#   run/        -p nfsd-write --baseline + calibration around 2 MB of 4 KB
#               O_DIRECT fio writes (run.rc, run.stderr)
#   ioz/        -p nfsd-write --baseline, no calibration, around iozone: 2 MB
#               of 4 KB O_DIRECT writes and rewrites with -Q latency files
#               (ioz.rc, ioz.stderr; iozone runs in $W/ioz-cwd); not with
#               FTFLAME_VM_IOZONE=0 (run.sh's short profile)
#   lost/       -p rpc with a 64 KB buffer: must lose events (lost.rc, lost.stderr)
#   intr/       Ctrl-C (SIGINT to the process group) while recording (intr.rc);
#               not with FTFLAME_VM_CTRL_C=0 (run.sh's minimal profile)
#   FTFLAME_VM_CALIBRATE=0 (run.sh's minimal profile): run/ records no calibration
#   killed/     trace-cmd killed with SIGKILL while recording, with tracer
#               options unlike the defaults (killed.rc)
#   unknown.*   a function that does not exist: the refusal on a real kernel
#   (each run folder is recorded into a tmpfs of the guest's, then copied here)
#   tracefs-*.txt  tracefs settings before and after each of those
#   guest.log   this script's log; guest.rc its exit code; timing.txt
#
# EXAMPLE (what run.sh does): vng --run vmlinuz ... --rwdir R --exec "tests/vm/guest.sh R"
set -euo pipefail

RES=${1:?usage: guest.sh RESULTS}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
COLLECT=$REPO/collect/collect.sh
T=/sys/kernel/tracing
W=/run/ftflame-vm
CALIB_COUNT=${FTFLAME_VM_CALIB_COUNT:-200}

exec >"$RES/guest.log" 2>&1
trap 'echo $? >"$RES/guest.rc"' EXIT

up() { local u; read -r u _ </proc/uptime; printf '%s' "$u"; }
step() { printf '== %ss %s\n' "$(up)" "$*"; printf '%s %s\n' "$(up)" "$*" >>"$RES/timing.txt"; }

# Every tracefs setting collect.sh may touch, one "name=value" a line, the
# ring buffer size as the size it will have once used. Read without forks:
# a fork costs ~0.1-0.3 s under emulation.
rd() {
	local __rd=""
	{ IFS= read -r -d '' __rd <"$1"; } 2>/dev/null || true
	__rd=${__rd%$'\n'}
	printf -v "$2" '%s' "${__rd//$'\n'/|}"
}
dump_tracefs() {
	local f v
	for f in current_tracer tracing_on trace_clock tracing_cpumask max_graph_depth \
		tracing_thresh buffer_percent saved_cmdlines_size set_ftrace_filter \
		set_ftrace_notrace set_graph_function set_graph_notrace set_event set_ftrace_pid \
		set_event_pid set_ftrace_notrace_pid set_event_notrace_pid; do
		[ -r "$T/$f" ] || continue
		rd "$T/$f" v
		printf '%s=%s\n' "$f" "$v"
	done
	rd "$T/buffer_size_kb" v
	[[ $v =~ expanded:\ *([0-9]+) ]] && v=${BASH_REMATCH[1]}
	printf 'buffer_size_kb=%s\n' "$v"
	for f in "$T"/options/*; do
		rd "$f" v
		printf 'options/%s=%s\n' "${f##*/}" "$v"
	done
}

# ------------------------------------------------------------- NFS server
step "guest up: $(uname -r), $(nproc) CPUs"
ip link set lo up
modprobe nfsd
mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
mkdir -p /run/rpc_pipefs /run/rpcbind "$W/export" "$W/nfs"
mountpoint -q /run/rpc_pipefs || mount -t rpc_pipefs sunrpc /run/rpc_pipefs
mount -t tmpfs -o size=256m tmpfs "$W/export"
rpcbind
echo "$W/export 127.0.0.1(rw,sync,fsid=0,no_subtree_check,no_root_squash,insecure)" >/etc/exports
exportfs -ra
rpc.mountd
rpc.nfsd 8
mount -t nfs -o vers=3,nolock,proto=tcp 127.0.0.1:"$W/export" "$W/nfs"
rpcinfo -T tcp 127.0.0.1 nfs 3
# The run folders: made in the guest, then copied into RESULTS. collect.sh
# refuses a folder with a folder above it that a user other than root could
# change, and RESULTS is the host's folder over 9p, whose owners are the
# host's (a checkout in a user's home would be that user's): a tmpfs of
# root's here, whatever the host.
mkdir -p "$W/runs"
chmod 0755 "$W"
mount -t tmpfs -o size=1g,mode=0755 tmpfs "$W/runs"
keep() {  # NAME: the run folder NAME into RESULTS
	if [ -d "$W/runs/$1" ]; then
		cp -R -- "$W/runs/$1" "$RES/$1" || echo "guest.sh: cannot copy $W/runs/$1 into $RES"
		rm -rf -- "${W:?}/runs/$1"
	fi
}
step "nfs server up: $(cat /proc/fs/nfsd/threads) threads, versions $(cat /proc/fs/nfsd/versions)"

fio_write() {  # SIZE NAME: 4 KB O_DIRECT sequential writes
	echo fio --name=w --filename="$W/nfs/$2" --rw=write --bs=4k --size="$1" --direct=1 \
		--ioengine=psync --output-format=json
}

if [ -x "$REPO/.venv/bin/ftflame" ]; then export FTFLAME=$REPO/.venv/bin/ftflame; fi
dump_tracefs >"$RES/tracefs-before.txt"

# ------------------------------------------------ refusal on a real kernel
step "unknown function"
rc=0
"$COLLECT" -g no_such_function_ftflame -o "$W/runs/unknown" -- true 2>"$RES/unknown.stderr" || rc=$?
echo "$rc" >"$RES/unknown.rc"
keep unknown

# ----------------------------------------------------- the main test run
step "collect: nfsd-write, baseline, calibration"
rc=0
calib=(--calib-count "$CALIB_COUNT")
[ "${FTFLAME_VM_CALIBRATE:-1}" = 1 ] || calib=(--no-calibrate)
# (the server's CPU time from /proc only here: the iozone run below counts it
# with perf, so that both of collect/cpusnap.sh's sources run on this kernel)
# shellcheck disable=SC2046  # (fio_write prints the words of a command)
FTFLAME_NO_PERF=1 "$COLLECT" -p nfsd-write --baseline --buffer 8192 "${calib[@]}" -o "$W/runs/run" \
	-- $(fio_write 2m run) >"$RES/run.stdout" 2>"$RES/run.stderr" || rc=$?
echo "$rc" >"$RES/run.rc"
keep run
dump_tracefs >"$RES/tracefs-after-run.txt"

# ------------------------------------------------------- iozone, as users run it
if [ "${FTFLAME_VM_IOZONE:-1}" = 1 ]; then
	step "collect: iozone, baseline"
	rc=0
	mkdir -p "$W/ioz-cwd"  # (-Q writes its latency files into the current folder)
	(cd "$W/ioz-cwd" && "$COLLECT" -p nfsd-write --baseline --buffer 8192 --no-calibrate -o "$W/runs/ioz" \
		-- iozone -i0 -r4k -s2m -I -Q -f "$W/nfs/ioz") >"$RES/ioz.stdout" 2>"$RES/ioz.stderr" || rc=$?
	echo "$rc" >"$RES/ioz.rc"
	keep ioz
	dump_tracefs >"$RES/tracefs-after-ioz.txt"
fi

# ------------------------------------------------- a deliberately tiny buffer
step "collect: tiny buffer"
rc=0
# shellcheck disable=SC2046
"$COLLECT" -p rpc --buffer 64 --no-calibrate -o "$W/runs/lost" \
	-- $(fio_write 512k lost) >"$RES/lost.stdout" 2>"$RES/lost.stderr" || rc=$?
echo "$rc" >"$RES/lost.rc"
keep lost
dump_tracefs >"$RES/tracefs-after-lost.txt"

# interrupt_test NAME ACTION [OPTIONS]: start collect.sh in a process group
# of its own around `sleep`, wait until function_graph is on, then call
# ACTION with the group id.
interrupt_test() {
	local name=$1 action=$2 pid rc=0 i
	shift 2
	set -m
	"$COLLECT" -g nfsd3_proc_write --no-calibrate "$@" -o "$W/runs/$name" -- sleep 120 \
		>"$RES/$name.stdout" 2>"$RES/$name.stderr" &
	pid=$!
	set +m
	local cur=""
	for ((i = 0; i < 600; i++)); do
		rd "$T/current_tracer" cur
		[ "$cur" = function_graph ] && break
		sleep 0.5
	done
	echo "current_tracer=$cur after $((i / 2)) s" >"$RES/$name.state"
	sleep 2
	dump_tracefs >"$RES/tracefs-during-$name.txt"
	"$action" "$pid"
	wait "$pid" || rc=$?
	echo "$rc" >"$RES/$name.rc"
	keep "$name"
	pkill -x sleep || true
	dump_tracefs >"$RES/tracefs-after-$name.txt"
}
ctrl_c() { kill -INT -- "-$1"; }               # as the terminal does on Ctrl-C
kill_trace_cmd() { pkill -KILL -x trace-cmd; }  # trace-cmd and its recorders die: no cleanup of their own

if [ "${FTFLAME_VM_CTRL_C:-1}" = 1 ]; then
	step "collect: Ctrl-C while recording"
	interrupt_test intr ctrl_c
fi
step "collect: trace-cmd killed while recording"
# Options unlike the defaults, so that their restore is tested too.
interrupt_test killed kill_trace_cmd --sleep-time off --irqs off --depth 5 --cpus 0 \
	--buffer 2048 --clock mono

step "done"
umount "$W/nfs" || true
touch "$RES/guest.done"
