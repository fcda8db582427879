/*
 * yaml.c - YAML to JSON the way Kubernetes tools read manifests (see yaml.h).
 *
 * kubectl and client-go turn YAML into JSON with sigs.k8s.io/yaml.YAMLToJSON:
 * go-yaml v2 decodes the document into Go values with YAML 1.1 scalar rules
 * (its resolve.go), then encoding/json writes them. This file reproduces that
 * result, so a manifest means the same thing to us as to kubectl.
 *
 * libyaml's event API is used, not the document API (config.c uses that):
 * the loader gives every untagged scalar the tag !!str, which loses the
 * difference between "5" written plainly and "!!str 5". Events are turned
 * straight into JSON text in one buffer per document. A mapping or sequence
 * that carries an anchor remembers the span of JSON it produced and an alias
 * copies that span again; an anchored scalar keeps its raw text because an
 * alias may use it as a key, whose rules differ. Alias bombs are -E2BIG
 * two ways: go-yaml's own rule (too large a share of the nodes decoded come
 * from alias expansion: "document contains excessive aliasing"), counted
 * the same way here, and the buffer's cap (max_out), which bounds the work
 * whatever the aliases.
 *
 * Scalar rules, as go-yaml v2 resolve() and decode.go:
 *  - quoted, literal (|) and folded (>) scalars without a tag are strings;
 *  - plain scalars: y/Y/yes/Yes/YES/true/True/TRUE/on/On/ON are true,
 *    n/N/no/No/NO/false/False/FALSE/off/Off/OFF false (YAML 1.1: go-yaml v2
 *    has them in its resolve table and sigs.k8s.io/yaml documents that 'yes'
 *    and 'no' become booleans); ""/~/null/Null/NULL are null;
 *  - plain scalars starting with a digit or sign, underscores removed, are
 *    parsed as Go's strconv.ParseInt(s, 0, 64) does (0x, 0o, 0b prefixes and
 *    a leading 0 for octal), then ParseUint (up to 2^64-1), both goparse.c's,
 *    then as a float
 *    if they match [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?; so a
 *    decimal integer beyond 64 bits becomes a float64, written as encoding/
 *    json writes floats (shortest round-trip digits, exponent form below
 *    1e-6 and from 1e21 up), and a 0x/0o/0b literal beyond 64 bits or a
 *    number beyond float64's range (1e400) stays a string;
 *  - .inf, .nan and their variants are floats, which JSON cannot hold: error,
 *    as json.Marshal fails on them;
 *  - timestamps stay strings (go-yaml v2 keeps them as strings when decoding
 *    into interface{}); everything else is a string.
 * Tags !!str, !!int, !!float, !!bool, !!null and !!timestamp must match what
 * the value resolves to ("cannot decode !!str `x` as a !!int"), except that
 * !!float accepts an integer. Other tags, including "!", keep the text as a
 * string; tags on mappings and sequences are ignored.
 *
 * Mapping keys become strings as sigs.k8s.io/yaml converts them: a key
 * resolves like a value, then bools print as true/false, integers in
 * decimal and floats as strconv.FormatFloat(f, 'g', -1, 32) (so "1e+36",
 * ".inf"). Null keys, integer keys beyond int64 and non-scalar keys are
 * errors there and here.
 *
 * Deliberate differences from YAMLToJSON:
 *  - Duplicate keys (compared as the strings they become) are an error, as
 *    in YAMLToJSONStrict ("key already set in map"), go-yaml v3 and
 *    kustomize; plain YAMLToJSON silently keeps the last value, which hides
 *    mistakes. This also catches 1 and "1", which even the strict variant
 *    lets collide in map order.
 *  - The merge key "<<" is refused instead of merged.
 *  - !!binary keeps its base64 text; go-yaml decodes it (sigs.k8s.io/yaml
 *    documents !!binary as unsupported).
 *  - Members keep their document order; Go's encoder sorts them.
 *  - Nesting is limited to 127 levels, what sf_json_minify (yajl) accepts.
 *  - Strings are escaped by sf_buf_put_json_str, as yajl does: upper-case
 *    \u001B where Go writes \u001b, and <, > and & as they are where Go
 *    writes \u003c.
 *
 * Checked against sigs.k8s.io/yaml v1.6.0 over go.yaml.in/yaml/v2 (what
 * Kubernetes 1.37 uses): same JSON for every scalar case in test_yaml.c.
 */
#include "steadfast/yaml.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "steadfast/buf.h"
#include "steadfast/goparse.h"
#include "steadfast/strmap.h"

#define YAML_DEFAULT_MAX_OUT ((size_t)64 * 1024 * 1024)
#define YAML_MAX_FILE ((size_t)256 * 1024 * 1024)
#define YAML_MAX_DEPTH 127 /* yajl_gen's limit: sf_json_minify accepts the output */
#define YAML_TAG_PREFIX "tag:yaml.org,2002:"

/* ---- types ---- */

/* Tags a scalar may carry, and the kinds a value resolves to. */
enum ytag {
	T_NONE, /* no tag */
	T_STR,
	T_NULL,
	T_BOOL,
	T_INT,
	T_FLOAT,
	T_TIMESTAMP,
	T_MERGE,
	T_OTHER, /* "!", !!binary, local and unknown tags */
};

static const char *const tag_names[] = {"",        "!!str",       "!!null",  "!!bool", "!!int",
                                        "!!float", "!!timestamp", "!!merge", "!"};

enum { INT_S64, INT_U64 };

