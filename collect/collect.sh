#!/usr/bin/env bash
# collect.sh: record an ftrace function_graph trace of nfsd paths around a
# workload, with everything `ftflame report` needs to trust the numbers.
#
# USAGE: collect.sh [options] -p PRESET|-g FUNC ... [-o DIR] -- WORKLOAD...
#
# Run as root on the NFS server. It records with `trace-cmd record -p
# function_graph`, graph functions from -g (repeatable) or a preset -p, while
# WORKLOAD (the command after --) runs; then, unless told otherwise, an
# empty-call calibration (calibrate.sh). DIR gets:
#   trace.dat         the function_graph trace (+ sched_switch events)
#   baseline.dat      with --baseline: the same workload, only the graph
#                     functions hooked (-l), for their true totals, and the
#                     interrupt entry functions this kernel has (irq_enter_rcu,
#                     __sysvec_*, the softirq actions...: meta.json lists them)
#   calibration.json  tracer overhead per call (O_in, O_out), see calibrate.sh
#   calib-*.dat       the calibration's own recordings
#   meta.json         kernel, trace-cmd, functions, options, clock, CPUs,
#                     nfsd threads, workload, start/end, lost events per CPU
#                     (null when trace-cmd cannot tell), complete or not;
#                     measured: the server's /proc/net/rpc/nfsd and the
#                     client's /proc/self/mountstats before and after each
#                     recording, iozone's result table (collect/README.md)
#   cpu-main.txt      the server's CPU time around the workload, measured
#                     without ftrace: /proc/stat, /proc/net/rpc/nfsd, the nfsd
#                     threads' schedstat and perf task-clock (cpusnap.sh);
#                     cpu-baseline.txt for --baseline
#   workload.log      the workload's output (baseline-workload.log for --baseline)
#   record.log        trace-cmd's own output
#
# Graph functions:
#   -g FUNC              a function to graph (repeatable); must exist in
#                        available_filter_functions
#   -p PRESET            nfsd-write    nfsd3_proc_write nfsd4_write
#                        nfsd-read     nfsd3_proc_read nfsd4_read
#                        nfsd-getattr  nfsd3_proc_getattr nfsd4_getattr
#                        nfsd-open     nfsd_open fh_verify
#                        nfsd-dispatch nfsd_dispatch
#                        rpc           svc_process
#                        (a preset's missing functions are named and skipped)
# Tracer options (calibration uses the same ones):
#   --depth N            max graph depth (default 0: unlimited)
#   --buffer KB          ring buffer per CPU in KB (default: the kernel's)
#   --buffer-percent N   tracefs buffer_percent while recording: trace-cmd's
#                        reader sleeps until a CPU's buffer is N% full
#                        (default: the kernel's, usually 50). For accuracy
#                        runs: --buffer-percent 100 with a --buffer that
#                        holds the whole run (e.g. --buffer 32768 for a few
#                        hundred writes with their whole graph): no wake-up
#                        of the reader (an irq_work interrupt, often a switch
#                        to trace-cmd) lands inside the traced calls, and the
#                        calibration is recorded in the same mode, as it must
#                        be (docs/overhead.md). What does not fit the buffer
#                        is lost, and counted in meta.json
#   --cpus LIST          trace only these CPUs, e.g. 0-3,6
#   --irqs on|off        graph interrupts inside traced calls (default on)
#   --sleep-time on|off  count time switched out in a call (default on)
#   --clock CLOCK        trace clock (default: the kernel's current one)
#   --no-sched           do not record sched:sched_switch alongside (it lets
#                        the report split on-CPU from off-CPU time)
# Runs:
#   --baseline           also run the workload again with only the graph
#                        functions hooked -> baseline.dat; the interrupt
#                        entry functions are hooked too, so that interrupts
#                        inside a call are split off there as in trace.dat
#                        and the report's accounted % compares like with like
#   --no-calibrate       skip the empty-call calibration
#   --calib-count N      NULL RPCs per calibration recording (default 300)
#   --calib-host HOST    NFS server to send them to (default 127.0.0.1)
#   --calib-vers 3|4     NFS version of the NULL RPCs (default 3)
#   -o DIR               output folder (default ./ftflame-YYYYmmdd-HHMMSS):
#                        a new one, or an existing one that holds no run,
#                        owned by root and writable by no one else; every
#                        folder above it root's and writable by no one
#                        else, or sticky (the default's too: not in a
#                        user's home folder)
#   --force              trace even when another tracer seems active, and
#                        replace the run an -o folder holds (all of its
#                        files are removed first: never a mix of two runs)
#   --restore            put back the tracefs settings a collector killed
#                        with SIGKILL left changed, then exit (the next run
#                        does it too)
#   -h, --help           this text
#
# EXAMPLE (NFS server with a client mount of itself on /mnt/nfs):
#   # collect/collect.sh -p nfsd-write --baseline -o run1 -- \
#         iozone -i0 -r4k -s64m -I -f /mnt/nfs/x
#   collect.sh: graph functions: nfsd3_proc_write nfsd4_write
#   collect.sh: recording /root/run1/trace.dat around: iozone -i0 -r4k -s64m -I -f /mnt/nfs/x
#   ... (iozone's output) ...
#   collect.sh: trace.dat: no lost events
#   collect.sh: recording /root/run1/baseline.dat: the same workload, only the graph functions hooked (and the interrupt entries)
#   ... (iozone's output) ...
#   collect.sh: baseline.dat: no lost events
#   collect.sh: calibrating: 300 NULL RPCs to 127.0.0.1 (NFSv3), 3 recordings
#   calibrate.sh: recording calib-null.dat (300 NULL RPCs)
#   calibrate.sh: recording calib-dispatch-root.dat (300 NULL RPCs)
#   calibrate.sh: recording calib-dispatch-full.dat (300 NULL RPCs)
#   calibrate.sh: calibration.json: {"schema":"ftflame-calibration/1","o_in_ns":710.2,...}
#   collect.sh: done: /root/run1/ (ftflame report /root/run1)
# Without iozone: -- fio --name=w --filename=/mnt/nfs/x --rw=write --bs=4k \
#   --size=64m --direct=1 --ioengine=psync  (or dd, or any command).
#
# WARNING: function_graph hooks every function under the graph functions:
# short calls get 10x slower or more and the workload itself slows down. Use
# it on a test box. ftflame report subtracts the hook cost measured by the
# calibration. Lost events (ring buffer overruns) make call times wrong
# around the gaps: they are counted in meta.json and warned about loudly,
# with a buffer size to try.
#
# Safety: refuses (exit 2, one line on stderr) when not root, without tracefs,
# without the function_graph tracer, on a function that does not exist,
# while another collector holds the lock (a flock on /run/ftflame, a
# directory only root can write to; the refusal names the holder), on an
# output folder another user could write to or swap (a folder above it that
# another user owns or can write to; or one that holds a previous run,
# unless --force). A trap puts back every tracefs setting it changed, also on
# Ctrl-C, SIGTERM, SIGHUP and on errors; tracing is never left on. The
# settings to put back are also saved beside the lock until then: when
# collect.sh is killed with SIGKILL, a watchdog stops trace-cmd and the
# workload and puts them back, and failing that the next run (or --restore)
# does. A signal stops the workload (its whole process group) and trace-cmd
# within about 2 s; when trace-cmd dies, the workload is stopped too. The
# run's files are created afresh in a folder only root can write to, held
# open and written through the open folder (collect/README.md). A
# trace is written as NAME.dat.partial,
# renamed only when trace-cmd ended well; a run that did not end well gets a
# meta.json with "complete": false and the reason, when the disk has room.
# Exit: 0 done, 1 failed while running (or the workload failed), 2 refused,
# 130/143/129 interrupted by SIGINT/SIGTERM/SIGHUP.
set -euo pipefail

