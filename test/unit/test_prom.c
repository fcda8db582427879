/*
 * test_prom.c - the Prometheus text writer: escaping of label values and
 * HELP text, histogram buckets/_sum/_count/+Inf, family order and one
 * header per family when several callers add to it, empty families,
 * number formats, sticky errors.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "steadfast/prom.h"

static sf_prom *P;
static sf_buf OUT;

static void setup(void)
{
	P = sf_prom_new();
	cr_assert_not_null(P);
	sf_buf_init(&OUT, 0);
}

static void teardown(void)
{
	sf_prom_free(P);
	sf_buf_free(&OUT);
}

TestSuite(prom, .init = setup, .fini = teardown);

static const char *render(void)
{
	cr_assert_eq(sf_prom_render(P, &OUT), 0);
	return OUT.data ? OUT.data : "";
}

Test(prom, label_values_escape_backslash_quote_and_newline_only)
{
	sf_prom_family *f = sf_prom_family_get(P, "x_total", SF_PROM_COUNTER, "X.");
	cr_assert_eq(sf_prom_add_u(f, (const char *[]){"a", "b\\c\"d\ne\tf\x01/", NULL}, 1), 0);
	cr_assert_str_eq(render(), "# HELP x_total X.\n"
	                           "# TYPE x_total counter\n"
	                           "x_total{a=\"b\\\\c\\\"d\\ne\tf\x01/\"} 1\n");
}

Test(prom, help_escapes_backslash_and_newline_not_quote)
{
	sf_prom_family_get(P, "g", SF_PROM_GAUGE, "a \"b\" c\\d\ne");
	cr_assert_str_eq(render(), "# HELP g a \"b\" c\\\\d\\ne\n"
	                           "# TYPE g gauge\n");
}

Test(prom, histogram_cumulative_buckets_inf_sum_count)
{
	static const double b[] = {0.5, 1, 2.5};
	sf_prom_hist h;
	sf_prom_hist_init(&h, b, 3);
	sf_prom_hist_observe(&h, 0.5); /* on the bound: counted in le="0.5" */
	sf_prom_hist_observe(&h, 0.7);
	sf_prom_hist_observe(&h, 3);
	cr_assert_eq(h.counts[0], 1);
	cr_assert_eq(h.counts[1], 1);
	cr_assert_eq(h.counts[2], 0);
	cr_assert_eq(h.counts[3], 1);
	sf_prom_family *f = sf_prom_family_get(P, "t_seconds", SF_PROM_HISTOGRAM, "T.");
	cr_assert_eq(sf_prom_add_hist(f, (const char *[]){"c", "x", NULL}, &h), 0);
	cr_assert_str_eq(render(), "# HELP t_seconds T.\n"
	                           "# TYPE t_seconds histogram\n"
	                           "t_seconds_bucket{c=\"x\",le=\"0.5\"} 1\n"
	                           "t_seconds_bucket{c=\"x\",le=\"1\"} 2\n"
	                           "t_seconds_bucket{c=\"x\",le=\"2.5\"} 2\n"
	                           "t_seconds_bucket{c=\"x\",le=\"+Inf\"} 3\n"
	                           "t_seconds_sum{c=\"x\"} 4.200000\n"
	                           "t_seconds_count{c=\"x\"} 3\n");
}

Test(prom, histogram_without_labels_or_observations)
{
	static const double b[] = {0.005};
	sf_prom_hist h;
	sf_prom_hist_init(&h, b, 1);
	sf_prom_add_hist(sf_prom_family_get(P, "h", SF_PROM_HISTOGRAM, "H."), NULL, &h);
	cr_assert_str_eq(render(), "# HELP h H.\n"
	                           "# TYPE h histogram\n"
	                           "h_bucket{le=\"0.005\"} 0\n"
	                           "h_bucket{le=\"+Inf\"} 0\n"
	                           "h_sum 0\n"
	                           "h_count 0\n");
}

