/*
 * test_goparse.c - Go's text forms: duration parsing and formatting
 * against Go's own results (the tables of Go's tests plus ours), and
 * strconv's integer parsers: Atoi as the annotations use it, ParseInt and
 * ParseUint with base 0 as the YAML reader uses them, and explicit bases.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "steadfast/goparse.h"

#define NS INT64_C(1)
#define US (1000 * NS)
#define MS (1000 * US)
#define SEC (1000 * MS)
#define MIN (60 * SEC)
#define HOUR (60 * MIN)

/* ---- Go duration parsing ---- */

static const struct {
	const char *in;
	int64_t want;
} dur_ok[] = {
    /* the cases of Go's own ParseDuration test table, plus ours */
    {"0", 0},
    {"5s", 5 * SEC},
    {"30s", 30 * SEC},
    {"1478s", 1478 * SEC},
    {"-5s", -5 * SEC},
    {"+5s", 5 * SEC},
    {"-0", 0},
    {"+0", 0},
    {"5.0s", 5 * SEC},
    {"5.6s", 5 * SEC + 600 * MS},
    {"5.s", 5 * SEC},
    {".5s", 500 * MS},
    {"1.0s", 1 * SEC},
    {"1.00s", 1 * SEC},
    {"1.004s", 1 * SEC + 4 * MS},
    {"1.0040s", 1 * SEC + 4 * MS},
    {"100.00100s", 100 * SEC + 1 * MS},
    {"10ns", 10 * NS},
    {"11us", 11 * US},
    {"12\xc2\xb5s", 12 * US}, /* U+00B5 */
    {"12\xce\xbcs", 12 * US}, /* U+03BC */
    {"1\xc2\xb5s", 1 * US},
    {"13ms", 13 * MS},
    {"300ms", 300 * MS},
    {"14s", 14 * SEC},
    {"15m", 15 * MIN},
    {"16h", 16 * HOUR},
    {"3h30m", 3 * HOUR + 30 * MIN},
    {"1h30m", 90 * MIN},
    {"2h45m", 2 * HOUR + 45 * MIN},
    {"1.5h", 90 * MIN},
    {"-1.5h", -90 * MIN},
    {"10.5s4m", 4 * MIN + 10 * SEC + 500 * MS},
    {"-2m3.4s", -(2 * MIN + 3 * SEC + 400 * MS)},
    {"1h2m3s4ms5us6ns", 1 * HOUR + 2 * MIN + 3 * SEC + 4 * MS + 5 * US + 6 * NS},
    {"39h9m14.425s", 39 * HOUR + 9 * MIN + 14 * SEC + 425 * MS},
    {"52763797000ns", 52763797000 * NS},
    {"0.3333333333333333333h", 20 * MIN},
    {"9007199254740993ns", (INT64_C(1) << 53) + 1},
    {"9223372036854775807ns", INT64_MAX},
    {"9223372036854775.807us", INT64_MAX},
    {"9223372036s854ms775us807ns", INT64_MAX},
    {"-9223372036854775808ns", INT64_MIN},
    {"-9223372036854775.808us", INT64_MIN},
    {"-9223372036s854ms775us808ns", INT64_MIN},
    {"-2562047h47m16.854775808s", INT64_MIN},
    {"0.100000000000000000000h", 6 * MIN},
    {"0.830103483285477580700h", 49 * MIN + 48 * SEC + 372539827 * NS},
    {"0.9223372036854775807h", 55 * MIN + 20 * SEC + 413933267 * NS},
    {"1.00000000000000000000000000000000001s", 1 * SEC},
    {"000000000000000000000000000000000001s", 1 * SEC},
    {"0s", 0},
    {"-0s", 0},
    {"0.0h", 0},
    {"1500us", 1500 * US},
};

