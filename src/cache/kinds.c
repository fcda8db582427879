/*
 * kinds.c - the component-kind registry (see kinds.h).
 *
 * Entries live in a list for the registry's life (callers keep pointers to
 * them in requests in flight); an entry's informer comes and goes with its
 * use. Owners are a map from owner key to the entries it uses, and each
 * entry counts its users, so tracking an AppWrapper costs a lookup per
 * kind. One 1 s timer re-asks discovery for used kinds that did not
 * resolve (each on its own backoff) and stops informers idle for idle_ms;
 * informers are stopped asynchronously and freed in their stop callback.
 */
#include "steadfast/kinds.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/log.h"
#include "steadfast/strmap.h"
#include "steadfast/time.h"

#define LOGGER "cache.kinds"
#define RECHECK_MS 5000      /* first re-check of a kind not resolved */
#define RECHECK_MAX_MS 60000 /* backoff ceiling */
#define SUSPECT_MS 1000      /* re-resolve a served kind at most this often */
#define CONFIRM_MS 5000      /* "not served" twice this far apart refuses creates */
#define TICK_MS 1000
#define IDLE_MS 60000

struct sf_kind {
	struct sf_kind *next;
	sf_kinds *ks;
	char *api_version, *kind;
	sf_kind_state state;
	char errmsg[256];
	int64_t checked_ms; /* mono, last discovery answer (0 = none) */
	int resolving;
	int not_served_n;      /* not-served answers in a row */
	int64_t not_served_ms; /* mono, the first of them */
	int64_t recheck_ms;    /* backoff of the next re-check */
	char *group, *version, *resource;
	sf_gvr gvr;
	int have_gvr;
	sf_informer *inf;
	int64_t started_ms;
	unsigned users;
	int64_t unused_ms; /* mono, when users fell to 0 */
};

/* One allocation per owner: its kinds, then its key, which the owners map
 * borrows (one AppWrapper's worth of leader memory, so kept small). */
typedef struct owner {
	const char *key; /* points after k[] */
	size_t n;
	sf_kind *k[];
} owner;

static const char *owner_key_of(const void *o)
{
	return ((const owner *)o)->key;
}

/* An informer being stopped; freed with itself in its callback. */
typedef struct retiring {
	sf_kinds *ks;
	sf_informer *inf;
} retiring;

struct sf_kinds {
	uv_loop_t *loop;
	sf_kube_client *client;
	char *ns, *selector;
	char **label_indexes; /* NULL-terminated copy */
	int controller_index, strip_managed_fields;
	sf_obj *(*transform)(void *ud, sf_obj *obj);
	void *transform_ud;
	long fault_delay_ms;
	long fault_delay_min_ms;
	int fault_coalesce;
	sf_informer_handler handler;
	void *handler_ud;
	void (*on_ready)(void *ud, sf_kind *k);
	void *ud;
	long idle_ms;
	sf_kind *kinds;
	size_t nkinds;
	sf_strmap *owners;
	uv_timer_t *timer; /* freed in its close callback */
	int stopping;
	int closing; /* handles and informers still to close */
	void (*stop_cb)(void *ud);
	void *stop_ud;
};

static int64_t mono_ms(void)
{
	return sf_mono_ns() / SF_NSEC_PER_MSEC;
}

static void start_informer(sf_kind *k);
static void resolve(sf_kind *k, int fresh);

/* ---- discovery ---- */

static void backoff(sf_kind *k)
{
	k->recheck_ms = k->recheck_ms ? k->recheck_ms * 2 : RECHECK_MS;
	if (k->recheck_ms > RECHECK_MAX_MS)
		k->recheck_ms = RECHECK_MAX_MS;
}

static void ready(sf_kind *k)
{
	if (k->ks->on_ready && !k->ks->stopping)
		k->ks->on_ready(k->ks->ud, k);
}

