/*
 * goparse.c - Go's text forms of durations and integers (see goparse.h).
 *
 * One place for the Go-compatible parsing the rest of the tree needs: the
 * operator config and the AppWrapper annotations (time.ParseDuration,
 * strconv.Atoi), command-line duration flags, and the YAML reader's
 * integers (strconv.ParseInt and ParseUint with base 0). Each follows the
 * Go source's rules and order of checks, so that the same text is
 * accepted or refused here as there; the one deliberate difference of
 * ParseDuration is described at sf_go_duration_parse_n.
 */
#include "steadfast/goparse.h"

#include <errno.h>
#include <string.h>

#define TWO63 (UINT64_C(1) << 63)

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* ---- time.ParseDuration / Duration.String ---- */

/* Nanoseconds per unit, 0 if u is not one of Go's units. */
static uint64_t unit_ns(const char *u, size_t n)
{
	static const struct {
		const char *name;
		uint64_t ns;
	} units[] = {
	    {"ns", 1},
	    {"us", 1000},
	    {"\xc2\xb5s", 1000}, /* U+00B5 micro sign */
	    {"\xce\xbcs", 1000}, /* U+03BC Greek small letter mu */
	    {"ms", 1000000},
	    {"s", UINT64_C(1000000000)},
	    {"m", UINT64_C(60000000000)},
	    {"h", UINT64_C(3600000000000)},
	};
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strlen(units[i].name) == n && memcmp(units[i].name, u, n) == 0)
			return units[i].ns;
	}
	return 0;
}

/*
 * Length-aware so that a NUL inside an annotation value is an unknown unit,
 * as it is for Go, rather than the end of the string. One deliberate
 * difference: Go adds the per-number values in a uint64 that can wrap to a
 * small number ("9223372036854775808ns9223372036854775808ns" parses as 0);
 * here that is -ERANGE.
 */
int sf_go_duration_parse_n(const char *s, size_t n, int64_t *out)
{
	const char *p = s, *end = s + n;
	uint64_t d = 0;
	int neg = 0;

	if (p < end && (*p == '-' || *p == '+')) {
		neg = *p == '-';
		p++;
	}
	if (end - p == 1 && *p == '0') {
		*out = 0;
		return 0;
	}
	if (p == end)
		return -EINVAL;
	while (p < end) {
		uint64_t v = 0, f = 0;
		double scale = 1;

		if (!(*p == '.' || is_digit(*p)))
			return -EINVAL;
		/* integer part, [0-9]* */
		const char *q = p;
		for (; p < end && is_digit(*p); p++) {
			if (v > TWO63 / 10)
				return -ERANGE;
			v = v * 10 + (uint64_t)(*p - '0');
			if (v > TWO63)
				return -ERANGE;
		}
		int pre = p != q;
		/* fraction, (\.[0-9]*)?: extra digits only lose precision */
		int post = 0;
		if (p < end && *p == '.') {
			p++;
			q = p;
			int ovf = 0;
			for (; p < end && is_digit(*p); p++) {
				if (ovf)
					continue;
				if (f > (TWO63 - 1) / 10) {
					ovf = 1;
					continue;
				}
				uint64_t y = f * 10 + (uint64_t)(*p - '0');
				if (y > TWO63) {
					ovf = 1;
					continue;
				}
				f = y;
				scale *= 10;
			}
			post = p != q;
		}
		if (!pre && !post)
			return -EINVAL; /* ".s", "-.s" */
		/* unit: everything up to the next '.' or digit */
		q = p;
		while (p < end && *p != '.' && !is_digit(*p))
			p++;
		if (p == q)
			return -EINVAL; /* missing unit */
		uint64_t unit = unit_ns(q, (size_t)(p - q));
		if (!unit)
			return -EINVAL;
		if (v > TWO63 / unit)
			return -ERANGE;
		v *= unit;
		if (f > 0) {
			/* the same double arithmetic as Go, for identical rounding */
			v += (uint64_t)((double)f * ((double)unit / scale));
			if (v > TWO63)
				return -ERANGE;
		}
		if (v > TWO63 - d)
			return -ERANGE;
		d += v;
	}
	if (neg) {
		*out = d == TWO63 ? INT64_MIN : -(int64_t)d;
		return 0;
	}
	if (d > (uint64_t)INT64_MAX)
		return -ERANGE;
	*out = (int64_t)d;
	return 0;
}

