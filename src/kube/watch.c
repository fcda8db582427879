/*
 * watch.c - incremental decoders for WATCH and LIST bodies (see watch.h).
 *
 * yajl's streaming parser drives a small state machine through callbacks.
 * The subtree that becomes an sf_obj (a watch event's "object", one element
 * of a list's "items") is re-emitted through a yajl_gen straight into a
 * buffer, so it comes out minified and validated; of the rest only the event
 * type and the list metadata are kept, everything else is skipped.
 *
 * Memory is bounded by the size cap: the parser is fed in slices, and after
 * each slice the bytes of the event or item in progress are counted (with
 * yajl's consumed-bytes offset, which inside a callback is the position just
 * after the current token). An event or item past the cap, or a token at top
 * level that never ends, fails with -E2BIG instead of growing yajl's buffers.
 */
#include "steadfast/watch.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_gen.h>
#include <yajl/yajl_parse.h>

#define DEFAULT_MAX ((size_t)16 << 20)
#define SLICE ((size_t)64 << 10)
/* After an event this large the decoder's buffers are released once idle. */
#define RELEASE_AFTER ((uint64_t)1 << 20)

enum mode { MODE_WATCH, MODE_LIST };

/* The member being read at depth 1 (of the event or list object) and, for a
 * list, at depth 2 inside "metadata". */
enum key1 { K1_OTHER, K1_TYPE, K1_OBJECT, K1_KIND, K1_METADATA, K1_ITEMS };
enum key2 { K2_OTHER, K2_RV, K2_CONTINUE, K2_REMAINING };

enum vkind { V_NULL, V_BOOL, V_NUMBER, V_STRING, V_MAP, V_ARRAY };

struct val {
	enum vkind k;
	const char *s; /* number text or string bytes */
	size_t n;
	int b;
};

struct dec {
	enum mode mode;
	yajl_handle h;
	yajl_gen g;
	sf_buf obj;  /* the subtree being captured, minified */
	int gen_err; /* from appending to obj */
	size_t max;
	int err; /* sticky: once set, nothing more is accepted */
	int finished;
	char msg[256];
	unsigned long count;

	uint64_t base;    /* stream offset of the slice being parsed */
	size_t depth;     /* containers open */
	size_t cap_depth; /* depth of the captured subtree's root; 0 = none */
	enum key1 k1;
	enum key2 k2;

	/* Size accounting. unit_start is where the event or item in progress
	 * began (list: or where the last item ended). */
	uint64_t unit_start;
	int unit_ended; /* an event ended in the current slice, at unit_end */
	uint64_t unit_end;
	int pending; /* watch: a top-level token has begun outside any event */
	int big;     /* watch: a large event went through; release memory when idle */

	/* watch */
	sf_watch_event_fn wfn;
	int have_type, have_obj;
	sf_watch_type type;

	/* list */
	sf_list_item_fn lfn;
	char *kind, *rv, *cont;
	long long remaining;

	void *ud;
};

struct sf_watch_decoder {
	struct dec d;
};

struct sf_list_decoder {
	struct dec d;
};

