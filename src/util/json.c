/*
 * json.c - JSON views, minification with yajl, reference-counted API objects
 * (see json.h).
 *
 * The view functions scan text on demand and keep no state. They are written
 * for well-formed, minified JSON but only ever rely on two things: a view's
 * bounds and the bracket/quote structure they find inside them. Whatever the
 * bytes, a scan stops at the end of the view, and a malformed value simply
 * reads as absent.
 */
#include "steadfast/json.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_gen.h>
#include <yajl/yajl_parse.h>

#include "steadfast/intern.h"
#include "steadfast/jpath.h"

/* ---- scanning ---- */

static int is_ws(char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == '\v';
}

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && is_ws(*p))
		p++;
	return p;
}

/* p is at an opening quote. Returns the byte after the closing quote, or NULL
 * if the string does not end before end. */
static const char *skip_string(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		if (*p == '"')
			return p + 1;
		if (*p == '\\') {
			if (end - p < 2)
				return NULL;
			p++;
		}
	}
	return NULL;
}

static int is_scalar_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '-' || c == '+' || c == '.';
}

/* p is at the first byte of a value. Returns the byte after it, or NULL if
 * no value starts at p or it does not end before end. Containers are matched
 * by counting brackets outside strings; their contents are not checked. */
static const char *skip_value(const char *p, const char *end)
{
	if (p >= end)
		return NULL;
	char c = *p;
	if (c == '"')
		return skip_string(p, end);
	if (c == '{' || c == '[') {
		size_t depth = 0;
		while (p < end) {
			c = *p;
			if (c == '"') {
				p = skip_string(p, end);
				if (!p)
					return NULL;
				continue;
			}
			if (c == '{' || c == '[') {
				depth++;
			} else if (c == '}' || c == ']') {
				if (--depth == 0)
					return p + 1;
			}
			p++;
		}
		return NULL;
	}
	const char *q = p;
	while (q < end && is_scalar_char(*q))
		q++;
	return q == p ? NULL : q;
}

sf_jv sf_jv_root(const char *json, size_t len)
{
	if (!json)
		return SF_JV_NONE;
	const char *end = json + len;
	const char *p = skip_ws(json, end);
	const char *e = skip_value(p, end);
	if (!e)
		return SF_JV_NONE;
	return (sf_jv){p, (size_t)(e - p)};
}

static int lit_eq(sf_jv v, const char *lit, size_t n)
{
	return v.n == n && memcmp(v.p, lit, n) == 0;
}

sf_json_type sf_jv_type(sf_jv v)
{
	if (!v.p || !v.n)
		return SF_JSON_NONE;
	switch (v.p[0]) {
	case '{': return SF_JSON_OBJECT;
	case '[': return SF_JSON_ARRAY;
	case '"': return SF_JSON_STRING;
	case 'n': return lit_eq(v, "null", 4) ? SF_JSON_NULL : SF_JSON_NONE;
	case 't': return lit_eq(v, "true", 4) ? SF_JSON_TRUE : SF_JSON_NONE;
	case 'f': return lit_eq(v, "false", 5) ? SF_JSON_FALSE : SF_JSON_NONE;
	case '-': return SF_JSON_NUMBER;
	default: return (v.p[0] >= '0' && v.p[0] <= '9') ? SF_JSON_NUMBER : SF_JSON_NONE;
	}
}

/* ---- iteration ---- */

sf_jv_iter sf_jv_iter_init(sf_jv container)
{
	sf_jv_iter it = {NULL, NULL, 0};
	sf_json_type t = sf_jv_type(container);
	if (t == SF_JSON_OBJECT || t == SF_JSON_ARRAY) {
		it.pos = container.p + 1;
		it.end = container.p + container.n;
		it.object = t == SF_JSON_OBJECT;
	}
	return it;
}

