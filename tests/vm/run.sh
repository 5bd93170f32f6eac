#!/usr/bin/env bash
# run.sh: the VM tests of collect/ (make test-vm). Boots real Debian kernels
# under qemu with virtme-ng, runs collect.sh on a loopback NFS server inside
# (tests/vm/guest.sh), reports the result with ftflame on the host, and checks
# it all with pytest (tests/vm/check_vm.py).
#
# USAGE: tests/vm/run.sh [SERIES...]      SERIES: 5.10 6.1 6.12 7.x (default: all four)
#
# EXAMPLE:
#   # tests/vm/run.sh 6.1
#   run.sh: 6.1.0-56-amd64: booting (results in tests/artifacts/vm/6.1.0-56-amd64)
#   run.sh: 6.1.0-56-amd64: guest finished in 212 s
#   run.sh: 6.1.0-56-amd64: ftflame report -> run/report.json
#   ........................                                     [100%]
#   24 passed in 9.1s
#
# Profiles: the series of FTFLAME_VM_FULL (default "6.1 6.12") run every step
# of guest.sh; the others (5.10, 7.x) a short one, to keep make test-vm within
# CI's time: no iozone run (what it tests, collect.sh's reading of iozone's
# output and of perf, does not depend on the kernel) and 50 NULL RPCs per
# calibration recording instead of 200 (FTFLAME_VM_SHORT_CALIB_COUNT). The
# series of FTFLAME_VM_MINIMAL (default "5.10") run the short profile without
# the Ctrl-C run (the same restore as the trace-cmd-killed run's) and without
# the calibration's three recordings: under TCG 5.10 takes about a minute to
# turn function_graph on or off (text_poke), and its recordings and workloads
# run 3-4 times slower than 6.x's (5-6 minutes a recording on a loaded host).
# RESULTS/profile.json says which, for check_vm.py.
#
# Needs root, qemu-system-x86, the NFS server tools, fio, trace-cmd and
# virtme-ng (make setup-vm installs them), about 1 GB in /var/lib/ftflame-vm
# for the kernels (tests/vm/kernels.sh), and no KVM: qemu runs in TCG
# (software emulation), so a boot takes 5-15 s and a traced run tens of s.
# Why virtme-ng, and how the guest is set up: see collect/README.md.
#
# Environment: FTFLAME_VM_TIMEOUT (s per boot, default 2400),
# FTFLAME_VM_QEMU_OPTS (extra qemu options, default "-accel tcg,thread=single"),
# FTFLAME_VM_RESULTS (results root, default tests/artifacts/vm),
# FTFLAME_VM_CALIB_COUNT (NULL RPCs per calibration recording, default 200),
# FTFLAME_VM_FULL, FTFLAME_VM_MINIMAL, FTFLAME_VM_SHORT_CALIB_COUNT (the
# profiles above),
# FTFLAME_VM_JOBS (guests at a time, default: the host's cores).
set -euo pipefail