static int fail(struct dec *d, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Records the first error; returns 0 so that callbacks can stop yajl with
 * `return fail(...)`. */
static int fail(struct dec *d, int err, const char *fmt, ...)
{
	if (d->err)
		return 0;
	d->err = err;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
	return 0;
}

/* Untrusted text for a message: printable ASCII only, shortened. */
static const char *printable(char *buf, size_t cap, const char *s, size_t n)
{
	size_t i = 0;
	for (; i < n && i + 4 < cap; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (i < n)
		for (int j = 0; j < 3 && i + 1 < cap; j++)
			buf[i++] = '.';
	buf[i] = '\0';
	return buf;
}

static const char *what(const struct dec *d)
{
	return d->mode == MODE_WATCH ? "watch stream" : "LIST body";
}

static uint64_t pos(const struct dec *d)
{
	return d->base + yajl_get_bytes_consumed(d->h);
}

static const char *unit_name(const struct dec *d)
{
	return d->mode == MODE_WATCH ? "watch event" : "LIST item";
}

static int too_big(struct dec *d, uint64_t size)
{
	if (d->mode == MODE_LIST && !d->cap_depth)
		return fail(d, -E2BIG, "LIST body: more than %zu bytes outside items", d->max);
	return fail(d, -E2BIG, "%s larger than %zu bytes (%llu so far)", unit_name(d), d->max,
	            (unsigned long long)size);
}

/* ---- re-emitting the captured subtree ---- */

static void gen_print(void *ctx, const char *s, size_t n)
{
	struct dec *d = ctx;
	if (!d->gen_err)
		d->gen_err = sf_buf_append(&d->obj, s, n);
}

static int gen_ok(struct dec *d, yajl_gen_status st)
{
	if (d->gen_err == -E2BIG)
		return too_big(d, d->obj.len);
	if (d->gen_err)
		return fail(d, d->gen_err, "out of memory");
	if (st == yajl_max_depth_exceeded)
		return fail(d, -EBADMSG, "%s at byte %llu: object nested deeper than %d levels",
		            what(d), (unsigned long long)pos(d), YAJL_MAX_DEPTH - 1);
	if (st != yajl_gen_status_ok)
		return fail(d, -EBADMSG, "%s at byte %llu: JSON generator error %d", what(d),
		            (unsigned long long)pos(d), (int)st);
	return 1;
}

static int emit(struct dec *d, const struct val *v)
{
	yajl_gen_status st = yajl_gen_status_ok;
	switch (v->k) {
	case V_NULL: st = yajl_gen_null(d->g); break;
	case V_BOOL: st = yajl_gen_bool(d->g, v->b); break;
	case V_NUMBER: st = yajl_gen_number(d->g, v->s, v->n); break;
	case V_STRING: st = yajl_gen_string(d->g, (const unsigned char *)v->s, v->n); break;
	case V_MAP: st = yajl_gen_map_open(d->g); break;
	case V_ARRAY: st = yajl_gen_array_open(d->g); break;
	}
	return gen_ok(d, st);
}

/* Starts capturing the object whose '{' was just read. */
static int begin_capture(struct dec *d)
{
	sf_buf_reset(&d->obj);
	d->gen_err = 0;
	yajl_gen_reset(d->g, NULL);
	d->cap_depth = d->depth + 1;
	return gen_ok(d, yajl_gen_map_open(d->g));
}

/* ---- watch events ---- */

static int parse_type(const char *s, size_t n, sf_watch_type *t)
{
	static const struct {
		const char *name;
		sf_watch_type type;
	} types[] = {{"ADDED", SF_WATCH_ADDED},
	             {"MODIFIED", SF_WATCH_MODIFIED},
	             {"DELETED", SF_WATCH_DELETED},
	             {"BOOKMARK", SF_WATCH_BOOKMARK},
	             {"ERROR", SF_WATCH_ERROR}};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (strlen(types[i].name) == n && memcmp(types[i].name, s, n) == 0) {
			*t = types[i].type;
			return 1;
		}
	}
	return 0;
}

const char *sf_watch_type_name(sf_watch_type t)
{
	switch (t) {
	case SF_WATCH_ADDED: return "ADDED";
	case SF_WATCH_MODIFIED: return "MODIFIED";
	case SF_WATCH_DELETED: return "DELETED";
	case SF_WATCH_BOOKMARK: return "BOOKMARK";
	case SF_WATCH_ERROR: return "ERROR";
	}
	return "UNKNOWN";
}

static const char *kind_name(enum vkind k)
{
	switch (k) {
	case V_NULL: return "null";
	case V_BOOL: return "a boolean";
	case V_NUMBER: return "a number";
	case V_STRING: return "a string";
	case V_MAP: return "an object";
	case V_ARRAY: return "an array";
	}
	return "?";
}

static int watch_value(struct dec *d, const struct val *v)
{
	char tmp[48];
	if (d->depth == 0) {
		if (v->k != V_MAP)
			return fail(d, -EBADMSG,
			            "watch stream at byte %llu: event is %s, not an object",
			            (unsigned long long)pos(d), kind_name(v->k));
		d->unit_start = pos(d) - 1;
		d->pending = 0;
		d->have_type = d->have_obj = 0;
		d->k1 = K1_OTHER;
		return 1;
	}
	if (d->depth != 1)
		return 1;
	if (d->k1 == K1_TYPE) {
		if (v->k != V_STRING)
			return fail(d, -EBADMSG, "watch stream at byte %llu: event type is %s",
			            (unsigned long long)pos(d), kind_name(v->k));
		if (!parse_type(v->s, v->n, &d->type))
			return fail(
			    d, -EBADMSG, "watch stream at byte %llu: unknown event type \"%s\"",
			    (unsigned long long)pos(d), printable(tmp, sizeof(tmp), v->s, v->n));
		d->have_type = 1;
	} else if (d->k1 == K1_OBJECT) {
		if (v->k != V_MAP)
			return fail(
			    d, -EBADMSG,
			    "watch stream at byte %llu: event \"object\" is %s, not an object",
			    (unsigned long long)pos(d), kind_name(v->k));
		return begin_capture(d);
	}
	return 1;
}

static int watch_event_done(struct dec *d)
{
	uint64_t end = pos(d), size = end - d->unit_start;
	if (size > d->max)
		return too_big(d, size);
	if (!d->have_type)
		return fail(d, -EBADMSG, "watch stream at byte %llu: event without \"type\"",
		            (unsigned long long)d->unit_start);
	if (!d->have_obj)
		return fail(d, -EBADMSG, "watch stream at byte %llu: %s event without \"object\"",
		            (unsigned long long)d->unit_start, sf_watch_type_name(d->type));
	d->unit_ended = 1;
	d->unit_end = end;
	if (size > RELEASE_AFTER)
		d->big = 1;
	sf_obj *o = sf_obj_new(d->obj.data, d->obj.len);
	if (!o)
		return fail(d, -ENOMEM, "out of memory");
	d->count++;
	if (!d->wfn) {
		sf_obj_unref(o);
		return 1;
	}
	if (d->wfn(d->ud, d->type, o))
		return fail(d, -ECANCELED, "stopped by the event callback after %lu events",
		            d->count);
	return 1;
}

/* ---- LIST bodies ---- */

static int set_str(struct dec *d, char **dst, const struct val *v)
{
	if (v->k != V_STRING)
		return 1; /* not what Kubernetes sends; ignored like any unknown field */
	char *s = malloc(v->n + 1);
	if (!s)
		return fail(d, -ENOMEM, "out of memory");
	memcpy(s, v->s, v->n);
	s[v->n] = '\0';
	free(*dst);
	*dst = s;
	return 1;
}

static void set_remaining(struct dec *d, const struct val *v)
{
	long long r = 0;
	if (v->k != V_NUMBER || !v->n)
		return;
	for (size_t i = 0; i < v->n; i++) {
		char c = v->s[i];
		if (c < '0' || c > '9' || r > (LLONG_MAX - 9) / 10)
			return; /* negative, fractional or huge: ignored */
		r = r * 10 + (c - '0');
	}
	d->remaining = r;
}

static int list_value(struct dec *d, const struct val *v)
{
	switch (d->depth) {
	case 0:
		if (v->k != V_MAP)
			return fail(d, -EBADMSG, "LIST body is %s, not an object", kind_name(v->k));
		d->k1 = K1_OTHER;
		return 1;
	case 1:
		switch (d->k1) {
		case K1_KIND: return set_str(d, &d->kind, v);
		case K1_METADATA: d->k2 = K2_OTHER; return 1;
		case K1_ITEMS:
			if (v->k != V_ARRAY && v->k != V_NULL)
				return fail(d, -EBADMSG,
				            "LIST body at byte %llu: \"items\" is %s, not an array",
				            (unsigned long long)pos(d), kind_name(v->k));
			return 1;
		default: return 1;
		}
	case 2:
		if (d->k1 == K1_ITEMS) {
			if (v->k != V_MAP)
				return fail(d, -EBADMSG,
				            "LIST body at byte %llu: item %lu is %s, not an object",
				            (unsigned long long)pos(d), d->count, kind_name(v->k));
			d->unit_start = pos(d) - 1;
			return begin_capture(d);
		}
		if (d->k1 == K1_METADATA) {
			switch (d->k2) {
			case K2_RV: return set_str(d, &d->rv, v);
			case K2_CONTINUE: return set_str(d, &d->cont, v);
			case K2_REMAINING: set_remaining(d, v); return 1;
			default: return 1;
			}
		}
		return 1;
	default: return 1;
	}
}

static int list_item_done(struct dec *d)
{
	uint64_t end = pos(d), size = end - d->unit_start;
	if (size > d->max)
		return too_big(d, size);
	d->unit_start = end;
	sf_obj *o = sf_obj_new(d->obj.data, d->obj.len);
	if (!o)
		return fail(d, -ENOMEM, "out of memory");
	d->count++;
	if (!d->lfn) {
		sf_obj_unref(o);
		return 1;
	}
	if (d->lfn(d->ud, o))
		return fail(d, -ECANCELED, "stopped by the item callback after %lu items",
		            d->count);
	return 1;
}

/* ---- yajl callbacks ---- */

static int on_value(struct dec *d, const struct val *v)
{
	int ok;
	if (d->cap_depth)
		ok = emit(d, v);
	else if (d->mode == MODE_WATCH)
		ok = watch_value(d, v);
	else
		ok = list_value(d, v);
	if (ok && (v->k == V_MAP || v->k == V_ARRAY))
		d->depth++;
	return ok;
}

static int on_end(struct dec *d, int map)
{
	if (d->cap_depth) {
		if (!gen_ok(d, map ? yajl_gen_map_close(d->g) : yajl_gen_array_close(d->g)))
			return 0;
		if (d->depth-- != d->cap_depth)
			return 1;
		d->cap_depth = 0;
		if (d->mode == MODE_LIST)
			return list_item_done(d);
		d->have_obj = 1;
		return 1;
	}
	d->depth--;
	if (d->mode == MODE_WATCH && d->depth == 0)
		return watch_event_done(d);
	return 1;
}

static enum key1 classify1(const struct dec *d, const char *s, size_t n)
{
#define IS(lit) (n == sizeof(lit) - 1 && memcmp(s, lit, n) == 0)
	if (d->mode == MODE_WATCH) {
		if (IS("type"))
			return K1_TYPE;
		if (IS("object"))
			return K1_OBJECT;
	} else {
		if (IS("kind"))
			return K1_KIND;
		if (IS("metadata"))
			return K1_METADATA;
		if (IS("items"))
			return K1_ITEMS;
	}
	return K1_OTHER;
}

static enum key2 classify2(const char *s, size_t n)
{
	if (IS("resourceVersion"))
		return K2_RV;
	if (IS("continue"))
		return K2_CONTINUE;
	if (IS("remainingItemCount"))
		return K2_REMAINING;
	return K2_OTHER;
#undef IS
}

static int cb_null(void *ctx)
{
	struct val v = {V_NULL, NULL, 0, 0};
	return on_value(ctx, &v);
}

static int cb_bool(void *ctx, int b)
{
	struct val v = {V_BOOL, NULL, 0, b};
	return on_value(ctx, &v);
}

static int cb_number(void *ctx, const char *s, size_t n)
{
	struct val v = {V_NUMBER, s, n, 0};
	return on_value(ctx, &v);
}

static int cb_string(void *ctx, const unsigned char *s, size_t n)
{
	struct val v = {V_STRING, (const char *)s, n, 0};
	return on_value(ctx, &v);
}

static int cb_start_map(void *ctx)
{
	struct val v = {V_MAP, NULL, 0, 0};
	return on_value(ctx, &v);
}

static int cb_start_array(void *ctx)
{
	struct val v = {V_ARRAY, NULL, 0, 0};
	return on_value(ctx, &v);
}

static int cb_end_map(void *ctx)
{
	return on_end(ctx, 1);
}

static int cb_end_array(void *ctx)
{
	return on_end(ctx, 0);
}

static int cb_map_key(void *ctx, const unsigned char *key, size_t n)
{
	struct dec *d = ctx;
	const char *s = (const char *)key;
	if (d->cap_depth)
		return gen_ok(d, yajl_gen_string(d->g, key, n));
	if (d->depth == 1)
		d->k1 = classify1(d, s, n);
	else if (d->depth == 2 && d->mode == MODE_LIST && d->k1 == K1_METADATA)
		d->k2 = classify2(s, n);
	return 1;
}

static const yajl_callbacks callbacks = {
    .yajl_null = cb_null,
    .yajl_boolean = cb_bool,
    .yajl_number = cb_number,
    .yajl_string = cb_string,
    .yajl_start_map = cb_start_map,
    .yajl_map_key = cb_map_key,
    .yajl_end_map = cb_end_map,
    .yajl_start_array = cb_start_array,
    .yajl_end_array = cb_end_array,
};

/* ---- common driver ---- */

static yajl_handle new_parser(struct dec *d)
{
	yajl_handle h = yajl_alloc(&callbacks, NULL, d);
	if (h && d->mode == MODE_WATCH)
		yajl_config(h, yajl_allow_multiple_values, 1);
	return h;
}

static int dec_init(struct dec *d, enum mode mode, size_t max, void *ud)
{
	d->mode = mode;
	d->max = max ? max : DEFAULT_MAX;
	d->ud = ud;
	d->remaining = -1;
	d->msg[0] = '\0';
	sf_buf_init(&d->obj, d->max);
	d->h = new_parser(d);
	d->g = yajl_gen_alloc(NULL);
	if (!d->h || !d->g)
		return -ENOMEM;
	yajl_gen_config(d->g, yajl_gen_beautify, 0);
	yajl_gen_config(d->g, yajl_gen_print_callback, gen_print, d);
	return 0;
}

static void dec_free(struct dec *d)
{
	if (d->h)
		yajl_free(d->h);
	if (d->g)
		yajl_gen_free(d->g);
	sf_buf_free(&d->obj);
	free(d->kind);
	free(d->rv);
	free(d->cont);
}

/* yajl's message for its error, without the trailing newline. Returns 1 if
 * it is about input that ended too early. */
static int yajl_msg(struct dec *d, char *buf, size_t cap)
{
	unsigned char *e = yajl_get_error(d->h, 0, NULL, 0);
	snprintf(buf, cap, "%s", e ? (const char *)e : "parse error");
	if (e)
		yajl_free_error(d->h, e);
	size_t n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '.'))
		buf[--n] = '\0';
	return strstr(buf, "premature EOF") != NULL;
}

