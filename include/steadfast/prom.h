/*
 * prom.h - the Prometheus text format (version 0.0.4) that /metrics serves.
 *
 * Every module keeps its counters in its own structs; when /metrics is
 * scraped the manager makes one sf_prom and each module adds its families
 * and samples to it, then the manager renders it once. Declaring a family
 * that is already there (same name, type and help: another module, or a
 * second instance of one) returns the same family, so every family gets
 * exactly one `# HELP` and `# TYPE` line with all its samples below them.
 * Families come out in the order first declared, samples in the order
 * added; a family with no samples is its HELP and TYPE lines alone.
 *
 * Escaping is the text format's: label values escape backslash, double
 * quote and newline; HELP text escapes backslash and newline.
 *
 * Errors stick: the first failure (-ENOMEM, -EINVAL for a family declared
 * again with another type or help, or for a histogram with too many
 * buckets) is kept, later calls do nothing, and sf_prom_render returns it.
 * So callers may add a run of samples and check once.
 */
#ifndef STEADFAST_PROM_H
#define STEADFAST_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "steadfast/buf.h"

typedef struct sf_prom sf_prom;
typedef struct sf_prom_family sf_prom_family;

typedef enum { SF_PROM_COUNTER, SF_PROM_GAUGE, SF_PROM_HISTOGRAM } sf_prom_type;

/* A histogram's state, for a module to keep and observe into. bounds are
 * the ascending upper bounds (borrowed, usually a static array); counts are
 * per bucket, not cumulative, with counts[n] for the values above the last
 * bound (+Inf). */
#define SF_PROM_HIST_MAX 16
typedef struct sf_prom_hist {
	const double *bounds;
	size_t n; /* at most SF_PROM_HIST_MAX */
	uint64_t counts[SF_PROM_HIST_MAX + 1];
	uint64_t count;
	double sum;
} sf_prom_hist;

/* An empty histogram over bounds[0..n-1] (n is cut to SF_PROM_HIST_MAX). */
void sf_prom_hist_init(sf_prom_hist *h, const double *bounds, size_t n);
/* Counts v in the first bucket whose bound is >= v (le semantics). */
void sf_prom_hist_observe(sf_prom_hist *h, double v);

/* NULL on -ENOMEM. */
sf_prom *sf_prom_new(void);
void sf_prom_free(sf_prom *p);

/* The family `name` (created if new; name and help are copied). NULL after
 * an error (which sticks in p). */
sf_prom_family *sf_prom_family_get(sf_prom *p, const char *name, sf_prom_type type,
                                   const char *help);

/* Samples. labels is NULL or a NULL-terminated list of name, value pairs:
 * (const char *[]){"controller", "appwrapper", NULL}. A NULL family does
 * nothing and returns the sticky error. sf_prom_add_u writes the integer
 * exactly; sf_prom_add_f writes an integral value as an integer and any
 * other with six decimals. Return 0 or the sticky error. */
int sf_prom_add_u(sf_prom_family *f, const char *const *labels, uint64_t v);
int sf_prom_add_f(sf_prom_family *f, const char *const *labels, double v);
/* The _bucket lines (cumulative, le="%g" for each bound, then le="+Inf"),
 * _sum and _count of h, on a histogram family. */
int sf_prom_add_hist(sf_prom_family *f, const char *const *labels, const sf_prom_hist *h);

/* Appends the whole exposition to out. 0, the sticky error, or -ENOMEM. */
int sf_prom_render(const sf_prom *p, sf_buf *out);

#endif
