#!/usr/bin/env bash
# calibrate.sh: measure what the function_graph tracer itself costs per call,
# with NFS NULL RPCs (empty calls), on the running kernel and tracer options.
#
# USAGE: calibrate.sh [tracer options] [--count N] [--host HOST] [--vers 3|4] -o DIR
#
# Run as root on the NFS server (collect.sh runs it for you unless
# --no-calibrate). It sends N NULL RPCs to nfsd (a small perl client, one TCP
# connection; `rpcinfo -T tcp HOST nfs VERS` in a loop where perl is missing)
# three times, each time recorded by `trace-cmd record -p function_graph`:
#   DIR/calib-null.dat           the NULL procedure alone (-g/-l nfsd3_proc_null,
#                                nfsd4_proc_null): its body is empty, so its
#                                measured duration is O_in, the hook cost that
#                                falls inside a call's own window
#   DIR/calib-dispatch-root.dat  nfsd_dispatch hooked alone (-g/-l nfsd_dispatch)
#   DIR/calib-dispatch-full.dat  nfsd_dispatch with its whole graph (-g only):
#                                the extra time per recorded descendant is
#                                O_in + O_out (O_out: the cost outside a call)
# and then computes DIR/calibration.json from them with
#   ${FTFLAME:-ftflame} calibrate --from-traces calib-null.dat \
#       calib-dispatch-root.dat calib-dispatch-full.dat -o calibration.json
# (one implementation of the math, on ftflame's parser). When that command is
# not available, the three traces stay and a note on stderr says how to compute
# calibration.json later. DIR/calib-meta.json records the kernel, clock,
# tracer options, host and counts of the recordings.
#
# Tracer options (give the main run's, see collect.sh --help):
#   --depth N  --buffer KB  --cpus LIST  --irqs on|off  --sleep-time on|off
#   --clock CLOCK  --no-sched  --buffer-percent N
#   A trace recorded with --buffer-percent 100 (trace-cmd's reader left
#   asleep: no wake-up of it inside the traced calls) needs a calibration
#   recorded the same way: each ring-buffer commit costs a few ns more while
#   the reader is to be woken, and the calibration carries that cost into
#   every corrected call (docs/overhead.md). collect.sh passes it on.
# Other options:
#   --count N    NULL RPCs per recording (default 300)
#   --host HOST  the NFS server to call; it must be this machine (default 127.0.0.1)
#   --vers 3|4   NFS version of the NULL RPCs (default 3)
#   --port N     nfsd's TCP port (default 2049)
#   -o DIR       output folder (default: .): created when missing; an
#                existing one must be owned by root and writable by no one
#                else, and every folder above it root's and writable by no
#                one else, or sticky
#   -h, --help   this text
#
# EXAMPLE:
#   # collect/calibrate.sh --count 300 -o calib1
#   calibrate.sh: recording calib-null.dat (300 NULL RPCs)
#   calibrate.sh: recording calib-dispatch-root.dat (300 NULL RPCs)
#   calibrate.sh: recording calib-dispatch-full.dat (300 NULL RPCs)
#   calibrate.sh: calibration.json: {"schema":"ftflame-calibration/1","o_in_ns":710.2,"o_out_ns":601.5,...}
#
# WARNING: traces every function under nfsd_dispatch while the NULL RPCs run
# (a few seconds). The values hold for this kernel, machine and tracer
# options only: calibrate again after changing any of them.
# Exit: 0 done (also when only the traces could be made), 1 a recording or
# the computation failed, 2 refused to start (same checks as collect.sh).
set -euo pipefail

FT_PROG=calibrate.sh
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$HERE/lib.sh"

COUNT=300
HOST=127.0.0.1
PORT=2049
VERS=3
OUT=.
FT_FORCE=0

