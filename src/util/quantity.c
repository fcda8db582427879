/*
 * quantity.c - resource quantities as exact milli-unit counts
 * (quantity.h).
 *
 * The text is read as a decimal significand (digits, optional fraction),
 * a power of ten (the decimal suffix or exponent, minus the fraction's
 * digits, plus 3 for milli-units) and a power of 1024 (the binary
 * suffix); the value is built with checked multiplications only, so no
 * intermediate ever overflows or loses a digit silently.
 */
#include "steadfast/quantity.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* *v *= m, refusing overflow (v and m non-negative). */
static int mul(uint64_t *v, uint64_t m)
{
	if (m && *v > UINT64_MAX / m)
		return -ERANGE;
	*v *= m;
	return 0;
}

/* The suffix of s[0..n) after the number: its power of ten and of 1024.
 * 0, or -EINVAL when it is none of the known ones. */
static int suffix(const char *s, size_t n, int *pow10, int *pow1024)
{
	static const char dec[] = "kMGTPE";
	static const char bin[] = "KMGTPE";
	*pow10 = 0;
	*pow1024 = 0;
	if (n == 0)
		return 0;
	if (n == 1 && s[0] == 'm') {
		*pow10 = -3;
		return 0;
	}
	if (n == 1) {
		const char *p = memchr(dec, s[0], sizeof(dec) - 1);
		if (!p)
			return -EINVAL;
		*pow10 = 3 * (int)(p - dec + 1);
		return 0;
	}
	if (n == 2 && s[1] == 'i') {
		const char *p = memchr(bin, s[0], sizeof(bin) - 1);
		if (!p)
			return -EINVAL;
		*pow1024 = (int)(p - bin + 1);
		return 0;
	}
	/* a decimal exponent: e or E, an optional sign, digits */
	if (s[0] != 'e' && s[0] != 'E')
		return -EINVAL;
	size_t i = 1;
	int neg = 0;
	if (s[i] == '+' || s[i] == '-')
		neg = s[i++] == '-';
	if (i == n)
		return -EINVAL;
	int e = 0;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		if (e < 1000)
			e = e * 10 + (s[i] - '0');
	}
	*pow10 = neg ? -e : e;
	return 0;
}

int sf_qty_parse_n(const char *s, size_t n, int64_t *milli)
{
	if (!s || n == 0)
		return -EINVAL;
	size_t i = 0;
	int neg = 0;
	if (s[i] == '+' || s[i] == '-')
		neg = s[i++] == '-';
	/* the significand's digits, leading zeros dropped, and how many of
	 * them came after the point */
	char digits[64];
	size_t nd = 0, nint = 0, nfrac = 0;
	int point = 0, any = 0;
	for (; i < n; i++) {
		char c = s[i];
		if (c == '.' && !point) {
			point = 1;
			continue;
		}
		if (c < '0' || c > '9')
			break;
		any = 1;
		if (point)
			nfrac++;
		else
			nint++;
		if (nd == 0 && c == '0') {
			/* a leading zero adds no digit; after the point it still shifts */
			continue;
		}
		if (nd == sizeof(digits))
			return -ERANGE;
		digits[nd++] = c;
	}
	if (!any)
		return -EINVAL;
	(void)nint;
	int p10, p1024;
	if (suffix(s + i, n - i, &p10, &p1024) < 0)
		return -EINVAL;
	/* value = digits * 10^(p10 + 3 - nfrac) * 1024^p1024 milli-units */
	long exp10 = (long)p10 + 3 - (long)nfrac;
	/* trailing zeros of the significand absorb a negative exponent */
	while (exp10 < 0 && nd > 0 && digits[nd - 1] == '0') {
		nd--;
		exp10++;
	}
	uint64_t v = 0;
	if (nd > 0 && exp10 < 0)
		return -ERANGE; /* finer than 1m */
	for (size_t k = 0; k < nd; k++)
		if (mul(&v, 10) < 0 || v > UINT64_MAX - (uint64_t)(digits[k] - '0'))
			return -ERANGE;
		else
			v += (uint64_t)(digits[k] - '0');
	if (v != 0) {
		for (long k = 0; k < exp10; k++)
			if (mul(&v, 10) < 0)
				return -ERANGE;
		for (int k = 0; k < p1024; k++)
			if (mul(&v, 1024) < 0)
				return -ERANGE;
	}
	if (neg) {
		if (v > (uint64_t)INT64_MAX + 1)
			return -ERANGE;
		*milli = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	} else {
		if (v > (uint64_t)INT64_MAX)
			return -ERANGE;
		*milli = (int64_t)v;
	}
	return 0;
}

int sf_qty_parse(const char *s, int64_t *milli)
{
	return s ? sf_qty_parse_n(s, strlen(s), milli) : -EINVAL;
}

int sf_qty_add(int64_t a, int64_t b, int64_t *out)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return -ERANGE;
	*out = r;
	return 0;
}

int sf_qty_sub(int64_t a, int64_t b, int64_t *out)
{
	int64_t r;
	if (__builtin_sub_overflow(a, b, &r))
		return -ERANGE;
	*out = r;
	return 0;
}

int sf_qty_cmp(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

char *sf_qty_format(int64_t milli, char *buf, size_t n)
{
	if (milli % 1000 == 0)
		snprintf(buf, n, "%lld", (long long)(milli / 1000));
	else
		snprintf(buf, n, "%lldm", (long long)milli);
	return buf;
}
