/*
 * barrier.h - a freshness barrier over a set of informers.
 *
 * What a new leader needs before its first reconcile: every cache it acts
 * on at least as new as its Lease write. resourceVersions compare only
 * within one resource (Leases may live on an etcd of their own), so the
 * barrier asks each informer, per resource, for a list asked at or after
 * the moment the Lease write was acknowledged (sf_informer_wait_fresh),
 * which the reflector makes behind its own backoff.
 *
 *   sf_barrier_new(since, done, ud, &b);
 *   sf_barrier_add(b, aw_informer); sf_barrier_add(b, pod_informer);
 *   sf_barrier_arm(b);        // done(ud, 0) once all are fresh
 *   sf_barrier_cancel(b);     // (a lost term) done is never called
 *
 * done runs exactly once unless cancelled first - possibly from inside
 * sf_barrier_arm when every informer is already fresh - and the barrier is
 * freed right after it returns. Loop thread only.
 */
#ifndef STEADFAST_BARRIER_H
#define STEADFAST_BARRIER_H

#include <stdint.h>

#include "steadfast/cache.h"

typedef struct sf_barrier sf_barrier;

/* since_ns: mono ns the lists must be asked at or after; 0 = only synced.
 * 0 or -ENOMEM. */
int sf_barrier_new(int64_t since_ns, void (*done)(void *ud, int err), void *ud, sf_barrier **out);
/* Adds an informer (before arm). 0, -ENOMEM, -ESHUTDOWN (it stopped). */
int sf_barrier_add(sf_barrier *b, sf_informer *inf);
/* No more informers: done runs once all of them are fresh (err 0), or as
 * soon as one stops (-ECANCELED). */
void sf_barrier_arm(sf_barrier *b);
/* Drops the barrier without calling done; NULL is a no-op. */
void sf_barrier_cancel(sf_barrier *b);

#endif