int sf_jv_next(sf_jv_iter *it, sf_jv *key, sf_jv *val)
{
	const char *p = it->pos, *end = it->end;
	sf_jv k = SF_JV_NONE;
	if (!p)
		goto done;
	p = skip_ws(p, end);
	if (p < end && *p == ',')
		p = skip_ws(p + 1, end);
	if (p >= end || *p == '}' || *p == ']')
		goto done;
	if (it->object) {
		if (*p != '"')
			goto done;
		const char *ke = skip_string(p, end);
		if (!ke)
			goto done;
		k = (sf_jv){p, (size_t)(ke - p)};
		p = skip_ws(ke, end);
		if (p >= end || *p != ':')
			goto done;
		p = skip_ws(p + 1, end);
	}
	const char *ve = skip_value(p, end);
	if (!ve)
		goto done;
	it->pos = ve;
	if (key)
		*key = k;
	if (val)
		*val = (sf_jv){p, (size_t)(ve - p)};
	return 1;
done:
	it->pos = it->end;
	if (key)
		*key = SF_JV_NONE;
	if (val)
		*val = SF_JV_NONE;
	return 0;
}

size_t sf_jv_len(sf_jv v)
{
	sf_jv_iter it = sf_jv_iter_init(v);
	size_t n = 0;
	while (sf_jv_next(&it, NULL, NULL))
		n++;
	return n;
}

sf_jv sf_jv_at(sf_jv arr, size_t i)
{
	if (sf_jv_type(arr) != SF_JSON_ARRAY)
		return SF_JV_NONE;
	sf_jv_iter it = sf_jv_iter_init(arr);
	sf_jv val;
	while (sf_jv_next(&it, NULL, &val)) {
		if (i-- == 0)
			return val;
	}
	return SF_JV_NONE;
}

/* ---- strings ---- */

static int hex4(const char *p)
{
	int v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		int d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		v = v * 16 + d;
	}
	return v;
}

static int utf8_put(unsigned cp, char out[4])
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* Decodes the next character of string contents at *pp (contents end at
 * end). Stores its 1-4 bytes in out and returns how many, 0 at the end, -1
 * on a malformed escape. Unpaired surrogates decode to U+FFFD. */
static int str_next(const char **pp, const char *end, char out[4])
{
	const char *p = *pp;
	if (p >= end)
		return 0;
	if (*p != '\\') {
		out[0] = *p;
		*pp = p + 1;
		return 1;
	}
	if (end - p < 2)
		return -1;
	*pp = p + 2;
	switch (p[1]) {
	case '"': out[0] = '"'; return 1;
	case '\\': out[0] = '\\'; return 1;
	case '/': out[0] = '/'; return 1;
	case 'b': out[0] = '\b'; return 1;
	case 'f': out[0] = '\f'; return 1;
	case 'n': out[0] = '\n'; return 1;
	case 'r': out[0] = '\r'; return 1;
	case 't': out[0] = '\t'; return 1;
	case 'u': break;
	default: return -1;
	}
	if (end - p < 6)
		return -1;
	int cp = hex4(p + 2);
	if (cp < 0)
		return -1;
	*pp = p + 6;
	if (cp >= 0xD800 && cp <= 0xDBFF) {
		int lo = -1;
		if (end - p >= 12 && p[6] == '\\' && p[7] == 'u')
			lo = hex4(p + 8);
		if (lo >= 0xDC00 && lo <= 0xDFFF) {
			*pp = p + 12;
			return utf8_put(0x10000u + (((unsigned)cp - 0xD800u) << 10) +
			                    ((unsigned)lo - 0xDC00u),
			                out);
		}
		cp = 0xFFFD;
	} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
		cp = 0xFFFD;
	}
	return utf8_put((unsigned)cp, out);
}

/* Bounds of a string view's contents; 0 if s is not a string. */
static int str_body(sf_jv s, const char **b, const char **e)
{
	if (!s.p || s.n < 2 || s.p[0] != '"' || s.p[s.n - 1] != '"')
		return 0;
	*b = s.p + 1;
	*e = s.p + s.n - 1;
	return 1;
}

/* Decodes s into buf (at most cap bytes, not terminated). Returns the full
 * decoded length, or -1 if s is not a well-formed string. */