while [ $# -gt 0 ]; do
	parse_tracer_opt "$@"
	if ((FT_SHIFT > 0)); then shift "$FT_SHIFT"; continue; fi
	case $1 in
	-h | --help) print_header "$0"; exit 0 ;;
	--count) [[ ${2-} =~ ^[1-9][0-9]*$ ]] || usage_error "--count wants a number"
		COUNT=$2; shift 2 ;;
	--host) [ -n "${2-}" ] || usage_error "--host needs a host"
		HOST=$2; shift 2 ;;
	--vers) [[ ${2-} == 3 || ${2-} == 4 ]] || usage_error "--vers wants 3 or 4"
		VERS=$2; shift 2 ;;
	--port) [[ ${2-} =~ ^[1-9][0-9]*$ ]] || usage_error "--port wants a number"
		PORT=$2; shift 2 ;;
	-o) [ $# -ge 2 ] || usage_error "-o needs a folder"
		OUT=$2; shift 2 ;;
	--force) FT_FORCE=1; shift ;;
	*) usage_error "unknown option '$1'" ;;
	esac
done

require_root
find_tracefs
require_function_graph
require_trace_cmd
command -v rpcinfo >/dev/null 2>&1 ||
	refuse "rpcinfo not found: it sends the NULL RPCs (Debian: apt-get install rpcbind)"

# (available_filter_functions is read once: under emulation that takes seconds)
missing=" $(missing_functions nfsd3_proc_null nfsd4_proc_null nfsd_dispatch | tr '\n' ' ')"
NULL_FUNCS=()
for f in nfsd3_proc_null nfsd4_proc_null; do
	[[ $missing == *" $f "* ]] || NULL_FUNCS+=("$f")
done
((${#NULL_FUNCS[@]})) ||
	refuse "no such traceable function: nfsd3_proc_null nfsd4_proc_null (not in $T/available_filter_functions)$(nfsd_hint)"
[[ $missing != *" nfsd_dispatch "* ]] ||
	refuse "no such traceable function: nfsd_dispatch (not in $T/available_filter_functions)$(nfsd_hint)"
rpcinfo -T tcp "$HOST" nfs "$VERS" >/dev/null 2>&1 ||
	refuse "no NFSv$VERS server answers a NULL RPC at $HOST (rpcinfo -T tcp $HOST nfs $VERS failed): start nfsd, or pass --host/--vers"

take_lock
if ((FT_LOCK_INHERITED)); then :; elif recover_tracefs; then :; elif (($? == 2)); then
	refuse "the tracefs settings a collector left changed could not all be put back (see above): fix them by hand, then remove $FT_LOCK_DIR/$FT_STATE_NAME"
fi
busy_check
if ((FT_LOCK_INHERITED)); then
	# collect.sh's own folder, which it checked and holds open: OUT is
	# /proc/PID/fd/N, opened from there (the folder itself, no path looked up)
	exec {OUT_FD}<"$OUT/." || refuse "cannot open the output folder $OUT (-o)"
	OUT_SHOWN=${FT_OUT_SHOWN:-$OUT} OUT=/proc/$$/fd/$OUT_FD
else
	use_out_dir "$OUT"
fi
tracer_args

INTERRUPTED=""
# shellcheck disable=SC2317  # (called by the trap)
on_exit() {
	local rc=$?
	trap - EXIT INT TERM HUP
	finish_tracefs || rc=1
	remove_tmpfiles
	[ -z "$INTERRUPTED" ] ||
		say "interrupted by SIG$INTERRUPTED: tracefs restored, the NULL RPCs and trace-cmd stopped"
	exit "$rc"
}
# shellcheck disable=SC2317
on_signal() {
	trap '' INT TERM HUP  # (the cleanup takes a moment: once is enough)
	INTERRUPTED=$1
	stop_recording
	case $1 in INT) exit 130 ;; TERM) exit 143 ;; *) exit 129 ;; esac
}
trap on_exit EXIT
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM
trap 'on_signal HUP' HUP

snapshot_tracefs

# The workload of every recording: COUNT NULL RPCs over TCP. A small perl
# client (perl-base is on every Debian) sends them one at a time on one
# connection: one process instead of COUNT rpcinfo runs, whose fork+exec
# would dominate the recording. Without perl: an rpcinfo loop.
if perl -MIO::Socket::INET -e 1 2>/dev/null; then
	CLIENT=perl
	NULLS=(perl -e "$FT_NULL_CLIENT" "$HOST" "$PORT" "$VERS" "$COUNT")
