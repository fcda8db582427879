/*
 * informer.c - a reflector, its store and event handlers (see cache.h).
 *
 * The store reports every applied change; the informer fans each one out to
 * the registered handlers in registration order, so handlers see the events
 * of one object in the order the API server produced them. It also keeps
 * the freshness waits. A resourceVersion wait is released once the
 * reflector has applied a list and has seen a resourceVersion at or past
 * the one asked for (of the same resource: versions of different resources
 * are not comparable). A time wait is released once a consistent list (a
 * LIST or WatchList asked without a resourceVersion: a quorum read, not an
 * answer from the watch cache's past) asked at or after a moment has been
 * applied: that is the leader's barrier ("my cache of this resource is at
 * least as new as my Lease write"), which holds whatever etcd each
 * resource lives in. With WatchList the informer is synced at the stream's
 * initial-events-end bookmark, never before.
 */
#include "steadfast/cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/log.h"

typedef struct handler {
	sf_informer_handler h;
	void *ud;
} handler;

struct sf_rv_wait {
	sf_informer *inf;
	struct sf_rv_wait *prev, *next;
	void (*cb)(void *ud, int err);
	void *ud;
	int64_t since_ns; /* > 0: a wait for a list asked at or after this */
	char rv[];
};

struct sf_informer {
	sf_store *store;
	sf_reflector *refl;
	handler *handlers;
	size_t nhandlers;
	sf_rv_wait *waits;
	int started;
	int stopping;
	int stopped;
	void (*stop_cb)(void *ud);
	void *stop_ud;
};

static void dispatch(void *ud, sf_delta_type type, sf_obj *old, sf_obj *new_obj)
{
	sf_informer *inf = ud;
	size_t n = inf->nhandlers; /* handlers added meanwhile were replayed the store */
	for (size_t i = 0; i < n && !inf->stopping; i++) {
		const handler *hd = &inf->handlers[i];
		switch (type) {
		case SF_DELTA_ADD:
			if (hd->h.on_add)
				hd->h.on_add(hd->ud, new_obj);
			break;
		case SF_DELTA_UPDATE:
			if (hd->h.on_update)
				hd->h.on_update(hd->ud, old, new_obj);
			break;
		case SF_DELTA_DELETE:
			if (hd->h.on_delete)
				hd->h.on_delete(hd->ud, old);
			break;
		}
	}
}

static void wait_unlink(sf_rv_wait *w)
{
	sf_informer *inf = w->inf;
	if (w->prev)
		w->prev->next = w->next;
	else
		inf->waits = w->next;
	if (w->next)
		w->next->prev = w->prev;
	w->prev = w->next = NULL;
}

/* 1 when cur is at or past want ("" = any): only an order the two
 * versions allow counts (sf_rv_order). */
static int rv_reached(const char *want, const char *cur)
{
	int ord;
	return !want[0] || (sf_rv_order(want, cur, &ord) == 0 && ord <= 0);
}

/* Releases the waits that are satisfied; a callback may add or cancel
 * waits, so the scan restarts after each one. */
static void check_waits(sf_informer *inf)
{
	if (!sf_reflector_synced(inf->refl))
		return;
	const char *cur = sf_reflector_last_rv(inf->refl);
	for (;;) {
		sf_rv_wait *w = inf->waits;
		int64_t asked = sf_reflector_list_asked_ns(inf->refl);
		while (w && (w->since_ns > 0 ? asked < w->since_ns : !rv_reached(w->rv, cur)))
			w = w->next;
		if (!w)
			return;
		wait_unlink(w);
		void (*cb)(void *, int) = w->cb;
		void *ud = w->ud;
		free(w);
		cb(ud, 0);
		if (inf->stopping)
			return;
		cur = sf_reflector_last_rv(inf->refl);
	}
}

static void on_rv(void *ud, const char *rv)
{
	(void)rv;
	check_waits(ud);
}

static void on_synced(void *ud)
{
	sf_informer *inf = ud;
	size_t n = inf->nhandlers;
	for (size_t i = 0; i < n && !inf->stopping; i++) {
		if (inf->handlers[i].h.on_synced)
			inf->handlers[i].h.on_synced(inf->handlers[i].ud);
	}
	if (!inf->stopping)
		check_waits(inf);
}

int sf_informer_new(uv_loop_t *loop, sf_kube_client *client, const sf_informer_opts *opts,
                    sf_informer **out)
{
	if (!opts)
		return -EINVAL;
	int rc = -ENOMEM;
	sf_informer *inf = calloc(1, sizeof(*inf));
	if (!inf)
		return rc;
	inf->store = sf_store_new();
	if (!inf->store)
		goto fail;
	sf_store_set_handler(inf->store, dispatch, inf);
	for (const char *const *l = opts->label_indexes; l && *l; l++) {
		rc = sf_store_add_label_index(inf->store, *l);
		if (rc)
			goto fail;
	}
	if (opts->controller_index && (rc = sf_store_add_controller_index(inf->store)))
		goto fail;
	if (opts->namespace_index && (rc = sf_store_add_namespace_index(inf->store)))
		goto fail;
	sf_reflector_opts ro = opts->reflector;
	ro.on_rv = on_rv;
	ro.on_synced = on_synced;
	ro.ud = inf;
	rc = sf_reflector_new(loop, client, inf->store, &ro, &inf->refl);
	if (rc)
		goto fail;
	*out = inf;
	return 0;
fail:
	sf_informer_free(inf);
	return rc;
}