static long long str_decode(sf_jv s, char *buf, size_t cap)
{
	const char *p, *end;
	if (!str_body(s, &p, &end))
		return -1;
	size_t len = 0;
	char ch[4];
	int k;
	while ((k = str_next(&p, end, ch)) > 0) {
		for (int i = 0; i < k; i++, len++) {
			if (len < cap)
				buf[len] = ch[i];
		}
	}
	return k < 0 ? -1 : (long long)len;
}

static int str_eq_n(sf_jv s, const char *lit, size_t n)
{
	const char *p, *end;
	if (!str_body(s, &p, &end))
		return 0;
	if (!memchr(p, '\\', (size_t)(end - p)))
		return (size_t)(end - p) == n && memcmp(p, lit, n) == 0;
	size_t i = 0;
	char ch[4];
	int k;
	while ((k = str_next(&p, end, ch)) > 0) {
		if ((size_t)k > n - i || memcmp(lit + i, ch, (size_t)k) != 0)
			return 0;
		i += (size_t)k;
	}
	return k == 0 && i == n;
}

char *sf_jv_strdup(sf_jv s)
{
	const char *b, *e;
	if (!str_body(s, &b, &e))
		return NULL;
	/* Decoding never makes a string longer. */
	size_t cap = (size_t)(e - b);
	char *out = malloc(cap + 1);
	if (!out)
		return NULL;
	long long len = str_decode(s, out, cap);
	if (len < 0) {
		free(out);
		return NULL;
	}
	out[len] = '\0';
	return out;
}

int sf_jv_str(sf_jv s, char *buf, size_t cap)
{
	long long len = str_decode(s, buf, cap);
	if (len < 0)
		return -EINVAL;
	if ((unsigned long long)len >= cap || len > INT_MAX) {
		if (cap)
			buf[cap - 1] = '\0';
		return -ERANGE;
	}
	buf[len] = '\0';
	return (int)len;
}

int sf_jv_streq(sf_jv s, const char *lit)
{
	return str_eq_n(s, lit, strlen(lit));
}

/* ---- lookups ---- */

static sf_jv get_n(sf_jv obj, const char *key, size_t n)
{
	if (sf_jv_type(obj) != SF_JSON_OBJECT)
		return SF_JV_NONE;
	sf_jv_iter it = sf_jv_iter_init(obj);
	sf_jv k, v;
	while (sf_jv_next(&it, &k, &v)) {
		if (str_eq_n(k, key, n))
			return v;
	}
	return SF_JV_NONE;
}

sf_jv sf_jv_get(sf_jv obj, const char *key)
{
	return get_n(obj, key, strlen(key));
}

sf_jv sf_jv_path(sf_jv v, const char *path)
{
	if (!path)
		return SF_JV_NONE;
	sf_jpath p = sf_jpath_init(path);
	sf_jpath_step st;
	int rc = 0;
	while (sf_jv_ok(v) && (rc = sf_jpath_next(&p, &st)) > 0)
		v = st.key ? get_n(v, st.key, st.len) : sf_jv_at(v, st.index);
	return rc < 0 ? SF_JV_NONE : v;
}

/* ---- scalars ---- */

int sf_jv_int64(sf_jv v, int64_t *out)
{
	if (sf_jv_type(v) != SF_JSON_NUMBER)
		return -EINVAL;
	const char *p = v.p, *end = v.p + v.n;
	int neg = *p == '-';
	if (neg)
		p++;
	if (p >= end)
		return -EINVAL;
	uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	uint64_t acc = 0;
	int range = 0;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		uint64_t d = (uint64_t)(*p - '0');
		if (acc > (limit - d) / 10)
			range = 1;
		else
			acc = acc * 10 + d;
	}
	if (range)
		return -ERANGE;
	if (neg)
		*out = acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc;
	else
		*out = (int64_t)acc;
	return 0;
}

int sf_jv_bool(sf_jv v, int *out)
{
	switch (sf_jv_type(v)) {
	case SF_JSON_TRUE: *out = 1; return 0;
	case SF_JSON_FALSE: *out = 0; return 0;
	default: return -EINVAL;
	}
}