struct scalar {
	const char *v;
	size_t n;
	const char *tag; /* full form ("tag:yaml.org,2002:int"), NULL when none */
	int implicit;    /* plain, or tagged "!": subject to resolution */
	yaml_mark_t mark;
};

/* What a scalar resolved to. */
struct res {
	enum ytag t; /* T_NULL, T_BOOL, T_INT, T_FLOAT, T_STR or T_TIMESTAMP */
	int ik;      /* T_INT: INT_S64 or INT_U64 */
	int b;
	int64_t i;
	uint64_t u;
	double f;
};

/* A completed anchor: the JSON its collection produced, or the raw scalar
 * with its JSON as a value and as a key once known, so that each is worked
 * out once however often aliases repeat it (a long number used a million
 * times must not be parsed a million times). */
struct anchor {
	uint64_t seq; /* definition order: the latest definition wins */
	int kind;     /* 0 scalar, 1 sequence, 2 mapping */
	size_t off, len;
	struct scalar s; /* value and tag are copied after the struct */
	char *val, *key; /* malloc'd JSON texts, NULL until first needed */
	size_t vlen, klen;
	uint64_t nodes; /* go-yaml decode operations for the node, aliases expanded */
};

struct keyref {
	const char *p; /* set just before sorting */
	size_t off, len;
	size_t idx;
	yaml_mark_t mark;
};

struct frame {
	int map;
	size_t count; /* children completed (keys and values for a mapping) */
	size_t start; /* offset of its '[' or '{' */
	char *anchor; /* NULL, or the anchor being defined (open until the end) */
	uint64_t seq;
	uint64_t decodes; /* conv.decodes before this node */
	yaml_mark_t mark;
	struct keyref *keys; /* kept for reuse by the next frame at this level */
	size_t nkeys, capkeys;
};

struct conv {
	sf_buf out;         /* the current document's JSON */
	sf_buf tmp;         /* scratch: numbers without underscores */
	sf_strmap *anchors; /* name -> struct anchor, per document */
	uint64_t seq;
	uint64_t decodes, alias_decodes; /* go-yaml's decodeCount and aliasCount */
	size_t depth;
	struct frame stack[YAML_MAX_DEPTH];
	size_t max_out;
	locale_t cloc; /* "C" numeric locale for strtod/snprintf, or 0 */
	const char *in;
	size_t inlen;
	char *err;
	size_t errlen;
	int failed; /* err holds the message */
};

/* ---- errors ---- */