static void on_resolved(void *ud, int err, const char *errmsg, const sf_gvr *gvr)
{
	sf_kind *k = ud;
	sf_kinds *ks = k->ks;
	int64_t now = mono_ms();
	k->checked_ms = now;
	k->resolving = 0;
	if (ks->stopping)
		return;
	if (err == 0 && gvr) {
		int was = k->state;
		k->state = SF_KIND_SERVED;
		k->errmsg[0] = 0;
		k->not_served_n = 0;
		k->recheck_ms = 0;
		if (!k->have_gvr) {
			k->group = strdup(gvr->group);
			k->version = strdup(gvr->version);
			k->resource = strdup(gvr->resource);
			if (!k->group || !k->version || !k->resource) {
				k->state = SF_KIND_UNKNOWN;
				snprintf(k->errmsg, sizeof(k->errmsg), "out of memory");
				backoff(k);
				return;
			}
			k->gvr = (sf_gvr){k->group, k->version, k->resource, gvr->namespaced};
			k->have_gvr = 1;
		}
		if (was != SF_KIND_SERVED && was != SF_KIND_RESOLVING)
			sf_log_info(LOGGER, "component kind served again", "apiVersion",
			            k->api_version, "kind", k->kind, NULL);
		if (k->users > 0 && !k->inf)
			start_informer(k);
		if (was != SF_KIND_SERVED && sf_kind_ready(k))
			ready(k);
		return;
	}
	if (err == -ENOENT) {
		if (k->state != SF_KIND_NOT_SERVED || k->not_served_n == 0) {
			k->not_served_n = 0;
			k->not_served_ms = now;
		}
		k->not_served_n++;
		k->state = SF_KIND_NOT_SERVED;
		snprintf(k->errmsg, sizeof(k->errmsg),
		         "no matches for kind \"%s\" in version \"%s\"", k->kind, k->api_version);
	} else {
		/* cannot say: keeps any not-served count (it neither adds nor
		 * contradicts) */
		k->state = SF_KIND_UNKNOWN;
		snprintf(k->errmsg, sizeof(k->errmsg), "discovery of %s %s failed: %s",
		         k->api_version, k->kind, errmsg ? errmsg : "");
	}
	backoff(k);
	sf_log_warn(LOGGER, "component kind not available", "apiVersion", k->api_version, "kind",
	            k->kind, "error", k->errmsg, NULL);
}

static void resolve(sf_kind *k, int fresh)
{
	if (k->resolving || k->ks->stopping)
		return;
	if (fresh)
		sf_kube_forget_api_version(k->ks->client, k->api_version);
	int rc = sf_kube_resolve(k->ks->client, k->api_version, k->kind, on_resolved, k);
	if (rc < 0) {
		if (k->state != SF_KIND_SERVED)
			k->state = SF_KIND_UNKNOWN;
		k->checked_ms = mono_ms();
		backoff(k);
		snprintf(k->errmsg, sizeof(k->errmsg), "discovery failed: %s", strerror(-rc));
		return;
	}
	k->resolving = 1;
}

static int recheck_due(const sf_kind *k, int64_t now)
{
	return (k->state == SF_KIND_NOT_SERVED || k->state == SF_KIND_UNKNOWN) && !k->resolving &&
	       now - k->checked_ms >= k->recheck_ms;
}

/* ---- informers ---- */

static void kind_synced(void *ud)
{
	sf_kind *k = ud;
	if (k->state == SF_KIND_SERVED)
		ready(k);
}

static void start_informer(sf_kind *k)
{
	sf_kinds *ks = k->ks;
	sf_informer_opts o = {0};
	o.reflector.gvr = &k->gvr;
	o.reflector.ns = ks->ns;
	o.reflector.label_selector = ks->selector;
	o.reflector.name = k->resource;
	o.reflector.strip_managed_fields = ks->strip_managed_fields;
	o.reflector.transform = ks->transform;
	o.reflector.transform_ud = ks->transform_ud;
	o.reflector.fault_event_delay_max_ms = ks->fault_delay_ms;
	o.reflector.fault_event_delay_min_ms = ks->fault_delay_min_ms;
	o.reflector.fault_coalesce_events = ks->fault_coalesce;
	o.label_indexes = (const char *const *)ks->label_indexes;
	o.controller_index = ks->controller_index;
	sf_informer_handler hs = {.on_synced = kind_synced};
	sf_informer *inf = NULL;
	int rc = sf_informer_new(ks->loop, ks->client, &o, &inf);
	const sf_informer_handler *h = &ks->handler;
	if (rc == 0 && (h->on_add || h->on_update || h->on_delete || h->on_synced))
		rc = sf_informer_add_handler(inf, h, ks->handler_ud);
	if (rc == 0)
		rc = sf_informer_add_handler(inf, &hs, k);
	if (rc == 0)
		rc = sf_informer_start(inf);
	if (rc < 0) {
		sf_informer_free(inf);
		k->state = SF_KIND_UNKNOWN;
		k->checked_ms = mono_ms();
		backoff(k);
		snprintf(k->errmsg, sizeof(k->errmsg), "cannot watch %s: %s", k->resource,
		         strerror(-rc));
		return;
	}
	k->inf = inf;
	k->started_ms = mono_ms();
	sf_log_info(LOGGER, "watching component kind", "apiVersion", k->api_version, "kind",
	            k->kind, "resource", k->resource, NULL);
}

