/*
 * test_rv.c - resourceVersions: numeric comparison of any length, an
 * order only between canonical etcd revisions, and their numbers.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>

#include "steadfast/rv.h"

Test(rv, rv_order_is_numeric)
{
	cr_assert_lt(sf_rv_cmp("9", "10"), 0);
	cr_assert_gt(sf_rv_cmp("100", "99"), 0);
	cr_assert_eq(sf_rv_cmp("42", "42"), 0);
	cr_assert_eq(sf_rv_cmp("042", "42"), 0);
	cr_assert_lt(sf_rv_cmp("", "1"), 0);
	cr_assert_lt(sf_rv_cmp(NULL, "0"), 0);
	cr_assert_eq(sf_rv_cmp(NULL, ""), 0);
	cr_assert_gt(sf_rv_cmp("18446744073709551616", "18446744073709551615"), 0);
}

/* An order is given only between canonical etcd revisions; anything else
 * (opaque versions, leading zeros, empty) is refused, not guessed. */
Test(rv, rv_order_refuses_non_canonical_versions)
{
	int ord = 99;
	cr_assert_eq(sf_rv_order("9", "10", &ord), 0);
	cr_assert_lt(ord, 0);
	cr_assert_eq(sf_rv_order("10", "10", &ord), 0);
	cr_assert_eq(ord, 0);
	cr_assert_eq(sf_rv_order("0", "1", &ord), 0);
	ord = 99;
	cr_assert_eq(sf_rv_order("042", "42", &ord), -EINVAL);
	cr_assert_eq(sf_rv_order("", "1", &ord), -EINVAL);
	cr_assert_eq(sf_rv_order(NULL, "1", &ord), -EINVAL);
	cr_assert_eq(sf_rv_order("abc", "abd", &ord), -EINVAL);
	cr_assert_eq(sf_rv_order("12", "1.2", &ord), -EINVAL);
	cr_assert_eq(ord, 99, "a refused order leaves *out alone");
	cr_assert(sf_rv_canonical("18446744073709551616"));
	cr_assert_not(sf_rv_canonical("-1"));
	cr_assert_not(sf_rv_canonical("00"));
}

/* The number of a canonical version orders as its text does; what the
 * text form refuses to order, or 64 bits cannot hold, has no number. */
Test(rv, rv_number_of_canonical_versions_only)
{
	uint64_t v = 7;
	cr_assert_eq(sf_rv_number("10", &v), 0);
	cr_assert_eq(v, 10);
	cr_assert_eq(sf_rv_number("0", &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(sf_rv_number("18446744073709551615", &v), 0);
	cr_assert_eq(v, UINT64_MAX);
	v = 7;
	cr_assert_eq(sf_rv_number("18446744073709551616", &v), -ERANGE);
	cr_assert_eq(sf_rv_number("042", &v), -EINVAL);
	cr_assert_eq(sf_rv_number("", &v), -EINVAL);
	cr_assert_eq(sf_rv_number(NULL, &v), -EINVAL);
	cr_assert_eq(sf_rv_number("1.2", &v), -EINVAL);
	cr_assert_eq(v, 7, "no number leaves *out alone");
}