else
	CLIENT=rpcinfo
	# shellcheck disable=SC2016
	NULLS=(bash -c 'n=0; while [ "$n" -lt "$1" ]; do rpcinfo -T tcp "$2" nfs "$3" >/dev/null || exit 1; n=$((n + 1)); done' \
		ftflame-nulls "$COUNT" "$HOST" "$VERS")
fi
# One call first: the client works against this server.
"${NULLS[@]:0:${#NULLS[@]}-1}" 1 >/dev/null 2>&1 {FT_LOCK_FD}<&- ||
	die "the $CLIENT NULL-RPC client failed against $HOST (port $PORT, NFSv$VERS)"

NFLAGS=()
for f in "${NULL_FUNCS[@]}"; do NFLAGS+=(-g "$f" -l "$f"); done
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
rm -f -- "$OUT/calib-rpc.log"
new_file "$OUT/calib-rpc.log"
for run in null dispatch-root dispatch-full; do
	case $run in
	null)          flags=("${NFLAGS[@]}") ;;
	dispatch-root) flags=(-g nfsd_dispatch -l nfsd_dispatch) ;;
	dispatch-full) flags=(-g nfsd_dispatch) ;;
	esac
	say "recording calib-$run.dat ($COUNT NULL RPCs)"
	record "$OUT/calib-$run.dat" "$OUT" "$OUT/calib-rpc.log" -- "${flags[@]}" -- "${NULLS[@]}" >/dev/null ||
		die "$REC_ERROR"
	((REC_RC == 0)) || die "the NULL RPCs failed during calib-$run.dat (see $OUT_SHOWN/calib-rpc.log)"
	if ! rows=$(lost_events "$OUT/calib-$run.dat"); then
		warn "calib-$run.dat: lost events UNKNOWN ('trace-cmd report --stat' failed): check it by hand"
		continue
	fi
	lost=0
	while read -r _ ov cov dr _; do lost=$((lost + ov + cov + dr)); done <<<"$rows"
	((lost == 0)) || warn "calib-$run.dat lost $lost events: its samples are fewer; try a bigger --buffer"
done

calib_meta=$(cat <<EOF
{
  "schema": "ftflame-calib-meta/1",
  "method": "empty-calls",
  "kernel": $(json_str "$(uname -r)"),
  "clock": $(json_str "$FT_EFFECTIVE_CLOCK"),
  "tracer_options": $(tracer_options_json),
  "null_functions": $(json_str_array "${NULL_FUNCS[@]}"),
  "null_rpcs_per_recording": $COUNT,
  "host": $(json_str "$HOST"),
  "port": $PORT,
  "client": $(json_str "$CLIENT"),
  "nfs_version": $VERS,
  "started": $(json_str "$STARTED"),
  "traces": {"null": "calib-null.dat", "dispatch_root": "calib-dispatch-root.dat", "dispatch_full": "calib-dispatch-full.dat"}
}
EOF
)
write_whole "$OUT/calib-meta.json" "$calib_meta" || exit 1

# Compute calibration.json with ftflame, when it can.
FT=${FTFLAME:-ftflame}
LATER="$FT calibrate --from-traces calib-null.dat calib-dispatch-root.dat calib-dispatch-full.dat -o calibration.json"
# (`ftflame calibrate` alone runs this script: only --from-traces does the math)
if ! command -v "$FT" >/dev/null 2>&1 ||
	! { "$FT" calibrate --help 2>&1 {FT_LOCK_FD}<&- || true; } | grep -q -- --from-traces; then
	say "the three calibration traces are in $OUT_SHOWN/; '$FT calibrate' is not available here,"
	say "so compute calibration.json later, in that folder, with: $LATER"
	exit 0
fi
if ! (cd "$OUT" && "$FT" calibrate --from-traces calib-null.dat calib-dispatch-root.dat \
	calib-dispatch-full.dat -o calibration.json {FT_LOCK_FD}<&-); then
	die "'$FT calibrate' failed on the traces in $OUT_SHOWN/ (rerun there: $LATER)"
fi
say "calibration.json: $(head -c 200 "$OUT/calibration.json" | tr -d '\n')"