static int fail(struct conv *c, int rc, const yaml_mark_t *m, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Sets "line L column C: message" (the first error only) and returns rc. */
static int fail(struct conv *c, int rc, const yaml_mark_t *m, const char *fmt, ...)
{
	if (!c->failed && c->err && c->errlen) {
		int n = snprintf(c->err, c->errlen, "line %zu column %zu: ", m->line + 1,
		                 m->column + 1);
		if (n >= 0 && (size_t)n < c->errlen) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	c->failed = 1;
	return rc;
}

/* Length of s[0..n) cut to at most max bytes on a UTF-8 boundary, for
 * quoting input in messages. */
static int clip(const char *s, size_t n, size_t max)
{
	if (n > max) {
		n = max;
		while (n && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	return (int)n;
}

/* ---- tags and scalar resolution (go-yaml v2 resolve.go) ---- */

static enum ytag tag_kind(const char *tag)
{
	static const char prefix[] = YAML_TAG_PREFIX;
	if (!tag)
		return T_NONE;
	if (strncmp(tag, prefix, sizeof(prefix) - 1) != 0)
		return T_OTHER;
	const char *t = tag + sizeof(prefix) - 1;
	for (int k = T_STR; k <= T_MERGE; k++) {
		if (strcmp(t, tag_names[k] + 2) == 0)
			return (enum ytag)k;
	}
	return T_OTHER;
}

/* The first-character hint of resolve.go: 'S' sign, 'D' digit, 'M' maybe in
 * the table of words, '.' float (or in the table), 0 always a string. */
static char hint_of(char ch)
{
	if (ch == '+' || ch == '-')
		return 'S';
	if (ch >= '0' && ch <= '9')
		return 'D';
	if (ch == '.')
		return '.';
	if (ch && strchr("yYnNtTfFoO~", ch))
		return 'M';
	return 0;
}

static const struct {
	const char *s;
	enum ytag t;
	int v; /* bool value; float: 0 NaN, 1 +Inf, -1 -Inf */
} words[] = {
    {"y", T_BOOL, 1},       {"Y", T_BOOL, 1},       {"yes", T_BOOL, 1},     {"Yes", T_BOOL, 1},
    {"YES", T_BOOL, 1},     {"true", T_BOOL, 1},    {"True", T_BOOL, 1},    {"TRUE", T_BOOL, 1},
    {"on", T_BOOL, 1},      {"On", T_BOOL, 1},      {"ON", T_BOOL, 1},      {"n", T_BOOL, 0},
    {"N", T_BOOL, 0},       {"no", T_BOOL, 0},      {"No", T_BOOL, 0},      {"NO", T_BOOL, 0},
    {"false", T_BOOL, 0},   {"False", T_BOOL, 0},   {"FALSE", T_BOOL, 0},   {"off", T_BOOL, 0},
    {"Off", T_BOOL, 0},     {"OFF", T_BOOL, 0},     {"", T_NULL, 0},        {"~", T_NULL, 0},
    {"null", T_NULL, 0},    {"Null", T_NULL, 0},    {"NULL", T_NULL, 0},    {".nan", T_FLOAT, 0},
    {".NaN", T_FLOAT, 0},   {".NAN", T_FLOAT, 0},   {".inf", T_FLOAT, 1},   {".Inf", T_FLOAT, 1},
    {".INF", T_FLOAT, 1},   {"+.inf", T_FLOAT, 1},  {"+.Inf", T_FLOAT, 1},  {"+.INF", T_FLOAT, 1},
    {"-.inf", T_FLOAT, -1}, {"-.Inf", T_FLOAT, -1}, {"-.INF", T_FLOAT, -1},
};

static int lookup_word(const char *s, size_t n, struct res *r)
{
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (strlen(words[i].s) == n && memcmp(words[i].s, s, n) == 0) {
			r->t = words[i].t;
			r->b = words[i].v;
			if (r->t == T_FLOAT)
				r->f = words[i].v ? words[i].v * (double)INFINITY : (double)NAN;
			return 1;
		}
	}
	return 0;
}

static int is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static int digit_val(char ch)
{
	if (is_digit(ch))
		return ch - '0';
	ch = (char)(ch | 0x20);
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 10;
	return 99;
}

/* ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ (yamlStyleFloat). */
static int float_syntax(const char *s, size_t n)
{
	size_t i = 0;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		i++;
	size_t d0 = i;
	while (i < n && is_digit(s[i]))
		i++;
	if (i > d0) {
		if (i < n && s[i] == '.') {
			for (i++; i < n && is_digit(s[i]);)
				i++;
		}
	} else {
		if (i >= n || s[i] != '.')
			return 0;
		size_t f0 = ++i;
		while (i < n && is_digit(s[i]))
			i++;
		if (i == f0)
			return 0;
	}
	if (i < n && (s[i] | 0x20) == 'e') {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		size_t e0 = i;
		while (i < n && is_digit(s[i]))
			i++;
		if (i == e0)
			return 0;
	}
	return i == n;
}

/* strconv's underscoreOK: underscores only between digits. */
static int underscore_ok(const char *s, size_t n)
{
	char saw = '^';
	size_t i = 0;
	int hex = 0;
	if (n && (s[0] == '-' || s[0] == '+')) {
		s++;
		n--;
	}
	if (n >= 2 && s[0] == '0' &&
	    ((s[1] | 0x20) == 'b' || (s[1] | 0x20) == 'o' || (s[1] | 0x20) == 'x')) {
		i = 2;
		saw = '0';
		hex = (s[1] | 0x20) == 'x';
	}
	for (; i < n; i++) {
		if (is_digit(s[i]) || (hex && digit_val(s[i]) < 16)) {
			saw = '0';
			continue;
		}
		if (s[i] == '_') {
			if (saw != '0')
				return 0;
			saw = '_';
			continue;
		}
		if (saw == '_')
			return 0;
		saw = '!';
	}
	return saw != '_';
}

static int days_in(int mon, int year)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
	return days[mon - 1] + (mon == 2 && leap);
}

/* One or two digits (Go's getnum with fixed = false). */
static int num12(const char *s, size_t n, size_t *i, int *out)
{
	if (*i >= n || !is_digit(s[*i]))
		return 0;
	*out = s[(*i)++] - '0';
	if (*i < n && is_digit(s[*i]))
		*out = *out * 10 + (s[(*i)++] - '0');
	return 1;
}

/* go-yaml v2's parseTimestamp: the layouts 2006-1-2T15:4:5.999999999Z07:00
 * (T or t), "2006-1-2 15:4:5.999999999" and 2006-1-2, with time.Parse's
 * range checks. */
static int is_timestamp(const char *s, size_t n)
{
	size_t i = 0;
	int year = 0, mon, day, h, m, sec;
	while (i < n && is_digit(s[i]))
		i++;
	if (i != 4 || i == n || s[i] != '-')
		return 0;
	for (int k = 0; k < 4; k++)
		year = year * 10 + (s[k] - '0');
	i++;
	if (!num12(s, n, &i, &mon) || i >= n || s[i++] != '-' || !num12(s, n, &i, &day))
		return 0;
	if (mon < 1 || mon > 12 || day < 1 || day > days_in(mon, year))
		return 0;
	if (i == n)
		return 1;
	char sep = s[i++];
	if (sep != 'T' && sep != 't' && sep != ' ')
		return 0;
	if (!num12(s, n, &i, &h) || h > 23 || i >= n || s[i++] != ':')
		return 0;
	if (!num12(s, n, &i, &m) || m > 59 || i >= n || s[i++] != ':')
		return 0;
	if (!num12(s, n, &i, &sec) || sec > 59)
		return 0;
	if (i + 1 < n && (s[i] == '.' || s[i] == ',') && is_digit(s[i + 1])) {
		for (i++; i < n && is_digit(s[i]);)
			i++;
	}
	if (sep == ' ')
		return i == n;
	if (i < n && s[i] == 'Z')
		return i + 1 == n;
	if (n - i != 6 || (s[i] != '+' && s[i] != '-') || s[i + 3] != ':')
		return 0;
	if (!is_digit(s[i + 1]) || !is_digit(s[i + 2]) || !is_digit(s[i + 4]) ||
	    !is_digit(s[i + 5]))
		return 0;
	int zh = (s[i + 1] - '0') * 10 + (s[i + 2] - '0');
	int zm = (s[i + 4] - '0') * 10 + (s[i + 5] - '0');
	return zh <= 24 && zm <= 60;
}

/* strtod in the C locale: 0, or -ERANGE when the value overflows (Go's
 * ParseFloat fails then; an underflow to zero or a subnormal is fine). */
static int c_strtod(struct conv *c, const char *s, double *out)
{
	locale_t old = c->cloc ? uselocale(c->cloc) : (locale_t)0;
	errno = 0;
	double d = strtod(s, NULL);
	int e = errno;
	if (old)
		uselocale(old);
	if (e == ERANGE && isinf(d))
		return -ERANGE;
	*out = d;
	return 0;
}

/* The number rules for a plain scalar starting with a digit or sign. */
static int resolve_number(struct conv *c, const struct scalar *s, enum ytag tag, struct res *r)
{
	if ((tag == T_NONE || tag == T_TIMESTAMP) && is_timestamp(s->v, s->n)) {
		r->t = T_TIMESTAMP;
		return 0;
	}
	sf_buf_reset(&c->tmp);
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i] != '_' && sf_buf_putc(&c->tmp, s->v[i]))
			return -ENOMEM;
	}
	const char *p = c->tmp.data ? c->tmp.data : "";
	size_t n = c->tmp.len;
	if (sf_go_parse_int(p, n, 0, &r->i) == 0) {
		r->t = T_INT;
		r->ik = INT_S64;
		return 0;
	}
	if (sf_go_parse_uint(p, n, 0, &r->u) == 0) {
		r->t = T_INT;
		r->ik = INT_U64;
		return 0;
	}
	if (float_syntax(p, n) && c_strtod(c, p, &r->f) == 0)
		r->t = T_FLOAT;
	return 0;
}