/* ---- errors of the yajl-driven parsers ---- */

_Static_assert(SF_JSON_MAX_DEPTH == YAJL_MAX_DEPTH - 1, "yajl_gen's nesting limit");

int sf_json_yajl_run(yajl_handle h, const char *in, size_t len, size_t *at)
{
	if (!in)
		len = 0; /* NULL is the empty text, whatever len says */
	yajl_status st = yajl_parse(h, (const unsigned char *)(in ? in : ""), len);
	if (st == yajl_status_ok) {
		st = yajl_complete_parse(h);
		*at = len;
	} else {
		*at = yajl_get_bytes_consumed(h);
	}
	return st == yajl_status_ok ? 0 : -EBADMSG;
}

void sf_json_set_invalid(char *err, size_t errlen, size_t at, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	/* the same bytes as one snprintf of prefix and reason, when cut short too */
	int n = snprintf(err, errlen, "invalid JSON at byte %zu: ", at);
	if (n < 0 || (size_t)n >= errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

void sf_json_set_yajl_err(char *err, size_t errlen, size_t at, yajl_handle h)
{
	if (!err || !errlen)
		return;
	/* yajl's message without its trailing newline */
	char msg[128];
	unsigned char *e = yajl_get_error(h, 0, NULL, 0);
	snprintf(msg, sizeof(msg), "%s", e ? (const char *)e : "parse error");
	if (e)
		yajl_free_error(h, e);
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '.'))
		msg[--n] = '\0';
	sf_json_set_invalid(err, errlen, at, "%s", msg);
}

/* ---- minify ---- */

struct minify {
	yajl_gen g;
	sf_buf *out;
	int out_err; /* from appending to out */
	int gen_st;  /* first failing yajl_gen status */
};

static void minify_print(void *ctx, const char *s, size_t n)
{
	struct minify *m = ctx;
	if (!m->out_err)
		m->out_err = sf_buf_append(m->out, s, n);
}

static int minify_st(struct minify *m, yajl_gen_status st)
{
	if (st != yajl_gen_status_ok && !m->gen_st)
		m->gen_st = (int)st;
	return !m->gen_st && !m->out_err;
}

static int mf_null(void *ctx)
{
	struct minify *m = ctx;
	return minify_st(m, yajl_gen_null(m->g));
}

static int mf_bool(void *ctx, int b)
{
	struct minify *m = ctx;
	return minify_st(m, yajl_gen_bool(m->g, b));
}

static int mf_number(void *ctx, const char *s, size_t n)
{
	struct minify *m = ctx;
	return minify_st(m, yajl_gen_number(m->g, s, n));
}

static int mf_string(void *ctx, const unsigned char *s, size_t n)
{
	struct minify *m = ctx;
	return minify_st(m, yajl_gen_string(m->g, s, n));
}

static int mf_start_map(void *ctx)
{
	struct minify *m = ctx;
	return minify_st(m, yajl_gen_map_open(m->g));
}

static int mf_end_map(void *ctx)
{
	struct minify *m = ctx;
	return minify_st(m, yajl_gen_map_close(m->g));
}

static int mf_start_array(void *ctx)
{
	struct minify *m = ctx;
	return minify_st(m, yajl_gen_array_open(m->g));
}

static int mf_end_array(void *ctx)
{
	struct minify *m = ctx;
	return minify_st(m, yajl_gen_array_close(m->g));
}

static const yajl_callbacks minify_callbacks = {
    .yajl_null = mf_null,
    .yajl_boolean = mf_bool,
    .yajl_number = mf_number,
    .yajl_string = mf_string,
    .yajl_start_map = mf_start_map,
    .yajl_map_key = mf_string,
    .yajl_end_map = mf_end_map,
    .yajl_start_array = mf_start_array,
    .yajl_end_array = mf_end_array,
};