PROG=${0##*/}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RESROOT=${FTFLAME_VM_RESULTS:-$REPO/tests/artifacts/vm}
TIMEOUT=${FTFLAME_VM_TIMEOUT:-2400}
PY=$REPO/.venv/bin/python
# Single-threaded TCG: qemu runs both vCPUs in one host thread, in turns. With
# one thread per vCPU (the default), a vCPU can go on running translated code
# that another vCPU has just patched, which the kernel's ftrace code patching
# does not survive (seen: int3 oopses, IPI soft lockups in text_poke_bp_batch).
QEMU_OPTS=${FTFLAME_VM_QEMU_OPTS-"-accel tcg,thread=single"}

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (qemu, /var/lib/ftflame-vm, the NFS server in the guest)"
VNG=$REPO/.venv/bin/vng
[ -x "$VNG" ] || VNG=$(command -v vng || true)
[ -n "$VNG" ] || die "virtme-ng (vng) is not installed: run make setup-vm"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is missing: run make setup-vm"
[ -x "$PY" ] || die "$PY is missing: run make setup-vm"
# vng runs its helpers (virtme-run, ...) from PATH.
PATH=$(dirname "$VNG"):$PATH

[ $# -gt 0 ] || set -- 5.10 6.1 6.12 7.x
SERIES=("$@")
mapfile -t KERNELS < <("$REPO/tests/vm/kernels.sh" "$@")
((${#KERNELS[@]} == $#)) || die "could not get the kernels: $*"
FULL=" ${FTFLAME_VM_FULL-6.1 6.12} "
MINIMAL=" ${FTFLAME_VM_MINIMAL-5.10} "
# Drivers of qemu's emulated hardware that nothing here uses: udev loads them
# at boot, and on 5.10 under TCG loading them took 3 of the boot's 5 minutes
# (kvm alone 90 s: every module load patches its code).
NOMODULES=kvm,kvm_intel,kvm_amd,iTCO_wdt,iTCO_vendor_support,i2c_i801,pcspkr,i6300esb

# boot KVER VMLINUZ RES PROFILE_JSON: one VM run of guest.sh; the guest's
# console goes to RES/console.log. Returns 0 when the guest script ran to its end.
boot() {
	local kver=$1 vmlinuz=$2 res=$3 profile=$4 pid waited=0 calib iozone ctrlc calibrate
	rm -rf "$res"
	mkdir -p "$res"
	printf '%s\n' "$profile" >"$res/profile.json"
	calib=$(sed -n 's/.*"calib_count": \([0-9]*\).*/\1/p' <<<"$profile")
	iozone=$(sed -n 's/.*"iozone": \([a-z]*\).*/\1/p' <<<"$profile")
	ctrlc=$(sed -n 's/.*"ctrl_c": \([a-z]*\).*/\1/p' <<<"$profile")
	calibrate=$(sed -n 's/.*"calibrate": \([a-z]*\).*/\1/p' <<<"$profile")
	# --disable-kvm: KVM hangs on these machines, qemu's TCG works.
	# --force-9p: the host root is shared read-only over 9p (no virtiofsd).
	# --verbose: the console (kernel log) goes to console.log; the guest
	#   writes its own log and exit code into the shared folder, because
	#   without udev in the guest vng cannot pass them back itself.
	# -accel tcg,thread=single: see QEMU_OPTS above.
	# setsid: its own process group, so that a hung guest can be killed whole.
	setsid "$VNG" --run "$vmlinuz" --disable-kvm --force-9p --memory 2G --cpus 2 \
		--append "module_blacklist=$NOMODULES" --rwdir "$res" --verbose ${QEMU_OPTS:+--qemu-opts="$QEMU_OPTS"} \
		--exec "$(printf '%q ' env FTFLAME_VM_CALIB_COUNT="$calib" \
			FTFLAME_VM_IOZONE="$([ "$iozone" = true ] && echo 1 || echo 0)" \
			FTFLAME_VM_CTRL_C="$([ "$ctrlc" = false ] && echo 0 || echo 1)" \
			FTFLAME_VM_CALIBRATE="$([ "$calibrate" = false ] && echo 0 || echo 1)" \
			bash "$REPO/tests/vm/guest.sh" "$res")" \
		</dev/null >"$res/console.log" 2>&1 &
	pid=$!
	# A watchdog: the whole run has TIMEOUT seconds; a guest whose kernel
	# reported a soft lockup and then wrote nothing for 3 minutes is hung.
	while kill -0 "$pid" 2>/dev/null; do
		sleep 5
		waited=$((waited + 5))
		if ((waited > TIMEOUT)); then
			say "$kver: no end after $TIMEOUT s: stopping the guest"
			break
		fi
		if grep -q 'soft lockup' "$res/console.log" &&
			[ -z "$(find "$res" -type f ! -name console.log -newermt '-180 seconds' -print -quit)" ]; then
			say "$kver: the guest kernel reports a soft lockup and made no progress for 3 min: stopping it"
			break
		fi
	done
	kill -- "-$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	[ -e "$res/guest.done" ]
}

# run_kernel I: boot kernel I of KERNELS, run guest.sh in it, then ftflame
# report on the host. Returns 1 when the guest did not finish.
run_kernel() {
	local i=$1 line series kver vmlinuz res profile t0 t1 rrc out FT
	line=${KERNELS[$i]}
	series=${SERIES[$i]}
	kver=${line%%$'\t'*}
	vmlinuz=${line#*$'\t'}
	res=$RESROOT/$kver
	if [[ $FULL == *" $series "* ]]; then
		profile="{\"series\": \"$series\", \"profile\": \"full\", \"calib_count\": ${FTFLAME_VM_CALIB_COUNT:-200}, \"iozone\": true, \"ctrl_c\": true}"
	elif [[ $MINIMAL == *" $series "* ]]; then
		profile="{\"series\": \"$series\", \"profile\": \"minimal\", \"calib_count\": ${FTFLAME_VM_SHORT_CALIB_COUNT:-50}, \"iozone\": false, \"ctrl_c\": false, \"calibrate\": false}"
	else
		profile="{\"series\": \"$series\", \"profile\": \"short\", \"calib_count\": ${FTFLAME_VM_SHORT_CALIB_COUNT:-50}, \"iozone\": false, \"ctrl_c\": true}"
	fi
	say "$kver: booting (results in ${res#"$REPO"/}; $profile)"
	t0=$(date +%s)
	if ! boot "$kver" "$vmlinuz" "$res" "$profile"; then
		# Under TCG with 2 vCPUs, the kernel's live code patching (ftrace turning
		# function_graph on and off) can trip over stale translated code: an
		# unexpected int3 oops, or an IPI that never returns (soft lockup). A
		# qemu/TCG artefact, not collect.sh's (thread=single makes it rare):
		# boot once more.
		if grep -qE 'Kernel panic|Oops:|BUG:|soft lockup' "$res/console.log"; then
			grep -m 3 -E 'Kernel panic|Oops:|BUG:|soft lockup|RIP:' "$res/console.log" >&2 || true
			mv "$res/console.log" "$RESROOT/$kver.crashed-console.log"
			say "$kver: WARNING: the guest kernel crashed or hung (above); booting once more"
			t0=$(date +%s)
			boot "$kver" "$vmlinuz" "$res" "$profile" || true
		fi
	fi
	t1=$(date +%s)
	if [ ! -e "$res/guest.done" ]; then
		tail -n 30 "$res/guest.log" >&2 2>/dev/null || true
		tail -n 30 "$res/console.log" >&2 || true
		say "$kver: error: the guest did not finish (see $res/guest.log and console.log)"
		return 1
	fi
	echo "$((t1 - t0))" >"$res/vm-seconds.txt"
	say "$kver: guest finished in $((t1 - t0)) s"

	# The report, on the host (faster than under TCG).
	FT=$REPO/.venv/bin/ftflame
	if [ -x "$FT" ] && "$FT" report --help >/dev/null 2>&1; then
		# report.rc tells check_vm.py the report ran and how it ended: a
		# failed report fails the check instead of looking like a skip
		rrc=0
		"$FT" report "$res/run/trace.dat" -o "$res/run/report.json" 2>"$res/report.stderr" || rrc=$?
		echo "$rrc" >"$res/report.rc"
		[ "$rrc" = 0 ] || say "$kver: ftflame report failed (exit $rrc, see $res/report.stderr)"
		[ -e "$res/run/report.json" ] && say "$kver: ftflame report -> run/report.json"
		# the iozone run directory: its measured totals, and the balance
		# sheet against its baseline
		if [ -d "$res/ioz" ]; then  # (not in the short profile)
			for out in report.json report.txt; do
				"$FT" report "$res/ioz" --baseline "$res/ioz/baseline.dat" -o "$res/ioz/$out" \
					2>>"$res/report.stderr" || say "$kver: ftflame report of ioz/ failed (see $res/report.stderr)"
			done
		fi
	else
		rm -f "$res/report.rc"
		say "$kver: NOTE: .venv/bin/ftflame report is not available here: skipping the report step (make setup installs it)"
	fi
}

# Each guest runs in one host thread (thread=single), so kernels boot side by
# side, FTFLAME_VM_JOBS at a time (default: the host's cores): four kernels
# take about the time of two on a 2-core machine.
JOBS=${FTFLAME_VM_JOBS:-$(nproc)}
((JOBS >= 1)) || JOBS=1
DIRS=() PIDS=() FAILED=()
for i in "${!KERNELS[@]}"; do
	line=${KERNELS[$i]}
	DIRS+=("$RESROOT/${line%%$'\t'*}")
done
for i in "${!KERNELS[@]}"; do
	while (($(jobs -pr | wc -l) >= JOBS)); do
		wait -n || true
	done
	run_kernel "$i" &
	PIDS[i]=$!
	# boots a few seconds apart: vng builds its guest set-up on the way in
	sleep 2
done
for i in "${!KERNELS[@]}"; do
	wait "${PIDS[$i]}" || FAILED+=("${SERIES[$i]}")
done
((${#FAILED[@]} == 0)) || die "the guest of ${FAILED[*]} did not finish (see above)"

FTFLAME_VM_RESULTS_DIRS=$(printf '%s\n' "${DIRS[@]}") "$PY" -m pytest -q -p no:cacheprovider "$REPO/tests/vm/check_vm.py"