/* A float starting with '.': strconv.ParseFloat on the text as written. */
static int resolve_dot(struct conv *c, const struct scalar *s, struct res *r)
{
	if (memchr(s->v, '_', s->n) && !underscore_ok(s->v, s->n))
		return 0;
	sf_buf_reset(&c->tmp);
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i] != '_' && sf_buf_putc(&c->tmp, s->v[i]))
			return -ENOMEM;
	}
	if (c->tmp.data && float_syntax(c->tmp.data, c->tmp.len) &&
	    c_strtod(c, c->tmp.data, &r->f) == 0)
		r->t = T_FLOAT;
	return 0;
}

/* Resolves a scalar as go-yaml v2 does (d.scalar and resolve). */
static int resolve(struct conv *c, const struct scalar *s, struct res *r)
{
	memset(r, 0, sizeof(*r));
	r->t = T_STR;
	if (!s->tag && !s->implicit)
		return 0; /* quoted or block scalar */
	enum ytag tag = tag_kind(s->tag);
	if (tag == T_STR || tag == T_MERGE || tag == T_OTHER)
		return 0;
	char hint = s->n ? hint_of(s->v[0]) : 'N';
	int rc = 0;
	if (hint && !lookup_word(s->v, s->n, r)) {
		if (hint == '.')
			rc = resolve_dot(c, s, r);
		else if (hint == 'D' || hint == 'S')
			rc = resolve_number(c, s, tag, r);
	}
	if (rc || tag == T_NONE || tag == r->t)
		return rc;
	if (tag == T_FLOAT && r->t == T_INT && r->ik == INT_S64) {
		r->t = T_FLOAT;
		r->f = (double)r->i;
		return 0;
	}
	return fail(c, -EBADMSG, &s->mark, "cannot decode %s `%.*s%s` as a %s", tag_names[r->t],
	            clip(s->v, s->n, 40), s->v, s->n > 40 ? "..." : "", tag_names[tag]);
}

/* ---- number output ---- */

/* Shortest decimal digits (no point, no trailing zeros) that read back as
 * v > 0, as a float when single. Returns the exponent of the first digit. */
static int shortest_digits(struct conv *c, double v, int single, char dig[32])
{
	char tmp[48];
	locale_t old = c->cloc ? uselocale(c->cloc) : (locale_t)0;
	for (int prec = 0; prec <= 16; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec, v);
		if (single ? strtof(tmp, NULL) == (float)v : strtod(tmp, NULL) == v)
			break;
	}
	if (old)
		uselocale(old);
	size_t k = 0;
	const char *p = tmp;
	for (; *p && *p != 'e' && k < 31; p++) {
		if (is_digit(*p))
			dig[k++] = *p;
	}
	while (k > 1 && dig[k - 1] == '0')
		k--;
	dig[k] = '\0';
	return *p == 'e' ? atoi(p + 1) : 0;
}

/* strconv's %e layout of the digits: d[.ddd]e±XX; pad: at least two
 * exponent digits. */
static size_t fmt_e(char *s, const char *dig, int exp, int pad)
{
	size_t k = 0;
	s[k++] = dig[0];
	if (dig[1]) {
		s[k++] = '.';
		for (const char *d = dig + 1; *d; d++)
			s[k++] = *d;
	}
	s[k++] = 'e';
	s[k++] = exp < 0 ? '-' : '+';
	int a = exp < 0 ? -exp : exp;
	if (pad && a < 10)
		s[k++] = '0';
	k += (size_t)snprintf(s + k, 8, "%d", a);
	return k;
}

/* strconv's %f layout of the digits, the first one worth 10^exp. */
static size_t fmt_f(char *s, const char *dig, int exp)
{
	size_t k = 0, nd = strlen(dig);
	long dp = (long)exp + 1;
	if (dp <= 0) {
		s[k++] = '0';
		s[k++] = '.';
		for (long i = dp; i < 0; i++)
			s[k++] = '0';
		memcpy(s + k, dig, nd);
		return k + nd;
	}
	for (long i = 0; i < dp; i++)
		s[k++] = (size_t)i < nd ? dig[i] : '0';
	if ((size_t)dp < nd) {
		s[k++] = '.';
		for (size_t i = (size_t)dp; i < nd; i++)
			s[k++] = dig[i];
	}
	return k;
}

