# shellcheck shell=bash
# measure.sh: totals measured outside the tracer, for collect.sh (sourced).
# `ftflame report` checks the trace against them (ftflame/correct/measured.py):
#   - the server's own RPC statistics (/proc/net/rpc/nfsd: calls per NFS
#     procedure and NFSv4 operation), before and after a recording;
#   - the client's per-operation statistics (/proc/self/mountstats: count,
#     RTT and execute time) when an NFS mount is on this machine;
#   - iozone's result table (throughput per test) and its -Q latency files.
# Each function prints JSON (null when there is nothing to read). The paths
# can be changed for the tests: FTFLAME_NFSD_STATS, FTFLAME_MOUNTSTATS.

NFSD_STATS=${FTFLAME_NFSD_STATS:-/proc/net/rpc/nfsd}
MOUNTSTATS=${FTFLAME_MOUNTSTATS:-/proc/self/mountstats}

# awk functions, put before the programs below that write what they read
# into meta.json: what a workload prints (iozone's table, its -Q files) is
# data, never JSON text.
#   jstr(s): s as a JSON string: quotes, backslashes, tabs, newlines escaped,
#     other control characters dropped (bytes that are not UTF-8 are dropped
#     by write_meta);
#   jnum(s): s when it is a JSON number that reads as a finite one (not 4x,
#     007, 1e400, nan), else ""; jn(x): a figure awk computed, or null.
# (Built with substr, not gsub: in gsub's replacement the awks do not agree
# on how many backslashes make one.)
FT_AWK_JSON='
function jstr(s,    out, i, n, c) {
	if (!("\001" in _ctl)) for (i = 1; i < 32; i++) _ctl[sprintf("%c", i)] = 1
	_ctl[sprintf("%c", 127)] = 1
	out = ""; n = length(s)
	for (i = 1; i <= n; i++) {
		c = substr(s, i, 1)
		if (c == "\\") out = out "\\\\"
		else if (c == "\"") out = out "\\\""
		else if (c == "\t") out = out "\\t"
		else if (c == "\n") out = out "\\n"
		else if (c == "\r") out = out "\\r"
		else if (!(c in _ctl)) out = out c
	}
	return "\"" out "\""
}
function jn(x,    s) { s = x ""; return jnum(s) == "" ? "null" : s }
function jnum(s,    v) {
	if (s !~ /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$/) return ""
	v = s + 0
	return (v < 1e300 && v > -1e300) ? s : ""
}
'

# snapshot_stats PREFIX: copies of the statistics files as PREFIX.nfsd and
# PREFIX.mountstats (absent when the machine has none).
snapshot_stats() {
	rm -f -- "$1.nfsd" "$1.mountstats"
	[ -r "$NFSD_STATS" ] && cat -- "$NFSD_STATS" >"$1.nfsd" 2>/dev/null
	[ -r "$MOUNTSTATS" ] && cat -- "$MOUNTSTATS" >"$1.mountstats" 2>/dev/null
	return 0
}