static void maybe_stopped(sf_kinds *ks)
{
	if (!ks->stopping || ks->closing > 0)
		return;
	void (*cb)(void *) = ks->stop_cb;
	ks->stop_cb = NULL;
	if (cb)
		cb(ks->stop_ud);
}

static void retired(void *ud)
{
	retiring *r = ud;
	sf_kinds *ks = r->ks;
	sf_informer_free(r->inf);
	free(r);
	ks->closing--;
	maybe_stopped(ks);
}

static void retire(sf_kind *k)
{
	sf_kinds *ks = k->ks;
	retiring *r = calloc(1, sizeof(*r));
	sf_informer *inf = k->inf;
	k->inf = NULL;
	k->started_ms = 0;
	if (!r) {
		/* cannot wait for it: stop without a callback, keep it */
		sf_informer_stop(inf, NULL, NULL);
		return;
	}
	r->ks = ks;
	r->inf = inf;
	ks->closing++;
	sf_informer_stop(inf, retired, r);
}

static void on_tick(uv_timer_t *t)
{
	sf_kinds *ks = t->data;
	int64_t now = mono_ms();
	for (sf_kind *k = ks->kinds; k && !ks->stopping; k = k->next) {
		if (k->users > 0 && recheck_due(k, now))
			resolve(k, 1);
		if (k->users == 0 && k->inf && now - k->unused_ms >= ks->idle_ms) {
			sf_log_info(LOGGER, "component kind unused; informer stopped", "apiVersion",
			            k->api_version, "kind", k->kind, NULL);
			retire(k);
		}
	}
}

/* ---- entries and owners ---- */

static sf_kind *find(const sf_kinds *ks, const char *api_version, const char *kind)
{
	for (sf_kind *k = ks->kinds; k; k = k->next)
		if (strcmp(k->api_version, api_version) == 0 && strcmp(k->kind, kind) == 0)
			return k;
	return NULL;
}

static sf_kind *entry(sf_kinds *ks, const char *api_version, const char *kind)
{
	sf_kind *k = find(ks, api_version, kind);
	if (k)
		return k;
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->ks = ks;
	k->api_version = strdup(api_version);
	k->kind = strdup(kind);
	if (!k->api_version || !k->kind) {
		free(k->api_version);
		free(k->kind);
		free(k);
		return NULL;
	}
	k->next = ks->kinds;
	ks->kinds = k;
	ks->nkinds++;
	resolve(k, 0);
	return k;
}

sf_kind *sf_kinds_get(sf_kinds *ks, const char *api_version, const char *kind)
{
	if (!api_version || !*api_version || !kind || !*kind)
		return NULL;
	sf_kind *k = entry(ks, api_version, kind);
	if (k && recheck_due(k, mono_ms()))
		resolve(k, 1);
	return k;
}

static void use(sf_kind *k)
{
	if (k->users++ == 0 && k->state == SF_KIND_SERVED && !k->inf && !k->ks->stopping)
		start_informer(k);
}

static void unuse(sf_kind *k)
{
	if (k->users > 0 && --k->users == 0)
		k->unused_ms = mono_ms();
}

