/*
 * prom.c - the Prometheus text format for /metrics (see prom.h).
 *
 * A family keeps its sample lines already written out, in a buffer of its
 * own, so samples added by different modules land under the one HELP/TYPE
 * header; rendering concatenates the families in declaration order. The
 * format is the one documented with Prometheus ("Exposition formats", text
 * format 0.0.4).
 */
#include "steadfast/prom.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sf_prom_family {
	sf_prom *p;
	struct sf_prom_family *next;
	char *name, *help;
	sf_prom_type type;
	sf_buf samples;
};

struct sf_prom {
	sf_prom_family *first, **last;
	int err;
};

static const char *const type_names[] = {"counter", "gauge", "histogram"};

void sf_prom_hist_init(sf_prom_hist *h, const double *bounds, size_t n)
{
	memset(h, 0, sizeof(*h));
	h->bounds = bounds;
	h->n = n < SF_PROM_HIST_MAX ? n : SF_PROM_HIST_MAX;
}

void sf_prom_hist_observe(sf_prom_hist *h, double v)
{
	size_t i = 0;
	while (i < h->n && v > h->bounds[i])
		i++;
	h->counts[i]++;
	h->count++;
	h->sum += v;
}

sf_prom *sf_prom_new(void)
{
	sf_prom *p = calloc(1, sizeof(*p));
	if (p)
		p->last = &p->first;
	return p;
}

void sf_prom_free(sf_prom *p)
{
	if (!p)
		return;
	sf_prom_family *f = p->first;
	while (f) {
		sf_prom_family *next = f->next;
		free(f->name);
		free(f->help);
		sf_buf_free(&f->samples);
		free(f);
		f = next;
	}
	free(p);
}

static int fail(sf_prom *p, int err)
{
	if (!p->err)
		p->err = err;
	return p->err;
}

sf_prom_family *sf_prom_family_get(sf_prom *p, const char *name, sf_prom_type type,
                                   const char *help)
{
	if (p->err)
		return NULL;
	if (!help)
		help = "";
	for (sf_prom_family *f = p->first; f; f = f->next) {
		if (strcmp(f->name, name) != 0)
			continue;
		if (f->type != type || strcmp(f->help, help) != 0) {
			fail(p, -EINVAL);
			return NULL;
		}
		return f;
	}
	sf_prom_family *f = calloc(1, sizeof(*f));
	if (f) {
		f->name = strdup(name);
		f->help = strdup(help);
	}
	if (!f || !f->name || !f->help) {
		if (f) {
			free(f->name);
			free(f->help);
		}
		free(f);
		fail(p, -ENOMEM);
		return NULL;
	}
	f->p = p;
	f->type = type;
	sf_buf_init(&f->samples, 0);
	*p->last = f;
	p->last = &f->next;
	return f;
}

/* Backslash and newline always; the double quote too in label values. */
static int put_escaped(sf_buf *b, const char *s, int quote)
{
	int rc = 0;
	size_t run = 0, i = 0;
	for (; s[i] && !rc; i++) {
		const char *esc = NULL;
		if (s[i] == '\\')
			esc = "\\\\";
		else if (s[i] == '\n')
			esc = "\\n";
		else if (s[i] == '"' && quote)
			esc = "\\\"";
		if (!esc)
			continue;
		rc = sf_buf_append(b, s + run, i - run);
		if (!rc)
			rc = sf_buf_append(b, esc, 2);
		run = i + 1;
	}
	return rc ? rc : sf_buf_append(b, s + run, i - run);
}