int sf_json_minify(const char *in, size_t len, sf_buf *out, char *err, size_t errlen)
{
	struct minify m = {NULL, out, 0, 0};
	size_t base = out->len;
	int rc = 0;
	if (err && errlen)
		err[0] = '\0';
	m.g = yajl_gen_alloc(NULL);
	yajl_handle h = m.g ? yajl_alloc(&minify_callbacks, NULL, &m) : NULL;
	if (!h) {
		rc = -ENOMEM;
		sf_errf(err, errlen, "out of memory");
		goto out;
	}
	yajl_gen_config(m.g, yajl_gen_beautify, 0);
	yajl_gen_config(m.g, yajl_gen_print_callback, minify_print, &m);

	size_t at;
	int st = sf_json_yajl_run(h, in, len, &at);
	if (m.out_err) {
		rc = m.out_err;
		sf_errf(err, errlen, "%s", rc == -E2BIG ? "output too large" : "out of memory");
	} else if (m.gen_st == yajl_max_depth_exceeded) {
		rc = -EBADMSG;
		sf_json_set_invalid(err, errlen, at, "nested deeper than %d levels",
		                    SF_JSON_MAX_DEPTH);
	} else if (m.gen_st) {
		rc = -EBADMSG;
		sf_json_set_invalid(err, errlen, at, "generator error %d", m.gen_st);
	} else if (st) {
		rc = -EBADMSG;
		sf_json_set_yajl_err(err, errlen, at, h);
	}
out:
	if (h)
		yajl_free(h);
	if (m.g)
		yajl_gen_free(m.g);
	if (rc) {
		out->len = base;
		if (out->data)
			out->data[base] = '\0';
	}
	return rc;
}

/* ---- objects ---- */

static size_t meta_len(sf_jv v)
{
	long long n = str_decode(v, NULL, 0);
	return n < 0 ? 0 : (size_t)n;
}

static char *meta_put(char *w, sf_jv v, size_t n, const char **field)
{
	if (n)
		str_decode(v, w, n);
	w[n] = '\0';
	*field = w;
	return w + n + 1;
}

sf_obj *sf_obj_new(const char *minified, size_t len)
{
	if (!minified)
		return NULL;
	const char *end = minified + len;
	const char *p = skip_ws(minified, end);
	while (end > p && is_ws(end[-1]))
		end--;
	if (p >= end || *p != '{' || skip_value(p, end) != end)
		return NULL;
	size_t n = (size_t)(end - p);
	if (n > UINT32_MAX)
		return NULL;

	sf_jv md = get_n((sf_jv){p, n}, "metadata", 8);
	sf_jv f[4] = {sf_jv_get(md, "namespace"), sf_jv_get(md, "name"), sf_jv_get(md, "uid"),
	              sf_jv_get(md, "resourceVersion")};
	size_t fl[4];
	size_t total = sizeof(sf_obj) + n + 1;
	for (int i = 0; i < 4; i++) {
		fl[i] = meta_len(f[i]);
		total += fl[i] + 1;
	}
	char *mem = malloc(total);
	if (!mem)
		return NULL;
	sf_obj *o = (sf_obj *)(void *)mem;
	char *w = o->json;
	memcpy(w, p, n);
	w[n] = '\0';
	o->len = (uint32_t)n;
	o->refs = 1;
	w += n + 1;
	/* the key: "ns/name", or "name"; name is its tail. The namespace,
	 * decoded in place and cut at a NUL an escape may hold (as a C string
	 * reads it), is shared. */
	if (fl[0])
		str_decode(f[0], w, fl[0]);
	size_t nl = fl[0] ? strnlen(w, fl[0]) : 0;
	if (!(o->ns = sf_intern(w, nl))) {
		free(mem);
		return NULL;
	}
	if (nl) {
		w[nl] = '/';
		w += nl + 1;
	}
	w = meta_put(w, f[1], fl[1], &o->name);
	w = meta_put(w, f[2], fl[2], &o->uid);
	meta_put(w, f[3], fl[3], &o->rv);
	return o;
}

