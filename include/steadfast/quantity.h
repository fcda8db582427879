/*
 * quantity.h - Kubernetes resource quantities (resource.Quantity's text
 * form) as exact integers, free of I/O.
 *
 * A quantity is kept as a count of milli-units in an int64: enough for
 * every CPU, memory, GPU or extended-resource amount a node or a quota
 * writes, and exact, so sums and differences of node capacities and
 * ClusterQueue quotas never round. Parsing takes what the API server
 * accepts: an optional sign, digits with an optional fraction, then at
 * most one of a binary suffix (Ki Mi Gi Ti Pi Ei), a decimal suffix
 * (m "" k M G T P E) or a decimal exponent (e3, E-2). A value finer than
 * 1m or outside the int64 range is refused rather than rounded: the
 * callers would otherwise write a wrong limit.
 */
#ifndef STEADFAST_QUANTITY_H
#define STEADFAST_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

/* Longest formatted quantity ("-9223372036854775808m"), with its NUL. */
#define SF_QTY_STRLEN 24

/* Parses s[0..n) into *milli: 0, -EINVAL (not a quantity), -ERANGE (finer
 * than 1m, or too large). */
int sf_qty_parse_n(const char *s, size_t n, int64_t *milli);
/* The same for a NUL-terminated string. */
int sf_qty_parse(const char *s, int64_t *milli);
/* *out = a + b, or a - b: 0 or -ERANGE (then *out is left alone). */
int sf_qty_add(int64_t a, int64_t b, int64_t *out);
int sf_qty_sub(int64_t a, int64_t b, int64_t *out);
/* -1, 0 or 1 as a is less than, equal to or greater than b. */
int sf_qty_cmp(int64_t a, int64_t b);
/* The canonical text of milli into buf (at least SF_QTY_STRLEN bytes):
 * an integer when whole ("8", "-3", "0"), else milli-units ("1500m").
 * Returns buf. */
char *sf_qty_format(int64_t milli, char *buf, size_t n);

#endif