FT_PROG=collect.sh
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$HERE/lib.sh"
# shellcheck source-path=SCRIPTDIR source=measure.sh
. "$HERE/measure.sh"

preset_functions() {
	case $1 in
	nfsd-write)    echo nfsd3_proc_write nfsd4_write ;;
	nfsd-read)     echo nfsd3_proc_read nfsd4_read ;;
	nfsd-getattr)  echo nfsd3_proc_getattr nfsd4_getattr ;;
	nfsd-open)     echo nfsd_open fh_verify ;;
	nfsd-dispatch) echo nfsd_dispatch ;;
	rpc)           echo svc_process ;;
	*) usage_error "unknown preset '$1' (known: nfsd-write nfsd-read nfsd-getattr nfsd-open nfsd-dispatch rpc)" ;;
	esac
}

# ------------------------------------------------------------------ options
GRAPH_FUNCS=()    # from -g: must all exist
PRESETS=()
PRESET_FUNCS=()   # from -p: missing ones are skipped
OUT=""
BASELINE=0
CALIBRATE=1
CALIB_COUNT=300
CALIB_HOST=127.0.0.1
CALIB_VERS=3
FT_FORCE=0
RESTORE=0
WORKLOAD=()

while [ $# -gt 0 ]; do
	parse_tracer_opt "$@"
	if ((FT_SHIFT > 0)); then shift "$FT_SHIFT"; continue; fi
	case $1 in
	-h | --help) print_header "$0"; exit 0 ;;
	-g) [ $# -ge 2 ] || usage_error "-g needs a function name"
		[[ $2 =~ ^[A-Za-z_][A-Za-z0-9_.]*$ ]] || usage_error "-g wants a function name, not '$2'"
		GRAPH_FUNCS+=("$2"); shift 2 ;;
	-p) [ $# -ge 2 ] || usage_error "-p needs a preset name"
		preset_functions "$2" >/dev/null  # (refuses an unknown preset here, not in a subshell)
		read -ra fs <<<"$(preset_functions "$2")"
		PRESETS+=("$2"); PRESET_FUNCS+=("${fs[@]}"); shift 2 ;;
	-o) [ $# -ge 2 ] || usage_error "-o needs a folder"
		OUT=$2; shift 2 ;;
	--baseline) BASELINE=1; shift ;;
	--no-calibrate) CALIBRATE=0; shift ;;
	--calib-count) [[ ${2-} =~ ^[1-9][0-9]*$ ]] || usage_error "--calib-count wants a number"
		CALIB_COUNT=$2; shift 2 ;;
	--calib-host) [ -n "${2-}" ] || usage_error "--calib-host needs a host"
		CALIB_HOST=$2; shift 2 ;;
	--calib-vers) [[ ${2-} == 3 || ${2-} == 4 ]] || usage_error "--calib-vers wants 3 or 4"
		CALIB_VERS=$2; shift 2 ;;
	--force) FT_FORCE=1; shift ;;
	--restore) RESTORE=1; shift ;;
	--) shift; WORKLOAD=("$@"); break ;;
	*) usage_error "unknown option '$1' (the workload goes after --)" ;;
	esac
