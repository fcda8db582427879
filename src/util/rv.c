/*
 * rv.c - comparing and ordering resourceVersions (see rv.h).
 *
 * Versions are compared as unsigned decimal numbers of any length (text
 * length first, then bytes), so no revision is too large to compare; only
 * sf_rv_number needs the value to fit in 64 bits.
 */
#include "steadfast/rv.h"

#include <errno.h>
#include <string.h>

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return 0;
	}
	return 1;
}

int sf_rv_cmp(const char *a, const char *b)
{
	if (!a)
		a = "";
	if (!b)
		b = "";
	if (all_digits(a) && all_digits(b)) {
		while (a[0] == '0' && a[1])
			a++;
		while (b[0] == '0' && b[1])
			b++;
	}
	size_t la = strlen(a), lb = strlen(b);
	if (la != lb)
		return la < lb ? -1 : 1;
	int c = strcmp(a, b);
	return (c > 0) - (c < 0);
}

int sf_rv_canonical(const char *rv)
{
	return rv && all_digits(rv) && (rv[0] != '0' || rv[1] == '\0');
}

int sf_rv_number(const char *rv, uint64_t *out)
{
	if (!sf_rv_canonical(rv))
		return -EINVAL;
	uint64_t v = 0;
	for (const char *p = rv; *p; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int sf_rv_order(const char *a, const char *b, int *out)
{
	if (!sf_rv_canonical(a) || !sf_rv_canonical(b))
		return -EINVAL;
	*out = sf_rv_cmp(a, b);
	return 0;
}