sf_obj *sf_obj_parse(const char *text, size_t len, char *err, size_t errlen)
{
	sf_buf b;
	sf_buf_init(&b, 0);
	if (sf_json_minify(text, len, &b, err, errlen)) {
		sf_buf_free(&b);
		return NULL;
	}
	sf_obj *o = sf_obj_new(b.data, b.len);
	if (!o && err && errlen) {
		if (b.len && b.data[0] == '{')
			snprintf(err, errlen, "out of memory");
		else
			snprintf(err, errlen, "not a JSON object");
	}
	sf_buf_free(&b);
	return o;
}

sf_obj *sf_obj_ref(sf_obj *o)
{
	if (o)
		__atomic_add_fetch(&o->refs, 1, __ATOMIC_RELAXED);
	return o;
}

void sf_obj_unref(sf_obj *o)
{
	if (o && __atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		sf_intern_release(o->ns);
		free(o);
	}
}

size_t sf_obj_size(const sf_obj *o)
{
	/* The strings follow the struct in order json, key, uid, rv; the
	 * namespace is shared (intern.h). */
	return (size_t)(o->rv + strlen(o->rv) + 1 - (const char *)o);
}

/* Replaces o by an object of b's text (b is freed); o itself when that
 * fails (out of memory: the object is kept as it is). */
static sf_obj *obj_replace(sf_obj *o, sf_buf *b, int failed)
{
	sf_obj *n = failed ? NULL : sf_obj_new(b->data, b->len);
	sf_buf_free(b);
	if (!n)
		return o;
	sf_obj_unref(o);
	return n;
}

sf_obj *sf_obj_strip_path(sf_obj *o, const char *path)
{
	if (!o || !path || !*path)
		return o;
	/* walk the objects named by every segment but the last */
	sf_jv cur = sf_obj_root(o);
	const char *seg = path;
	const char *start = NULL, *stop = NULL;
	for (;;) {
		const char *dot = strchr(seg, '.');
		size_t n = dot ? (size_t)(dot - seg) : strlen(seg);
		char name[256];
		if (n >= sizeof(name))
			return o;
		memcpy(name, seg, n);
		name[n] = '\0';
		sf_jv_iter it = sf_jv_iter_init(cur);
		sf_jv k, v;
		int found = 0;
		while (sf_jv_next(&it, &k, &v)) {
			if (sf_jv_streq(k, name)) {
				found = 1;
				break;
			}
		}
		if (!found)
			return o;
		if (!dot) {
			start = k.p;
			stop = v.p + v.n;
			break;
		}
		if (sf_jv_type(v) != SF_JSON_OBJECT)
			return o;
		cur = v;
		seg = dot + 1;
	}
	const char *text = o->json, *end = o->json + o->len;
	/* take one separating comma with the member: the one after it, or
	 * the one before it when it is the last member */
	if (stop < end && *stop == ',')
		stop++;
	else if (start > text && start[-1] == ',')
		start--;
	sf_buf b;
	sf_buf_init(&b, 0);
	int failed = sf_buf_append(&b, text, (size_t)(start - text)) ||
	             sf_buf_append(&b, stop, (size_t)(end - stop));
	return obj_replace(o, &b, failed);
}

/* ---- projection (cache transforms) ---- */

#define PROJ_MAX 32

/* Does the first segment of path p name member key (a string token)?
 * *rest gets what follows it ("" for the whole member), *each 1 when the
 * segment ends in "[]". A segment in single quotes is taken as written,
 * dots and all (a label key), and ends the path. */
static int proj_seg(const char *p, sf_jv key, const char **rest, int *each)
{
	char name[320]; /* a label key: prefix (253) '/' name (63) */
	if (p[0] == '\'') {
		const char *q = strchr(p + 1, '\'');
		size_t kn = q ? (size_t)(q - p - 1) : 0;
		if (kn == 0 || kn >= sizeof(name) || q[1])
			return 0;
		memcpy(name, p + 1, kn);
		name[kn] = '\0';
		*each = 0;
		if (!sf_jv_streq(key, name))
			return 0;
		*rest = "";
		return 1;
	}
	const char *dot = strchr(p, '.');
	size_t n = dot ? (size_t)(dot - p) : strlen(p);
	*each = n >= 2 && p[n - 2] == '[' && p[n - 1] == ']';
	size_t kn = *each ? n - 2 : n;
	if (kn == 0 || kn >= sizeof(name))
		return 0;
	memcpy(name, p, kn);
	name[kn] = '\0';
	if (!sf_jv_streq(key, name))
		return 0;
	*rest = dot ? dot + 1 : "";
	return 1;
}