/* A finite float64 as encoding/json writes it. */
static int put_json_float(struct conv *c, double v)
{
	char s[64], dig[32];
	size_t k = 0;
	if (signbit(v)) {
		s[k++] = '-';
		v = -v;
	}
	if (v == 0) {
		s[k++] = '0';
		return sf_buf_append(&c->out, s, k);
	}
	int exp = shortest_digits(c, v, 0, dig);
	if (v < 1e-6 || v >= 1e21)
		k += fmt_e(s + k, dig, exp, exp >= 0);
	else
		k += fmt_f(s + k, dig, exp);
	return sf_buf_append(&c->out, s, k);
}

/* A float key as sigs.k8s.io/yaml writes it: FormatFloat(f, 'g', -1, 32),
 * with Go's +Inf/-Inf/NaN spelled .inf/-.inf/.nan. Returns its length. */
static size_t key_float(struct conv *c, double d, char s[64])
{
	float f = (float)d;
	size_t k = 0;
	if (isnan(f) || isinf(f)) {
		const char *w = isnan(f) ? ".nan" : f > 0 ? ".inf" : "-.inf";
		memcpy(s, w, strlen(w));
		return strlen(w);
	}
	if (signbit(f)) {
		s[k++] = '-';
		f = -f;
	}
	if (f == 0) {
		s[k++] = '0';
		return k;
	}
	char dig[32];
	int exp = shortest_digits(c, (double)f, 1, dig);
	if (exp < -4 || exp >= 6)
		return k + fmt_e(s + k, dig, exp, 1);
	return k + fmt_f(s + k, dig, exp);
}

/* ---- scalars as values and keys ---- */

static int put_value(struct conv *c, const struct scalar *s)
{
	struct res r;
	int rc = resolve(c, s, &r);
	if (rc)
		return rc;
	switch (r.t) {
	case T_NULL: return sf_buf_append(&c->out, "null", 4);
	case T_BOOL: return sf_buf_puts(&c->out, r.b ? "true" : "false");
	case T_INT:
		if (r.ik == INT_S64)
			return sf_buf_printf(&c->out, "%" PRId64, r.i);
		return sf_buf_printf(&c->out, "%" PRIu64, r.u);
	case T_FLOAT:
		if (!isfinite(r.f))
			return fail(
			    c, -EBADMSG, &s->mark, "`%.*s` (%s) cannot be represented in JSON",
			    clip(s->v, s->n, 40), s->v, isnan(r.f) ? "not a number" : "infinity");
		return put_json_float(c, r.f);
	default: return sf_buf_put_json_str(&c->out, s->v, s->n);
	}
}

/* merge: the "<<" key of YAML 1.1 (go-yaml's isMerge; not through an alias) */
static int put_key(struct conv *c, const struct scalar *s, int alias)
{
	if (!alias && s->n == 2 && memcmp(s->v, "<<", 2) == 0 &&
	    (s->implicit || tag_kind(s->tag) == T_MERGE))
		return fail(c, -EBADMSG, &s->mark,
		            "merge keys (<<) are not supported: write the merged keys out");
	struct res r;
	int rc = resolve(c, s, &r);
	if (rc)
		return rc;
	char buf[64];
	switch (r.t) {
	case T_NULL: return fail(c, -EBADMSG, &s->mark, "a null mapping key cannot be a JSON key");
	case T_BOOL: return sf_buf_put_json_str(&c->out, r.b ? "true" : "false", r.b ? 4 : 5);
	case T_INT:
		if (r.ik != INT_S64)
			return fail(c, -EBADMSG, &s->mark,
			            "mapping key `%.*s%s` is an integer beyond int64, which "
			            "sigs.k8s.io/yaml cannot use as a key",
			            clip(s->v, s->n, 40), s->v, s->n > 40 ? "..." : "");
		snprintf(buf, sizeof(buf), "%" PRId64, r.i);
		return sf_buf_put_json_str(&c->out, buf, strlen(buf));
	case T_FLOAT: {
		size_t n = key_float(c, r.f, buf);
		return sf_buf_put_json_str(&c->out, buf, n);
	}
	default: return sf_buf_put_json_str(&c->out, s->v, s->n);
	}
}

/* ---- anchors ---- */

/* go-yaml v2's allowedAliasRatio: the share of decode operations that may
 * come from alias expansion, 99% up to 400,000 operations, then falling
 * linearly to 10% at 4,000,000. */
static double allowed_alias_ratio(uint64_t decodes)
{
	if (decodes <= 400000)
		return 0.99;
	if (decodes >= 4000000)
		return 0.10;
	return 0.99 - 0.89 * ((double)(decodes - 400000) / (double)(4000000 - 400000));
}

static void free_anchor(void *p)
{
	struct anchor *a = p;
	if (a) {
		free(a->val);
		free(a->key);
		free(a);
	}
}

/* Keeps a copy of out[off..) (the JSON just written) in *text. */
static int keep_text(struct conv *c, size_t off, char **text, size_t *len)
{
	*len = c->out.len - off;
	*text = malloc(*len ? *len : 1);
	if (!*text)
		return -ENOMEM;
	memcpy(*text, c->out.data + off, *len);
	return 0;
}