# nfsd_stats_json BEFORE AFTER: {"before": {...}, "after": {...}, "delta":
# {...}} of two /proc/net/rpc/nfsd copies, each {"rpc": {calls, badcalls,
# ...}, "proc3": {"null": N, ...}, "proc4": {...}, "proc4ops": {"WRITE": N,
# ...}}; the delta keeps the counters that moved. null without both files.
nfsd_stats_json() {
	if [ ! -s "$1" ] || [ ! -s "$2" ]; then printf 'null'; return 0; fi
	awk "$FT_AWK_JSON"'
	BEGIN {
		# procedure numbers -> names (RFC 1094, RFC 1813, RFC 7530/8881)
		n = split("null getattr setattr root lookup readlink read writecache write create remove rename link symlink mkdir rmdir readdir statfs", p2, " ")
		n = split("null getattr setattr lookup access readlink read write create mkdir symlink mknod remove rmdir rename link readdir readdirplus fsstat fsinfo pathconf commit", p3, " ")
		n = split("null compound", p4, " ")
		n = split("ACCESS CLOSE COMMIT CREATE DELEGPURGE DELEGRETURN GETATTR GETFH LINK LOCK LOCKT LOCKU LOOKUP LOOKUPP NVERIFY OPEN OPENATTR OPEN_CONFIRM OPEN_DOWNGRADE PUTFH PUTPUBFH PUTROOTFH READ READDIR READLINK REMOVE RENAME RENEW RESTOREFH SAVEFH SECINFO SETATTR SETCLIENTID SETCLIENTID_CONFIRM VERIFY WRITE RELEASE_LOCKOWNER BACKCHANNEL_CTL BIND_CONN_TO_SESSION EXCHANGE_ID CREATE_SESSION DESTROY_SESSION FREE_STATEID GET_DIR_DELEGATION GETDEVICEINFO GETDEVICELIST LAYOUTCOMMIT LAYOUTGET LAYOUTRETURN SECINFO_NO_NAME SEQUENCE SET_SSV TEST_STATEID WANT_DELEGATION DESTROY_CLIENTID RECLAIM_COMPLETE ALLOCATE COPY COPY_NOTIFY DEALLOCATE IO_ADVISE LAYOUTERROR LAYOUTSTATS OFFLOAD_CANCEL OFFLOAD_STATUS READ_PLUS SEEK WRITE_SAME CLONE GETXATTR SETXATTR LISTXATTRS REMOVEXATTR", p4ops, " ")
		split("calls badcalls badfmt badauth badclnt", rpcf, " ")
	}
	FNR == 1 { f++ }
	function put(group, name, v) {
		if (!((group, name) in seen)) { seen[group, name] = 1; order[group] = order[group] " " name }
		val[f, group, name] = v
	}
	$1 == "rpc" { for (i = 2; i <= NF && i <= 6; i++) put("rpc", rpcf[i - 1], $i) }
	$1 ~ /^proc[234]$/ {
		for (i = 3; i <= NF; i++) {
			k = i - 3; name = "proc" k
			if ($1 == "proc2" && (k + 1) in p2) name = p2[k + 1]
			if ($1 == "proc3" && (k + 1) in p3) name = p3[k + 1]
			if ($1 == "proc4" && (k + 1) in p4) name = p4[k + 1]
			put($1, name, $i)
		}
	}
	$1 == "proc4ops" {
		for (i = 3; i <= NF; i++) {
			k = i - 3   # the operation number (0-2 are not operations)
			if (k < 3) continue
			name = ((k - 2) in p4ops) ? p4ops[k - 2] : "OP" k
			put("proc4ops", name, $i)
		}
	}
	function obj(which, group,    s, m, names, j, v, first) {
		s = "{"; first = 1
		m = split(order[group], names, " ")
		for (j = 1; j <= m; j++) {
			if (which == "delta") {
				v = val[2, group, names[j]] - val[1, group, names[j]]
				if (v == 0) continue
			} else v = val[which, group, names[j]] + 0
			s = s (first ? "" : ", ") jstr(names[j]) ": " jn(v); first = 0
		}
		return s "}"
	}
	function snap(which,    s, g, groups, j, first, o) {
		split("rpc proc2 proc3 proc4 proc4ops", groups, " ")
		s = "{"; first = 1
		for (j = 1; j <= 5; j++) {
			g = groups[j]
			if (order[g] == "") continue
			o = obj(which, g)
			if (which == "delta" && o == "{}") continue
			s = s (first ? "" : ", ") "\"" g "\": " o; first = 0
		}
		return s "}"
	}
	END { printf "{\"before\": %s, \"after\": %s, \"delta\": %s}", snap(1), snap(2), snap("delta") }
	' "$1" "$2"
}

