#!/usr/bin/env bash
# Style and static checks: clang-format (style in .clang-format) must leave
# every file unchanged, and cppcheck must report nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(ls src/*.c src/*/*.c election/*.c include/steadfast/*.h test/lib/*.[ch] 2>/dev/null || true)
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