int sf_go_duration_parse(const char *s, int64_t *ns)
{
	if (!s)
		return -EINVAL;
	return sf_go_duration_parse_n(s, strlen(s), ns);
}

/* Writes v's decimal digits ending just before w; returns the new start. */
static char *put_uint(char *w, uint64_t v)
{
	do {
		*--w = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return w;
}

/* v / 10^prec as ".ddd" without trailing zeros (nothing if the fraction is
 * zero) ending just before *w; *v becomes the integer part. */
static char *put_frac(char *w, uint64_t *v, int prec)
{
	int print = 0;
	for (int i = 0; i < prec; i++) {
		uint64_t digit = *v % 10;
		print = print || digit != 0;
		if (print)
			*--w = (char)('0' + digit);
		*v /= 10;
	}
	if (print)
		*--w = '.';
	return w;
}

int sf_go_duration_format(int64_t ns, char *buf, size_t n)
{
	char tmp[32];
	char *end = tmp + sizeof(tmp), *w = end;
	int neg = ns < 0;
	uint64_t u = neg ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;

	*--w = 's';
	if (u < UINT64_C(1000000000)) {
		int prec;
		if (u == 0) {
			*--w = '0';
			goto out;
		} else if (u < 1000) {
			prec = 0;
			*--w = 'n';
		} else if (u < 1000000) {
			prec = 3;
			*--w = '\xb5'; /* U+00B5, as Go writes it */
			*--w = '\xc2';
		} else {
			prec = 6;
			*--w = 'm';
		}
		w = put_frac(w, &u, prec);
		w = put_uint(w, u);
	} else {
		w = put_frac(w, &u, 9);
		w = put_uint(w, u % 60); /* seconds */
		u /= 60;
		if (u > 0) {
			*--w = 'm';
			w = put_uint(w, u % 60);
			u /= 60;
			if (u > 0) {
				*--w = 'h';
				w = put_uint(w, u);
			}
		}
	}
	if (neg)
		*--w = '-';
out:;
	size_t len = (size_t)(end - w);
	if (!buf || len >= n)
		return -ERANGE;
	memcpy(buf, w, len);
	buf[len] = '\0';
	return (int)len;
}

/* ---- strconv.ParseUint / ParseInt / Atoi ---- */

/* The value of a digit in bases up to 36 (a-z and A-Z are 10-35), or 99. */
static int digit_val(char ch)
{
	if (is_digit(ch))
		return ch - '0';
	ch = (char)(ch | 0x20);
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 10;
	return 99;
}

/* Base of a Go integer literal with base 0 and where its digits start:
 * 0b/0o/0x (with at least one more byte), a leading 0 for octal, else 10. */
static int base0(const char *s, size_t n, size_t *start)
{
	*start = 0;
	if (n && s[0] == '0') {
		char p = n >= 3 ? (char)(s[1] | 0x20) : 0;
		*start = 2;
		if (p == 'b')
			return 2;
		if (p == 'o')
			return 8;
		if (p == 'x')
			return 16;
		*start = 1;
		return 8;
	}
	return 10;
}

int sf_go_parse_uint(const char *s, size_t n, int base, uint64_t *out)
{
	if (!n || base == 1 || base < 0 || base > 36)
		return -EINVAL;
	size_t i = 0;
	if (base == 0)
		base = base0(s, n, &i);
	uint64_t v = 0;
	for (; i < n; i++) {
		int d = digit_val(s[i]);
		if (d >= base)
			return -EINVAL;
		if (v > (UINT64_MAX - (unsigned)d) / (unsigned)base)
			return -ERANGE;
		v = v * (unsigned)base + (unsigned)d;
	}
	*out = v;
	return 0;
}

int sf_go_parse_int(const char *s, size_t n, int base, int64_t *out)
{
	int neg = 0;
	if (n && (s[0] == '+' || s[0] == '-')) {
		neg = s[0] == '-';
		s++;
		n--;
	}
	uint64_t u;
	int rc = sf_go_parse_uint(s, n, base, &u);
	if (rc)
		return rc;
	if (u > (uint64_t)INT64_MAX + (neg ? 1 : 0))
		return -ERANGE;
	if (neg)
		*out = u == TWO63 ? INT64_MIN : -(int64_t)u;
	else
		*out = (int64_t)u;
	return 0;
}

int sf_go_atoi(const char *s, size_t n, int64_t *out)
{
	return sf_go_parse_int(s, n, 10, out);
}