static const struct {
	const char *in;
	int err;
} dur_bad[] = {
    {"", -EINVAL},
    {"3", -EINVAL},
    {"5", -EINVAL},
    {"00", -EINVAL},
    {"-", -EINVAL},
    {"+", -EINVAL},
    {"s", -EINVAL},
    {".", -EINVAL},
    {"-.", -EINVAL},
    {".s", -EINVAL},
    {"+.s", -EINVAL},
    {"1d", -EINVAL},
    {"1w", -EINVAL},
    {"1S", -EINVAL},
    {"1sec", -EINVAL},
    {"1h-5m", -EINVAL},
    {"5 s", -EINVAL},
    {" 5s", -EINVAL},
    {"5s ", -EINVAL},
    {"1e3s", -EINVAL},
    {"0x10s", -EINVAL},
    {"--5s", -EINVAL},
    {"\x85\x85", -EINVAL},
    {"\xff\xff", -EINVAL},
    {"hello \xff\xff world", -EINVAL},
    {"1\xc2s", -EINVAL},
    {"9223372036854775808ns", -ERANGE},
    {"9223372036854775810ns", -ERANGE},
    {"-9223372036854775809ns", -ERANGE},
    {"9223372036854775.808us", -ERANGE},
    {"9223372036854ms775us808ns", -ERANGE},
    {"3000000h", -ERANGE},
    {"2562048h", -ERANGE},
    {"99999999999999999999s", -ERANGE},
    {"9223372036854775808ns9223372036854775808ns", -ERANGE},
    {"1h9223372036854775807ns", -ERANGE},
};

Test(goparse, duration_parse_valid)
{
	for (size_t i = 0; i < sizeof(dur_ok) / sizeof(dur_ok[0]); i++) {
		int64_t ns = 42;
		int rc = sf_go_duration_parse(dur_ok[i].in, &ns);
		cr_expect_eq(rc, 0, "%s: rc %d", dur_ok[i].in, rc);
		cr_expect_eq(ns, dur_ok[i].want, "%s: got %lld want %lld", dur_ok[i].in,
		             (long long)ns, (long long)dur_ok[i].want);
	}
}

Test(goparse, duration_parse_invalid)
{
	for (size_t i = 0; i < sizeof(dur_bad) / sizeof(dur_bad[0]); i++) {
		int64_t ns = 42;
		int rc = sf_go_duration_parse(dur_bad[i].in, &ns);
		cr_expect_eq(rc, dur_bad[i].err, "\"%s\": rc %d want %d", dur_bad[i].in, rc,
		             dur_bad[i].err);
	}
	int64_t ns;
	cr_expect_eq(sf_go_duration_parse(NULL, &ns), -EINVAL);
}

/* ---- Go Duration.String ---- */

static const struct {
	int64_t ns;
	const char *want;
} dur_fmt[] = {
    /* Go's own test table, plus ours */
    {0, "0s"},
    {1 * NS, "1ns"},
    {1100 * NS, "1.1\xc2\xb5s"},
    {2200 * US, "2.2ms"},
    {3300 * MS, "3.3s"},
    {4 * MIN + 5 * SEC, "4m5s"},
    {4 * MIN + 5001 * MS, "4m5.001s"},
    {5 * HOUR + 6 * MIN + 7001 * MS, "5h6m7.001s"},
    {8 * MIN + 1 * NS, "8m0.000000001s"},
    {INT64_MAX, "2562047h47m16.854775807s"},
    {INT64_MIN, "-2562047h47m16.854775808s"},
    {-1 * NS, "-1ns"},
    {-1100 * NS, "-1.1\xc2\xb5s"},
    {-2200 * US, "-2.2ms"},
    {-3300 * MS, "-3.3s"},
    {-(4 * MIN + 5 * SEC), "-4m5s"},
    {90 * SEC, "1m30s"},
    {1 * HOUR, "1h0m0s"},
    {24 * HOUR, "24h0m0s"},
    {7 * 24 * HOUR, "168h0m0s"},
    {999 * NS, "999ns"},
    {1 * US, "1\xc2\xb5s"},
    {999999 * NS, "999.999\xc2\xb5s"},
    {1 * MS, "1ms"},
    {999999999 * NS, "999.999999ms"},
    {1 * SEC, "1s"},
    {1 * SEC + 1 * NS, "1.000000001s"},
    {59 * MIN + 59 * SEC, "59m59s"},
};

