#!/usr/bin/env bash
# Style and static checks: clang-format (style in .clang-format) must leave
# every file unchanged, and cppcheck must report nothing.
#
# The files clang-format checks are the files `make format` formats: every
# .c and .h of src/ (headers beside the sources included), election/,
# include/ and the tests (test/unit, test/model, test/lib,
# test/integration, test/fuzz). `tools/lint.sh --files` prints them, one a
# line; the Makefile's format rule takes its list from there.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(find src election include test/unit test/model test/lib test/integration test/fuzz \
	-name '*.[ch]' -type f 2>/dev/null | LC_ALL=C sort || true)
if [ "${1:-}" = --files ]; then
	printf '%s\n' "$files"
	exit 0
fi
bad=0
for f in $files; do
	if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
		echo "lint: $f is not clang-formatted (run make format)" >&2
		bad=1
	fi
done
# varFuncNullUB: in C, glibc defines NULL as ((void *)0), a valid pointer
# sentinel for the key/value lists of sf_log.
cppcheck --quiet --error-exitcode=1 --std=c11 --enable=warning,portability,performance \
	--inline-suppr --suppress=missingIncludeSystem --suppress=varFuncNullUB -Iinclude src election || bad=1
exit $bad