int sf_kinds_track(sf_kinds *ks, const char *owner_key, const char *const *pairs, size_t n)
{
	size_t kl = strlen(owner_key);
	if (n > (SIZE_MAX - sizeof(owner) - kl - 1) / sizeof(sf_kind *))
		return -ENOMEM;
	owner *o = calloc(1, sizeof(*o) + n * sizeof(sf_kind *) + kl + 1);
	if (!o)
		return -ENOMEM;
	char *key = (char *)&o->k[n];
	memcpy(key, owner_key, kl + 1);
	o->key = key;
	for (size_t i = 0; i < n; i++) {
		sf_kind *k = entry(ks, pairs[2 * i], pairs[2 * i + 1]);
		if (!k) {
			free(o);
			return -ENOMEM;
		}
		int dup = 0;
		for (size_t j = 0; j < o->n; j++)
			dup |= o->k[j] == k;
		if (!dup)
			o->k[o->n++] = k;
	}
	/* the usual case, an owner seen again with the same kinds: nothing
	 * to change */
	const owner *cur = sf_strmap_get(ks->owners, owner_key);
	if (cur && cur->n == o->n) {
		size_t same = 0;
		for (size_t i = 0; i < o->n; i++)
			for (size_t j = 0; j < cur->n; j++)
				same += o->k[i] == cur->k[j];
		if (same == o->n) {
			free(o);
			return 0;
		}
	}
	/* use the new set before releasing the old, so a kind in both is
	 * never idle in between */
	for (size_t i = 0; i < o->n; i++)
		use(o->k[i]);
	void *old = NULL;
	if (sf_strmap_put(ks->owners, o->key, o, &old) < 0) {
		for (size_t i = 0; i < o->n; i++)
			unuse(o->k[i]);
		free(o);
		return -ENOMEM;
	}
	owner *prev = old;
	if (prev)
		for (size_t i = 0; i < prev->n; i++)
			unuse(prev->k[i]);
	free(prev);
	return 0;
}

void sf_kinds_untrack(sf_kinds *ks, const char *owner_key)
{
	void *v = NULL;
	if (sf_strmap_remove(ks->owners, owner_key, &v) != 0)
		return;
	owner *o = v;
	for (size_t i = 0; i < o->n; i++)
		unuse(o->k[i]);
	free(o);
}

void sf_kinds_each_owner(const sf_kinds *ks, const sf_kind *k,
                         void (*fn)(void *ud, const char *owner), void *ud)
{
	if (!k->users)
		return;
	sf_strmap_iter it = SF_STRMAP_ITER_INIT;
	const char *key;
	void *v;
	while (sf_strmap_next(ks->owners, &it, &key, &v)) {
		const owner *o = v;
		for (size_t i = 0; i < o->n; i++)
			if (o->k[i] == k) {
				fn(ud, key);
				break;
			}
	}
}

size_t sf_kinds_count(const sf_kinds *ks)
{
	return ks->nkinds;
}

unsigned long sf_kinds_watchdog_restarts(const sf_kinds *ks)
{
	unsigned long n = 0;
	for (const sf_kind *k = ks->kinds; k; k = k->next)
		if (k->inf) {
			sf_reflector_stats st;
			sf_reflector_stats_get(sf_informer_reflector(k->inf), &st);
			n += st.watchdog_restarts;
		}
	return n;
}

int sf_kinds_metrics_write(const sf_kinds *ks, sf_prom *p)
{
	for (const sf_kind *k = ks->kinds; k; k = k->next)
		if (k->inf && k->have_gvr) {
			int rc = sf_store_metrics_add(sf_informer_store(k->inf), p, k->gvr.group,
			                              k->gvr.resource);
			if (rc < 0)
				return rc;
		}
	return 0;
}

/* ---- accessors ---- */

sf_kind_state sf_kind_get_state(const sf_kind *k)
{
	return k->state;
}

const char *sf_kind_api_version(const sf_kind *k)
{
	return k->api_version;
}

const char *sf_kind_name(const sf_kind *k)
{
	return k->kind;
}

const char *sf_kind_error(const sf_kind *k)
{
	return k->errmsg;
}

const sf_gvr *sf_kind_gvr(const sf_kind *k)
{
	return k->have_gvr ? &k->gvr : NULL;
}

sf_informer *sf_kind_informer(const sf_kind *k)
{
	return k->inf;
}

int sf_kind_ready(const sf_kind *k)
{
	return k->state == SF_KIND_SERVED && k->inf && sf_informer_synced(k->inf);
}