# mountstats_json BEFORE AFTER: the NFS mounts of two /proc/self/mountstats
# copies: {"MOUNTPOINT": {"device", "fstype", "ops": {"WRITE": {"before":
# [...], "after": [...], "delta": {"ops", "transmissions", "timeouts",
# "bytes_sent", "bytes_received", "queue_ms", "rtt_ms", "execute_ms",
# "errors"}}}}} (before and after: those nine counters in that order), the
# operations that moved only. null without an NFS mount.
mountstats_json() {
	if [ ! -s "$1" ] || [ ! -s "$2" ]; then printf 'null'; return 0; fi
	awk "$FT_AWK_JSON"'
	BEGIN { nf = split("ops transmissions timeouts bytes_sent bytes_received queue_ms rtt_ms execute_ms errors", field, " ") }
	FNR == 1 { f++; mnt = "" }
	$1 == "device" {
		mnt = ""
		if ($0 ~ / with fstype nfs4? /) {   # (not nfsd: the server'"'"'s control file system)
			for (i = 1; i <= NF; i++) if ($i == "on") mnt = $(i + 1)
			for (i = 1; i <= NF; i++) if ($i == "fstype") fst = $(i + 1)
			if (!(mnt in dev)) { dev[mnt] = $2; fstype[mnt] = fst; mounts = mounts " " mnt }
			present[f, mnt] = 1
		}
		next
	}
	mnt != "" && $1 ~ /^[A-Z_0-9]+:$/ && NF >= 9 {
		op = substr($1, 1, length($1) - 1)
		if (!((mnt, op) in seenop)) { seenop[mnt, op] = 1; ops[mnt] = ops[mnt] " " op }
		for (i = 2; i <= NF && i - 1 <= nf; i++) v[f, mnt, op, i - 1] = $i
		width[mnt, op] = NF - 1 > nf ? nf : NF - 1
	}
	END {
		out = "{"; firstm = 1
		m = split(mounts, ml, " ")
		for (j = 1; j <= m; j++) {
			mp = ml[j]
			if (!present[1, mp] || !present[2, mp]) continue
			s = jstr(mp) ": {\"device\": " jstr(dev[mp]) ", \"fstype\": " jstr(fstype[mp]) ", \"ops\": {"
			firsto = 1
			k = split(ops[mp], ol, " ")
			for (q = 1; q <= k; q++) {
				op = ol[q]
				if (v[2, mp, op, 1] - v[1, mp, op, 1] == 0) continue
				d = "{"; b = "["; a = "["
				for (i = 1; i <= width[mp, op]; i++) {
					d = d (i > 1 ? ", " : "") "\"" field[i] "\": " jn(v[2, mp, op, i] - v[1, mp, op, i])
					b = b (i > 1 ? ", " : "") jn(v[1, mp, op, i] + 0)
					a = a (i > 1 ? ", " : "") jn(v[2, mp, op, i] + 0)
				}
				s = s (firsto ? "" : ", ") jstr(op) ": {\"before\": " b "], \"after\": " a "], \"delta\": " d "}}"; firsto = 0
			}
			out = out (firstm ? "" : ", ") s "}}"; firstm = 0
		}
		if (firstm) printf "null"; else printf "%s}", out
	}
	' "$1" "$2"
}

# is_iozone ARGV...: the workload is iozone (maybe behind env, time, nice...).
is_iozone() {
	local a
	for a in "$@"; do
		case ${a##*/} in
		iozone) return 0 ;;
		env | time | nice | ionice | taskset | chrt | numactl | sudo | stdbuf) ;;
		-* | *=* | [0-9]*) ;;
		*) return 1 ;;
		esac
	done
	return 1
}

