# shellcheck shell=bash disable=SC2034
# (SC2034: variables set here are read by the scripts that source this file)
# lib.sh: the parts collect.sh and calibrate.sh share. Sourced, never run.
#
# It holds: messages and exit codes, the checks that refuse to start (root,
# tracefs, the function_graph tracer, functions that exist, the lock), the
# tracer options both scripts take (so a calibration uses exactly the options
# of the main run), and the tracefs snapshot/restore behind the EXIT trap.
#
# Exit codes of both scripts: 0 done; 1 something failed while running;
# 2 refused to start (one line on stderr says why) or bad usage.
#
# Environment, mainly for tests:
#   FTFLAME_TRACEFS  tracefs directory (default: /sys/kernel/tracing, then
#                    /sys/kernel/debug/tracing). trace-cmd finds its own.
#   FTFLAME_LOCK_DIR lock directory (default: /run/ftflame, created 0700;
#                    it must be root's and writable only by root)
#   FTFLAME          the ftflame command calibrate.sh runs (default: ftflame)

FT_PROG=${FT_PROG:-${0##*/}}

say()    { printf '%s: %s\n' "$FT_PROG" "$*" >&2; }
warn()   { printf '%s: WARNING: %s\n' "$FT_PROG" "$*" >&2; }
die()    { FT_FAILED=$*; printf '%s: error: %s\n' "$FT_PROG" "$*" >&2; exit 1; }
refuse() { printf '%s: refusing to start: %s\n' "$FT_PROG" "$*" >&2; exit 2; }
usage_error() { printf '%s: %s (see %s --help)\n' "$FT_PROG" "$*" "$FT_PROG" >&2; exit 2; }

# Print the header comment of a script (its usage text).
print_header() {
	sed -n '2,/^set -euo pipefail/{/^set -euo pipefail/d;/^# shellcheck/d;s/^# \{0,1\}//;p}' "$1"
}

# ---------------------------------------------------------------- JSON output

# A JSON string literal for $1.
json_str() {
	local s=$1
	s=${s//\\/\\\\}
	s=${s//\"/\\\"}
	s=${s//$'\n'/\\n}
	s=${s//$'\t'/\\t}
	s=${s//$'\r'/\\r}
	s=$(LC_ALL=C tr -d '\000-\010\013\014\016-\037' <<<"$s")
	printf '"%s"' "$s"
}

# A JSON number for $1, or null when it is not one (JSON has no 007).
json_num() {
	if [[ $1 =~ ^-?(0|[1-9][0-9]*)(\.[0-9]+)?$ ]]; then printf '%s' "$1"; else printf 'null'; fi
}

# A JSON array of strings from the arguments.
json_str_array() {
	local first=1 s
	printf '['
	for s in "$@"; do
		((first)) || printf ', '
		first=0
		json_str "$s"
	done
	printf ']'
}

json_bool() { if [ "$1" = 1 ] || [ "$1" = on ]; then printf 'true'; else printf 'false'; fi; }

# ------------------------------------------------------------ start-up checks

require_root() {
	[ "$(id -u)" = 0 ] || refuse "must run as root (tracefs and trace-cmd need it); try: sudo $FT_PROG ..."
}

# Sets T to the tracefs directory, or refuses.
find_tracefs() {
	local d
	if [ -n "${FTFLAME_TRACEFS:-}" ]; then
		T=$FTFLAME_TRACEFS
		[ -e "$T/available_tracers" ] ||
			refuse "no tracefs at $T (FTFLAME_TRACEFS): it has no available_tracers"
		return 0
	fi
	for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
		if [ -e "$d/available_tracers" ]; then T=$d; return 0; fi
	done
	refuse "no tracefs: neither /sys/kernel/tracing nor /sys/kernel/debug/tracing is mounted (try: mount -t tracefs nodev /sys/kernel/tracing)"
}

require_function_graph() {
	grep -qw function_graph "$T/available_tracers" 2>/dev/null ||
		refuse "this kernel has no function_graph tracer (available: $(tr '\n' ' ' <"$T/available_tracers" | sed 's/ *$//'); needs CONFIG_FUNCTION_GRAPH_TRACER)"
}

require_trace_cmd() {
	command -v trace-cmd >/dev/null 2>&1 ||
		refuse "trace-cmd not found (Debian: apt-get install trace-cmd)"
}

# missing_functions NAME...: print the names that are not in
# available_filter_functions (lines there look like "name" or "name [module]").
missing_functions() {
	awk -v want="$*" '
		BEGIN { n = split(want, w, " "); for (i = 1; i <= n; i++) need[w[i]] = 1 }
		($1 in need) { found[$1] = 1 }
		END { for (i = 1; i <= n; i++) if (!(w[i] in found)) print w[i] }
	' "$T/available_filter_functions"
}

# irq_entry_functions: print the interrupt entry functions this kernel can
# hook, once each: the irq entry/exit glue, the hardirq handlers' entries
# (__sysvec_*, __common_interrupt) and every softirq action (6.1 and 6.12
# names). Hooked beside root-only functions (the baseline), they make the
# interrupts that land inside a root call show as interrupt subtrees there,
# as they do in a whole-graph trace, which the report takes out of both.
IRQ_ENTRY_FUNCS="irq_enter_rcu irq_exit_rcu irq_enter irq_exit __common_interrupt do_softirq
	rcu_core_si run_timer_softirq net_rx_action net_tx_action tasklet_action tasklet_hi_action
	run_rebalance_domains sched_balance_softirq hrtimer_run_softirq blk_done_softirq irq_poll_softirq"
irq_entry_functions() {
	awk -v want="$IRQ_ENTRY_FUNCS" '
		BEGIN { n = split(want, w, "[ \t\n]+"); for (i = 1; i <= n; i++) need[w[i]] = 1 }
		($1 in need || $1 ~ /^__sysvec_/) && !seen[$1]++ { print $1 }
	' "$T/available_filter_functions"
}

# Where the nfsd module is not loaded, its functions are not traceable yet.
nfsd_hint() {
	if ! grep -q '^nfsd ' /proc/modules 2>/dev/null && [ ! -d /sys/module/nfsd ]; then
		printf ' (the nfsd module is not loaded: start the NFS server or modprobe nfsd)'
	fi
}

# ------------------------------------------------------------------- the lock
#
# The lock is a flock on a directory only root can write to (FTFLAME_LOCK_DIR,
# default /run/ftflame, made 0700): no other user can plant a symlink in it,
# hold the lock or fill it, and the lock opens the directory read-only, so no
# file is ever created, followed or truncated for it. A refusal names the
# holders: the processes that have the directory open. Children never inherit
# the lock fd (record() and the scripts close it on their command lines), so
# a process the workload leaves behind cannot block later runs; the one
# exception is calibrate.sh run by collect.sh, which takes the lock again
# through the fd it inherited (FT_LOCK_FD): flock succeeds on that same open
# file and fails on anyone else's.
#
# The one file in the directory, FT_STATE_NAME, holds the tracefs settings to
# put back while a run has them changed (save_tracefs_state): a collector
# killed with SIGKILL cannot restore them itself, and the next one to take
# the lock (or collect.sh --restore) finds the file and does it
# (recover_tracefs). Only root can write there; still, the file is read as
# data, never run: name=value lines, each name one of the tracefs files the
# scripts save (no path out of tracefs), the tracefs one the scripts would
# use.

# root_only_dir PATH: PATH (links followed) is a directory owned by root
# that only root can write to.
root_only_dir() {
	local owner_mode
	[ -d "$1" ] || return 1
	owner_mode=$(stat -L -c '%u %a' -- "$1") || return 1
	[ "${owner_mode%% *}" = 0 ] && (((8#${owner_mode#* } & 8#022) == 0))
}

# same_file A B: A and B are the same file (device and inode), following links.
same_file() {
	local a b
	a=$(stat -L -c %d:%i -- "$1" 2>/dev/null) && b=$(stat -L -c %d:%i -- "$2" 2>/dev/null) &&
		[ "$a" = "$b" ]
}

# lock_holders DIR: "pid N (COMMAND LINE)" for every other process that has
# DIR open, comma-separated ("unknown" when none can be seen).
lock_holders() {
	local fd pid cmd out="" seen=" $$ $BASHPID "
	while IFS= read -r fd; do
		pid=${fd#/proc/}; pid=${pid%%/*}
		[[ $seen == *" $pid "* ]] && continue
		seen+="$pid "
		cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | head -c 200)
		out+="${out:+, }pid $pid (${cmd% })"
	done < <(find /proc/[0-9]*/fd -maxdepth 1 -lname "$1" 2>/dev/null)
	printf '%s' "${out:-unknown}"
}

# Take the collector lock, or refuse when another collector holds it.
take_lock() {
	FT_LOCK_DIR=${FTFLAME_LOCK_DIR:-/run/ftflame}
	if [ ! -e "$FT_LOCK_DIR" ] && [ ! -L "$FT_LOCK_DIR" ]; then
		mkdir -m 0700 -- "$FT_LOCK_DIR" 2>/dev/null ||
			refuse "cannot create the lock directory $FT_LOCK_DIR (set FTFLAME_LOCK_DIR to a directory only root can write to)"
	fi
	local unsafe="unsafe lock directory $FT_LOCK_DIR: it must be a directory, not a symlink, owned by root and writable only by root (remove it, or set FTFLAME_LOCK_DIR)"
	if [ -L "$FT_LOCK_DIR" ] || ! root_only_dir "$FT_LOCK_DIR"; then refuse "$unsafe"; fi
	FT_LOCK_DIR=$(cd -P -- "$FT_LOCK_DIR" && pwd)
	if [[ ${FT_LOCK_FD:-} =~ ^[0-9]+$ ]] && same_file "/proc/$$/fd/$FT_LOCK_FD" "$FT_LOCK_DIR" &&
		flock -n "$FT_LOCK_FD" 2>/dev/null; then
		FT_LOCK_INHERITED=1
		return 0  # collect.sh's lock, inherited
	fi
	# "DIR/." opens only a directory (never a FIFO or a device someone swapped
	# in), and what was opened is checked again: a check of the path alone
	# could be raced.
	exec {FT_LOCK_FD}<"$FT_LOCK_DIR/." || refuse "cannot open the lock directory $FT_LOCK_DIR"
	if ! root_only_dir "/proc/$$/fd/$FT_LOCK_FD"; then
		exec {FT_LOCK_FD}<&-
		refuse "$unsafe"
	fi
	if ! flock -n "$FT_LOCK_FD"; then
		exec {FT_LOCK_FD}<&-
		refuse "another ftflame collector is running: $(lock_holders "$FT_LOCK_DIR") holds the lock $FT_LOCK_DIR; wait for it to end"
	fi
	export FT_LOCK_FD
}

# root_owned_safe PATH: PATH (not followed) is owned by root and writable by
# no one else.
root_owned_safe() {
	local owner_mode
	owner_mode=$(stat -c '%u %a' -- "$1" 2>/dev/null) || return 1
	[ "${owner_mode%% *}" = 0 ] && (((8#${owner_mode#* } & 8#022) == 0))
}

FT_STATE_NAME=tracefs-restore
FT_LOCK_INHERITED=0
FT_STATE_OWNER=0

# The saved file: a comment, FT_STATE_FORMAT, then one NAME=VALUE a line:
# T= the tracefs, BY= who saved it, S:KEY= each FT_SNAP entry; in a value,
# % is %25 and a newline %0A (list files hold several lines).
FT_STATE_FORMAT=ftflame-tracefs-restore/2
state_value() {  # VALUE -> sets FT_SV, encoded
	FT_SV=${1//%/%25}
	FT_SV=${FT_SV//$'\n'/%0A}
}

# save_tracefs_state: write the snapshot (FT_SNAP, T) beside the lock, whole,
# before anything is changed; a run that ends well removes it
# (drop_tracefs_state). calibrate.sh under collect.sh leaves it to collect.sh.
save_tracefs_state() {
	# (no lock, no file: only the tests snapshot without one)
	((FT_LOCK_INHERITED)) || [ -z "${FT_LOCK_DIR:-}" ] && return 0
	local k text
	text="# tracefs settings to put back: collect.sh --restore (NAME=VALUE lines: data, never run)"
	text+=$'\n'$FT_STATE_FORMAT
	state_value "$T"; text+=$'\nT='$FT_SV
	state_value "$FT_PROG, pid $$, at $(date -u +%Y-%m-%dT%H:%M:%SZ)"; text+=$'\nBY='$FT_SV
	for k in "${!FT_SNAP[@]}"; do
		state_value "${FT_SNAP[$k]}"
		text+=$'\nS:'$k=$FT_SV
	done
	write_whole "$FT_LOCK_DIR/$FT_STATE_NAME" "$text" || return 1
	FT_STATE_OWNER=1
}

drop_tracefs_state() {
	((FT_STATE_OWNER)) || return 0
	rm -f -- "$FT_LOCK_DIR/$FT_STATE_NAME"
	FT_STATE_OWNER=0
}

# recover_tracefs: called with the lock held. When a collector that could not
# clean up (killed with SIGKILL) left its saved settings beside the lock, put
# them back, on the tracefs they were read from, and remove the file.
# Returns 1 when there was nothing to do, 2 when some could not be put back.
recover_tracefs() {
	local f=$FT_LOCK_DIR/$FT_STATE_NAME t_now=${T-} FT_SAVED_T="" FT_SAVED_BY=""
	[ -e "$f" ] || [ -L "$f" ] || return 1
	if [ -L "$f" ] || [ ! -f "$f" ] || ! root_owned_safe "$f"; then
		refuse "unsafe $f: it must be a file owned by root and writable only by root (remove it)"
	fi
	read_tracefs_state "$f"
	T=$FT_SAVED_T FT_SNAPPED=1
	say "a collector that could not clean up ($FT_SAVED_BY) left tracefs changed: putting back the settings it saved in $f"
	local rc=0
	if restore_tracefs; then rm -f -- "$f"; else rc=2; fi
	FT_SNAP=() FT_SNAPPED=0 T=$t_now
	return "$rc"
}

# tracefs_key_ok KEY: KEY is one of the tracefs files the snapshot saves:
# a setting of FT_SCALARS or FT_LISTS, current_tracer, tracing_on,
# buffer_all, options/NAME, buffer:per_cpu/cpuN/buffer_size_kb; nothing with
# a .. or another path in it.
tracefs_key_ok() {
	local k=$1
	[[ $k =~ ^[A-Za-z0-9_:/-]+$ ]] || return 1
	case " current_tracer tracing_on buffer_all ${FT_SCALARS[*]} ${FT_LISTS[*]} " in *" $k "*) return 0 ;; esac
	[[ $k =~ ^options/[A-Za-z0-9_-]+$ || $k =~ ^buffer:per_cpu/cpu[0-9]+/buffer_size_kb$ ]]
}

# read_tracefs_state FILE: FT_SNAP, FT_SAVED_T and FT_SAVED_BY from the file
# save_tracefs_state wrote, read as data (nothing in it is run or expanded).
# A line it does not take, or a tracefs that is not the one the scripts use,
# is refused with the file kept, before anything is written.
read_tracefs_state() {
	local f=$1 line key val n=0 format=0 bad=""
	FT_SNAP=() FT_SAVED_T="" FT_SAVED_BY=""
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		case $line in '#'* | '') continue ;; esac
		if ((!format)); then
			[ "$line" = "$FT_STATE_FORMAT" ] || { bad="line $n is not '$FT_STATE_FORMAT' (a file of another version?)"; break; }
			format=1
			continue
		fi
		if [[ $line != *=* ]]; then bad="line $n is not NAME=VALUE"; break; fi
		key=${line%%=*} val=${line#*=}
		val=${val//%0A/$'\n'}
		val=${val//%25/%}
		case $key in
		T) FT_SAVED_T=$val ;;
		BY) FT_SAVED_BY=${val//[[:cntrl:]]/?} ;;
		S:*)
			key=${key#S:}
			tracefs_key_ok "$key" || { bad="line $n names '${key//[^[:print:]]/?}', not a tracefs setting the collectors save"; break; }
			FT_SNAP[$key]=$val ;;
		*) bad="line $n: unknown name '${key//[^[:print:]]/?}'"; break ;;
		esac
	done <"$f"
	if [ -z "$bad" ] && ((!format)); then bad="it is empty"; fi
	if [ -z "$bad" ]; then
		case $FT_SAVED_T in
		/sys/kernel/tracing | /sys/kernel/debug/tracing | "${FTFLAME_TRACEFS:-/sys/kernel/tracing}") ;;
		*) bad="its tracefs '${FT_SAVED_T//[^[:print:]]/?}' is not one the collectors use (/sys/kernel/tracing, /sys/kernel/debug/tracing or FTFLAME_TRACEFS)" ;;
		esac
	fi
	if [ -z "$bad" ] && [ ! -e "$FT_SAVED_T/available_tracers" ]; then bad="its tracefs $FT_SAVED_T has no available_tracers"; fi
	if [ -z "$bad" ] && { [ -z "${FT_SNAP[current_tracer]+x}" ] || [ -z "${FT_SNAP[tracing_on]+x}" ]; }; then
		bad="it has no current_tracer or tracing_on"
	fi
	if [ -n "$bad" ]; then
		FT_SNAP=()
		refuse "cannot read the tracefs settings to put back in $f: $bad; nothing was written: check tracefs by hand, then remove the file"
	fi
}

# finish_tracefs: at exit: the guard stopped, tracefs put back, the saved
# settings removed (kept when they could not all be put back).
finish_tracefs() {
	stop_guard
	if restore_tracefs; then
		drop_tracefs_state
		return 0
	fi
	((FT_STATE_OWNER)) && warn "the settings to put back stay in $FT_LOCK_DIR/$FT_STATE_NAME: collect.sh --restore tries again"
	return 1
}

# ------------------------------------------------------------ the output folder
#
# Root writes the run's files, so no other user may change where they go:
# neither plant a link at a file's name, nor rename the run folder (or a
# folder above it) away while a run writes and put a folder of links in its
# place (root would then append the logs to whatever they point to). So:
#   - every folder from / down to the run folder is a real directory owned
#     by root and writable by no one else, or sticky (/tmp, /var/tmp: no
#     other user can rename root's entries there). A folder owned by another
#     user, or writable by another user's group, is refused, a user's home
#     folder too: what only root can change stays where it was checked;
#   - the run folder is made by the collector (mkdir, 0755), or an existing
#     one is root's and writable by root only;
#   - it is then opened once and held (OUT_FD) and checked as opened; every
#     file of the run is read and written through that open folder: OUT is
#     /proc/PID/fd/N, where the kernel goes to the folder held open, so no
#     path is looked up again after the check (OUT_SHOWN is its path, for
#     messages);
#   - each file is created new (noclobber on a name that is not there opens
#     with O_EXCL: never through a link, never a file that was there).

OUT_FD=""
OUT_SHOWN=""

# shown PATH: PATH as messages give it: the run folder's path for OUT.
shown() {
	local p=$1
	if [ -n "$OUT_SHOWN" ] && [ -n "${OUT:-}" ] && [[ $p == "$OUT" || $p == "$OUT"/* ]]; then
		p=$OUT_SHOWN${p#"$OUT"}
	fi
	printf '%s' "$p"
}

# dir_risk FOLDER...: why a user other than root could change one of these
# folders (not followed), the first such: "F is owned by U (mode M)", "F is
# writable by its group (mode M, not sticky)"..., and return 0; return 1
# when only root can change every one of them.
dir_risk() {
	local -a lines
	local uid mode raw user name line
	mapfile -t lines < <(stat -c '%u %a %f %U %n' -- "$@" 2>/dev/null)
	if ((${#lines[@]} != $#)); then
		printf 'a folder on the way cannot be looked at'
		return 0
	fi
	for line in "${lines[@]}"; do
		read -r uid mode raw user name <<<"$line"
		if (((16#$raw & 16#F000) != 16#4000)); then
			printf '%s is not a directory (a link or a file)' "$name"
		elif [ "$uid" != 0 ]; then
			printf '%s is owned by %s (mode %s)' "$name" "$user" "$mode"
		elif (((8#$mode & 8#002) && !(8#$mode & 8#1000))); then
			printf '%s is writable by everyone (mode %s, not sticky)' "$name" "$mode"
		elif (((8#$mode & 8#020) && !(8#$mode & 8#1000))); then
			printf '%s is writable by its group %s (mode %s, not sticky)' "$name" \
				"$(stat -c %G -- "$name" 2>/dev/null)" "$mode"
		else
			continue
		fi
		return 0
	done
	return 1
}

# ancestors PATH: FT_ANCESTORS = PATH (absolute, physical) and every folder
# above it, / first.
ancestors() {
	local p=$1
	FT_ANCESTORS=()
	while :; do
		FT_ANCESTORS=("$p" "${FT_ANCESTORS[@]}")
		[ "$p" != / ] || break
		p=${p%/*}
		p=${p:-/}
	done
}

FT_SAFE_FOLDER_HINT="use a folder only root can change (each folder above it root's and writable by no one else, or sticky as /tmp), e.g. -o /root/run1 or -o /var/tmp/run1"

# check_above FOLDER WHAT: refuse when a user other than root could change
# FOLDER (physical) or a folder above it. WHAT names the output folder.
check_above() {
	local why
	ancestors "$1"
	if why=$(dir_risk "${FT_ANCESTORS[@]}"); then
		refuse "unsafe output folder $2: $why: that user could rename the run folder away while root writes and put links in its place; $FT_SAFE_FOLDER_HINT"
	fi
}

# use_out_dir DIR: make DIR the output folder, or refuse: the folders that
# do not exist are made (0755, each in a folder checked first); an existing
# DIR must be a directory, not a symlink, owned by root and writable by no
# one else. Sets OUT (/proc/$$/fd/N: the folder held open), OUT_SHOWN (its
# physical path) and OUT_FD. use_out_dir DIR check: only the checks of the
# folders above a DIR to be made, nothing made (before other refusals).
use_out_dir() {
	local d=$1 base rest="" part p made=0 owner_mode owner mode user
	local -a parts
	[[ $d != *$'\n'* ]] || refuse "output folder names with a newline are not taken (-o)"
	while [[ $d == */ && $d != / ]]; do d=${d%/}; done
	# the part of DIR that exists (resolved), and the folders to make below it
	base=$d
	while [ ! -e "$base" ] && [ ! -L "$base" ]; do
		rest=${base##*/}${rest:+/$rest}
		case $base in */*) base=${base%/*}; base=${base:-/} ;; *) base=. ;; esac
	done
	[ -n "$rest" ] || [ ! -L "$d" ] ||
		refuse "unsafe output folder $d: it is a symlink (give the folder it points to, or a new one)"
	[ -d "$base" ] || refuse "output folder $d is not a directory (-o): $base is not one"
	base=$(cd -P -- "$base" && pwd -P) || refuse "cannot enter the output folder $d (-o)"
	if [ -n "$rest" ]; then
		IFS=/ read -ra parts <<<"$rest"
		for part in "${parts[@]}"; do
			case $part in . | ..) refuse "output folder $d: '$part' in the folders to make (-o): give a plain path" ;; esac
		done
		check_above "$base" "${base%/}/$rest"
		[ "${2-}" != check ] || return 0
		p=$base
		for part in "${parts[@]}"; do
			[ -n "$part" ] || continue
			p=${p%/}/$part
			mkdir -m 0755 -- "$p" 2>/dev/null || refuse "cannot create the output folder $p (-o)"
		done
		made=1
	else
		p=$base
		[ "$p" = / ] || { part=${p%/*}; check_above "${part:-/}" "$p"; }
		[ "$p" != / ] || refuse "unsafe output folder /: choose a folder of its own (-o)"
	fi
	# Opened once; what was opened is checked, not the path again.
	if [ -n "$OUT_FD" ]; then exec {OUT_FD}<&-; fi
	{ exec {OUT_FD}<"$p/."; } 2>/dev/null || refuse "cannot open the output folder $p (-o)"
	OUT=/proc/$$/fd/$OUT_FD OUT_SHOWN=$p
	owner_mode=$(stat -c '%u %a %U' -- "$OUT/.") || refuse "cannot look at the output folder $p (-o)"
	read -r owner mode user <<<"$owner_mode"
	if [ "$owner" != 0 ] || (((8#$mode & 8#022) != 0)); then
		if ((made)); then
			refuse "unsafe output folder $p: made by root, it shows owner $user, mode $mode (a share that maps root to another user?); another user could plant links in it: $FT_SAFE_FOLDER_HINT"
		fi
		refuse "unsafe output folder $p: owned by $user, mode $mode; another user could plant links in it: choose a new folder ($FT_PROG creates it) or one only root can write to"
	fi
}

# new_file PATH: create PATH empty, never following or reusing what is there
# (noclobber opens a name that is not there with O_EXCL).
new_file() {
	local err
	if [ -e "$1" ] || [ -L "$1" ]; then die "cannot create $(shown "$1"): something is there already"; fi
	err=$( (set -C; : >"$1") 2>&1) || die "cannot create $(shown "$1"): ${err##*: }"
}

# ----------------------------------------------------- tracer options (shared)

# Defaults; parse_tracer_opt changes them.
OPT_DEPTH=0       # --max-graph-depth (0: unlimited)
OPT_BUFFER=""     # per-CPU buffer in KB ("": leave the kernel's)
OPT_CPUS=""       # CPU list ("": all)
OPT_IRQS=on       # funcgraph-irqs
OPT_SLEEP=on      # sleep-time
OPT_CLOCK=""      # trace clock ("": leave the kernel's)
OPT_SCHED=1       # record sched:sched_switch
OPT_BUFFER_PCT="" # tracefs buffer_percent while recording ("": leave the kernel's)

# parse_tracer_opt ARG [VALUE]: when ARG is a tracer option, apply it and set
# FT_SHIFT to the number of words it used (1 or 2); else FT_SHIFT=0.
parse_tracer_opt() {
	FT_SHIFT=0
	local opt=$1 val=${2-} has_val=$(($# > 1))
	case $opt in
	--depth=* | --buffer=* | --cpus=* | --irqs=* | --sleep-time=* | --clock=* | --buffer-percent=*)
		val=${opt#*=}; opt=${opt%%=*}; has_val=1; FT_SHIFT=-1 ;;
	esac
	case $opt in
	--depth | --buffer | --cpus | --irqs | --sleep-time | --clock | --buffer-percent)
		((has_val)) || usage_error "$opt needs a value"
		if ((FT_SHIFT == -1)); then FT_SHIFT=1; else FT_SHIFT=2; fi ;;
	--no-sched) OPT_SCHED=0; FT_SHIFT=1; return 0 ;;
	*) return 0 ;;
	esac
	case $opt in
	--depth)
		[[ $val =~ ^[0-9]+$ ]] || usage_error "--depth wants a number, not '$val'"
		OPT_DEPTH=$val ;;
	--buffer)
		[[ $val =~ ^[1-9][0-9]*$ ]] || usage_error "--buffer wants KB per CPU, not '$val'"
		OPT_BUFFER=$val ;;
	--cpus)
		[[ $val =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] ||
			usage_error "--cpus wants a CPU list like 0-3,6, not '$val'"
		OPT_CPUS=$val ;;
	--irqs)
		[[ $val == on || $val == off ]] || usage_error "--irqs wants on or off, not '$val'"
		OPT_IRQS=$val ;;
	--sleep-time)
		[[ $val == on || $val == off ]] || usage_error "--sleep-time wants on or off, not '$val'"
		OPT_SLEEP=$val ;;
	--clock)
		[[ $val =~ ^[a-z0-9_-]+$ ]] || usage_error "--clock wants a clock name, not '$val'"
		OPT_CLOCK=$val ;;
	--buffer-percent)
		[[ $val =~ ^(0|[1-9][0-9]?|100)$ ]] || usage_error "--buffer-percent wants a number from 0 to 100, not '$val'"
		OPT_BUFFER_PCT=$val ;;
	esac
}

# The options above, as words for another script (calibrate.sh).
tracer_opts_cli() {
	FT_CLI=(--depth "$OPT_DEPTH" --irqs "$OPT_IRQS" --sleep-time "$OPT_SLEEP")
	[ -n "$OPT_BUFFER" ] && FT_CLI+=(--buffer "$OPT_BUFFER")
	[ -n "$OPT_CPUS" ] && FT_CLI+=(--cpus "$OPT_CPUS")
	[ -n "$OPT_CLOCK" ] && FT_CLI+=(--clock "$OPT_CLOCK")
	[ -n "$OPT_BUFFER_PCT" ] && FT_CLI+=(--buffer-percent "$OPT_BUFFER_PCT")
	((OPT_SCHED)) || FT_CLI+=(--no-sched)
	return 0
}

# A CPU list (0-3,6) as the hex mask tracing_cpumask takes (4f), in 32-bit
# words separated by commas as the kernel prints it.
cpulist_to_mask() {
	local -a words=() parts=()
	local part lo hi c i out="" top=0
	IFS=, read -ra parts <<<"$1"
	for part in "${parts[@]}"; do
		lo=${part%-*}; hi=${part#*-}
		for ((c = lo; c <= hi; c++)); do
			i=$((c / 32))
			words[i]=$((${words[i]:-0} | (1 << (c % 32))))
		done
	done
	for i in "${!words[@]}"; do ((i > top)) && top=$i; done
	for ((i = top; i >= 0; i--)); do
		if ((i == top)); then out+=$(printf '%x' "${words[i]:-0}")
		else out+=,$(printf '%08x' "${words[i]:-0}"); fi
	done
	printf '%s' "$out"
}

# Check the options against this kernel (needs T), then build FT_TC: the
# trace-cmd record words for them, and FT_EFFECTIVE_CLOCK.
tracer_args() {
	local o
	if [ -n "$OPT_BUFFER_PCT" ] && [ ! -w "$T/buffer_percent" ]; then
		refuse "this kernel has no tracefs buffer_percent ($T/buffer_percent: Linux 5.1 and later): record without --buffer-percent"
	fi
	for o in funcgraph-irqs sleep-time; do
		[ -e "$T/options/$o" ] || warn "this kernel has no '$o' tracer option; --${o#funcgraph-} is ignored"
	done
	FT_TC=(-p function_graph)
	[ -n "$OPT_BUFFER" ] && FT_TC+=(-b "$OPT_BUFFER")
	((OPT_DEPTH > 0)) && FT_TC+=(--max-graph-depth "$OPT_DEPTH")
	[ -n "$OPT_CPUS" ] && FT_TC+=(-M "$(cpulist_to_mask "$OPT_CPUS")")
	if [ -e "$T/options/funcgraph-irqs" ]; then
		if [ "$OPT_IRQS" = on ]; then FT_TC+=(-O funcgraph-irqs); else FT_TC+=(-O nofuncgraph-irqs); fi
	fi
	if [ -e "$T/options/sleep-time" ]; then
		if [ "$OPT_SLEEP" = on ]; then FT_TC+=(-O sleep-time); else FT_TC+=(-O nosleep-time); fi
	fi
	if [ -n "$OPT_CLOCK" ]; then
		grep -qw -- "$OPT_CLOCK" "$T/trace_clock" ||
			refuse "unknown trace clock '$OPT_CLOCK' (this kernel has: $(tr -d '[]' <"$T/trace_clock"))"
		FT_TC+=(-C "$OPT_CLOCK")
		FT_EFFECTIVE_CLOCK=$OPT_CLOCK
	else
		FT_EFFECTIVE_CLOCK=$(sed -n 's/.*\[\([^]]*\)\].*/\1/p' "$T/trace_clock")
	fi
	if ((OPT_SCHED)); then
		if [ -e "$T/events/sched/sched_switch" ]; then
			FT_TC+=(-e sched:sched_switch)
		else
			warn "no sched:sched_switch event in this kernel: off-CPU time cannot be split out"
			OPT_SCHED=0
		fi
	fi
	return 0
}

# Per-CPU buffer size in KB that a recording will use.
effective_buffer_kb() {
	if [ -n "$OPT_BUFFER" ]; then printf '%s' "$OPT_BUFFER"; return; fi
	local b=""
	rd "$T/buffer_size_kb" b
	if [[ $b =~ expanded:\ *([0-9]+) ]]; then printf '%s' "${BASH_REMATCH[1]}"
	elif [[ $b =~ ^[0-9]+$ ]]; then printf '%s' "$b"
	else rd "$T/per_cpu/cpu0/buffer_size_kb" b; printf '%s' "${b:-1408}"; fi
}

# tracefs buffer_percent a recording runs with: how full the ring buffer gets
# before trace-cmd's reader is woken ("": this kernel has no such knob).
effective_buffer_percent() {
	if [ -n "$OPT_BUFFER_PCT" ]; then printf '%s' "$OPT_BUFFER_PCT"; return; fi
	local v=""
	rd "$T/buffer_percent" v
	printf '%s' "$v"
}

# JSON object of the tracer options that matter for calibration.
tracer_options_json() {
	printf '{"sleep_time": %s, "irqs": %s, "max_graph_depth": %s, "buffer_kb_per_cpu": %s, "buffer_percent": %s, "cpus": %s, "clock": %s, "sched_switch": %s}' \
		"$(json_bool "$OPT_SLEEP")" "$(json_bool "$OPT_IRQS")" "$OPT_DEPTH" \
		"$(json_num "$(effective_buffer_kb)")" "$(json_num "$(effective_buffer_percent)")" \
		"$(if [ -n "$OPT_CPUS" ]; then json_str "$OPT_CPUS"; else printf null; fi)" \
		"$(json_str "$FT_EFFECTIVE_CLOCK")" "$(json_bool "$OPT_SCHED")"
}

# ------------------------------------------------ tracefs snapshot / restore

# rd FILE VAR: read a whole (tracefs) file into VAR, less its last newline,
# without forking: forks are slow in the emulated test VMs. Unreadable: "".
rd() {
	local __rd=""
	{ IFS= read -r -d '' __rd <"$1"; } 2>/dev/null || true
	printf -v "$2" '%s' "${__rd%$'\n'}"
}
#
# Everything trace-cmd or this script may change is saved before the first
# recording and put back after each recording and by the EXIT trap (also on
# Ctrl-C and errors). trace-cmd restores most of it itself, but not the buffer
# size, and nothing at all when it is killed.

FT_SCALARS=(trace_clock tracing_cpumask max_graph_depth tracing_thresh buffer_percent
	saved_cmdlines_size)
FT_LISTS=(set_ftrace_filter set_ftrace_notrace set_graph_function set_graph_notrace
	set_event set_ftrace_pid set_event_pid set_ftrace_notrace_pid set_event_notrace_pid)
declare -A FT_SNAP=()
FT_SNAPPED=0

# busy_check: refuse when someone else is tracing right now.
busy_check() {
	local cur="" ev
	rd "$T/current_tracer" cur
	ev=$(grep -v '^#' "$T/set_event" 2>/dev/null | head -n 3 | tr '\n' ' ' || true)
	if [ "$cur" != nop ] && [ "${FT_FORCE:-0}" != 1 ]; then
		refuse "tracefs is busy: current_tracer is '$cur' (someone else is tracing; stop it with: echo nop > $T/current_tracer, or pass --force)"
	fi
	if [ -n "${ev// /}" ] && [ "${FT_FORCE:-0}" != 1 ]; then
		refuse "tracefs is busy: events are enabled ($ev) (someone else is tracing; clear them with: echo > $T/set_event, or pass --force)"
	fi
	return 0
}

snapshot_tracefs() {
	local f o b
	local v
	rd "$T/current_tracer" v; FT_SNAP[current_tracer]=$v
	rd "$T/tracing_on" v; FT_SNAP[tracing_on]=$v
	for f in "${FT_SCALARS[@]}" "${FT_LISTS[@]}"; do
		[ -r "$T/$f" ] || continue
		rd "$T/$f" v; FT_SNAP[$f]=$v
	done
	for o in "$T"/options/*; do
		[ -f "$o" ] || continue
		rd "$o" v; FT_SNAP[options/${o##*/}]=$v
	done
	# buffer_size_kb reads "7 (expanded: 1408)" until the ring buffer is first
	# used: then the size to put back is the expanded one, on every CPU.
	rd "$T/buffer_size_kb" b
	if [[ $b =~ expanded:\ *([0-9]+) ]]; then
		FT_SNAP[buffer_all]=${BASH_REMATCH[1]}
	else
		for f in "$T"/per_cpu/cpu*/buffer_size_kb; do
			[ -r "$f" ] || continue
			rd "$f" v; FT_SNAP[buffer:${f#"$T"/}]=$v
		done
	fi
	FT_SNAPPED=1
	save_tracefs_state || die "cannot save the tracefs settings to put back in $FT_LOCK_DIR"
}

# write_tf FILE VALUE: write one tracefs setting; count failures.
write_tf() {
	if ! printf '%s\n' "$2" >"$T/$1" 2>/dev/null; then
		FT_RESTORE_FAILED+=("$1")
	fi
}

# Put back a list file (filters, set_event, pids): clear it, then add lines.
restore_list() {
	local f=$1 saved=$2 line cur
	[ -w "$T/$f" ] || return 0
	rd "$T/$f" cur
	[ "$cur" != "$saved" ] || return 0
	: >"$T/$f" 2>/dev/null || { FT_RESTORE_FAILED+=("$f"); return 0; }
	while IFS= read -r line; do
		case $line in '' | '#'* | 'no pid') continue ;; esac
		printf '%s\n' "${line%% *}" >>"$T/$f" 2>/dev/null || FT_RESTORE_FAILED+=("$f")
	done <<<"$saved"
}

# restore_tracefs: put every saved setting back; tracing off first.
restore_tracefs() {
	((FT_SNAPPED)) || return 0
	FT_RESTORE_FAILED=()
	local f o cur want
	printf '0\n' >"$T/tracing_on" 2>/dev/null || true
	rd "$T/current_tracer" cur
	[ "$cur" = "${FT_SNAP[current_tracer]}" ] || write_tf current_tracer "${FT_SNAP[current_tracer]}"
	for f in "${FT_LISTS[@]}"; do
		[ -n "${FT_SNAP[$f]+x}" ] && restore_list "$f" "${FT_SNAP[$f]}"
	done
	for f in "${FT_SCALARS[@]}"; do
		[ -n "${FT_SNAP[$f]+x}" ] || continue
		want=${FT_SNAP[$f]}
		rd "$T/$f" cur
		if [ "$f" = trace_clock ]; then  # "local [global] counter": the one in brackets
			[[ $want =~ \[([^]]*)\] ]] && want=${BASH_REMATCH[1]}
			[[ $cur =~ \[([^]]*)\] ]] && cur=${BASH_REMATCH[1]}
		fi
		[ "$cur" = "$want" ] || write_tf "$f" "$want"
	done
	for o in "${!FT_SNAP[@]}"; do
		case $o in options/*) ;; *) continue ;; esac
		rd "$T/$o" cur
		[ "$cur" = "${FT_SNAP[$o]}" ] || write_tf "$o" "${FT_SNAP[$o]}"
	done
	if [ -n "${FT_SNAP[buffer_all]:-}" ]; then
		rd "$T/buffer_size_kb" cur
		[ "$cur" = "${FT_SNAP[buffer_all]}" ] || [[ $cur == *expanded* ]] ||
			write_tf buffer_size_kb "${FT_SNAP[buffer_all]}"
	else
		for o in "${!FT_SNAP[@]}"; do
			case $o in buffer:*) ;; *) continue ;; esac
			f=${o#buffer:}
			rd "$T/$f" cur
			[ "$cur" = "${FT_SNAP[$o]}" ] || write_tf "$f" "${FT_SNAP[$o]}"
		done
	fi
	write_tf tracing_on "${FT_SNAP[tracing_on]}"
	if ((${#FT_RESTORE_FAILED[@]})); then
		warn "could not restore tracefs settings: ${FT_RESTORE_FAILED[*]} (in $T); check them by hand"
		return 1
	fi
	return 0
}

# --------------------------------------------------------------- recording

# is_zombie PID: PID has ended and waits to be reaped.
is_zombie() {
	local st=""
	rd "/proc/$1/stat" st
	st=${st##*) }
	[ "${st%% *}" = Z ]
}

# stop_group PGID: stop a recording's process group (trace-cmd and the
# workload): SIGINT first, as Ctrl-C would (trace-cmd then finishes its file),
# SIGTERM after 1 s, SIGKILL after 2 s. Returns once the group is gone (at
# most about 2.5 s), having reaped trace-cmd when it is our child.
stop_group() {
	local pg=$1 i
	kill -INT -- "-$pg" 2>/dev/null || return 0
	for ((i = 1; i <= 25; i++)); do
		if is_zombie "$pg"; then wait "$pg" 2>/dev/null || true; fi
		kill -0 -- "-$pg" 2>/dev/null || return 0
		((i == 10)) && kill -TERM -- "-$pg" 2>/dev/null
		((i == 20)) && kill -KILL -- "-$pg" 2>/dev/null
		sleep 0.1
	done
	warn "process group $pg did not stop"
}

# stop_recording: stop the recording's process group, from a signal trap.
# A trap runs at the next command boundary, and `cmd &` ends at once: a
# signal can be handled after trace-cmd was started in the background but
# before its pid was kept in FT_REC_PID (under load the workload may already
# run by then). Then every background job of ours that leads a group goes
# (stop_group does nothing for a job that does not: calibrate.sh, stopped by
# its own trap).
stop_recording() {
	local pg
	if [ -n "$FT_REC_PID" ]; then
		stop_group "$FT_REC_PID"
		return 0
	fi
	for pg in $(jobs -p); do stop_group "$pg"; done
}

# start_guard group PGID | start_guard script PID: a watchdog beside a
# recording (a process group: trace-cmd and the workload) or beside a script
# of ours that records (calibrate.sh). A SIGKILL runs no trap: when this
# script dies so, the guard (its parent is then no longer this script) stops
# the group as stop_group does, or sends the script SIGTERM (it then stops
# its own recording and restores) and waits for it, puts tracefs back and
# removes the saved settings. It keeps the lock (the fd it inherited) until
# that is done. Between those moments it only waits: a read with a timeout
# on a pipe nobody writes, no process started. Sets FT_GUARD_PID.
FT_GUARD_PID=""
start_guard() {
	local what=$1 id=$2
	(
		set +e
		trap - EXIT
		# (read times out with a status above 128; should it end at once
		# instead, sleep keeps this from spinning)
		exec {idle}<> <(:)
		pause() { read -rt 0.2 -u "$idle" _ || (($? > 128)) || sleep 0.2; }
		st=""
		while :; do
			pause
			# (a group is gone once its leader is reaped and no member is
			# left; the leader may not have made it a group yet)
			if [ "$what" = group ]; then
				kill -0 -- "-$id" 2>/dev/null || kill -0 "$id" 2>/dev/null || exit 0
			elif ! kill -0 "$id" 2>/dev/null || is_zombie "$id"; then
				exit 0
			fi
			rd "/proc/$BASHPID/stat" st
			st=${st##*) }; st=${st#* }
			[ "${st%% *}" = "$$" ] || break
		done
		say "$FT_PROG (pid $$) was killed: stopping what it recorded, putting tracefs back"
		if [ "$what" = group ]; then
			stop_group "$id"
		else
			kill -TERM "$id" 2>/dev/null
			for ((i = 0; i < 50; i++)); do
				if ! kill -0 "$id" 2>/dev/null || is_zombie "$id"; then break; fi
				pause
			done
		fi
		if restore_tracefs; then drop_tracefs_state; fi
	) >/dev/null &
	FT_GUARD_PID=$!
}

# stop_guard: the recording ended while this script lives: its guard goes.
stop_guard() {
	[ -n "$FT_GUARD_PID" ] || return 0
	kill -KILL "$FT_GUARD_PID" 2>/dev/null || true
	wait "$FT_GUARD_PID" 2>/dev/null || true
	FT_GUARD_PID=""
}

# disk_full_hint PATH: a note when the file system of PATH is (nearly) full.
disk_full_hint() {
	local avail
	avail=$(df -Pk -- "$1" 2>/dev/null | awk 'NR == 2 { print $4 }')
	if [[ $avail =~ ^[0-9]+$ ]] && ((avail < 1024)); then
		printf ' (the disk is full: %s KB free on the file system of %s)' "$avail" "$(shown "$1")"
	fi
}

# record OUT.dat LOGDIR WORKLOG -- TRACE-CMD-WORDS... -- WORKLOAD...
# Runs trace-cmd record with the tracer options, around the workload, whose
# output goes to WORKLOG and to stdout. Sets REC_RC (the workload's exit code),
# REC_START/REC_END (UTC, ISO 8601). Restores tracefs afterwards. On failure
# it returns 1 with REC_ERROR saying what happened.
#
# trace-cmd writes OUT.dat.partial, renamed to OUT.dat only when it ended
# well: a full disk, a crash or a signal never leaves a cut trace under the
# final name. trace-cmd and the workload run in a session (and process
# group) of their own, in the background: a signal to the script is then
# handled at once (bash runs traps only between foreground commands) and
# stop_group stops them all, and a workload whose trace-cmd died is stopped
# too. (setsid does not fork here: the background child of a shell without
# job control is not a group leader, so FT_REC_PID is also the group id.)
# The lock fd is closed for them: nothing they leave behind holds the lock.
FT_REC_PID=""
FT_WORK_WRAP=()  # words run before the workload's (collect.sh: cpusnap.sh FILE --)
record() {
	local out=$1 logdir=$2 worklog=$3 status part=$1.partial
	shift 3
	[ "$1" = -- ] && shift
	local -a tc=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do tc+=("$1"); shift; done
	shift
	status=$(mktemp "${TMPDIR:-/tmp}/ftflame-rec.XXXXXX")
	FT_TMPFILES+=("$status")
	rm -f -- "$part"
	# --buffer-percent: trace-cmd does not set it; written before each
	# recording (restore_tracefs puts the old value back after each one)
	if [ -n "$OPT_BUFFER_PCT" ] && ! printf '%s\n' "$OPT_BUFFER_PCT" >"$T/buffer_percent" 2>/dev/null; then
		REC_ERROR="cannot write $OPT_BUFFER_PCT to $T/buffer_percent (--buffer-percent)"
		return 1
	fi
	# The wrapper trace-cmd runs: the workload, its output teed to the log and
	# to our stdout (fd 3, which the workload does not get: a process it
	# leaves behind must not hold our stdout open), then its exit code and
	# times into $status.
	# shellcheck disable=SC2016
	local wrap='st=$1 log=$2; shift 2
		s=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
		set +e; "$@" 3>&- 2>&1 | tee -a "$log" >&3; rc=${PIPESTATUS[0]}
		printf "%s %s %s\n" "$rc" "$s" "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" >"$st"'
	local trc=0 pg
	setsid trace-cmd record "${FT_TC[@]}" "${tc[@]}" -o "$part" \
		bash -c "$wrap" ftflame-workload "$status" "$worklog" "${FT_WORK_WRAP[@]}" "$@" \
		<&0 3>&1 >>"$logdir/record.log" 2>&1 {FT_LOCK_FD}<&- {OUT_FD}<&- &
	FT_REC_PID=$! pg=$!
	start_guard group "$pg"
	wait "$pg" || trc=$?
	FT_REC_PID=""
	if ((trc != 0)); then
		# trace-cmd failed or was killed: what is left of the workload goes too.
		kill -0 -- "-$pg" 2>/dev/null && say "stopping what is left of the workload (process group $pg)"
		stop_group "$pg"
	fi
	stop_guard
	restore_tracefs || true
	if ((trc != 0)) || [ ! -s "$part" ]; then
		tail -n 5 "$logdir/record.log" >&2 2>/dev/null || true
		if ((trc > 128)); then trc="$trc: killed by $(kill -l "$trc" 2>/dev/null || echo "signal $((trc - 128))")"; fi
		REC_ERROR="trace-cmd record failed (exit $trc) for ${out##*/}$(disk_full_hint "$part")"
		if [ -e "$part" ]; then
			REC_ERROR+="; what it wrote is in ${part##*/}, not a complete trace"
		fi
		REC_ERROR+="; its output is in $(shown "$logdir")/record.log"
		return 1
	fi
	if ! mv -f -- "$part" "$out"; then
		REC_ERROR="cannot rename ${part##*/} to ${out##*/} in $(shown "${out%/*}")"
		return 1
	fi
	read -r REC_RC REC_START REC_END <"$status" || { REC_RC=""; REC_START=""; REC_END=""; }
	if [ -z "$REC_RC" ]; then
		REC_ERROR="the workload did not run under trace-cmd (see $(shown "$logdir")/record.log)"
		return 1
	fi
	return 0
}

# lost_events FILE.dat: from `trace-cmd report --stat`, print one line per CPU:
# "CPU OVERRUN COMMIT_OVERRUN DROPPED READ". Fails when trace-cmd fails,
# prints no CPU, or a count that is not a number: then how many events were
# lost is unknown (not zero; and nothing but digits reaches meta.json or the
# shell's arithmetic).
lost_events() {
	local stat
	stat=$(trace-cmd report --stat "$1" 2>/dev/null) || return 1
	awk '
		function n(s) { if (s !~ /^[0-9]+$/ || length(s) > 18) bad = 1; return s }
		/^CPU: *[0-9]+/ { if (cpu != "") print cpu, ov, cov, dr, rd; cpu = n($2); ov = cov = dr = rd = 0; next }
		/^overrun:/        { ov = n($2) }
		/^commit overrun:/ { cov = n($3) }
		/^dropped events:/ { dr = n($3) }
		/^read events:/    { rd = n($3) }
		END { if (cpu == "" || bad) exit 1; print cpu, ov, cov, dr, rd }' <<<"$stat"
}

# FT_NULL_CLIENT: perl that sends NFS NULL RPCs, one at a time on one TCP
# connection, and checks each reply: perl -e "$FT_NULL_CLIENT" HOST PORT VERS N.
# (One process for all the calls: COUNT rpcinfo runs would spend the
# recording in fork+exec. perl-base, with IO::Socket::INET, is on every Debian.)
# shellcheck disable=SC2016  # (perl expands these)
FT_NULL_CLIENT='use strict; use IO::Socket::INET;
my ($host, $port, $vers, $n) = @ARGV;
my $s = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port, Proto => "tcp")
	or die "cannot connect to $host:$port: $!\n";
sub readn { my ($len) = @_; my $buf = "";
	while (length($buf) < $len) {
		sysread($s, $buf, $len - length($buf), length($buf)) or die "short reply: $!\n"; }
	return $buf; }
for my $xid (1 .. $n) {
	# call: xid, CALL, RPC v2, program 100003 (nfs), version, procedure 0 (NULL), AUTH_NULL x2
	my $msg = pack("N10", $xid, 0, 2, 100003, $vers, 0, 0, 0, 0, 0);
	syswrite($s, pack("N", 0x80000000 | length($msg)) . $msg) or die "write: $!\n";
	my $body = readn(unpack("N", readn(4)) & 0x7fffffff);
	my ($rxid, $type, $stat, $vflavor, $vlen) = unpack("N5", $body);
	my $accept = unpack("N", substr($body, 20 + (($vlen + 3) & ~3), 4));
	die "bad reply to NULL call $xid\n" unless $rxid == $xid && $type == 1 && $stat == 0 && $accept == 0;
}'

# Cleanup of temporary files, called by the scripts' EXIT traps.
FT_TMPFILES=()
remove_tmpfiles() {
	local f
	for f in "${FT_TMPFILES[@]}"; do rm -rf -- "$f"; done
}

# write_whole FILE TEXT: write FILE whole or not at all: TEXT goes to a
# temporary name first (created afresh: noclobber never follows a link), then
# is renamed. On an error (a full disk) no temporary file stays, and one line
# on stderr says which file and why.
write_whole() {
	local tmp=${1%/*}/.${1##*/}.tmp err
	FT_TMPFILES+=("$tmp")
	rm -f -- "$tmp"
	if ! err=$( (set -C; printf '%s\n' "$2" >"$tmp") 2>&1) || ! err=$(mv -f -- "$tmp" "$1" 2>&1); then
		rm -f -- "$tmp"
		printf '%s: error: cannot write %s: %s%s\n' "$FT_PROG" "$(shown "$1")" "${err##*: }" \
			"$(disk_full_hint "${1%/*}")" >&2
		return 1
	fi
}
