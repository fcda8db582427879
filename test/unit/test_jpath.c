/*
 * test_jpath.c - the dotted path grammar read step by step: keys, indexes
 * after a key or alone, what ends a key, and every malformed form
 * reported where it is met (the steps before it are still read).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "steadfast/jpath.h"

/* The steps of path as "k:name" / "i:3", joined by spaces; then "!" and
 * the error, if any. */
static const char *steps(const char *path)
{
	static char out[512];
	size_t n = 0;
	sf_jpath p = sf_jpath_init(path);
	sf_jpath_step st;
	int rc;
	out[0] = '\0';
	while ((rc = sf_jpath_next(&p, &st)) > 0) {
		if (st.key)
			n += (size_t)snprintf(out + n, sizeof(out) - n, "%sk:%.*s", n ? " " : "",
			                      (int)st.len, st.key);
		else
			n += (size_t)snprintf(out + n, sizeof(out) - n, "%si:%zu", n ? " " : "",
			                      st.index);
	}
	if (rc < 0)
		snprintf(out + n, sizeof(out) - n, "%s!%d", n ? " " : "", rc);
	return out;
}

Test(jpath, keys_and_indexes)
{
	cr_expect_str_eq(steps(""), "");
	cr_expect_str_eq(steps("a"), "k:a");
	cr_expect_str_eq(steps("spec.template.spec"), "k:spec k:template k:spec");
	cr_expect_str_eq(steps("spec.components[0].template"),
	                 "k:spec k:components i:0 k:template");
	cr_expect_str_eq(steps("m[1][1][0]"), "k:m i:1 i:1 i:0");
	cr_expect_str_eq(steps("[1][0]"), "i:1 i:0");
	cr_expect_str_eq(steps("a.[2]"), "k:a i:2");
	cr_expect_str_eq(steps("items[3].metadata.name"), "k:items i:3 k:metadata k:name");
	cr_expect_str_eq(steps("a[007]"), "k:a i:7");
}

Test(jpath, a_key_ends_only_at_a_dot_or_a_bracket)
{
	cr_expect_str_eq(steps("a]b"), "k:a]b");
	cr_expect_str_eq(steps("x/y-z:1"), "k:x/y-z:1");
	cr_expect_str_eq(steps("a b.c"), "k:a b k:c");
}

Test(jpath, malformed_paths)
{
	cr_expect_str_eq(steps(".a"), "!-22");
	cr_expect_str_eq(steps("a..b"), "k:a !-22");
	cr_expect_str_eq(steps("a."), "k:a !-22");
	cr_expect_str_eq(steps("a[x]"), "k:a !-22");
	cr_expect_str_eq(steps("a[0"), "k:a !-22");
	cr_expect_str_eq(steps("a[]"), "k:a !-22");
	cr_expect_str_eq(steps("a[-1]"), "k:a !-22");
	cr_expect_str_eq(steps("a[0]b"), "k:a i:0 !-22");
	cr_expect_str_eq(steps("a[0]."), "k:a i:0 !-22");
	cr_expect_str_eq(steps("a[99999999999999999999999]"), "k:a !-22");
}

Test(jpath, the_largest_index)
{
	char path[64];
	snprintf(path, sizeof(path), "[%zu]", (size_t)SIZE_MAX);
	sf_jpath p = sf_jpath_init(path);
	sf_jpath_step st;
	cr_assert_eq(sf_jpath_next(&p, &st), 1);
	cr_expect_null(st.key);
	cr_expect_eq(st.index, SIZE_MAX);
	cr_expect_eq(sf_jpath_next(&p, &st), 0);
	/* the end stays the end */
	cr_expect_eq(sf_jpath_next(&p, &st), 0);
}
