/*
 * tl_deltas.h - a store handler that records every delta as a line
 * ("ADD ns/a 40", "UPDATE ns/a 40->45", "DELETE ns/a 40"), so a test of the
 * store or of what feeds it (the reflector) asserts the exact sequence.
 *
 * With the store set, it also checks that each change is applied before
 * the handler runs: a deleted object is gone, an added or updated one is
 * counted in saw_new_in_store when the store already returns it.
 */
#ifndef STEADFAST_TEST_TL_DELTAS_H
#define STEADFAST_TEST_TL_DELTAS_H

#include <stddef.h>

#include "steadfast/cache.h"

typedef struct tl_deltas {
	char lines[64][512];
	size_t n;
	sf_store *s; /* for handlers that look at the store */
	int saw_new_in_store;
} tl_deltas;

/* An sf_store handler; ud is a tl_deltas. Fails the test past 64 deltas. */
void tl_deltas_record(void *ud, sf_delta_type t, sf_obj *old, sf_obj *new_obj);

/* Fails the test unless the recorded deltas are exactly lines[0..n). */
void tl_deltas_expect(const tl_deltas *r, const char *const *lines, size_t n);

#endif
