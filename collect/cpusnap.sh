#!/usr/bin/env bash
# cpusnap.sh FILE -- WORKLOAD...: run WORKLOAD and record the NFS server's
# CPU time around it from sources that do not depend on ftrace, for
# collect.sh (which runs it as the workload under trace-cmd) and `ftflame
# report` (ftflame/correct/cpu.py). FILE, in collect.sh's private temporary
# folder (collect.sh copies it into the run folder), gets, just before and
# just after the workload:
#   - /proc/stat (the machine's user, nice, system, idle, iowait, irq,
#     softirq, steal time per CPU, in USER_HZ ticks),
#   - /proc/net/rpc/nfsd (the server's own RPC counts),
#   - /proc/TID/schedstat of every nfsd thread (on-CPU ns, run-queue wait
#     ns, time slices),
# and, where perf runs for this kernel, `perf stat -e task-clock
# --per-thread -t TIDS -x,` counted over the workload (collect/README.md,
# "CPU time measured outside the tracer"). The workload's exit code is ours.
#
# perf counts beside the workload (started first, stopped with SIGINT
# after): `perf stat -t TIDS -- WORKLOAD` counts nothing on some perf
# versions (the counters wait for an exec the target never does).
#
# Environment, for tests: FTFLAME_PROC (/proc), FTFLAME_NFSD_STATS
# (FTFLAME_PROC/net/rpc/nfsd), FTFLAME_NO_PERF (use /proc only).
set -u
out=$1
shift
[ "${1-}" = -- ] && shift
PROC=${FTFLAME_PROC:-/proc}
NFSD_STATS=${FTFLAME_NFSD_STATS:-$PROC/net/rpc/nfsd}

# (bash's read: no process per thread, which costs under emulation)
copy() {
	local line
	while IFS= read -r line || [ -n "$line" ]; do printf '%s\n' "$line"; done <"$1"
}
nfsd_tids() {
	local c name t
	for c in "$PROC"/[0-9]*/comm; do
		name=""
		read -r name 2>/dev/null <"$c" || true
		[ "$name" = nfsd ] || continue
		t=${c%/comm}
		printf '%s\n' "${t##*/}"
	done
}
snap() {  # WHEN
	local t a b n
	printf '=== %s stat\n' "$1"
	copy "$PROC/stat" 2>/dev/null
	printf '=== %s nfsd\n' "$1"
	copy "$NFSD_STATS" 2>/dev/null
	printf '=== %s schedstat\n' "$1"
	for t in $(nfsd_tids); do
		a="" b="" n=""
		read -r a b n 2>/dev/null <"$PROC/$t/schedstat" || continue
		printf '%s %s %s %s\n' "$t" "$a" "$b" "$n"
	done
}

mapfile -t TIDS < <(nfsd_tids)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ftflame-cpu.XXXXXX") || exit 1
trap 'rm -rf -- "$TMP"' EXIT

# (before perf starts: its window lies inside the one of the copies)
{
	printf 'ftflame-cpu/1\n'
	printf 'clk_tck %s\n' "$(getconf CLK_TCK 2>/dev/null || echo 100)"
	printf 'cpus %s\n' "$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 0)"
	printf 'threads %s\n' "${TIDS[*]}"
	snap before
} >"$TMP/cpu"

PERF_STATE=absent PPID_PERF=""
if [ -n "${FTFLAME_NO_PERF-}" ]; then
	PERF_STATE="not used (FTFLAME_NO_PERF)"
elif ((${#TIDS[@]} == 0)); then
	PERF_STATE="not used (no nfsd thread)"
elif command -v perf >/dev/null 2>&1; then
	if ! perf stat -e task-clock -x, -o /dev/null -- true >"$TMP/probe" 2>&1; then
		PERF_STATE="failed: $(head -c 200 "$TMP/probe" | tr '\n' ' ')"
	else
		tids=${TIDS[*]}
		perf stat -e task-clock --per-thread -t "${tids// /,}" -x, -o "$TMP/perf" \
			</dev/null >/dev/null 2>"$TMP/perf-err" &
		PPID_PERF=$!
		# counting once its counters are open (an fd per thread), for at
		# most 30 s (a fork takes 0.1 s under emulation): the workload's
		# first calls must not pass uncounted
		ready=0 t0=$SECONDS
		while ((SECONDS - t0 < 30)); do
			if [[ $(ls -l /proc/"$PPID_PERF"/fd/ 2>/dev/null) == *"[perf_event]"* ]]; then
				ready=1
				sleep 0.2  # (perf enables its counters just after it opens them)
				break
			fi
			kill -0 "$PPID_PERF" 2>/dev/null || break
			sleep 0.05
		done
		PERF_STATE=ok
		((ready)) || PERF_STATE="not ready: its counters were not open after $((SECONDS - t0)) s"
	fi
fi

set +e
"$@"
rc=$?

if [ -n "$PPID_PERF" ]; then
	kill -INT "$PPID_PERF" 2>/dev/null
	wait "$PPID_PERF"
	prc=$?
	[ -s "$TMP/perf" ] || PERF_STATE="failed (exit $prc): $(head -c 200 "$TMP/perf-err" | tr '\n' ' ')"
fi
{
	snap after
	printf '=== perf %s\n' "$PERF_STATE"
	[ "$PERF_STATE" = ok ] && copy "$TMP/perf"
	printf '=== end\n'
} >>"$TMP/cpu"
# (a copy, then a rename: collect.sh never reads a half-written file)
cp -- "$TMP/cpu" "$out.tmp" && mv -f -- "$out.tmp" "$out"
exit "$rc"
