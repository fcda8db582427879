/*
 * intern.h - shared copies of strings many objects repeat.
 *
 * Every cached object of a namespace carries the namespace's name; the
 * objects share one reference-counted copy of it instead of one each. The
 * table is process-wide and guarded by a mutex, since objects (sf_obj) may
 * be made and dropped on any thread.
 */
#ifndef STEADFAST_INTERN_H
#define STEADFAST_INTERN_H

#include <stddef.h>

/* A reference to the shared, NUL-terminated copy of s[0..n) (which holds
 * no NUL): the same pointer for equal strings while any reference lives.
 * n == 0 gives "" and takes no reference. NULL on -ENOMEM. */
const char *sf_intern(const char *s, size_t n);
/* Drops a reference sf_intern returned ("" and NULL are no-ops). */
void sf_intern_release(const char *p);
/* Distinct strings held (for tests and accounting). */
size_t sf_intern_count(void);

#endif
