/*
 * fuzz_admparams.c - libFuzzer target for the admission parameters'
 * readers of API answers (admparams.h): an aggregated discovery document
 * and a ConfigMap as read, both from the API server.
 *
 * The input is split at its first NUL: discovery before, ConfigMap after
 * (each minified first, as the client does). Whatever they say, nothing
 * may crash, leak or read out of bounds; every mapped key must be a
 * ConfigMap key and every value a resource name; a plan that asks for a
 * write must produce a JSON object that minifies again.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/admparams.h"
#include "steadfast/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

static int minified(const uint8_t *p, size_t n, sf_buf *out)
{
	char err[128];
	return sf_json_minify((const char *)p, n, out, err, sizeof(err));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t n1 = nul ? (size_t)(nul - data) : size;
	sf_buf d, c;
	sf_strmap *m = NULL;
	if (sf_strmap_new(0, 0, &m) < 0)
		return 0;
	sf_buf_init(&d, 0);
	sf_buf_init(&c, 0);
	int have_d = minified(data, n1, &d) == 0;
	int have_c = nul && minified(nul + 1, size - n1 - 1, &c) == 0;
	if (have_d) {
		char err[256];
		int stale = 0;
		int rc =
		    sf_admparams_discovered(sf_jv_root(d.data, d.len), m, &stale, err, sizeof(err));
		CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
		sf_strmap_iter it = SF_STRMAP_ITER_INIT;
		const char *k;
		void *v;
		while (sf_strmap_next(m, &it, &k, &v)) {
			CHECK(k[0] && strlen(k) <= 253 &&
			      strspn(k, "abcdefghijklmnopqrstuvwxyz"
			                "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
			                "0123456789-._") == strlen(k));
			const char *r = v;
			CHECK(r[0] &&
			      strspn(r, "abcdefghijklmnopqrstuvwxyz0123456789-.") == strlen(r));
		}
	}
	if (have_c) {
		sf_admparams_plan p;
		sf_admparams_plan_init(&p);
		for (int keep = 0; keep < 2; keep++) {
			int rc = sf_admparams_plan_make(&p, m, sf_jv_root(c.data, c.len),
			                                "steadfast", keep);
			if (rc == 1) {
				sf_buf again;
				char err[128];
				sf_buf_init(&again, 0);
				CHECK(sf_json_minify(p.body.data, p.body.len, &again, err,
				                     sizeof(err)) == 0);
				CHECK(sf_jv_type(sf_jv_root(again.data, again.len)) ==
				      SF_JSON_OBJECT);
				sf_buf_free(&again);
			}
		}
		sf_admparams_plan_free(&p);
	}
	sf_buf_free(&d);
	sf_buf_free(&c);
	sf_strmap_free(m, free);
	return 0;
}
