/*
 * test_quantity.c - resource quantities (quantity.h): the suffixes and
 * exponents the API server accepts, exact milli-unit values, refusal of
 * what cannot be represented, checked arithmetic and canonical text.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "steadfast/quantity.h"

static int64_t Q(const char *s)
{
	int64_t v = -42;
	cr_assert_eq(sf_qty_parse(s, &v), 0, "%s", s);
	return v;
}

static int E(const char *s)
{
	int64_t v = 12345;
	int rc = sf_qty_parse(s, &v);
	cr_assert_eq(v, 12345, "%s changed the output on failure", s);
	return rc;
}

Test(quantity, plain_and_fractional_numbers)
{
	cr_assert_eq(Q("0"), 0);
	cr_assert_eq(Q("8"), 8000);
	cr_assert_eq(Q("+8"), 8000);
	cr_assert_eq(Q("-3"), -3000);
	cr_assert_eq(Q("1.5"), 1500);
	cr_assert_eq(Q("0.001"), 1);
	cr_assert_eq(Q(".5"), 500);
	cr_assert_eq(Q("007"), 7000);
	cr_assert_eq(Q("1.000000"), 1000);
}

Test(quantity, decimal_suffixes)
{
	cr_assert_eq(Q("500m"), 500);
	cr_assert_eq(Q("1500m"), 1500);
	cr_assert_eq(Q("2k"), 2000000);
	cr_assert_eq(Q("1M"), 1000000000LL);
	cr_assert_eq(Q("3G"), 3000000000000LL);
	cr_assert_eq(Q("1T"), 1000000000000000LL);
	cr_assert_eq(Q("1P"), 1000000000000000000LL);
	cr_assert_eq(Q("0.5k"), 500000);
	cr_assert_eq(E("1E"), -ERANGE); /* 10^18 units is 10^21 milli-units */
	cr_assert_eq(Q("0E"), 0);
}

Test(quantity, binary_suffixes)
{
	cr_assert_eq(Q("1Ki"), 1024000);
	cr_assert_eq(Q("32Gi"), 32LL * 1024 * 1024 * 1024 * 1000);
	cr_assert_eq(Q("1.5Mi"), 1572864000LL);
	cr_assert_eq(Q("1Ti"), 1099511627776LL * 1000);
	cr_assert_eq(Q("1Pi"), 1125899906842624LL * 1000);
	cr_assert_eq(E("8Ei"), -ERANGE);
}

Test(quantity, decimal_exponents)
{
	cr_assert_eq(Q("1e3"), 1000000);
	cr_assert_eq(Q("1E3"), 1000000);
	cr_assert_eq(Q("12e-1"), 1200);
	cr_assert_eq(Q("5e-3"), 5);
	cr_assert_eq(Q("1e+2"), 100000);
	cr_assert_eq(Q("0e999"), 0);
	cr_assert_eq(E("1e20"), -ERANGE);
	cr_assert_eq(E("1e999999999"), -ERANGE);
}

Test(quantity, finer_than_a_milli_unit_is_refused_not_rounded)
{
	cr_assert_eq(E("0.0005"), -ERANGE);
	cr_assert_eq(E("1.5m"), -ERANGE);
	cr_assert_eq(E("1e-4"), -ERANGE);
	cr_assert_eq(Q("1.0m"), 1); /* zeros are not precision */
}

Test(quantity, the_int64_edges)
{
	cr_assert_eq(Q("9223372036854775807m"), INT64_MAX);
	cr_assert_eq(E("9223372036854775808m"), -ERANGE);
	cr_assert_eq(Q("-9223372036854775808m"), INT64_MIN);
	cr_assert_eq(E("-9223372036854775809m"), -ERANGE);
	cr_assert_eq(E("99999999999999999999999999999999"), -ERANGE);
}

Test(quantity, what_is_not_a_quantity)
{
	const char *bad[] = {"",    "m",    "Gi",   "-",    "+",   ".",   "1..2", "1.2.3",
	                     "1 ",  " 1",   "1x",   "1Xi",  "1mi", "1KI", "1k8",  "1e",
	                     "1e+", "1e3m", "1Gii", "0x10", "1,5", "1u",  "1n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(E(bad[i]), -EINVAL, "\"%s\"", bad[i]);
	int64_t v;
	cr_assert_eq(sf_qty_parse(NULL, &v), -EINVAL);
	cr_assert_eq(sf_qty_parse_n("4Gi", 1, &v), 0); /* only the bytes given */
	cr_assert_eq(v, 4000);
}

Test(quantity, checked_arithmetic_and_order)
{
	int64_t r = 7;
	cr_assert_eq(sf_qty_add(Q("1500m"), Q("2"), &r), 0);
	cr_assert_eq(r, 3500);
	cr_assert_eq(sf_qty_sub(Q("8"), Q("8000m"), &r), 0);
	cr_assert_eq(r, 0);
	cr_assert_eq(sf_qty_add(INT64_MAX, 1, &r), -ERANGE);
	cr_assert_eq(r, 0, "left alone on overflow");
	cr_assert_eq(sf_qty_sub(INT64_MIN, 1, &r), -ERANGE);
	cr_assert_eq(sf_qty_cmp(Q("8"), Q("8000m")), 0);
	cr_assert_eq(sf_qty_cmp(Q("1Ki"), Q("1k")), 1);
	cr_assert_eq(sf_qty_cmp(Q("999m"), Q("1")), -1);
}

Test(quantity, canonical_text)
{
	char b[SF_QTY_STRLEN];
	cr_assert_str_eq(sf_qty_format(0, b, sizeof(b)), "0");
	cr_assert_str_eq(sf_qty_format(Q("8000m"), b, sizeof(b)), "8");
	cr_assert_str_eq(sf_qty_format(Q("1.5"), b, sizeof(b)), "1500m");
	cr_assert_str_eq(sf_qty_format(Q("-2"), b, sizeof(b)), "-2");
	cr_assert_str_eq(sf_qty_format(Q("1Ki"), b, sizeof(b)), "1024");
	cr_assert_str_eq(sf_qty_format(INT64_MIN, b, sizeof(b)), "-9223372036854775808m");
	/* what it writes reads back as the same value */
	const char *in[] = {"1Gi", "250m", "3e2", "12.5", "-7"};
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		cr_assert_eq(Q(sf_qty_format(Q(in[i]), b, sizeof(b))), Q(in[i]), "%s", in[i]);
}