/* Stores a completed anchor, unless a later definition of the same name is
 * already there (an inner redefinition inside the anchored collection).
 * Takes a. */
static int anchor_put(struct conv *c, const char *name, struct anchor *a)
{
	struct anchor *cur = sf_strmap_get(c->anchors, name);
	if (cur && cur->seq > a->seq) {
		free_anchor(a);
		return 0;
	}
	void *old = NULL;
	int rc = sf_strmap_put(c->anchors, name, a, &old);
	if (rc < 0) {
		free_anchor(a);
		return rc;
	}
	if (rc == 0)
		free_anchor(old);
	return 0;
}

/* Anchors a scalar just written at out[off..) as a key or a value. */
static int anchor_scalar(struct conv *c, const char *name, const struct scalar *s, int key,
                         size_t off)
{
	size_t tl = s->tag ? strlen(s->tag) + 1 : 0;
	struct anchor *a = malloc(sizeof(*a) + s->n + 1 + tl);
	if (!a)
		return -ENOMEM;
	a->val = a->key = NULL;
	a->vlen = a->klen = 0;
	int rc = key ? keep_text(c, off, &a->key, &a->klen) : keep_text(c, off, &a->val, &a->vlen);
	if (rc) {
		free(a);
		return rc;
	}
	char *v = (char *)(a + 1);
	memcpy(v, s->v, s->n);
	v[s->n] = '\0';
	a->seq = ++c->seq;
	a->nodes = 1;
	a->kind = 0;
	a->off = a->len = 0;
	a->s = *s;
	a->s.v = v;
	a->s.tag = NULL;
	if (s->tag) {
		memcpy(v + s->n + 1, s->tag, tl);
		a->s.tag = v + s->n + 1;
	}
	return anchor_put(c, name, a);
}

/* Copies out[off..off+len) to the end of out (which may move). */
static int copy_span(sf_buf *b, size_t off, size_t len)
{
	char chunk[4096];
	while (len) {
		size_t k = len < sizeof(chunk) ? len : sizeof(chunk);
		memcpy(chunk, b->data + off, k);
		int rc = sf_buf_append(b, chunk, k);
		if (rc)
			return rc;
		off += k;
		len -= k;
	}
	return 0;
}

/* ---- structure ---- */

/* Before a node: is it a key (kind 1 sequence, 2 mapping may not be), and
 * the separator it needs. */
static int begin_node(struct conv *c, const yaml_mark_t *m, int kind, int *key)
{
	*key = 0;
	if (!c->depth)
		return 0;
	struct frame *f = &c->stack[c->depth - 1];
	if (f->map && f->count % 2 == 0) {
		*key = 1;
		if (kind)
			return fail(c, -EBADMSG, m, "mapping keys must be scalars, not a %s",
			            kind == 2 ? "mapping" : "sequence");
	}
	if (f->count && !(f->map && f->count % 2))
		return sf_buf_putc(&c->out, ',');
	return 0;
}

/* After a node: a key records where its text is and gets its ':'. */
static int end_node(struct conv *c, int key, size_t koff, const yaml_mark_t *m)
{
	if (!c->depth)
		return 0;
	struct frame *f = &c->stack[c->depth - 1];
	if (key) {
		if (f->nkeys == f->capkeys) {
			size_t cap = f->capkeys ? f->capkeys * 2 : 16;
			struct keyref *k = realloc(f->keys, cap * sizeof(*k));
			if (!k)
				return -ENOMEM;
			f->keys = k;
			f->capkeys = cap;
		}
		f->keys[f->nkeys] = (struct keyref){NULL, koff, c->out.len - koff, f->nkeys, *m};
		f->nkeys++;
		int rc = sf_buf_putc(&c->out, ':');
		if (rc)
			return rc;
	}
	f->count++;
	return 0;
}

