# shellcheck shell=bash
# apt-private.sh: sourced by tests/vm/kernels.sh and tests/vm/sid-trace-cmd.sh.
# apt_other ARGS...: apt-cache or apt-get over the suites of
# tests/vm/other-suites.sources only, with a state of its own in
# $CACHE/apt (lists, package cache, an empty dpkg status): the host's apt
# lists and sources are never read or written, and with no installed package
# in its view this apt can only download, never upgrade the host.
# Needs CACHE set; the first call of `apt_other apt-get update` fetches about
# 30 MB of package lists (sid's are the bulk).
APT_OTHER_SOURCES=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/other-suites.sources

apt_other() {
	local tool=$1 st=$CACHE/apt
	shift
	mkdir -p "$st/lists/partial" "$st/cache/archives/partial" "$st/empty.d"
	[ -e "$st/status" ] || : >"$st/status"
	"$tool" -q -o Dir::Etc::SourceList="$APT_OTHER_SOURCES" -o Dir::Etc::SourceParts="$st/empty.d" \
		-o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts="$st/empty.d" \
		-o Dir::State::Lists="$st/lists" -o Dir::Cache="$st/cache" -o Dir::State::status="$st/status" \
		-o APT::Architectures=amd64 -o Acquire::Languages=none \
		-o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false \
		-o Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false \
		-o Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false \
		-o Acquire::IndexTargets::deb::CNF::DefaultEnabled=false "$@"
}

# apt_other_known: true when the private lists have been fetched once.
apt_other_known() {
	compgen -G "$CACHE/apt/lists/*_Packages*" >/dev/null
}

# download_in DIR CMD...: run CMD (an `apt-get download`) in DIR; its output
# goes to stderr without the warning that apt's sandbox user cannot write into
# a root-owned folder (harmless: root downloads instead). CMD's exit code.
download_in() {
	local dir=$1 out rc=0
	shift
	out=$(cd "$dir" && "$@" 2>&1) || rc=$?
	printf '%s\n' "$out" | grep -v 'unsandboxed' | sed '/^$/d' >&2 || true
	return "$rc"
}
