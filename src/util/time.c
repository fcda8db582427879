/*
 * time.c - monotonic and wall clocks, RFC3339 formatting and parsing.
 */
#include "steadfast/time.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t sf_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * SF_NSEC_PER_SEC + ts.tv_nsec;
}

int64_t sf_wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * SF_NSEC_PER_SEC + ts.tv_nsec;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static void fmt_base(int64_t wall_ns, char *buf, size_t n, int64_t *frac)
{
	int64_t sec = floor_div(wall_ns, SF_NSEC_PER_SEC);
	*frac = wall_ns - sec * SF_NSEC_PER_SEC;
	time_t t = (time_t)sec;
	struct tm tm;
	gmtime_r(&t, &tm);
	snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
	         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

const char *sf_time_rfc3339(int64_t wall_ns, char *buf, size_t n)
{
	int64_t frac;
	fmt_base(wall_ns, buf, n, &frac);
	size_t l = strlen(buf);
	snprintf(buf + l, n - l, "Z");
	return buf;
}

const char *sf_time_rfc3339micro(int64_t wall_ns, char *buf, size_t n)
{
	int64_t frac;
	fmt_base(wall_ns, buf, n, &frac);
	size_t l = strlen(buf);
	snprintf(buf + l, n - l, ".%06lldZ", (long long)(frac / 1000));
	return buf;
}

static int digits(const char *s, size_t n, int *out)
{
	int v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * civil-from-days inverse). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

int sf_time_parse_rfc3339(const char *s, size_t len, int64_t *out_ns)
{
	int Y, M, D, h, m, sec;
	if (len < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
	    s[13] != ':' || s[16] != ':')
		return -EINVAL;
	if (digits(s, 4, &Y) || digits(s + 5, 2, &M) || digits(s + 8, 2, &D) ||
	    digits(s + 11, 2, &h) || digits(s + 14, 2, &m) || digits(s + 17, 2, &sec))
		return -EINVAL;
	if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
		return -EINVAL;
	size_t i = 19;
	int64_t frac = 0;
	if (i < len && s[i] == '.') {
		i++;
		size_t start = i;
		int64_t scale = 100000000;
		while (i < len && s[i] >= '0' && s[i] <= '9') {
			frac += (s[i] - '0') * scale;
			scale /= 10;
			i++;
		}
		if (i == start)
			return -EINVAL;
	}
	int64_t off = 0;
	if (i < len && (s[i] == 'Z' || s[i] == 'z')) {
		i++;
	} else if (i + 6 == len && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
		int oh, om;
		if (digits(s + i + 1, 2, &oh) || digits(s + i + 4, 2, &om) || oh > 23 || om > 59)
			return -EINVAL;
		off = (int64_t)(oh * 3600 + om * 60) * (s[i] == '+' ? 1 : -1);
		i += 6;
	} else {
		return -EINVAL;
	}
	if (i != len)
		return -EINVAL;
	int64_t days = days_from_civil(Y, (unsigned)M, (unsigned)D);
	int64_t secs = days * 86400 + h * 3600 + m * 60 + sec - off;
	*out_ns = secs * SF_NSEC_PER_SEC + frac;
	return 0;
}
