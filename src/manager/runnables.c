/*
 * runnables.c - the runnables the manager starts with the process and
 * with leadership (runnables.h).
 *
 * An array in the order added, a flag for each of the two starts, and a
 * count of the closes still to call back: the group is freed by the last
 * of them (or at once when none has a close).
 */
#include "steadfast/runnables.h"

#include <errno.h>
#include <stdlib.h>

struct sf_runnables {
	sf_runnable *r;
	size_t n, cap;
	int started, leading;
	size_t closing; /* closes yet to call back, +1 while they are being called */
	void (*close_cb)(void *ud);
	void *close_ud;
};

int sf_runnables_new(sf_runnables **out)
{
	sf_runnables *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	*out = g;
	return 0;
}

int sf_runnables_add(sf_runnables *g, const sf_runnable *r)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 4;
		sf_runnable *nr = realloc(g->r, cap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		g->r = nr;
		g->cap = cap;
	}
	g->r[g->n++] = *r;
	return 0;
}

void sf_runnables_start(sf_runnables *g)
{
	if (g->started)
		return;
	g->started = 1;
	for (size_t i = 0; i < g->n; i++)
		if (!g->r[i].leader_only && g->r[i].start)
			g->r[i].start(g->r[i].self);
}

void sf_runnables_lead(sf_runnables *g)
{
	if (g->leading)
		return;
	g->leading = 1;
	for (size_t i = 0; i < g->n; i++)
		if (g->r[i].leader_only && g->r[i].start)
			g->r[i].start(g->r[i].self);
}

void sf_runnables_unlead(sf_runnables *g)
{
	if (!g->leading)
		return;
	g->leading = 0;
	for (size_t i = 0; i < g->n; i++)
		if (g->r[i].leader_only && g->r[i].stop)
			g->r[i].stop(g->r[i].self);
}

static void one_closed(void *ud)
{
	sf_runnables *g = ud;
	if (--g->closing > 0)
		return;
	void (*cb)(void *) = g->close_cb;
	void *cud = g->close_ud;
	free(g->r);
	free(g);
	if (cb)
		cb(cud);
}

void sf_runnables_close(sf_runnables *g, void (*cb)(void *ud), void *ud)
{
	if (!g) {
		if (cb)
			cb(ud);
		return;
	}
	g->close_cb = cb;
	g->close_ud = ud;
	g->closing = 1; /* held until every close has been called */
	for (size_t i = 0; i < g->n; i++) {
		if (!g->r[i].close)
			continue;
		g->closing++;
		g->r[i].close(g->r[i].self, one_closed, g);
	}
	one_closed(g);
}