Test(goparse, duration_format)
{
	char buf[32];
	for (size_t i = 0; i < sizeof(dur_fmt) / sizeof(dur_fmt[0]); i++) {
		memset(buf, 'x', sizeof(buf));
		int n = sf_go_duration_format(dur_fmt[i].ns, buf, sizeof(buf));
		cr_expect_eq(n, (int)strlen(dur_fmt[i].want), "%lld: n %d",
		             (long long)dur_fmt[i].ns, n);
		cr_expect_str_eq(buf, dur_fmt[i].want);
		/* what Go prints, Go parses back to the same value */
		int64_t back = 0;
		cr_expect_eq(sf_go_duration_parse(buf, &back), 0, "%s", buf);
		cr_expect_eq(back, dur_fmt[i].ns, "%s", buf);
	}
}

Test(goparse, duration_format_buffer)
{
	char buf[32];
	/* the longest output fits in 32 bytes */
	cr_expect_eq(sf_go_duration_format(INT64_MIN, buf, 32), 25);
	/* "1m30s" needs 6 bytes with its NUL */
	cr_expect_eq(sf_go_duration_format(90 * SEC, buf, 6), 5);
	cr_expect_str_eq(buf, "1m30s");
	cr_expect_eq(sf_go_duration_format(90 * SEC, buf, 5), -ERANGE);
	cr_expect_eq(sf_go_duration_format(0, buf, 0), -ERANGE);
	cr_expect_eq(sf_go_duration_format(0, NULL, 10), -ERANGE);
}

/* ---- strconv.Atoi ---- */

static const struct {
	const char *in;
	int64_t want;
} atoi_ok[] = {
    {"0", 0},
    {"3", 3},
    {"+3", 3},
    {"-3", -3},
    {"-0", 0},
    {"007", 7},
    {"2147483648", INT64_C(2147483648)},
    {"4294967296", INT64_C(4294967296)},
    {"9223372036854775807", INT64_MAX},
    {"-9223372036854775808", INT64_MIN},
    {"000000000000000000000000000000000001", 1},
};

static const struct {
	const char *in;
	int err;
} atoi_bad[] = {
    {"", -EINVAL},
    {"+", -EINVAL},
    {"-", -EINVAL},
    {" 2", -EINVAL},
    {"2 ", -EINVAL},
    {"1_000", -EINVAL},
    {"0x10", -EINVAL},
    {"1e3", -EINVAL},
    {"1.0", -EINVAL},
    {"--1", -EINVAL},
    {"+-1", -EINVAL},
    {"a", -EINVAL},
    {"9223372036854775808", -ERANGE},
    {"-9223372036854775809", -ERANGE},
    {"18446744073709551616", -ERANGE},
    /* as Go: the overflow is reported before the later junk */
    {"99999999999999999999x", -ERANGE},
};

Test(goparse, atoi_valid)
{
	for (size_t i = 0; i < sizeof(atoi_ok) / sizeof(atoi_ok[0]); i++) {
		int64_t x = 42;
		int rc = sf_go_atoi(atoi_ok[i].in, strlen(atoi_ok[i].in), &x);
		cr_expect_eq(rc, 0, "%s: rc %d", atoi_ok[i].in, rc);
		cr_expect_eq(x, atoi_ok[i].want, "%s: got %lld", atoi_ok[i].in, (long long)x);
	}
}

Test(goparse, atoi_invalid)
{
	for (size_t i = 0; i < sizeof(atoi_bad) / sizeof(atoi_bad[0]); i++) {
		int64_t x = 42;
		int rc = sf_go_atoi(atoi_bad[i].in, strlen(atoi_bad[i].in), &x);
		cr_expect_eq(rc, atoi_bad[i].err, "\"%s\": rc %d", atoi_bad[i].in, rc);
		cr_expect_eq(x, 42, "%s: *out changed", atoi_bad[i].in);
	}
}