static int is_ws(char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == '\v';
}

/* After a slice [p, p+n) at stream offset base parsed cleanly: checks the
 * size of what is in progress. */
static int check_slice(struct dec *d, const char *p, size_t n, uint64_t base)
{
	uint64_t end = base + n;
	if (d->mode == MODE_WATCH && d->depth == 0) {
		size_t i = 0;
		if (d->unit_ended) {
			i = (size_t)(d->unit_end - base);
			d->pending = 0;
		}
		if (!d->pending) {
			while (i < n && is_ws(p[i]))
				i++;
			if (i == n)
				return 1; /* between events */
			d->pending = 1;
			d->unit_start = base + i;
		}
	}
	if (end - d->unit_start > d->max)
		return too_big(d, end - d->unit_start);
	return 1;
}

/* Between events with nothing pending after a large one: drops the buffers
 * it grew (yajl's lexer keeps its largest token's buffer otherwise). */
static int release_idle(struct dec *d)
{
	if (!d->big || d->depth || d->pending)
		return 0;
	yajl_handle h = new_parser(d);
	if (!h) {
		fail(d, -ENOMEM, "out of memory");
		return d->err;
	}
	yajl_free(d->h);
	d->h = h;
	sf_buf_free(&d->obj);
	d->big = 0;
	return 0;
}