static int walk_value(sf_jv v, const char *const *paths, size_t n, int omit, sf_buf *out);

/* Writes object obj with the members paths[0..n) keep (omit 0: the ones
 * they name, and what they name below) or leave (omit 1: all but those).
 * A path names a member whole when it ends there, with or without [];
 * a longer one names parts of it. */
static int walk_object(sf_jv obj, const char *const *paths, size_t n, int omit, sf_buf *out)
{
	int rc = sf_buf_putc(out, '{');
	int first = 1;
	sf_jv_iter it = sf_jv_iter_init(obj);
	sf_jv k, v;
	while (rc == 0 && sf_jv_next(&it, &k, &v)) {
		const char *sub[PROJ_MAX];
		size_t nsub = 0;
		int whole = 0, each = 0;
		for (size_t i = 0; i < n; i++) {
			const char *rest;
			int e;
			if (!proj_seg(paths[i], k, &rest, &e))
				continue;
			if (!*rest) {
				whole = 1;
			} else {
				each |= e;
				sub[nsub++] = rest;
			}
		}
		if (omit ? whole : !whole && nsub == 0)
			continue;
		if (!first)
			rc = sf_buf_putc(out, ',');
		first = 0;
		if (rc == 0)
			rc = sf_buf_append(out, k.p, k.n);
		if (rc == 0)
			rc = sf_buf_putc(out, ':');
		if (rc)
			break;
		if (omit ? nsub == 0 : whole) {
			rc = sf_buf_append(out, v.p, v.n);
		} else if (each && sf_jv_type(v) == SF_JSON_ARRAY) {
			rc = sf_buf_putc(out, '[');
			sf_jv_iter ai = sf_jv_iter_init(v);
			sf_jv e;
			int efirst = 1;
			while (rc == 0 && sf_jv_next(&ai, NULL, &e)) {
				if (!efirst)
					rc = sf_buf_putc(out, ',');
				efirst = 0;
				if (rc == 0)
					rc = walk_value(e, sub, nsub, omit, out);
			}
			if (rc == 0)
				rc = sf_buf_putc(out, ']');
		} else {
			rc = walk_value(v, sub, nsub, omit, out);
		}
	}
	return rc ? rc : sf_buf_putc(out, '}');
}

/* A value whose parts paths name: objects are walked, anything else
 * (which a path cannot reach into) is kept whole. */
static int walk_value(sf_jv v, const char *const *paths, size_t n, int omit, sf_buf *out)
{
	if (sf_jv_type(v) == SF_JSON_OBJECT)
		return walk_object(v, paths, n, omit, out);
	return sf_buf_append(out, v.p, v.n);
}

static sf_obj *obj_walk(sf_obj *o, const char *const *paths, int omit)
{
	if (!o || !paths)
		return o;
	size_t n = 0;
	while (paths[n])
		n++;
	if (n > PROJ_MAX)
		return o;
	sf_buf b;
	sf_buf_init(&b, 0);
	int failed = walk_object(sf_obj_root(o), paths, n, omit, &b) != 0;
	return obj_replace(o, &b, failed || b.len >= o->len); /* nothing dropped: keep o */
}

sf_obj *sf_obj_project(sf_obj *o, const char *const *paths)
{
	return obj_walk(o, paths, 0);
}

sf_obj *sf_obj_omit(sf_obj *o, const char *const *paths)
{
	return obj_walk(o, paths, 1);
}

sf_obj *sf_obj_strip_managed_fields(sf_obj *o)
{
	return sf_obj_strip_path(o, "metadata.managedFields");
}
