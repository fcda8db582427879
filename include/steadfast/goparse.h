/*
 * goparse.h - Go's text forms of durations and integers, free of I/O.
 *
 * Steadfast reads files and annotations written for Go programs (the
 * upstream controller's config and annotations, kubectl's YAML, flags
 * that take Go durations), so a value must mean here what it means to
 * Go: time.ParseDuration and Duration.String byte for byte,
 * strconv.ParseInt and ParseUint (bit size 64) and strconv.Atoi. All
 * parsers are length-aware, so that a NUL inside a value is a syntax
 * error as it is for Go, not the end of the text. Errors: -EINVAL (not
 * Go syntax) or -ERANGE (out of range); on error *out is left alone.
 */
#ifndef STEADFAST_GOPARSE_H
#define STEADFAST_GOPARSE_H

#include <stddef.h>
#include <stdint.h>

/* Go's time.ParseDuration: "300ms", "-1.5h", "2h45m", "1µs"; "0" alone is
 * allowed. Returns 0 and nanoseconds, -EINVAL malformed, -ERANGE overflow.
 * (Go lets a sum of parts wrap past 2^64 and returns the wrapped value, e.g.
 * "9223372036854775808ns9223372036854775808ns" is 0; here it is -ERANGE.) */
int sf_go_duration_parse(const char *s, int64_t *ns);
/* The same for s[0..n). */
int sf_go_duration_parse_n(const char *s, size_t n, int64_t *ns);
/* Go's Duration.String: "1h2m3.5s", "90ms", "0s". Returns length written
 * or -ERANGE (buf too small; 32 bytes always suffice). */
int sf_go_duration_format(int64_t ns, char *buf, size_t n);

/* strconv.ParseUint(s[0..n), base, 64). base is 2 to 36, or 0: then a
 * 0b, 0o or 0x prefix (with at least one digit after it) or a leading 0
 * for octal picks the base, else 10. Unlike Go, base 0 does not accept
 * underscores between digits (go-yaml removes them before it parses; so
 * does yaml.c). Like Go, the overflow is reported as soon as it happens,
 * before a later byte that is not a digit. */
int sf_go_parse_uint(const char *s, size_t n, int base, uint64_t *out);
/* strconv.ParseInt(s[0..n), base, 64): an optional sign, then as
 * sf_go_parse_uint, in the int64 range. */
int sf_go_parse_int(const char *s, size_t n, int base, int64_t *out);
/* strconv.Atoi on a 64-bit platform, i.e. sf_go_parse_int with base 10:
 * an optional sign and decimal digits; no spaces, prefixes or
 * underscores. */
int sf_go_atoi(const char *s, size_t n, int64_t *out);

#endif
