/*
 * tl_deltas.c - the delta recorder of tl_deltas.h, shared by the store's
 * and the reflector's unit tests.
 */
#include "tl_deltas.h"

#include <criterion/criterion.h>
#include <stdio.h>

void tl_deltas_record(void *ud, sf_delta_type t, sf_obj *old, sf_obj *new_obj)
{
	tl_deltas *r = ud;
	cr_assert_lt(r->n, 64);
	const sf_obj *o = new_obj ? new_obj : old;
	char key[128];
	cr_assert_gt(sf_cache_key(o->ns, o->name, key, sizeof(key)), 0);
	if (t == SF_DELTA_UPDATE)
		snprintf(r->lines[r->n], sizeof(r->lines[0]), "UPDATE %s %s->%s", key, old->rv,
		         new_obj->rv);
	else
		snprintf(r->lines[r->n], sizeof(r->lines[0]), "%s %s %s", sf_delta_type_name(t),
		         key, o->rv);
	r->n++;
	/* The change is applied before the handler runs. */
	if (r->s && new_obj && sf_store_get(r->s, key) == new_obj)
		r->saw_new_in_store++;
	if (r->s && !new_obj)
		cr_assert_null(sf_store_get(r->s, key), "deleted object still in the store");
}

void tl_deltas_expect(const tl_deltas *r, const char *const *lines, size_t n)
{
	for (size_t i = 0; i < r->n && i < n; i++)
		cr_expect_str_eq(r->lines[i], lines[i], "delta %zu", i);
	cr_assert_eq(r->n, n, "expected %zu deltas, got %zu (first: %s)", n, r->n,
	             r->n ? r->lines[0] : "-");
}