int sf_informer_add_handler(sf_informer *inf, const sf_informer_handler *h, void *ud)
{
	if (!h)
		return -EINVAL;
	handler *arr = realloc(inf->handlers, (inf->nhandlers + 1) * sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	inf->handlers = arr;
	handler *hd = &arr[inf->nhandlers++];
	hd->h = *h;
	hd->ud = ud;
	if (hd->h.on_add && sf_store_len(inf->store)) {
		/* Replay from a snapshot, with a copy of the handler: the
		 * callback may register further handlers (moving the array). */
		handler copy = *hd;
		sf_obj **list;
		size_t n;
		int rc = sf_store_list(inf->store, &list, &n);
		if (rc)
			return rc;
		for (size_t i = 0; i < n; i++)
			copy.h.on_add(copy.ud, list[i]);
		sf_obj_list_free(list, n);
	}
	return 0;
}

int sf_informer_start(sf_informer *inf)
{
	if (inf->stopping)
		return -ESHUTDOWN;
	int rc = sf_reflector_start(inf->refl);
	if (!rc)
		inf->started = 1;
	return rc;
}

static void fail_waits(sf_informer *inf)
{
	while (inf->waits) {
		sf_rv_wait *w = inf->waits;
		wait_unlink(w);
		void (*cb)(void *, int) = w->cb;
		void *ud = w->ud;
		free(w);
		cb(ud, -ECANCELED);
	}
}

static void on_reflector_stopped(void *ud)
{
	sf_informer *inf = ud;
	inf->stopped = 1;
	fail_waits(inf);
	if (inf->stop_cb)
		inf->stop_cb(inf->stop_ud);
}

void sf_informer_stop(sf_informer *inf, void (*cb)(void *ud), void *ud)
{
	if (inf->stopping)
		return;
	inf->stopping = 1;
	inf->stop_cb = cb;
	inf->stop_ud = ud;
	sf_reflector_stop(inf->refl, on_reflector_stopped, inf);
}

void sf_informer_free(sf_informer *inf)
{
	if (!inf)
		return;
	if (inf->started && !inf->stopped) {
		/* the reflector still points at the store: leak rather than crash */
		sf_log_error("cache.informer", "informer freed while running; leaking it", NULL);
		return;
	}
	while (inf->waits) {
		sf_rv_wait *w = inf->waits;
		wait_unlink(w);
		free(w);
	}
	sf_reflector_free(inf->refl);
	sf_store_free(inf->store);
	free(inf->handlers);
	free(inf);
}

sf_store *sf_informer_store(sf_informer *inf)
{
	return inf->store;
}

sf_reflector *sf_informer_reflector(sf_informer *inf)
{
	return inf->refl;
}

int sf_informer_synced(const sf_informer *inf)
{
	return sf_reflector_synced(inf->refl);
}

const char *sf_informer_last_rv(const sf_informer *inf)
{
	return sf_reflector_last_rv(inf->refl);
}

/* Registers a wait for rv (since_ns 0) or for a list asked at or after
 * since_ns. 0 or -ENOMEM. */
static int wait_add(sf_informer *inf, const char *rv, int64_t since_ns,
                    void (*cb)(void *ud, int err), void *ud, sf_rv_wait **out)
{
	size_t l = strlen(rv);
	sf_rv_wait *w = calloc(1, sizeof(*w) + l + 1);
	if (!w)
		return -ENOMEM;
	memcpy(w->rv, rv, l + 1);
	w->since_ns = since_ns;
	w->inf = inf;
	w->cb = cb;
	w->ud = ud;
	w->next = inf->waits;
	if (w->next)
		w->next->prev = w;
	inf->waits = w;
	if (out)
		*out = w;
	return 0;
}

int sf_informer_wait_rv(sf_informer *inf, const char *rv, void (*cb)(void *ud, int err), void *ud,
                        sf_rv_wait **out)
{
	if (!cb)
		return -EINVAL;
	if (inf->stopping)
		return -ESHUTDOWN;
	if (!rv)
		rv = "";
	if (rv[0] && !sf_rv_canonical(rv))
		return -EINVAL; /* nothing can be ordered against it */
	if (sf_reflector_synced(inf->refl) && rv_reached(rv, sf_reflector_last_rv(inf->refl)))
		return 1;
	return wait_add(inf, rv, 0, cb, ud, out);
}

int sf_informer_wait_fresh(sf_informer *inf, int64_t since_ns, void (*cb)(void *ud, int err),
                           void *ud, sf_rv_wait **out)
{
	if (!cb || since_ns <= 0)
		return -EINVAL;
	if (inf->stopping)
		return -ESHUTDOWN;
	int rc = sf_reflector_want_fresh(inf->refl, since_ns);
	if (rc != 0)
		return rc;
	return wait_add(inf, "", since_ns, cb, ud, out);
}

void sf_informer_wait_cancel(sf_rv_wait *w)
{
	if (!w)
		return;
	wait_unlink(w);
	free(w);
}
