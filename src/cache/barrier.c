/*
 * barrier.c - freshness barrier over informers (see barrier.h).
 *
 * Each added informer holds one wait; the barrier counts the waits still
 * pending and remembers them so that a cancel (a term lost while waiting)
 * can withdraw them. The first error, or the last success once armed,
 * ends the barrier.
 */
#include "steadfast/barrier.h"

#include <errno.h>
#include <stdlib.h>

typedef struct bwait {
	struct sf_barrier *b;
	sf_rv_wait *w; /* NULL once it fired */
} bwait;

struct sf_barrier {
	int64_t since_ns;
	void (*done)(void *ud, int err);
	void *ud;
	bwait **waits;
	size_t n, cap;
	size_t pending;
	int armed;
	int err;
};

static void finish(sf_barrier *b, int err)
{
	void (*done)(void *, int) = b->done;
	void *ud = b->ud;
	sf_barrier_cancel(b);
	done(ud, err);
}

static void on_fresh(void *ud, int err)
{
	bwait *bw = ud;
	sf_barrier *b = bw->b;
	bw->w = NULL; /* the informer freed it */
	b->pending--;
	if (err < 0 && !b->err)
		b->err = err;
	if (b->armed && (b->err || b->pending == 0))
		finish(b, b->err);
}

int sf_barrier_new(int64_t since_ns, void (*done)(void *ud, int err), void *ud, sf_barrier **out)
{
	if (!done)
		return -EINVAL;
	sf_barrier *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->since_ns = since_ns;
	b->done = done;
	b->ud = ud;
	*out = b;
	return 0;
}

int sf_barrier_add(sf_barrier *b, sf_informer *inf)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4;
		bwait **w = realloc(b->waits, cap * sizeof(*w));
		if (!w)
			return -ENOMEM;
		b->waits = w;
		b->cap = cap;
	}
	bwait *bw = calloc(1, sizeof(*bw));
	if (!bw)
		return -ENOMEM;
	bw->b = b;
	int rc = b->since_ns > 0 ? sf_informer_wait_fresh(inf, b->since_ns, on_fresh, bw, &bw->w)
	                         : sf_informer_wait_rv(inf, "", on_fresh, bw, &bw->w);
	if (rc != 0) {
		free(bw);
		return rc < 0 ? rc : 0; /* 1: fresh already */
	}
	b->waits[b->n++] = bw;
	b->pending++;
	return 0;
}

void sf_barrier_arm(sf_barrier *b)
{
	b->armed = 1;
	if (b->err || b->pending == 0)
		finish(b, b->err);
}

void sf_barrier_cancel(sf_barrier *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++) {
		if (b->waits[i]->w)
			sf_informer_wait_cancel(b->waits[i]->w);
		free(b->waits[i]);
	}
	free(b->waits);
	free(b);
}
