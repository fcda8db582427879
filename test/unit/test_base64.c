/*
 * test_base64.c - base64 to and from bytes: RFC 4648's test vectors both
 * ways, whitespace anywhere ignored (wrapped kubeconfig values), the
 * NUL-terminated results, binary data round-tripping and malformed text
 * refused with nothing returned.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/base64.h"

static const struct {
	const char *plain, *enc;
} rfc4648[] = {
    {"", ""},
    {"f", "Zg=="},
    {"fo", "Zm8="},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};

Test(base64, rfc4648_vectors_encode)
{
	for (size_t i = 0; i < sizeof(rfc4648) / sizeof(rfc4648[0]); i++) {
		char *e = sf_b64_encode(rfc4648[i].plain, strlen(rfc4648[i].plain));
		cr_assert_not_null(e);
		cr_expect_str_eq(e, rfc4648[i].enc);
		free(e);
	}
}

Test(base64, rfc4648_vectors_decode)
{
	for (size_t i = 0; i < sizeof(rfc4648) / sizeof(rfc4648[0]); i++) {
		unsigned char *d = (unsigned char *)"x";
		size_t n = 99;
		cr_assert_eq(sf_b64_decode(rfc4648[i].enc, strlen(rfc4648[i].enc), &d, &n), 0, "%s",
		             rfc4648[i].enc);
		cr_expect_eq(n, strlen(rfc4648[i].plain));
		cr_assert_not_null(d);
		/* NUL-terminated, so decoded PEM is a C string */
		cr_expect_str_eq((const char *)d, rfc4648[i].plain);
		free(d);
	}
}

Test(base64, whitespace_is_ignored)
{
	const char *wrapped = " Zm9v\nYmFy\r\n\tZm9v YmFy \v\f";
	unsigned char *d;
	size_t n;
	cr_assert_eq(sf_b64_decode(wrapped, strlen(wrapped), &d, &n), 0);
	cr_expect_eq(n, 12);
	cr_expect_str_eq((const char *)d, "foobarfoobar");
	free(d);
	/* only whitespace is empty data */
	cr_assert_eq(sf_b64_decode(" \n ", 3, &d, &n), 0);
	cr_expect_eq(n, 0);
	cr_expect_str_eq((const char *)d, "");
	free(d);
}

Test(base64, length_bounds_the_text)
{
	unsigned char *d;
	size_t n;
	cr_assert_eq(sf_b64_decode("Zm9vYmFy", 4, &d, &n), 0);
	cr_expect_str_eq((const char *)d, "foo");
	free(d);
}

Test(base64, binary_round_trip)
{
	unsigned char bytes[256];
	for (int i = 0; i < 256; i++)
		bytes[i] = (unsigned char)(255 - i);
	char *e = sf_b64_encode(bytes, sizeof(bytes));
	cr_assert_not_null(e);
	cr_expect_eq(strlen(e), 344);
	unsigned char *d;
	size_t n;
	cr_assert_eq(sf_b64_decode(e, strlen(e), &d, &n), 0);
	cr_expect_eq(n, sizeof(bytes));
	cr_expect_eq(memcmp(d, bytes, sizeof(bytes)), 0);
	cr_expect_eq(d[n], 0);
	free(d);
	free(e);
}

Test(base64, malformed_is_refused)
{
	static const char *const bad[] = {"Zm9v!", "Zm9v*YmFy", "Z", "Zm9vY", "====", "Zm=9v"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unsigned char *d = (unsigned char *)"x";
		size_t n = 99;
		cr_expect_eq(sf_b64_decode(bad[i], strlen(bad[i]), &d, &n), -EINVAL, "%s", bad[i]);
		cr_expect_null(d, "%s", bad[i]);
		cr_expect_eq(n, 0, "%s", bad[i]);
	}
}
