/*
 * fuzz_http_request.c - libFuzzer target for the probe server's request
 * parser (sf_srv_parse_request) and the bearer-token extraction that guards
 * /metrics (sf_srv_header, sf_srv_bearer).
 *
 * The input is the bytes a client sent. Besides not crashing or reading out
 * of bounds, the parser must behave the way the server relies on when it
 * re-parses a growing buffer:
 *   - the result is one of the documented codes;
 *   - a complete head lies inside the input, ends with a line feed, and its
 *     strings point into it (the path may be the static "/"); parsing
 *     exactly the head gives the same result, and every shorter prefix is
 *     incomplete;
 *   - an error is final: a prefix is either incomplete or has the same
 *     error, and an incomplete input has only incomplete prefixes;
 *   - on any bytes (the whole input, and a complete head as the server
 *     passes it) a header value and a bearer token lie inside the input,
 *     the value has no line end and no surrounding blanks, and the token
 *     is non-empty token68.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

static int inside(const char *buf, size_t len, const char *p, size_t n)
{
	return p >= buf && p <= buf + len && n <= (size_t)(buf + len - p);
}

static int known(int rc)
{
	return rc == SF_SRV_PARSE_COMPLETE || rc == SF_SRV_PARSE_INCOMPLETE || rc == -EBADMSG ||
	       rc == -EMSGSIZE || rc == -EPROTONOSUPPORT || rc == -ENOTSUP;
}

static void check_complete(const char *buf, size_t len, const sf_srv_request *r)
{
	CHECK(r->head_len > 0 && r->head_len <= len);
	CHECK(buf[r->head_len - 1] == '\n');
	size_t head = r->head_len;
	CHECK(r->method_len > 0 && inside(buf, head, r->method, r->method_len));
	CHECK(r->method == buf);
	CHECK(r->target_len > 0 && inside(buf, head, r->target, r->target_len));
	for (size_t i = 0; i < r->target_len; i++)
		CHECK(r->target[i] > ' ' && r->target[i] < 0x7f);
	CHECK(r->path_len > 0);
	CHECK(inside(r->target, r->target_len, r->path, r->path_len) ||
	      (r->path_len == 1 && r->path[0] == '/'));
	if (r->query)
		CHECK(inside(r->target, r->target_len, r->query, r->query_len) &&
		      r->query[-1] == '?');
	CHECK(r->version == 10 || r->version == 11);
	CHECK(r->nfields <= SF_SRV_MAX_FIELDS);
}

/* Parses the first n bytes from an allocation of exactly n bytes. */
static int parse_prefix(const uint8_t *data, size_t n, sf_srv_request *r)
{
	char *p = malloc(n ? n : 1);
	if (!p)
		abort();
	memcpy(p, data, n);
	int rc = sf_srv_parse_request(p, n, r);
	/* Pointers into p are not used after this. */
	free(p);
	return rc;
}

static void check_bearer(const char *buf, size_t len)
{
	const char *v;
	size_t n;
	if (sf_srv_header(buf, len, "Authorization", &v, &n)) {
		CHECK(inside(buf, len, v, n));
		CHECK(!memchr(v, '\n', n));
		CHECK(n == 0 ||
		      (v[0] != ' ' && v[0] != '\t' && v[n - 1] != ' ' && v[n - 1] != '\t'));
	}
	const char *t;
	size_t tl;
	if (sf_srv_bearer(buf, len, &t, &tl)) {
		CHECK(tl > 0 && inside(buf, len, t, tl));
		for (size_t i = 0; i < tl; i++)
			CHECK((t[i] >= '0' && t[i] <= '9') || (t[i] >= 'a' && t[i] <= 'z') ||
			      (t[i] >= 'A' && t[i] <= 'Z') || strchr("-._~+/=", t[i]));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	sf_srv_request r;
	int rc = sf_srv_parse_request(buf, size, &r);
	CHECK(known(rc));
	check_bearer(buf, size);

	/* Prefixes to compare: all of them for short inputs, else a spread
	 * plus the bytes just before the end of the head. */
	size_t end = size;
	if (rc == SF_SRV_PARSE_COMPLETE) {
		check_complete(buf, size, &r);
		check_bearer(buf, r.head_len);
		sf_srv_request again;
		CHECK(parse_prefix(data, r.head_len, &again) == SF_SRV_PARSE_COMPLETE);
		CHECK(again.head_len == r.head_len && again.version == r.version &&
		      again.method_len == r.method_len && again.target_len == r.target_len &&
		      again.path_len == r.path_len && again.query_len == r.query_len &&
		      (again.query == NULL) == (r.query == NULL) &&
		      again.content_length == r.content_length && again.nfields == r.nfields);
		end = r.head_len;
	}
	size_t cuts[64];
	size_t ncuts = 0;
	if (end <= 64) {
		for (size_t k = 0; k < end; k++)
			cuts[ncuts++] = k;
	} else {
		for (size_t i = 0; i < 32; i++)
			cuts[ncuts++] = end * i / 32;
		for (size_t d = 1; d <= 4; d++)
			cuts[ncuts++] = end - d;
	}
	for (size_t i = 0; i < ncuts; i++) {
		sf_srv_request pr;
		int prc = parse_prefix(data, cuts[i], &pr);
		CHECK(known(prc));
		if (rc == SF_SRV_PARSE_COMPLETE || rc == SF_SRV_PARSE_INCOMPLETE)
			CHECK(prc == SF_SRV_PARSE_INCOMPLETE);
		else
			CHECK(prc == SF_SRV_PARSE_INCOMPLETE || prc == rc);
	}
	free(buf);
	return 0;
}