/* name{a="x",b="y"[,le="..."]} with a space after: the start of a line. */
static int put_series(sf_buf *b, const char *name, const char *suffix, const char *const *labels,
                      const char *le)
{
	int rc = sf_buf_puts(b, name);
	if (!rc)
		rc = sf_buf_puts(b, suffix);
	int n = 0;
	for (size_t i = 0; !rc && labels && labels[i] && labels[i + 1]; i += 2, n++) {
		rc = sf_buf_printf(b, "%s%s=\"", n ? "," : "{", labels[i]);
		if (!rc)
			rc = put_escaped(b, labels[i + 1], 1);
		if (!rc)
			rc = sf_buf_putc(b, '"');
	}
	if (!rc && le)
		rc = sf_buf_printf(b, "%sle=\"%s\"", n++ ? "," : "{", le);
	if (!rc && n)
		rc = sf_buf_putc(b, '}');
	return rc ? rc : sf_buf_putc(b, ' ');
}

/* A sample value as the text format spells it: integers exactly, other
 * values with six decimals, NaN and +-Inf by name. */
static const char *fmt_u(char *buf, size_t n, uint64_t v)
{
	snprintf(buf, n, "%llu", (unsigned long long)v);
	return buf;
}

static const char *fmt_f(char *buf, size_t n, double v)
{
	if (isnan(v))
		return "NaN";
	if (isinf(v))
		return v > 0 ? "+Inf" : "-Inf";
	if (v == floor(v) && fabs(v) < 9007199254740992.0)
		snprintf(buf, n, "%.0f", v);
	else
		snprintf(buf, n, "%.6f", v);
	return buf;
}

/* One sample line of f: name+suffix, labels (and le), the value. */
static int add_line(sf_prom_family *f, const char *suffix, const char *const *labels,
                    const char *le, const char *value)
{
	if (!f)
		return -EINVAL;
	if (f->p->err)
		return f->p->err;
	int rc = put_series(&f->samples, f->name, suffix, labels, le);
	if (!rc)
		rc = sf_buf_puts(&f->samples, value);
	if (!rc)
		rc = sf_buf_putc(&f->samples, '\n');
	return rc ? fail(f->p, rc) : 0;
}

int sf_prom_add_u(sf_prom_family *f, const char *const *labels, uint64_t v)
{
	char buf[32];
	return add_line(f, "", labels, NULL, fmt_u(buf, sizeof(buf), v));
}

int sf_prom_add_f(sf_prom_family *f, const char *const *labels, double v)
{
	char buf[64];
	return add_line(f, "", labels, NULL, fmt_f(buf, sizeof(buf), v));
}

int sf_prom_add_hist(sf_prom_family *f, const char *const *labels, const sf_prom_hist *h)
{
	if (f && !f->p->err && (f->type != SF_PROM_HISTOGRAM || h->n > SF_PROM_HIST_MAX))
		return fail(f->p, -EINVAL);
	uint64_t cum = 0;
	char le[32], buf[64];
	int rc = 0;
	for (size_t i = 0; i <= h->n && !rc; i++) {
		if (i < h->n)
			snprintf(le, sizeof(le), "%g", h->bounds[i]);
		else
			snprintf(le, sizeof(le), "+Inf");
		cum += h->counts[i];
		rc = add_line(f, "_bucket", labels, le, fmt_u(buf, sizeof(buf), cum));
	}
	if (!rc)
		rc = add_line(f, "_sum", labels, NULL, fmt_f(buf, sizeof(buf), h->sum));
	if (!rc)
		rc = add_line(f, "_count", labels, NULL, fmt_u(buf, sizeof(buf), h->count));
	return rc;
}

int sf_prom_render(const sf_prom *p, sf_buf *out)
{
	if (p->err)
		return p->err;
	int rc = 0;
	for (const sf_prom_family *f = p->first; f && !rc; f = f->next) {
		rc = sf_buf_printf(out, "# HELP %s ", f->name);
		if (!rc)
			rc = put_escaped(out, f->help, 0);
		if (!rc)
			rc = sf_buf_printf(out, "\n# TYPE %s %s\n", f->name, type_names[f->type]);
		if (!rc && f->samples.len)
			rc = sf_buf_append(out, f->samples.data, f->samples.len);
	}
	return rc;
}