Test(prom, families_in_declaration_order_one_header_each)
{
	/* two callers (say, two modules) add to "a"; "b" comes between */
	sf_prom_family *a = sf_prom_family_get(P, "a_total", SF_PROM_COUNTER, "A.");
	sf_prom_add_u(a, (const char *[]){"m", "1", NULL}, 1);
	sf_prom_family *b = sf_prom_family_get(P, "b", SF_PROM_GAUGE, "B.");
	sf_prom_add_u(b, NULL, 7);
	sf_prom_family *a2 = sf_prom_family_get(P, "a_total", SF_PROM_COUNTER, "A.");
	cr_assert_eq(a2, a);
	sf_prom_add_u(a2, (const char *[]){"m", "2", NULL}, 2);
	cr_assert_str_eq(render(), "# HELP a_total A.\n"
	                           "# TYPE a_total counter\n"
	                           "a_total{m=\"1\"} 1\n"
	                           "a_total{m=\"2\"} 2\n"
	                           "# HELP b B.\n"
	                           "# TYPE b gauge\n"
	                           "b 7\n");
}

Test(prom, family_with_no_samples_is_its_header)
{
	sf_prom_family_get(P, "e_total", SF_PROM_COUNTER, "Empty.");
	sf_prom_add_u(sf_prom_family_get(P, "f", SF_PROM_GAUGE, "F."), NULL, 0);
	cr_assert_str_eq(render(), "# HELP e_total Empty.\n"
	                           "# TYPE e_total counter\n"
	                           "# HELP f F.\n"
	                           "# TYPE f gauge\n"
	                           "f 0\n");
}

Test(prom, number_formats)
{
	sf_prom_family *f = sf_prom_family_get(P, "n", SF_PROM_GAUGE, "N.");
	sf_prom_add_u(f, (const char *[]){"k", "max", NULL}, UINT64_MAX);
	sf_prom_add_f(f, (const char *[]){"k", "neg", NULL}, -1.0);
	sf_prom_add_f(f, (const char *[]){"k", "frac", NULL}, 0.25);
	sf_prom_add_f(f, (const char *[]){"k", "inf", NULL}, 1.0 / 0.0);
	sf_prom_add_f(f, (const char *[]){"k", "nan", NULL}, 0.0 / 0.0);
	cr_assert_str_eq(render(), "# HELP n N.\n"
	                           "# TYPE n gauge\n"
	                           "n{k=\"max\"} 18446744073709551615\n"
	                           "n{k=\"neg\"} -1\n"
	                           "n{k=\"frac\"} 0.250000\n"
	                           "n{k=\"inf\"} +Inf\n"
	                           "n{k=\"nan\"} NaN\n");
}

Test(prom, a_family_declared_again_differently_is_an_error_that_sticks)
{
	sf_prom_family *f = sf_prom_family_get(P, "c_total", SF_PROM_COUNTER, "C.");
	cr_assert_not_null(f);
	cr_assert_null(sf_prom_family_get(P, "c_total", SF_PROM_GAUGE, "C."));
	cr_assert_eq(sf_prom_add_u(f, NULL, 1), -EINVAL);
	cr_assert_null(sf_prom_family_get(P, "other", SF_PROM_GAUGE, "O."));
	cr_assert_eq(sf_prom_render(P, &OUT), -EINVAL);
	cr_assert_eq(OUT.len, 0);
}

Test(prom, other_help_is_an_error_and_a_null_family_does_nothing)
{
	sf_prom_family_get(P, "c_total", SF_PROM_COUNTER, "C.");
	cr_assert_null(sf_prom_family_get(P, "c_total", SF_PROM_COUNTER, "Other."));
	cr_assert_eq(sf_prom_add_u(NULL, NULL, 1), -EINVAL);
	cr_assert_eq(sf_prom_render(P, &OUT), -EINVAL);
}

Test(prom, counter_sample_in_a_histogram_family_is_refused)
{
	static const double b[] = {1};
	sf_prom_hist h;
	sf_prom_hist_init(&h, b, 1);
	sf_prom_add_hist(sf_prom_family_get(P, "g", SF_PROM_GAUGE, "G."), NULL, &h);
	cr_assert_eq(sf_prom_render(P, &OUT), -EINVAL);
}