done

if ((RESTORE)); then
	require_root
	take_lock
	recover_tracefs && rc=0 || rc=$?
	case $rc in
	0) say "tracefs settings put back" ;;
	1) say "nothing to put back: no collector left tracefs changed" ;;
	*) printf '%s: error: some tracefs settings could not be put back (see above); they stay in %s\n' \
		"$FT_PROG" "$FT_LOCK_DIR/$FT_STATE_NAME" >&2; exit 1 ;;
	esac
	exit 0
fi
((${#WORKLOAD[@]})) || usage_error "no workload: give the command to run after --"
((${#GRAPH_FUNCS[@]} + ${#PRESET_FUNCS[@]})) || usage_error "no graph functions: give -g FUNC or -p PRESET"

# ------------------------------------------------------------------- checks
require_root
find_tracefs
require_function_graph
require_trace_cmd

# Explicit -g functions must exist; a preset's may be partly missing (an
# older kernel, or no NFSv4), as long as one is left.
mapfile -t missing < <(missing_functions "${GRAPH_FUNCS[@]}")
if ((${#missing[@]})); then
	refuse "no such traceable function: ${missing[*]} (not in $T/available_filter_functions)$(nfsd_hint)"
fi
FUNCS=()
for f in "${GRAPH_FUNCS[@]}"; do [[ " ${FUNCS[*]} " == *" $f "* ]] || FUNCS+=("$f"); done
if ((${#PRESET_FUNCS[@]})); then
	mapfile -t pmissing < <(missing_functions "${PRESET_FUNCS[@]}")
	for f in "${PRESET_FUNCS[@]}"; do
		[[ " ${pmissing[*]} " == *" $f "* ]] && continue
		[[ " ${FUNCS[*]} " == *" $f "* ]] || FUNCS+=("$f")
	done
	((${#FUNCS[@]})) ||
		refuse "none of the functions of -p ${PRESETS[*]} exist: ${pmissing[*]} (not in $T/available_filter_functions)$(nfsd_hint)"
	((${#pmissing[@]} == 0)) || warn "skipping functions this kernel does not have: ${pmissing[*]}"
fi

take_lock
if recover_tracefs; then :; elif (($? == 2)); then
	refuse "the tracefs settings a collector left changed could not all be put back (see above): fix them by hand, then remove $FT_LOCK_DIR/$FT_STATE_NAME"
fi
busy_check

# The output folder: only root can write to it (no link or file another user
# planted), and it holds one run only. Checked before the tracer options
# (whose warnings would come before a refusal), made after them.
RUN_FILES=(meta.json trace.dat baseline.dat workload.log baseline-workload.log record.log
	cpu-main.txt cpu-baseline.txt calibration.json calib-meta.json calib-rpc.log calib-null.dat calib-dispatch-root.dat calib-dispatch-full.dat)
previous_run() {  # -> PREVIOUS: the files of a run in OUT
	local f g names
	PREVIOUS=()
	for f in "${RUN_FILES[@]}"; do
		names=("$f")
		case $f in *.dat) names+=("$f.partial") ;; *.json | cpu-*.txt) names+=(".$f.tmp") ;; esac
		for g in "${names[@]}"; do
			if [ -e "$OUT/$g" ] || [ -L "$OUT/$g" ]; then PREVIOUS+=("$g"); fi
		done
	done
	((${#PREVIOUS[@]} == 0 || FT_FORCE)) ||
		refuse "$OUT_SHOWN holds a previous run (${PREVIOUS[*]}): choose another -o folder, or pass --force to replace that run"
}
OUT_MADE=0
if [ -n "$OUT" ] && { [ -e "$OUT" ] || [ -L "$OUT" ]; }; then
	use_out_dir "$OUT"
	previous_run
	OUT_MADE=1
elif [ -n "$OUT" ]; then
	use_out_dir "$OUT" check
else
	here=$(pwd -P) || refuse "cannot tell the current folder (give an output folder with -o)"
	check_above "$here" "${here%/}/ftflame-DATE (the default, in the current folder)"
fi

tracer_args

# The default name anyone can predict: when it is taken, a new one beside it.
# It goes in the current folder, which must be one only root can change
# (not a user's home: that user could swap the run folder while root writes).
if ((!OUT_MADE)); then
	if [ -z "$OUT" ]; then
		name=ftflame-$(date +%Y%m%d-%H%M%S)
		if [ -e "$name" ] || [ -L "$name" ] || ! mkdir -m 0755 -- "$name" 2>/dev/null; then
			if ! name=$(mktemp -d -- "$name.XXXXXX") || ! chmod 0755 -- "$name"; then
				refuse "cannot create an output folder in $here (give one with -o)"
			fi
		fi
		OUT=${here%/}/${name##*/}
	fi
	use_out_dir "$OUT"
	previous_run
fi
if ((${#PREVIOUS[@]})); then  # --force: the old run goes whole
	(cd -- "$OUT" && rm -f -- "${PREVIOUS[@]}") || refuse "cannot remove the previous run's files in $OUT_SHOWN"
	say "--force: removed the previous run's files from $OUT_SHOWN: ${PREVIOUS[*]}"
fi

# ------------------------------------------------------ meta.json (functions)
# meta_json COMPLETE(1|0) WHY: the text of meta.json.
meta_json() {
	local tc_version cpu_model cpu_count nfsd_threads nfsd_versions cmdline
	local calib_file=null trace=null partial=null why=null
	# (trace-cmd --version exits 255)
	tc_version=$({ trace-cmd --version 2>&1 || true; } | sed -n 's/.*version \([^ ]*\).*/\1/p' | head -n 1)
	cpu_model=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
	cpu_count=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc)
	nfsd_threads=$(cat /proc/fs/nfsd/threads 2>/dev/null ||
		awk '$0 == "nfsd" { n++ } END { print n + 0 }' /proc/[0-9]*/comm 2>/dev/null || true)
	nfsd_versions=$(cat /proc/fs/nfsd/versions 2>/dev/null || true)
	[ -s "$OUT/calibration.json" ] && calib_file='"calibration.json"'
	[ -e "$OUT/trace.dat" ] && trace='"trace.dat"'
	[ -e "$OUT/trace.dat.partial" ] && partial='"trace.dat.partial"'
	(($1)) || why=$(json_str "$2")
	printf -v cmdline '%q ' "${WORKLOAD[@]}"
	cat <<EOF
{
  "schema": "ftflame-meta/1",
  "collector": "collect.sh",
  "complete": $(json_bool "$1"),
  "incomplete_reason": $why,
  "kernel": {"release": $(json_str "$(uname -r)"), "version": $(json_str "$(uname -v)"), "machine": $(json_str "$(uname -m)")},
  "trace_cmd_version": $(json_str "$tc_version"),
  "tracer": "function_graph",
  "graph_functions": $(json_str_array "${FUNCS[@]}"),
  "presets": $(json_str_array "${PRESETS[@]}"),
  "trace_clock": $(json_str "$FT_EFFECTIVE_CLOCK"),
  "tracer_options": $(tracer_options_json),
  "cpu": {"model": $(json_str "$cpu_model"), "count": $(json_num "$cpu_count")},
  "nfsd": {"threads": $(json_num "$nfsd_threads"), "versions": $(json_str "$nfsd_versions")},
  "workload": {"argv": $(json_str_array "${WORKLOAD[@]}"), "command_line": $(json_str "${cmdline% }"), "exit_code": $(json_num "$MAIN_RC"), "log": "workload.log"},
  "start": $(json_str "$MAIN_START"),
  "end": $(json_str "$MAIN_END"),
  "trace": $trace,
  "partial_trace": $partial,
  "lost_events_total": $MAIN_LOST_TOTAL,
  "lost_events": $MAIN_LOST_JSON,
  "baseline": $BASE_JSON,
  "measured": {"nfsd_stats": $(json_str "$NFSD_STATS"), "mountstats": $(json_str "$MOUNTSTATS"), "main": $MAIN_MEASURED_JSON, "baseline": $BASE_MEASURED_JSON, "cpu": {"main": $(cpu_file cpu-main.txt), "baseline": $(cpu_file cpu-baseline.txt)}},
  "calibration": {"status": $(json_str "$CALIB_STATUS"), "file": $calib_file, "null_rpcs": $CALIB_COUNT, "host": $(json_str "$CALIB_HOST"), "nfs_version": $CALIB_VERS},
  "warnings": $(json_str_array "${WARNINGS[@]}")
}
EOF
}

cpu_file() { if [ -s "$OUT/$1" ]; then json_str "$1"; else printf 'null'; fi; }

# write_meta COMPLETE(1|0) WHY: meta.json, whole or not at all.
write_meta() {
	local text
	META_WRITTEN=1
	text=$(meta_json "$@") || return 1
	# JSON is UTF-8: bytes of a workload's output that are not are dropped
	# (iconv -c; its exit status says some were)
	if command -v iconv >/dev/null 2>&1; then text=$(iconv -c -f UTF-8 -t UTF-8 <<<"$text" || true); fi
	write_whole "$OUT/meta.json" "$text"
}

# -------------------------------------------------------------- the trap
INTERRUPTED=""
META_WRITTEN=0
CALIB_PID=""
# shellcheck disable=SC2317  # (the trap functions are called by the traps)
on_exit() {
	local rc=$?
	trap - EXIT INT TERM HUP
	finish_tracefs || rc=1
	# A run that did not end well says so in meta.json, when it can.
	if ((!META_WRITTEN)) && ((FT_SNAPPED)); then
		local why=${FT_FAILED:-"collect.sh failed (exit $rc)"}
		[ -z "$INTERRUPTED" ] || why="interrupted by SIG$INTERRUPTED"
		write_meta 0 "$why" || rc=1
	fi
	remove_tmpfiles
	if [ -n "$INTERRUPTED" ]; then
		say "interrupted by SIG$INTERRUPTED: tracefs restored, workload and trace-cmd stopped; partial results in $OUT_SHOWN/"
	fi
	exit "$rc"
}
# shellcheck disable=SC2317
on_signal() {
	trap '' INT TERM HUP  # (the cleanup takes a moment: once is enough)
	INTERRUPTED=$1
	stop_recording
	if [ -n "$CALIB_PID" ]; then  # it stops its own recording, then exits
		kill -TERM "$CALIB_PID" 2>/dev/null || true
		wait "$CALIB_PID" 2>/dev/null || true
	fi
	case $1 in INT) exit 130 ;; TERM) exit 143 ;; *) exit 129 ;; esac
}
trap on_exit EXIT
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM
trap 'on_signal HUP' HUP

new_file "$OUT/record.log"

# What meta.json says of the parts that have not run (yet).
MAIN_RC="" MAIN_START="" MAIN_END="" MAIN_LOST_TOTAL=null MAIN_LOST_JSON=null
BASE_JSON=null
MAIN_MEASURED_JSON=null BASE_MEASURED_JSON=null
CALIB_STATUS=skipped
WARNINGS=()

snapshot_tracefs
BUFFER_KB=$(effective_buffer_kb)
if [ -n "$OPT_BUFFER_PCT" ]; then
	say "buffer_percent $OPT_BUFFER_PCT: trace-cmd's reader sleeps until a CPU's buffer is $OPT_BUFFER_PCT% full; the whole run must fit $BUFFER_KB KB per CPU (--buffer), else events are lost (counted)"
fi

say "graph functions: ${FUNCS[*]}"
GFLAGS=()
for f in "${FUNCS[@]}"; do GFLAGS+=(-g "$f"); done

# Totals measured outside the tracer around a recording (measure.sh): the
# server's RPC statistics and the client's mountstats, copied just before
# and just after it (so they cover the whole time tracing was on), and
# iozone's own figures. measure_begin; record ...; measure_end LOG -> sets
# MEASURED_JSON.
SNAP_DIR=$(mktemp -d "${TMPDIR:-/tmp}/ftflame-snap.XXXXXX")
FT_TMPFILES+=("$SNAP_DIR")
measure_begin() {
	snapshot_stats "$SNAP_DIR/before"
	# iozone -Q's files newer than this are this run's, after the lines
	# they had (iozone appends)
	touch "$SNAP_DIR/since"
	iozone_latency_lines "$PWD" >"$SNAP_DIR/ol-lines"
	# the server's CPU time, around the workload itself (cpusnap.sh)
	rm -f -- "$SNAP_DIR/cpu"
	FT_WORK_WRAP=(bash "$HERE/cpusnap.sh" "$SNAP_DIR/cpu" --)  # (bash: an installed copy may have lost its x bit)
}
measure_end() {  # LOG CPU-FILE
	local ioz=null lat=null
	FT_WORK_WRAP=()
	snapshot_stats "$SNAP_DIR/after"
	if [ -s "$SNAP_DIR/cpu" ]; then
		write_whole "$OUT/$2" "$(<"$SNAP_DIR/cpu")" || die "cannot write $OUT_SHOWN/$2"
	else
		warn "the server's CPU time was not recorded for ${1##*/}'s run (no $2)"
	fi
	if is_iozone "${WORKLOAD[@]}"; then
		# (what in the workload's output is not a number is left out, and
		# said: a warning here and in meta.json)
		ioz=$(iozone_json "$1" 2>"$SNAP_DIR/notes")
		lat=$(iozone_latency_json "$PWD" "$SNAP_DIR/since" "$SNAP_DIR/ol-lines" 2>>"$SNAP_DIR/notes")
		[ "$ioz" != null ] || warn "the workload is iozone but ${1##*/} holds no iozone result table (meta.json: iozone null)"
		local note
		while IFS= read -r note; do
			WARNINGS+=("${1##*/}: $note")
			warn "${WARNINGS[-1]}"
		done <"$SNAP_DIR/notes"
	fi
	MEASURED_JSON=$(printf '{"nfsd": %s, "client_mounts": %s, "iozone": %s, "iozone_latency": %s}' \
		"$(nfsd_stats_json "$SNAP_DIR/before.nfsd" "$SNAP_DIR/after.nfsd")" \
		"$(mountstats_json "$SNAP_DIR/before.mountstats" "$SNAP_DIR/after.mountstats")" "$ioz" "$lat")
}

# ----------------------------------------------------------- main recording
say "recording $OUT_SHOWN/trace.dat around: ${WORKLOAD[*]}"
new_file "$OUT/workload.log"
measure_begin
record "$OUT/trace.dat" "$OUT" "$OUT/workload.log" -- "${GFLAGS[@]}" -- "${WORKLOAD[@]}" ||
	die "$REC_ERROR"
measure_end "$OUT/workload.log" cpu-main.txt
MAIN_MEASURED_JSON=$MEASURED_JSON
MAIN_RC=$REC_RC MAIN_START=$REC_START MAIN_END=$REC_END
((MAIN_RC == 0)) || warn "the workload exited with status $MAIN_RC (see $OUT_SHOWN/workload.log)"

# Lost events per CPU; a loud warning with a buffer size to try. When
# trace-cmd cannot tell, they are unknown, not zero: null in meta.json.
lost_json() {  # FILE.dat -> sets LOST_JSON, LOST_TOTAL, READ_TOTAL, LOST_LIST
	local cpu ov cov dr rd first=1 rows
	LOST_JSON=null; LOST_TOTAL=null; READ_TOTAL=0; LOST_LIST=""
	rows=$(lost_events "$1") || return 1
	LOST_JSON="{"; LOST_TOTAL=0
	while read -r cpu ov cov dr rd; do
		local n=$((ov + cov + dr))
		((first)) || LOST_JSON+=", "
		first=0
		LOST_JSON+="\"$cpu\": {\"lost\": $n, \"overrun\": $ov, \"commit_overrun\": $cov, \"dropped\": $dr, \"read\": $rd}"
		LOST_TOTAL=$((LOST_TOTAL + n)); READ_TOTAL=$((READ_TOTAL + rd))
		((n == 0)) || LOST_LIST+="${LOST_LIST:+, }cpu$cpu: $n"
	done <<<"$rows"
	LOST_JSON+="}"
}
suggest_buffer() {  # per-CPU KB to try: 4x now, or more if much was lost
	awk -v b="$BUFFER_KB" -v l="$LOST_TOTAL" -v r="$READ_TOTAL" 'BEGIN {
		want = 4 * b; if (r > 0 && b * 2 * (r + l) / r > want) want = b * 2 * (r + l) / r
		s = 1024; while (s < want) s *= 2; print s }'
}
check_lost() {  # FILE.dat NAME
	if ! lost_json "$1"; then
		WARNINGS+=("lost events in $2 are UNKNOWN: 'trace-cmd report --stat $(shown "$1")' failed, so meta.json says null; check it by hand before trusting call times")
		warn "${WARNINGS[-1]}"
	elif ((LOST_TOTAL > 0)); then
		local try msg
		try=$(suggest_buffer)
		msg="LOST EVENTS: $LOST_TOTAL events lost in $2 ($LOST_LIST; ring buffer $BUFFER_KB KB per CPU). Call times around the gaps are wrong. Try --buffer $try, or fewer graph functions, or --depth."
		WARNINGS+=("$msg")
		printf '\n%s: WARNING: ********************************************************\n' "$FT_PROG" >&2
		warn "$msg"
		printf '%s: WARNING: ********************************************************\n\n' "$FT_PROG" >&2
	else
		say "$2: no lost events"
	fi
}
check_lost "$OUT/trace.dat" trace.dat
MAIN_LOST_JSON=$LOST_JSON MAIN_LOST_TOTAL=$LOST_TOTAL

# ----------------------------------------------------------- baseline run
if ((BASELINE)); then
	say "recording $OUT_SHOWN/baseline.dat: the same workload, only the graph functions hooked (and the interrupt entries)"
	LFLAGS=()
	for f in "${FUNCS[@]}"; do LFLAGS+=(-g "$f" -l "$f"); done
	# The interrupt entry functions too: an interrupt or softirq inside a
	# root call then shows as an interrupt subtree, which the report takes
	# out as it does in trace.dat, so that accounted % compares like with
	# like (docs/overhead.md "Accuracy, call by call"). Outside the graph
	# functions they record nothing.
	mapfile -t IRQ_FUNCS < <(irq_entry_functions)
	for f in "${IRQ_FUNCS[@]}"; do LFLAGS+=(-l "$f"); done
	new_file "$OUT/baseline-workload.log"
	measure_begin
	record "$OUT/baseline.dat" "$OUT" "$OUT/baseline-workload.log" -- "${LFLAGS[@]}" -- "${WORKLOAD[@]}" ||
		die "$REC_ERROR"
	measure_end "$OUT/baseline-workload.log" cpu-baseline.txt
	BASE_MEASURED_JSON=$MEASURED_JSON
	((REC_RC == 0)) || warn "the baseline workload exited with status $REC_RC (see $OUT_SHOWN/baseline-workload.log)"
	check_lost "$OUT/baseline.dat" baseline.dat
	BASE_JSON=$(printf '{"file": "baseline.dat", "workload_log": "baseline-workload.log", "exit_code": %s, "start": %s, "end": %s, "lost_events_total": %s, "lost_events": %s, "irq_entry_functions": %s}' \
		"$(json_num "$REC_RC")" "$(json_str "$REC_START")" "$(json_str "$REC_END")" "$LOST_TOTAL" "$LOST_JSON" \
		"$(json_str_array "${IRQ_FUNCS[@]}")")
fi

# ------------------------------------------------------------- calibration
if ((CALIBRATE)); then
	say "calibrating: $CALIB_COUNT NULL RPCs to $CALIB_HOST (NFSv$CALIB_VERS), 3 recordings"
	tracer_opts_cli
	crc=0
	# In the background, so that a signal reaches our trap at once (which
	# passes SIGTERM on). It keeps the lock fd: it holds the lock through it.
	# (-o: this script's open folder, /proc/PID/fd/N: calibrate.sh opens it
	# from there, never by its path; FT_OUT_SHOWN names it in messages)
	FT_OUT_SHOWN=$OUT_SHOWN "$HERE/calibrate.sh" "${FT_CLI[@]}" --count "$CALIB_COUNT" --host "$CALIB_HOST" \
		--vers "$CALIB_VERS" -o "$OUT" <&0 &
	CALIB_PID=$!
	start_guard script "$CALIB_PID"
	wait "$CALIB_PID" || crc=$?
	CALIB_PID=""
	stop_guard
	if [ -s "$OUT/calibration.json" ]; then
		CALIB_STATUS=ok
	elif ((crc == 0)); then
		CALIB_STATUS=traces-only
		warn "calibration recorded, calibration.json not computed (see the note above)"
	else
		CALIB_STATUS=failed
		WARNINGS+=("calibration failed (exit $crc): ftflame report falls back to an in-trace estimate of the overhead")
		warn "${WARNINGS[-1]}"
	fi
fi

# ---------------------------------------------------------------- meta.json
write_meta 1 "" || exit 1

if [[ $MAIN_LOST_TOTAL =~ ^[0-9]+$ ]] && ((MAIN_LOST_TOTAL > 0)); then
	warn "trace.dat LOST $MAIN_LOST_TOTAL EVENTS: see meta.json and rerun with a bigger --buffer"
fi
say "done: $OUT_SHOWN/ (ftflame report $OUT_SHOWN)"
((MAIN_RC == 0)) || exit 1
exit 0