int64_t sf_kind_started_ms(const sf_kind *k)
{
	return k->inf ? k->started_ms : 0;
}

int sf_kind_confirmed_not_served(const sf_kind *k)
{
	return k->state == SF_KIND_NOT_SERVED && k->not_served_n >= 2 &&
	       k->checked_ms - k->not_served_ms >= CONFIRM_MS;
}

void sf_kind_suspect(sf_kind *k)
{
	if (k && !k->resolving && mono_ms() - k->checked_ms >= SUSPECT_MS)
		resolve(k, 1);
}

/* ---- lifecycle ---- */

int sf_kinds_new(uv_loop_t *loop, sf_kube_client *client, const sf_kinds_opts *o, sf_kinds **out)
{
	sf_kinds *ks = calloc(1, sizeof(*ks));
	if (!ks)
		return -ENOMEM;
	ks->loop = loop;
	ks->client = client;
	ks->controller_index = o->controller_index;
	ks->strip_managed_fields = o->strip_managed_fields;
	ks->transform = o->transform;
	ks->transform_ud = o->transform_ud;
	ks->fault_delay_ms = o->fault_event_delay_max_ms;
	ks->fault_delay_min_ms = o->fault_event_delay_min_ms;
	ks->fault_coalesce = o->fault_coalesce_events;
	if (o->handler)
		ks->handler = *o->handler;
	ks->handler_ud = o->handler_ud;
	ks->on_ready = o->on_ready;
	ks->ud = o->ud;
	ks->idle_ms = o->idle_ms > 0 ? o->idle_ms : IDLE_MS;
	size_t nl = 0;
	while (o->label_indexes && o->label_indexes[nl])
		nl++;
	int bad = sf_strmap_new_keyed(owner_key_of, 64, &ks->owners) < 0 ||
	          (o->ns && o->ns[0] && !(ks->ns = strdup(o->ns))) ||
	          (o->label_selector && !(ks->selector = strdup(o->label_selector))) ||
	          !(ks->label_indexes = calloc(nl + 1, sizeof(char *)));
	for (size_t i = 0; !bad && i < nl; i++)
		bad = !(ks->label_indexes[i] = strdup(o->label_indexes[i]));
	if (bad) {
		sf_kinds_free(ks);
		return -ENOMEM;
	}
	*out = ks;
	return 0;
}

int sf_kinds_start(sf_kinds *ks)
{
	if (ks->timer)
		return -EALREADY;
	ks->timer = malloc(sizeof(*ks->timer));
	if (!ks->timer)
		return -ENOMEM;
	uv_timer_init(ks->loop, ks->timer);
	ks->timer->data = ks;
	uv_timer_start(ks->timer, on_tick, TICK_MS, TICK_MS);
	return 0;
}

static void timer_closed(uv_handle_t *h)
{
	sf_kinds *ks = h->data;
	free(h);
	ks->closing--;
	maybe_stopped(ks);
}

void sf_kinds_stop(sf_kinds *ks, void (*cb)(void *ud), void *ud)
{
	ks->stopping = 1;
	ks->stop_cb = cb;
	ks->stop_ud = ud;
	ks->closing++; /* held while starting the closes */
	if (ks->timer) {
		ks->closing++;
		uv_close((uv_handle_t *)ks->timer, timer_closed);
		ks->timer = NULL;
	}
	for (sf_kind *k = ks->kinds; k; k = k->next)
		if (k->inf)
			retire(k);
	ks->closing--;
	maybe_stopped(ks);
}

void sf_kinds_free(sf_kinds *ks)
{
	if (!ks)
		return;
	while (ks->kinds) {
		sf_kind *k = ks->kinds;
		ks->kinds = k->next;
		sf_informer_free(k->inf);
		free(k->api_version);
		free(k->kind);
		free(k->group);
		free(k->version);
		free(k->resource);
		free(k);
	}
	sf_strmap_free(ks->owners, free);
	for (size_t i = 0; ks->label_indexes && ks->label_indexes[i]; i++)
		free(ks->label_indexes[i]);
	free(ks->label_indexes);
	free(ks->ns);
	free(ks->selector);
	free(ks);
}