static int key_cmp(const void *a, const void *b)
{
	const struct keyref *x = a, *y = b;
	int r = memcmp(x->p, y->p, x->len < y->len ? x->len : y->len);
	if (r)
		return r;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int same_key(const struct keyref *x, const struct keyref *y)
{
	return x->len == y->len && memcmp(x->p, y->p, x->len) == 0;
}

/* Duplicate keys (compared as the JSON strings they became) are an error
 * (see the top of the file). Reports the earliest repetition. */
static int check_dups(struct conv *c, struct frame *f)
{
	if (f->nkeys < 2)
		return 0;
	for (size_t i = 0; i < f->nkeys; i++)
		f->keys[i].p = c->out.data + f->keys[i].off;
	qsort(f->keys, f->nkeys, sizeof(f->keys[0]), key_cmp);
	const struct keyref *dup = NULL, *first = NULL;
	size_t g = 0;
	for (size_t i = 1; i < f->nkeys; i++) {
		if (!same_key(&f->keys[g], &f->keys[i])) {
			g = i;
		} else if (i == g + 1 && (!dup || f->keys[i].idx < dup->idx)) {
			dup = &f->keys[i];
			first = &f->keys[g];
		}
	}
	if (!dup)
		return 0;
	return fail(c, -EBADMSG, &dup->mark,
	            "duplicate mapping key %.*s%s (first at line %zu column %zu)",
	            clip(dup->p, dup->len, 60), dup->p, dup->len > 60 ? "...\"" : "",
	            first->mark.line + 1, first->mark.column + 1);
}

static int on_scalar(struct conv *c, const yaml_event_t *ev)
{
	struct scalar s = {(const char *)ev->data.scalar.value, ev->data.scalar.length,
	                   (const char *)ev->data.scalar.tag, ev->data.scalar.plain_implicit,
	                   ev->start_mark};
	int key;
	int rc = begin_node(c, &ev->start_mark, 0, &key);
	if (rc)
		return rc;
	c->decodes++;
	size_t koff = c->out.len;
	rc = key ? put_key(c, &s, 0) : put_value(c, &s);
	if (!rc && ev->data.scalar.anchor)
		rc = anchor_scalar(c, (const char *)ev->data.scalar.anchor, &s, key, koff);
	return rc ? rc : end_node(c, key, koff, &ev->start_mark);
}

static int on_alias(struct conv *c, const yaml_event_t *ev)
{
	const char *name = (const char *)ev->data.alias.anchor;
	struct anchor *a = sf_strmap_get(c->anchors, name);
	for (size_t i = 0; i < c->depth; i++) {
		const struct frame *f = &c->stack[i];
		if (f->anchor && strcmp(f->anchor, name) == 0 && (!a || f->seq > a->seq))
			return fail(c, -EBADMSG, &ev->start_mark,
			            "anchor '%s' value contains itself", name);
	}
	if (!a)
		return fail(c, -EBADMSG, &ev->start_mark, "unknown anchor '%s' referenced", name);
	/* go-yaml counts the alias and every node it expands to, and refuses a
	 * document where too many come from aliases; the count only grows
	 * during an expansion, so checking once after it is the same */
	c->decodes += 1 + a->nodes;
	c->alias_decodes += a->nodes;
	if (c->alias_decodes > 100 && c->decodes > 1000 &&
	    (double)c->alias_decodes / (double)c->decodes > allowed_alias_ratio(c->decodes))
		return fail(c, -E2BIG, &ev->start_mark,
		            "document contains excessive aliasing (%" PRIu64 " of %" PRIu64
		            " nodes come from aliases)",
		            c->alias_decodes, c->decodes);
	int key;
	int rc = begin_node(c, &ev->start_mark, a->kind, &key);
	if (rc)
		return rc;
	size_t koff = c->out.len;
	if (a->kind == 0) {
		char **text = key ? &a->key : &a->val;
		size_t *tlen = key ? &a->klen : &a->vlen;
		if (*text) {
			rc = sf_buf_append(&c->out, *text, *tlen);
		} else {
			struct scalar s = a->s;
			s.mark = ev->start_mark;
			rc = key ? put_key(c, &s, 1) : put_value(c, &s);
			if (!rc)
				rc = keep_text(c, koff, text, tlen);
		}
	} else {
		rc = copy_span(&c->out, a->off, a->len);
	}
	return rc ? rc : end_node(c, key, koff, &ev->start_mark);
}

static int on_start(struct conv *c, const yaml_event_t *ev, int map)
{
	int key;
	int rc = begin_node(c, &ev->start_mark, map ? 2 : 1, &key);
	if (rc)
		return rc;
	if (c->depth == YAML_MAX_DEPTH)
		return fail(c, -EBADMSG, &ev->start_mark, "nested deeper than %d levels",
		            YAML_MAX_DEPTH);
	const yaml_char_t *anchor =
	    map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
	struct frame *f = &c->stack[c->depth++];
	f->map = map;
	f->count = 0;
	f->nkeys = 0;
	f->start = c->out.len;
	f->decodes = c->decodes++;
	f->mark = ev->start_mark;
	f->anchor = NULL;
	if (anchor) {
		f->anchor = strdup((const char *)anchor);
		if (!f->anchor)
			return -ENOMEM;
		f->seq = ++c->seq;
	}
	return sf_buf_putc(&c->out, map ? '{' : '[');
}

static int on_end(struct conv *c)
{
	struct frame *f = &c->stack[c->depth - 1];
	int rc = sf_buf_putc(&c->out, f->map ? '}' : ']');
	if (!rc && f->map)
		rc = check_dups(c, f);
	if (rc)
		return rc;
	if (f->anchor) {
		struct anchor *a = malloc(sizeof(*a));
		if (a) {
			memset(a, 0, sizeof(*a));
			a->seq = f->seq;
			a->kind = f->map ? 2 : 1;
			a->off = f->start;
			a->len = c->out.len - f->start;
			a->nodes = c->decodes - f->decodes;
			rc = anchor_put(c, f->anchor, a);
		} else {
			rc = -ENOMEM;
		}
		free(f->anchor);
		f->anchor = NULL;
		if (rc)
			return rc;
	}
	c->depth--;
	return end_node(c, 0, 0, &f->mark);
}

static void doc_reset(struct conv *c)
{
	for (size_t i = 0; i < c->depth; i++) {
		free(c->stack[i].anchor);
		c->stack[i].anchor = NULL;
	}
	c->depth = 0;
	c->decodes = 1; /* the document node */
	c->alias_decodes = 0;
	sf_buf_reset(&c->out);
	if (c->anchors)
		sf_strmap_clear(c->anchors, free_anchor);
}

static int on_event(struct conv *c, const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT: doc_reset(c); return 0;
	case YAML_SCALAR_EVENT: return on_scalar(c, ev);
	case YAML_ALIAS_EVENT: return on_alias(c, ev);
	case YAML_SEQUENCE_START_EVENT: return on_start(c, ev, 0);
	case YAML_MAPPING_START_EVENT: return on_start(c, ev, 1);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT: return c->depth ? on_end(c) : -EBADMSG;
	default: return 0;
	}
}

