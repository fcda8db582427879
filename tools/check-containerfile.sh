#!/usr/bin/env bash
# Checks the Containerfile against the binary built here, since the image
# itself cannot be built in this environment (no image pulls):
#   - runtime stage (after the last FROM): its apt-get install list holds
#     the Debian package of every library build/steadfast links directly
#     (readelf NEEDED, resolved with ldd, owner from dpkg -S), except the
#     Essential packages and everything they depend on (libc6, libgcc-s1),
#     which every Debian base image has;
#     and nothing that is not among the packages of the binary's whole
#     library closure (ldd), so no tool or stray package slips in;
#   - it is based on this machine's Debian release (package names differ
#     between releases), runs as a numeric non-root USER and has the binary
#     as ENTRYPOINT;
#   - build stage (the first FROM): its install list holds the package of
#     every pkg-config module of the Makefile's PKGS.
#   tools/check-containerfile.sh [BINARY] [CONTAINERFILE]
# Exit 0 when all hold, 1 with a line per problem otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/steadfast}
cf=${2:-Containerfile}
[ -x "$bin" ] || { echo "check-containerfile: $bin: no such executable (run make)" >&2; exit 1; }
[ -f "$cf" ] || { echo "check-containerfile: $cf: missing" >&2; exit 1; }
for t in readelf ldd dpkg dpkg-query pkg-config; do
	command -v "$t" >/dev/null || { echo "check-containerfile: $t not found" >&2; exit 1; }
done
bad=0
fail() { echo "check-containerfile: $*" >&2; bad=1; }

# The Debian package owning a library path (usrmerge: try the real path
# first, then the path as ldd printed it).
owner() {
	local p
	for p in "$(readlink -f "$1")" "$1"; do
		dpkg -S "$p" 2>/dev/null | head -1 | cut -d: -f1 && return 0
	done
	return 1
}

# Stage N (1-based, or "last") of the Containerfile with continuation lines
# joined, comments dropped.
stage() {
	awk -v want="$1" '
		/^[[:space:]]*#/ { next }
		{ line = line $0 }
		/\\[[:space:]]*$/ { sub(/\\[[:space:]]*$/, " ", line); next }
		{ if (line ~ /^[[:space:]]*FROM[[:space:]]/) n++; lines[n] = lines[n] line "\n"; line = "" }
		END { print lines[want == "last" ? n : want] }' "$cf"
}

# Package names after "apt-get install" in a stage, up to the end of that
# command (&&, ;, end of line); options dropped.
installs() {
	grep -o 'apt-get install[^&;]*' | sed 's/apt-get install//' | tr ' \t' '\n\n' |
		grep -v '^-' | grep -v '^$' | sort -u || true
}

runtime=$(stage last)
build=$(stage 1)
listed=$(printf '%s\n' "$runtime" | installs)
build_listed=$(printf '%s\n' "$build" | installs)
[ -n "$listed" ] || fail "no apt-get install in the runtime stage"

# In every Debian image: the Essential packages and what they depend on.
base=$(dpkg-query -W -f='${Essential}\t${Package}, ${Pre-Depends}, ${Depends}\n' |
	awk -F'\t' '$1 == "yes" { print $2 }' | tr ',|' '\n\n' |
	sed 's/([^)]*)//g; s/:any//; s/[[:space:]]//g' | grep -v '^$' | sort -u)
# ... and what those depend on (libc6 pulls libgcc-s1, which a sanitizer
# build links): closed over the installed packages
while :; do
	more=$(for p in $base; do dpkg-query -W -f='${Pre-Depends}, ${Depends}\n' "$p" 2>/dev/null; done |
		tr ',|' '\n\n' | sed 's/([^)]*)//g; s/:any//; s/[[:space:]]//g' | grep -v '^$' |
		sort -u | comm -13 <(printf '%s\n' $base | sort -u) - || true)
	[ -n "$more" ] || break
	base=$(printf '%s\n' $base $more | sort -u)
done

# Direct dependencies: the NEEDED entries.
needed=""
for so in $(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p'); do
	path=$(ldd "$bin" | awk -v s="$so" '$1 == s && $2 == "=>" { print $3 }')
	[ -n "$path" ] || { fail "$so: not resolved by ldd"; continue; }
	pkg=$(owner "$path") || { fail "$so ($path): no Debian package owns it"; continue; }
	if grep -qxF "$pkg" <<<"$base"; then
		echo "check-containerfile: $so: $pkg (in the base image)"
		continue
	fi
	echo "check-containerfile: $so: $pkg"
	needed="$needed $pkg"
	grep -qxF "$pkg" <<<"$listed" || fail "$pkg ($so) is not installed by the runtime stage"
done

# Everything listed must be one of the binary's libraries (any depth).
closure=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' |
	while read -r p; do owner "$p" || true; done | sort -u)
for pkg in $listed; do
	grep -qxF "$pkg" <<<"$closure" ||
		fail "the runtime stage installs $pkg, which no library of $bin comes from"
done

# Same Debian release as the packages checked here.
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
for s in 1 last; do
	from=$(stage "$s" | grep -m1 -E '^[[:space:]]*FROM' | awk '{ print $2 }')
	case $from in
	debian:"$codename"*) ;;
	*) fail "stage $s is FROM $from, not Debian $codename (where the package names were checked)" ;;
	esac
done

# Non-root numeric user and the entry point.
user=$(printf '%s\n' "$runtime" | awk '$1 == "USER" { u = $2 } END { print u }')
uid=${user%%:*}
if ! [[ $uid =~ ^[0-9]+$ ]] || [ "$uid" = 0 ]; then
	fail "the runtime stage's USER is '${user:-unset}', not a numeric non-root uid"
fi
printf '%s\n' "$runtime" | grep -q '^ENTRYPOINT \["/usr/local/bin/steadfast"\]' ||
	fail "the runtime stage's ENTRYPOINT is not [\"/usr/local/bin/steadfast\"]"

# Build stage: a -dev package for every pkg-config module the Makefile uses.
mods=$(sed -n 's/^PKGS[[:space:]]*:=[[:space:]]*//p' Makefile)
[ -n "$mods" ] || fail "no PKGS line in the Makefile"
for m in $mods; do
	pc=$(pkg-config --path "$m" 2>/dev/null) || { fail "pkg-config module $m not found here"; continue; }
	pkg=$(owner "$pc") || { fail "$pc: no Debian package owns it"; continue; }
	grep -qxF "$pkg" <<<"$build_listed" || fail "build stage does not install $pkg ($m)"
done

if [ "$bad" = 0 ]; then
	echo "check-containerfile: ok: runtime installs$(printf ' %s' $listed); needed:$needed"
fi
exit $bad