static int dec_feed(struct dec *d, const char *p, size_t n)
{
	if (d->err)
		return d->err;
	if (d->finished) {
		fail(d, -EINVAL, "%s: data fed after finish", what(d));
		return d->err;
	}
	for (size_t off = 0; off < n;) {
		size_t m = n - off < SLICE ? n - off : SLICE;
		uint64_t base = d->base;
		d->unit_ended = 0;
		yajl_status st = yajl_parse(d->h, (const unsigned char *)p + off, m);
		if (st != yajl_status_ok) {
			if (!d->err) {
				char msg[128];
				yajl_msg(d, msg, sizeof(msg));
				fail(d, -EBADMSG, "malformed %s at byte %llu: %s", what(d),
				     (unsigned long long)pos(d), msg);
			}
			return d->err;
		}
		d->base = base + m;
		if (!check_slice(d, p + off, m, base))
			return d->err;
		off += m;
	}
	if (d->mode == MODE_WATCH)
		return release_idle(d);
	return 0;
}

/* ---- watch decoder ---- */

sf_watch_decoder *sf_watch_decoder_new(sf_watch_event_fn fn, void *ud, size_t max_event_bytes)
{
	sf_watch_decoder *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	if (dec_init(&w->d, MODE_WATCH, max_event_bytes, ud)) {
		sf_watch_decoder_free(w);
		return NULL;
	}
	w->d.wfn = fn;
	return w;
}