/* libyaml's error as "line L column C: problem (context at line ...)". */
static int parser_error(struct conv *c, const yaml_parser_t *p)
{
	const char *problem = p->problem ? p->problem : "malformed YAML";
	if (p->error == YAML_MEMORY_ERROR) {
		sf_errf(c->err, c->errlen, "out of memory");
		c->failed = 1;
		return -ENOMEM;
	}
	if (p->error == YAML_READER_ERROR) {
		/* only a byte offset: count lines and characters up to it */
		yaml_mark_t m = {p->problem_offset, 0, 0};
		for (size_t i = 0; i < p->problem_offset && i < c->inlen; i++) {
			if (c->in[i] == '\n') {
				m.line++;
				m.column = 0;
			} else if (((unsigned char)c->in[i] & 0xC0) != 0x80) {
				m.column++;
			}
		}
		if (p->problem_value != -1)
			return fail(c, -EBADMSG, &m, "%s (byte %zu: #%X)", problem,
			            p->problem_offset, (unsigned)p->problem_value);
		return fail(c, -EBADMSG, &m, "%s (byte %zu)", problem, p->problem_offset);
	}
	if (p->context)
		return fail(c, -EBADMSG, &p->problem_mark, "%s (%s at line %zu column %zu)",
		            problem, p->context, p->context_mark.line + 1,
		            p->context_mark.column + 1);
	return fail(c, -EBADMSG, &p->problem_mark, "%s", problem);
}

int sf_yaml_to_json(const char *yaml, size_t len, size_t max_out, sf_yaml_doc_fn fn, void *ud,
                    char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	struct conv *c = calloc(1, sizeof(*c));
	if (!c) {
		sf_errf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->max_out = max_out ? max_out : YAML_DEFAULT_MAX_OUT;
	sf_buf_init(&c->out, c->max_out);
	sf_buf_init(&c->tmp, 0);
	c->in = yaml ? yaml : "";
	c->inlen = yaml ? len : 0;
	c->err = err;
	c->errlen = errlen;
	c->cloc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);

	yaml_parser_t p;
	int rc = sf_strmap_new(0, 0, &c->anchors);
	if (!rc && !yaml_parser_initialize(&p))
		rc = -ENOMEM;
	if (rc) {
		sf_errf(err, errlen, "out of memory");
		goto out;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)c->in, c->inlen);
	size_t ndoc = 0;
	for (;;) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&p, &ev)) {
			rc = parser_error(c, &p);
			break;
		}
		rc = on_event(c, &ev);
		if (rc && !c->failed) {
			if (rc == -E2BIG)
				rc = fail(c, rc, &ev.start_mark,
				          "the document's JSON would exceed %zu bytes (aliases "
				          "expanding too much?)",
				          c->max_out);
			else
				rc = fail(c, rc, &ev.start_mark, "%s",
				          rc == -ENOMEM ? "out of memory" : strerror(-rc));
		}
		if (!rc && ev.type == YAML_DOCUMENT_END_EVENT && c->out.data &&
		    !(c->out.len == 4 && memcmp(c->out.data, "null", 4) == 0)) {
			/* not empty and not just null: deliver it */
			if (fn)
				rc = fn(ud, ndoc, c->out.data, c->out.len);
			ndoc++;
		}
		int end = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
		if (rc || end)
			break;
	}
	yaml_parser_delete(&p);
out:
	doc_reset(c);
	for (size_t i = 0; i < YAML_MAX_DEPTH; i++)
		free(c->stack[i].keys);
	sf_strmap_free(c->anchors, free_anchor);
	sf_buf_free(&c->out);
	sf_buf_free(&c->tmp);
	if (c->cloc)
		freelocale(c->cloc);
	free(c);
	return rc;
}

/* ---- files and single documents ---- */

static int read_all(const char *path, sf_buf *b)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int rc = fstat(fd, &st) ? -errno : S_ISDIR(st.st_mode) ? -EISDIR : 0;
	char chunk[65536];
	while (!rc) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : 0;
			break;
		}
		rc = sf_buf_append(b, chunk, (size_t)n);
	}
	close(fd);
	return rc;
}

int sf_yaml_file_to_json(const char *path, size_t max_out, sf_yaml_doc_fn fn, void *ud, char *err,
                         size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	sf_buf in;
	sf_buf_init(&in, YAML_MAX_FILE);
	int rc = read_all(path, &in);
	if (rc == -E2BIG) {
		sf_errf(err, errlen, "%s: file larger than %zu MiB", path, YAML_MAX_FILE >> 20);
		rc = -EFBIG;
	} else if (rc) {
		sf_errf(err, errlen, "%s: %s", path, strerror(-rc));
	} else {
		char sub[512] = "";
		rc = sf_yaml_to_json(in.data, in.len, max_out, fn, ud, sub, sizeof(sub));
		if (sub[0])
			sf_errf(err, errlen, "%s: %s", path, sub);
	}
	sf_buf_free(&in);
	return rc;
}

static int one_doc(void *ud, size_t idx, const char *json, size_t len)
{
	(void)idx;
	char **out = ud;
	*out = malloc(len + 1);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, json, len + 1);
	return 1;
}

char *sf_yaml_one_to_json(const char *yaml, size_t len, char *err, size_t errlen)
{
	char *json = NULL;
	int rc = sf_yaml_to_json(yaml, len, 0, one_doc, &json, err, errlen);
	if (rc == 1)
		return json;
	if (rc == 0)
		sf_errf(err, errlen, "no YAML document (the input is empty or only null)");
	else if (rc == -ENOMEM && err && errlen && !err[0])
		sf_errf(err, errlen, "out of memory");
	return NULL;
}
