/*
 * fuzz_slackcq.c - libFuzzer target for the slack ClusterQueue reader
 * (slackcq.h) and the quantity parser under it (quantity.h), which read
 * ClusterQueues and node capacities from the API server.
 *
 * The input is read twice: as a quantity (a value parsed must format to
 * text that parses back to the same value), and as a ClusterQueue in JSON
 * (minified first, as the client does) planned against a fixed unusable
 * set. Whatever it says, nothing may crash or read out of bounds; a plan
 * that writes has a patch that is JSON and at most one change per
 * resource entry; a refusal writes nothing and says why.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "steadfast/json.h"
#include "steadfast/quantity.h"
#include "steadfast/slackcq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

static void quantity(const char *s, size_t n)
{
	int64_t v, w;
	if (sf_qty_parse_n(s, n, &v) != 0)
		return;
	char buf[SF_QTY_STRLEN];
	sf_qty_format(v, buf, sizeof(buf));
	CHECK(sf_qty_parse(buf, &w) == 0 && w == v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	quantity((const char *)data, size);
	sf_buf m;
	char err[256];
	sf_buf_init(&m, 0);
	if (sf_json_minify((const char *)data, size, &m, err, sizeof(err)) == 0 && m.len) {
		sf_slackcq_unusable u;
		sf_slackcq_unusable_init(&u);
		u.n = 3;
		snprintf(u.r[0].resource, sizeof(u.r[0].resource), "cpu");
		u.r[0].milli = 8000;
		snprintf(u.r[1].resource, sizeof(u.r[1].resource), "nvidia.com/gpu");
		u.r[1].milli = 4000;
		snprintf(u.r[2].resource, sizeof(u.r[2].resource), "memory");
		u.r[2].milli = INT64_MAX;
		sf_slackcq_plan p;
		sf_slackcq_plan_init(&p);
		err[0] = 0;
		int rc = sf_slackcq_plan_make(&p, sf_jv_root(m.data, m.len), &u, err, sizeof(err));
		if (rc == 1) {
			CHECK(p.nch > 0 && p.nch <= SF_SLACKCQ_MAX_RESOURCES && p.body.len > 0);
			sf_buf j;
			sf_buf_init(&j, 0);
			CHECK(sf_json_minify(p.body.data, p.body.len, &j, err, sizeof(err)) == 0);
			sf_buf_free(&j);
			for (size_t i = 0; i < p.nch; i++)
				CHECK(!p.ch[i].has ||
				      (p.ch[i].new_milli >= 0 &&
				       p.ch[i].new_milli <= p.ch[i].nominal_milli) ||
				      p.ch[i].nominal_milli < 0);
		} else if (rc == 0) {
			CHECK(p.nch == 0);
		} else {
			CHECK(p.body.len == 0 && err[0]);
		}
		sf_slackcq_plan_free(&p);
	}
	sf_buf_free(&m);
	return 0;
}