Test(goparse, parsers_are_length_aware)
{
	int64_t x = 0, ns = 0;
	/* a NUL inside the value is a byte like any other, as for Go */
	cr_expect_eq(sf_go_atoi("12\0"
	                        "3",
	                        4, &x),
	             -EINVAL);
	cr_expect_eq(sf_go_atoi("123", 2, &x), 0);
	cr_expect_eq(x, 12);
	cr_expect_eq(sf_go_duration_parse_n("5s\0"
	                                    "1s",
	                                    5, &ns),
	             -EINVAL);
	cr_expect_eq(sf_go_duration_parse_n("5s1s", 2, &ns), 0);
	cr_expect_eq(ns, 5 * SEC);
}

/* ---- strconv.ParseInt / ParseUint ---- */

static const struct {
	const char *in;
	int base;
	int64_t want;
} int_ok[] = {
    {"0", 0, 0},
    {"10", 0, 10},
    {"-10", 0, -10},
    {"+10", 0, 10},
    {"010", 0, 8},
    {"0o17", 0, 15},
    {"0O17", 0, 15},
    {"0b101", 0, 5},
    {"0x1f", 0, 31},
    {"0X1F", 0, 31},
    {"-0x8000000000000000", 0, INT64_MIN},
    {"0x7fffffffffffffff", 0, INT64_MAX},
    {"010", 10, 10},
    {"ff", 16, 255},
    {"zz", 36, 36 * 36 - 1},
    {"-101", 2, -5},
};

static const struct {
	const char *in;
	int base;
	int err;
} int_bad[] = {
    {"", 0, -EINVAL},
    {"-", 0, -EINVAL},
    {"0x", 0, -EINVAL},
    {"0b", 0, -EINVAL},
    {"08", 0, -EINVAL},
    {"0b2", 0, -EINVAL},
    {"1_0", 0, -EINVAL},
    {"0x10", 10, -EINVAL},
    {"10", 1, -EINVAL},
    {"10", 37, -EINVAL},
    {"10", -1, -EINVAL},
    {"9223372036854775808", 0, -ERANGE},
    {"0x8000000000000000", 0, -ERANGE},
    {"-9223372036854775809", 0, -ERANGE},
};

Test(goparse, parse_int)
{
	for (size_t i = 0; i < sizeof(int_ok) / sizeof(int_ok[0]); i++) {
		int64_t x = 42;
		int rc = sf_go_parse_int(int_ok[i].in, strlen(int_ok[i].in), int_ok[i].base, &x);
		cr_expect_eq(rc, 0, "%s/%d: rc %d", int_ok[i].in, int_ok[i].base, rc);
		cr_expect_eq(x, int_ok[i].want, "%s/%d: got %lld", int_ok[i].in, int_ok[i].base,
		             (long long)x);
	}
	for (size_t i = 0; i < sizeof(int_bad) / sizeof(int_bad[0]); i++) {
		int64_t x = 42;
		int rc = sf_go_parse_int(int_bad[i].in, strlen(int_bad[i].in), int_bad[i].base, &x);
		cr_expect_eq(rc, int_bad[i].err, "%s/%d: rc %d", int_bad[i].in, int_bad[i].base,
		             rc);
		cr_expect_eq(x, 42);
	}
}

Test(goparse, parse_uint)
{
	uint64_t u = 42;
	cr_expect_eq(sf_go_parse_uint("18446744073709551615", 20, 0, &u), 0);
	cr_expect_eq(u, UINT64_MAX);
	cr_expect_eq(sf_go_parse_uint("0xffffffffffffffff", 18, 0, &u), 0);
	cr_expect_eq(u, UINT64_MAX);
	cr_expect_eq(sf_go_parse_uint("9223372036854775808", 19, 0, &u), 0);
	cr_expect_eq(u, UINT64_C(1) << 63);
	u = 42;
	cr_expect_eq(sf_go_parse_uint("18446744073709551616", 20, 0, &u), -ERANGE);
	cr_expect_eq(sf_go_parse_uint("0x10000000000000000", 19, 0, &u), -ERANGE);
	cr_expect_eq(sf_go_parse_uint("-1", 2, 0, &u), -EINVAL);
	cr_expect_eq(sf_go_parse_uint("+1", 2, 0, &u), -EINVAL);
	cr_expect_eq(u, 42);
}