void sf_watch_decoder_free(sf_watch_decoder *w)
{
	if (!w)
		return;
	dec_free(&w->d);
	free(w);
}

int sf_watch_decoder_feed(sf_watch_decoder *w, const char *p, size_t n)
{
	return dec_feed(&w->d, p, n);
}

int sf_watch_decoder_finish(sf_watch_decoder *w)
{
	struct dec *d = &w->d;
	if (d->err || d->finished)
		return d->err;
	d->finished = 1;
	if (d->depth) {
		fail(d, -EBADMSG, "truncated watch stream: event at byte %llu incomplete",
		     (unsigned long long)d->unit_start);
		return d->err;
	}
	d->unit_ended = 0;
	yajl_status st = yajl_complete_parse(d->h);
	if (d->err)
		return d->err; /* a pending top-level scalar completed */
	if (!d->pending)
		return 0; /* yajl reports "premature EOF" for an empty stream */
	char msg[128];
	if (st != yajl_status_ok && !yajl_msg(d, msg, sizeof(msg)))
		fail(d, -EBADMSG, "malformed watch stream at byte %llu: %s",
		     (unsigned long long)d->unit_start, msg);
	else
		fail(d, -EBADMSG, "truncated watch stream: incomplete value at byte %llu",
		     (unsigned long long)d->unit_start);
	return d->err;
}

