#!/usr/bin/env bash
# fixtures.sh: record the full fixture corpus again (make fixtures): each
# scenario of tests/vm/fixtures/<kernel>/<name>/scenario.sh in its own qemu VM
# (virtme-ng, TCG, as tests/vm/run.sh boots them) on Debian's kernel of that
# series, with a loopback NFS server inside (tests/vm/fixtures-guest.sh).
#
# USAGE: tests/vm/fixtures.sh OUTDIR [SCENARIO...]
#        SCENARIO: k6.1/s04-null, ... (default: every one). Then
#        FTFLAME_FIXTURES=OUTDIR make test   runs the suite on the new corpus.
#
# Each OUTDIR/<kernel>/<name>/ gets what the scenario records (trace*.dat,
# *.stat, fio-*.json, text traces, gzipped over 1 MB), kernel.txt,
# trace-cmd-version.txt, scenario.sh, guest.log, console.log and vm-seconds.txt.
# A scenario folder may hold vm.env (VM_CPUS, VM_QEMU_EXTRA: s15 runs on one
# vCPU with -icount; VM_TRACE_CMD=sid: the guest records with Debian sid's
# trace-cmd, tests/vm/sid-trace-cmd.sh, instead of the host's). Timings differ from run
# to run under TCG (all but s15), so tests that pin figures of whole
# recordings (tests/helpers/corpus.py) hold on the shared corpus, not on a new one.
#
# Needs root, what make setup-vm installs, and perf (linux-perf) for s11;
# about 1-3 min per scenario, the big one (s14) longer.
set -euo pipefail

PROG=${0##*/}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SCEN=$REPO/tests/vm/fixtures
TIMEOUT=${FTFLAME_VM_TIMEOUT:-1500}
QEMU_OPTS=${FTFLAME_VM_QEMU_OPTS-"-accel tcg,thread=single"}  # why: tests/vm/run.sh

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

OUT=${1:?usage: $PROG OUTDIR [SCENARIO...]}
shift
[ "$(id -u)" = 0 ] || die "must run as root (qemu, the NFS server in the guest)"
VNG=$REPO/.venv/bin/vng
[ -x "$VNG" ] || VNG=$(command -v vng || true)
[ -n "$VNG" ] || die "virtme-ng (vng) is not installed: run make setup-vm"
PATH=$(dirname "$VNG"):$PATH
if [ $# -eq 0 ]; then
	# a scenario with an on-demand file (the long bench trace) runs only when named
	mapfile -t all < <(cd "$SCEN" && find k* -mindepth 1 -maxdepth 1 -type d ! -exec test -e '{}/on-demand' ';' -print | sort)
	set -- "${all[@]}"
fi
for s in "$@"; do [ -f "$SCEN/$s/scenario.sh" ] || die "no scenario $s in tests/vm/fixtures"; done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cp "$SCEN/README.md" "$SCEN/common.sh" "$OUT/"

for s in "$@"; do
	series=${s%%/*}
	series=${series#k}
	vmlinuz=$("$REPO/tests/vm/kernels.sh" "$series" | cut -f2)
	[ -n "$vmlinuz" ] || die "$s: no kernel for series $series"
	res=$OUT/$s
	rm -rf "$res" && mkdir -p "$res"
	cp "$SCEN/$s/scenario.sh" "$res/"
	VM_CPUS=2 VM_QEMU_EXTRA="" VM_TRACE_CMD=""
	# shellcheck source=/dev/null
	[ -f "$SCEN/$s/vm.env" ] && . "$SCEN/$s/vm.env"
	tcdir=""
	case $VM_TRACE_CMD in
	"") ;;
	sid) tcdir=$("$REPO/tests/vm/sid-trace-cmd.sh") || die "$s: no trace-cmd of sid" ;;
	*) die "$s: vm.env: unknown VM_TRACE_CMD '$VM_TRACE_CMD' (known: sid)" ;;
	esac
	say "$s: recording on $(basename "$vmlinuz") ($VM_CPUS vCPU${tcdir:+, trace-cmd of $tcdir})"
	t0=$(date +%s)
	setsid "$VNG" --run "$vmlinuz" --disable-kvm --force-9p --memory 2G --cpus "$VM_CPUS" \
		--rwdir "$res" --verbose --qemu-opts="$QEMU_OPTS $VM_QEMU_EXTRA" \
		--exec "$(printf '%q ' env FTFLAME_TRACE_CMD_DIR="$tcdir" bash "$REPO/tests/vm/fixtures-guest.sh" "$res")" \
		</dev/null >"$res/console.log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null && (($(date +%s) - t0 < TIMEOUT)); do sleep 5; done
	kill -- "-$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	[ -e "$res/guest.done" ] || { tail -n 20 "$res/guest.log" >&2 || true; die "$s: the guest did not finish (see $res/guest.log, console.log)"; }
	rm -f "$res/guest.done"
	echo "$(($(date +%s) - t0))" >"$res/vm-seconds.txt"
	say "$s: done in $(($(date +%s) - t0)) s"
done
say "corpus in $OUT: FTFLAME_FIXTURES=$OUT make test"
