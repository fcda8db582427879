/*
 * rv.h - Kubernetes resourceVersions: comparing and ordering them.
 *
 * The API promises only that a resourceVersion is opaque; in practice it
 * is an etcd revision in decimal, and both the cache (a freshness wait, a
 * stale watch event) and the leader elector (a stale Lease read) need to
 * know whether one version is older than another. These functions say so
 * only where the text allows it, and depend on nothing else, so that any
 * layer may use them.
 */
#ifndef STEADFAST_RV_H
#define STEADFAST_RV_H

#include <stdint.h>

/* Compares two resourceVersions as unsigned decimal numbers (what etcd
 * revisions are): <0, 0, >0. "" (or NULL) sorts before everything; strings
 * that are not plain digits compare by length, then bytewise. */
int sf_rv_cmp(const char *a, const char *b);
/* 1 when rv is a canonical etcd revision: non-empty decimal digits with no
 * leading zero ("0" itself aside). */
int sf_rv_canonical(const char *rv);
/* The etcd revision a canonical resourceVersion names, into *out: 0,
 * -EINVAL (not canonical), -ERANGE (beyond 64 bits). Numbers order as
 * sf_rv_order orders their texts. */
int sf_rv_number(const char *rv, uint64_t *out);
/* Orders two resourceVersions *of the same resource* into *out (<0, 0,
 * >0), or refuses with -EINVAL when either is not canonical: the API only
 * promises that resourceVersions are opaque, so an ordering is taken only
 * from the form etcd produces, and never across resources. Callers must not
 * act on an order they were refused. */
int sf_rv_order(const char *a, const char *b, int *out);

#endif