const char *sf_watch_decoder_error(const sf_watch_decoder *w)
{
	return w->d.msg;
}

unsigned long sf_watch_decoder_count(const sf_watch_decoder *w)
{
	return w->d.count;
}

/* ---- list decoder ---- */

sf_list_decoder *sf_list_decoder_new(sf_list_item_fn fn, void *ud, size_t max_item_bytes)
{
	sf_list_decoder *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	if (dec_init(&l->d, MODE_LIST, max_item_bytes, ud)) {
		sf_list_decoder_free(l);
		return NULL;
	}
	l->d.lfn = fn;
	return l;
}

void sf_list_decoder_free(sf_list_decoder *l)
{
	if (!l)
		return;
	dec_free(&l->d);
	free(l);
}

int sf_list_decoder_feed(sf_list_decoder *l, const char *p, size_t n)
{
	return dec_feed(&l->d, p, n);
}

int sf_list_decoder_finish(sf_list_decoder *l)
{
	struct dec *d = &l->d;
	if (d->err || d->finished)
		return d->err;
	d->finished = 1;
	if (d->depth) {
		fail(d, -EBADMSG, "truncated LIST body after %llu bytes and %lu items",
		     (unsigned long long)d->base, d->count);
		return d->err;
	}
	yajl_status st = yajl_complete_parse(d->h);
	if (d->err)
		return d->err;
	if (st != yajl_status_ok) {
		char msg[128];
		if (yajl_msg(d, msg, sizeof(msg)))
			fail(d, -EBADMSG, "truncated LIST body after %llu bytes and %lu items",
			     (unsigned long long)d->base, d->count);
		else
			fail(d, -EBADMSG, "malformed LIST body at byte %llu: %s",
			     (unsigned long long)d->base, msg);
	}
	return d->err;
}

const char *sf_list_decoder_error(const sf_list_decoder *l)
{
	return l->d.msg;
}

const char *sf_list_decoder_rv(const sf_list_decoder *l)
{
	return l->d.rv ? l->d.rv : "";
}

const char *sf_list_decoder_continue(const sf_list_decoder *l)
{
	return l->d.cont ? l->d.cont : "";
}

const char *sf_list_decoder_kind(const sf_list_decoder *l)
{
	return l->d.kind ? l->d.kind : "";
}

long long sf_list_decoder_remaining(const sf_list_decoder *l)
{
	return l->d.remaining;
}

unsigned long sf_list_decoder_count(const sf_list_decoder *l)
{
	return l->d.count;
}
