/*
 * fuzz_watch.c - libFuzzer target for the WATCH and LIST stream decoders.
 *
 * Input layout: byte 0 seeds the chunk sizes, byte 1 picks the size cap and
 * after how many objects the callback asks to stop; the rest is the body.
 * The body is decoded twice by each decoder, once fed whole and once in
 * chunks; with the default cap both runs must deliver the same objects and
 * end with the same result. Every object handed over is read completely
 * through the views.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/json.h"
#include "steadfast/watch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

#define MAX_SEEN 64

typedef struct run {
	uint64_t hash[MAX_SEEN]; /* type and text of each object, in order */
	size_t n;
	size_t stop_after;
} run;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ull;
	return h;
}

static void walk(sf_jv v, int depth)
{
	sf_json_type t = sf_jv_type(v);
	CHECK(t != SF_JSON_NONE);
	if (t == SF_JSON_STRING) {
		char *s = sf_jv_strdup(v);
		CHECK(s != NULL);
		free(s);
	} else if (t == SF_JSON_NUMBER) {
		int64_t i;
		(void)sf_jv_int64(v, &i);
	} else if ((t == SF_JSON_OBJECT || t == SF_JSON_ARRAY) && depth < 200) {
		sf_jv_iter it = sf_jv_iter_init(v);
		sf_jv k, e;
		size_t n = 0;
		while (sf_jv_next(&it, &k, &e)) {
			if (t == SF_JSON_OBJECT) {
				char *s = sf_jv_strdup(k);
				CHECK(s != NULL);
				free(s);
			}
			walk(e, depth + 1);
			n++;
		}
		CHECK(n == sf_jv_len(v));
	}
}

static int take(run *r, int type, sf_obj *o)
{
	CHECK(o != NULL && o->refs == 1);
	CHECK(o->json[0] == '{' && o->json[o->len - 1] == '}' && strlen(o->json) == o->len);
	sf_jv root = sf_obj_root(o);
	walk(root, 0);
	sf_jv name = sf_jv_path(root, "metadata.name");
	if (sf_jv_type(name) == SF_JSON_STRING) {
		char *s = sf_jv_strdup(name);
		CHECK(s && strcmp(s, o->name) == 0);
		free(s);
	} else {
		CHECK(o->name[0] == '\0');
	}
	uint64_t h = fnv(14695981039346656037ull, &type, sizeof(type));
	h = fnv(h, o->json, o->len);
	if (r->n < MAX_SEEN)
		r->hash[r->n] = h;
	r->n++;
	sf_obj_unref(o);
	return r->stop_after && r->n >= r->stop_after;
}

static int on_event(void *ud, sf_watch_type type, sf_obj *o)
{
	CHECK(type >= SF_WATCH_ADDED && type <= SF_WATCH_ERROR);
	return take(ud, (int)type, o);
}

static int on_item(void *ud, sf_obj *o)
{
	return take(ud, 0, o);
}

/* Chunk lengths from a small generator seeded by the input. */
static size_t next_chunk(uint32_t *state, size_t left)
{
	*state = *state * 1103515245u + 12345u;
	size_t max = 1 + (*state >> 16) % 97;
	return max < left ? max : left;
}

static int watch_run(const char *p, size_t n, size_t max, uint32_t seed, run *r)
{
	sf_watch_decoder *d = sf_watch_decoder_new(on_event, r, max);
	if (!d)
		return -ENOMEM;
	int rc = 0;
	if (!seed) {
		rc = sf_watch_decoder_feed(d, p, n);
	} else {
		for (size_t off = 0; off < n && rc == 0;) {
			size_t m = next_chunk(&seed, n - off);
			rc = sf_watch_decoder_feed(d, p + off, m);
			off += m;
		}
	}
	int fin = sf_watch_decoder_finish(d);
	if (rc)
		CHECK(fin == rc);
	CHECK((fin == 0) == (sf_watch_decoder_error(d)[0] == '\0'));
	CHECK(sf_watch_decoder_count(d) == r->n);
	/* Stopped or failed decoders stay that way. */
	if (fin)
		CHECK(sf_watch_decoder_feed(d, "{}", 2) == fin);
	sf_watch_decoder_free(d);
	return fin;
}

static int list_run(const char *p, size_t n, size_t max, uint32_t seed, run *r)
{
	sf_list_decoder *d = sf_list_decoder_new(on_item, r, max);
	if (!d)
		return -ENOMEM;
	int rc = 0;
	if (!seed) {
		rc = sf_list_decoder_feed(d, p, n);
	} else {
		for (size_t off = 0; off < n && rc == 0;) {
			size_t m = next_chunk(&seed, n - off);
			rc = sf_list_decoder_feed(d, p + off, m);
			off += m;
		}
	}
	int fin = sf_list_decoder_finish(d);
	if (rc)
		CHECK(fin == rc);
	CHECK((fin == 0) == (sf_list_decoder_error(d)[0] == '\0'));
	CHECK(sf_list_decoder_count(d) == r->n);
	/* The metadata strings are always readable. */
	CHECK(strlen(sf_list_decoder_rv(d)) + strlen(sf_list_decoder_continue(d)) +
	          strlen(sf_list_decoder_kind(d)) <
	      n + 1);
	CHECK(sf_list_decoder_remaining(d) >= -1);
	sf_list_decoder_free(d);
	return fin;
}

static void same(const run *a, const run *b)
{
	CHECK(a->n == b->n);
	for (size_t i = 0; i < a->n && i < MAX_SEEN; i++)
		CHECK(a->hash[i] == b->hash[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint32_t seed = (uint32_t)data[0] * 2654435761u | 1u;
	size_t max = (data[1] & 7) == 0 ? (size_t)(data[1] >> 3) * 16 + 1 : 0;
	size_t stop_after = (data[1] >> 6) == 3 ? (size_t)(data[1] & 7) : 0;

	/* The body in an allocation of exactly its size. */
	size_t n = size - 2;
	char *body = malloc(n ? n : 1);
	if (!body)
		return 0;
	memcpy(body, data + 2, n);

	run whole = {.stop_after = stop_after}, chunked = {.stop_after = stop_after};
	int a = watch_run(body, n, max, 0, &whole);
	int b = watch_run(body, n, max, seed, &chunked);
	if (!max) {
		CHECK(a == b);
		same(&whole, &chunked);
	}
	CHECK(a != -E2BIG || max);

	run lw = {.stop_after = stop_after}, lc = {.stop_after = stop_after};
	a = list_run(body, n, max, 0, &lw);
	b = list_run(body, n, max, seed, &lc);
	if (!max) {
		CHECK(a == b);
		same(&lw, &lc);
	}
	free(body);
	return 0;
}