# iozone_json LOG: iozone's result table from its output: {"units":
# "kB/s"|"ops/s", "command_line", "rows": [{"file_kb", "record_kb",
# "throughput": {"write": N, "random read": N, ...}}]}; null when the log
# holds no table. The columns are found by where the header names end
# (iozone right-aligns each figure under its name; the first header line
# gives the two-word names: random read, bkwd read, record rewrite...).
# A figure that is not a number (a record size "4x") is left out (a record
# size null), and a line on stderr says which: collect.sh makes it a warning.
iozone_json() {
	[ -s "$1" ] || { printf 'null'; return 0; }
	awk "$FT_AWK_JSON"'
	function ends(line, arr, names,    i, n, c, w) {   # word end columns
		n = 0; w = ""
		for (i = 1; i <= length(line) + 1; i++) {
			c = substr(line, i, 1)
			if (c != " " && c != "\t" && c != "") w = w c
			else if (w != "") { n++; arr[n] = i - 1; names[n] = w; w = "" }
		}
		return n
	}
	/Output is in operations per second/ { units = "ops/s" }
	/Output is in kBytes\/sec/ { units = "kB/s" }
	/Command line used:/ { cmd = $0; sub(/^.*Command line used: */, "", cmd) }
	$1 == "kB" && $2 == "reclen" {
		nh = ends($0, hend, hname)
		n1 = ends(prev, pend, pname)
		for (i = 1; i <= nh; i++) {
			col[i] = hname[i]
			for (j = 1; j <= n1; j++) if (pend[j] == hend[i]) col[i] = pname[j] " " hname[i]
		}
		intable = 1; next
	}
	{ prev = $0 }
	intable && $1 ~ /^[0-9]+$/ {
		nv = ends($0, vend, vval)
		nrow++
		fkb = jnum(vval[1]); rkb = jnum(vval[2])
		if (fkb == "") { print "iozone result table, row " nrow ": file size " jstr(vval[1]) " is not a number: file_kb null" > "/dev/stderr"; fkb = "null" }
		if (rkb == "") { print "iozone result table, row " nrow ": record size " jstr(vval[2]) " is not a number: record_kb null" > "/dev/stderr"; rkb = "null" }
		row = "{\"file_kb\": " fkb ", \"record_kb\": " rkb ", \"throughput\": {"
		first = 1
		for (i = 3; i <= nv; i++) {
			best = 0; bd = 1e9   # the header whose end is nearest
			for (j = 3; j <= nh; j++) { d = vend[i] - hend[j]; if (d < 0) d = -d; if (d < bd) { bd = d; best = j } }
			if (best == 0) continue
			if (jnum(vval[i]) == "") {
				print "iozone result table, row " nrow ": " jstr(col[best]) " reads " jstr(vval[i]) ", not a number: left out" > "/dev/stderr"
				continue
			}
			row = row (first ? "" : ", ") jstr(col[best]) ": " vval[i]; first = 0
		}
		rows = rows (nrow > 1 ? ", " : "") row "}}"
		next
	}
	intable && NF == 0 { next }
	intable { intable = 0 }
	END {
		if (!nrow) { printf "null"; exit }
		printf "{\"units\": \"%s\", \"command_line\": %s, \"rows\": [%s]}", units == "" ? "kB/s" : units, jstr(cmd), rows
	}
	' "$1"
}

# iozone_latency_lines DIR: "FILE LINES" of iozone -Q's files already in DIR
# (iozone appends to them: a later run's figures come after these lines).
iozone_latency_lines() {
	local f
	for f in "$1"/*ol.dat; do
		[ -f "$f" ] && printf '%s %s\n' "${f##*/}" "$(wc -l <"$f")"
	done
	return 0
}

# iozone_latency_json DIR SINCE_FILE LINES_FILE: iozone -Q's offset/latency
# files in DIR (wol.dat write, rwol.dat rewrite, rol.dat read, rrol.dat
# reread...) written after SINCE_FILE, from the line LINES_FILE had them end
# at (iozone_latency_lines before the run): {"write": {"file", "count",
# "mean_us", "max_us"}, ...}; null when there are none.
iozone_latency_json() {
	local f base name first=1 stats skip out="{"
	for f in "$1"/*ol.dat; do
		if [ ! -f "$f" ] || [ ! "$f" -nt "$2" ]; then continue; fi
		base=${f##*/}
		case $base in
		wol.dat) name="write" ;; rwol.dat) name="rewrite" ;; rol.dat) name="read" ;; rrol.dat) name="reread" ;;
		*) name=${base%.dat} ;;
		esac
		skip=$(awk -v f="$base" '$1 == f { print $2 }' "$3" 2>/dev/null)
		# (figures that are not numbers are not counted; a file whose mean
		# or max is not a finite number is left out, with a line on stderr)
		stats=$(awk -v skip="${skip:-0}" -v f="$base" "$FT_AWK_JSON"'FNR > skip && $1 ~ /^[0-9]+$/ && jnum($2) != "" {
				v = $2 < 0 ? 0 : $2 + 0; n++; s += v; if (v > m) m = v }
			END {
				if (!n) exit
				mean = sprintf("%.3f", s / n); max = jn(m)
				if (jnum(mean) == "" || max == "null") {
					print "iozone latency file " jstr(f) ": its mean or max is not a finite number: left out" > "/dev/stderr"
					exit
				}
				printf "\"count\": %d, \"mean_us\": %s, \"max_us\": %s", n, mean, max }' "$f")
		[ -n "$stats" ] || continue
		((first)) || out+=", "
		first=0
		out+="\"$name\": {\"file\": $(json_str "$base"), $stats}"
	done
	if ((first)); then printf 'null'; else printf '%s}' "$out"; fi
}
