/*
 * events.c - events.k8s.io/v1 Events aggregated into series (see events.h).
 *
 * A series is keyed by the regarding object's UID, type, reason, action
 * and note. Its first occurrence creates an Event named "<object>.<hex>"
 * with eventTime and no series (POST); the second sets series {count 2,
 * lastObservedTime} with a strategic merge patch, as client-go does, and
 * each later one raises the count the same way. While the create or a
 * patch is in flight, further occurrences are only counted and folded into
 * the next write, so at most one request per series is outstanding. A
 * series ends window_ms after its last occurrence (client-go's 6 minutes);
 * series are kept in the order of their last occurrence, so the ended ones
 * are dropped from the old end at each emit, and the oldest go past
 * max_keys. A patch answered 404 (the Event expired, the API server's
 * --event-ttl, or was deleted) creates the Event again under its name with
 * the series so far, as client-go does.
 *
 * The recorder sits beside the client it writes through: it records about
 * any namespaced object, whose apiVersion and kind the caller names, and
 * knows nothing of what the caller controls. Bodies are built as util/jdoc
 * trees and written once, as the rest of the code writes JSON objects.
 *
 * Where this differs from client-go, on purpose:
 *   - client-go's key has the regarding reference with its
 *     resourceVersion and not the note: a repeat after a status write (our
 *     every event follows one) would start a new Event, and a different
 *     note would be counted under the first one's. Ours has the UID and
 *     the note.
 *   - client-go writes counts past 2 only when the series ends (6 min
 *     quiet) or every 30 min; ours patches each (coalesced as above), so
 *     the count is current.
 *   - client-go retries a failed write up to 12 times, 10 s apart; ours is
 *     best effort (the client still honours 429 Retry-After).
 */
#include "steadfast/events.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "steadfast/buf.h"
#include "steadfast/jdoc.h"
#include "steadfast/log.h"
#include "steadfast/strmap.h"
#include "steadfast/time.h"

#define LOGGER "events"
#define KEY_SEP '\x1f'
#define NAME_MAX_LEN 253 /* a DNS subdomain */

enum { F_UID, F_TYPE, F_REASON, F_ACTION, F_NOTE, NFIELDS };

typedef struct series {
	/* uid US type US reason US action US note: the map's key; f[i] is
	 * where field i starts in it */
	char *key;
	size_t f[NFIELDS];
	char *ns;
	char *name;                /* the Event's name */
	sf_jd *regarding;          /* its regarding ObjectReference */
	int64_t first_ns, last_ns; /* wall: eventTime, series.lastObservedTime */
	int64_t seen_mono_ns;      /* the last occurrence */
	long count;                /* occurrences sent (in flight or acknowledged) */
	long pending;              /* occurrences not sent yet */
	int busy;                  /* a write in flight */
	int patching;              /* ... and it is a patch */
	int created;               /* the Event exists (a create was acknowledged) */
	struct series *older, *newer;
	sf_events *ev; /* NULL once the recorder is gone */
} series;

struct sf_events {
	uv_loop_t *loop;
	sf_kube_client *client;
	char *controller;
	char *instance;
	long window_ms;
	size_t max_keys;
	sf_strmap *byk; /* keyed by series.key */
	series *oldest, *newest;
	sf_events_stats st;
	uint64_t seq;
};

static const char *series_key(const void *v)
{
	return ((const series *)v)->key;
}

/* Field i of s's key (not NUL-terminated) and its length. */
static const char *field(const series *s, int i, size_t *len)
{
	size_t end = i + 1 < NFIELDS ? s->f[i + 1] - 1 : strlen(s->key);
	*len = end - s->f[i];
	return s->key + s->f[i];
}

/* ---- UTF-8 ---- */

/* The length of the valid UTF-8 sequence at s (n bytes left), 0 if none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0], cp, min;
	size_t len;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f, min = 0x80;
	else if ((c & 0xf0) == 0xe0)
		len = 3, cp = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07, min = 0x10000;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3fu);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* The longest prefix of s (n bytes of valid UTF-8) of at most max bytes
 * that ends on a character boundary. */
static size_t utf8_cut(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

/* note as the API server will count it: each invalid byte becomes U+FFFD
 * (as its JSON decoder would make it), and a note longer than
 * SF_EVENTS_NOTE_MAX bytes is cut on a character boundary and ends "...". */
static int note_put(sf_buf *b, const char *note)
{
	size_t n = strlen(note), from = b->len;
	int rc = 0;
	for (size_t i = 0; i < n && !rc;) {
		size_t l = utf8_len((const unsigned char *)note + i, n - i);
		if (l) {
			rc = sf_buf_append(b, note + i, l);
			i += l;
		} else {
			rc = sf_buf_append(b, "\xef\xbf\xbd", 3);
			i++;
		}
	}
	if (!rc && b->len - from > SF_EVENTS_NOTE_MAX) {
		b->len = from + utf8_cut(b->data + from, b->len - from, SF_EVENTS_NOTE_MAX - 3);
		rc = sf_buf_puts(b, "...");
	}
	return rc;
}

/* A reason or an action: 1 to max bytes, no control characters (nor our
 * key's separator). */
static int word_ok(const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

/* ---- series ---- */

static void series_unlink(sf_events *ev, series *s)
{
	if (s->older)
		s->older->newer = s->newer;
	else
		ev->oldest = s->newer;
	if (s->newer)
		s->newer->older = s->older;
	else
		ev->newest = s->older;
	s->older = s->newer = NULL;
}

static void series_append(sf_events *ev, series *s)
{
	s->older = ev->newest;
	if (ev->newest)
		ev->newest->newer = s;
	else
		ev->oldest = s;
	ev->newest = s;
}

static void series_free(series *s)
{
	if (!s)
		return;
	free(s->key);
	free(s->ns);
	free(s->name);
	sf_jd_free(s->regarding);
	free(s);
}

/* Removes s from the recorder; freed now, or by its write's callback. */
static void series_drop(sf_events *ev, series *s)
{
	sf_strmap_remove(ev->byk, s->key, NULL);
	series_unlink(ev, s);
	if (s->busy)
		s->ev = NULL;
	else
		series_free(s);
}

/* Drops the series whose window has ended (the oldest first). */
static void series_expire(sf_events *ev, int64_t now_mono)
{
	while (ev->oldest &&
	       (now_mono - ev->oldest->seen_mono_ns) / SF_NSEC_PER_MSEC > ev->window_ms)
		series_drop(ev, ev->oldest);
}

/* ---- the recorder ---- */

int sf_events_new(uv_loop_t *loop, sf_kube_client *client, const sf_events_opts *opts,
                  sf_events **out)
{
	sf_events *ev = calloc(1, sizeof(*ev));
	char host[256] = "";
	const char *inst = opts && opts->instance && opts->instance[0] ? opts->instance : NULL;
	if (!ev)
		return -ENOMEM;
	ev->loop = loop;
	ev->client = client;
	ev->window_ms = opts && opts->window_ms > 0 ? opts->window_ms : SF_EVENTS_WINDOW_MS;
	ev->max_keys = opts && opts->max_keys > 0 ? opts->max_keys : 4096;
	if (!inst) {
		gethostname(host, sizeof(host) - 1);
		inst = host;
	}
	ev->controller = strdup(opts && opts->controller && opts->controller[0] ? opts->controller
	                                                                        : "steadfast");
	ev->instance = strndup(inst, utf8_cut(inst, strlen(inst), SF_EVENTS_INSTANCE_MAX));
	if (!ev->controller || !ev->instance || sf_strmap_new_keyed(series_key, 64, &ev->byk) < 0) {
		sf_events_close(ev, NULL, NULL);
		return -ENOMEM;
	}
	*out = ev;
	return 0;
}

void sf_events_reset(sf_events *ev)
{
	while (ev && ev->oldest)
		series_drop(ev, ev->oldest);
}

void sf_events_close(sf_events *ev, void (*cb)(void *ud), void *ud)
{
	if (ev) {
		sf_events_reset(ev);
		sf_strmap_free(ev->byk, NULL);
		free(ev->controller);
		free(ev->instance);
		free(ev);
	}
	if (cb)
		cb(ud);
}

void sf_events_stats_get(const sf_events *ev, sf_events_stats *out)
{
	*out = ev->st;
}

int sf_events_metrics_write(const sf_events *ev, sf_prom *p)
{
	sf_prom_family *f = sf_prom_family_get(p, "steadfast_events_total", SF_PROM_COUNTER,
	                                       "Events written, by outcome");
	sf_prom_add_u(f, (const char *[]){"outcome", "created", NULL}, ev->st.created);
	sf_prom_add_u(f, (const char *[]){"outcome", "aggregated", NULL}, ev->st.aggregated);
	return sf_prom_add_u(f, (const char *[]){"outcome", "failed", NULL}, ev->st.failed);
}

/* ---- writes ---- */

static void write_done(void *ud, const sf_kube_result *res);

/* Sets key to the n bytes at v (a field of a series' key), keeping the
 * first error in *rc. */
static void set_strn(sf_jd *obj, const char *key, const char *v, size_t n, int *rc)
{
	if (*rc == 0)
		*rc = sf_jd_set(obj, key, sf_jd_new_strn(v, n));
}

static void set_str(sf_jd *obj, const char *key, const char *v, int *rc)
{
	set_strn(obj, key, v, strlen(v), rc);
}

/* series {count, lastObservedTime} into obj. */
static void set_series(sf_jd *obj, long count, int64_t last_ns, int *rc)
{
	char lo[40];
	sf_time_rfc3339micro(last_ns, lo, sizeof(lo));
	sf_jd *ser = *rc == 0 ? sf_jd_obj_member(obj, "series") : NULL;
	if (!ser && *rc == 0)
		*rc = -ENOMEM;
	if (*rc == 0)
		*rc = sf_jd_set_int(ser, "count", count);
	set_str(ser, "lastObservedTime", lo, rc);
}

/* The Event, for a create; with its series when the count is past 1 (a
 * re-creation after a 404). */
static int event_body(const sf_events *ev, const series *s, sf_buf *b)
{
	char et[40];
	size_t n;
	const char *p;
	int rc = 0;
	sf_jd *e = sf_jd_new_obj(), *meta = NULL;
	if (!e)
		return -ENOMEM;
	sf_time_rfc3339micro(s->first_ns, et, sizeof(et));
	set_str(e, "apiVersion", "events.k8s.io/v1", &rc);
	set_str(e, "kind", "Event", &rc);
	if (rc == 0 && !(meta = sf_jd_obj_member(e, "metadata")))
		rc = -ENOMEM;
	set_str(meta, "name", s->name, &rc);
	set_str(meta, "namespace", s->ns, &rc);
	set_str(e, "eventTime", et, &rc);
	set_str(e, "reportingController", ev->controller, &rc);
	set_str(e, "reportingInstance", ev->instance, &rc);
	p = field(s, F_ACTION, &n);
	set_strn(e, "action", p, n, &rc);
	p = field(s, F_REASON, &n);
	set_strn(e, "reason", p, n, &rc);
	if (rc == 0)
		rc = sf_jd_set(e, "regarding", sf_jd_clone(s->regarding));
	p = field(s, F_NOTE, &n);
	set_strn(e, "note", p, n, &rc);
	p = field(s, F_TYPE, &n);
	set_strn(e, "type", p, n, &rc);
	if (s->count > 1)
		set_series(e, s->count, s->last_ns, &rc);
	if (rc == 0)
		rc = sf_jd_write(e, b);
	sf_jd_free(e);
	return rc ? -ENOMEM : 0;
}

/* POSTs the Event (count already set: 1, or the series so far). */
static int send_create(sf_events *ev, series *s)
{
	sf_buf b;
	sf_buf_init(&b, 0);
	int rc = event_body(ev, s, &b);
	if (rc == 0) {
		s->busy = 1;
		s->patching = 0;
		rc = sf_kube_create(ev->client, &SF_GVR_EVENTS_K8S_IO, s->ns, b.data, write_done, s,
		                    NULL);
		if (rc < 0)
			s->busy = 0;
	}
	sf_buf_free(&b);
	return rc;
}

/* Sends the pending occurrences: a patch of the series. */
static int send_series(sf_events *ev, series *s)
{
	long count = s->count + s->pending;
	sf_buf b;
	sf_buf_init(&b, 0);
	sf_jd *patch = sf_jd_new_obj();
	int rc = patch ? 0 : -ENOMEM;
	set_series(patch, count, s->last_ns, &rc);
	if (rc == 0)
		rc = sf_jd_write(patch, &b);
	sf_jd_free(patch);
	if (rc < 0) {
		sf_buf_free(&b);
		return -ENOMEM;
	}
	s->busy = 1;
	s->patching = 1;
	s->pending = 0;
	s->count = count;
	rc = sf_kube_patch(ev->client, &SF_GVR_EVENTS_K8S_IO, s->ns, s->name, NULL,
	                   SF_PATCH_STRATEGIC, b.data, NULL, 0, write_done, s, NULL);
	if (rc < 0)
		s->busy = 0;
	sf_buf_free(&b);
	return rc;
}

static void write_done(void *ud, const sf_kube_result *res)
{
	series *s = ud;
	sf_events *ev = s->ev;
	int patched = s->patching;
	s->busy = 0;
	s->patching = 0;
	if (!ev) {
		series_free(s);
		return;
	}
	if (sf_kube_ok(res)) {
		s->created = 1;
	} else if (patched && sf_kube_is_not_found(res)) {
		/* the Event is gone (expired or deleted): create it again with
		 * the series so far */
		sf_log_debug(LOGGER, "event gone; creating it again", "event", s->name, NULL);
		s->created = 0;
		s->count += s->pending;
		s->pending = 0;
		if (send_create(ev, s) < 0)
			series_drop(ev, s);
		return;
	} else {
		char buf[512];
		ev->st.failed++;
		if (res->err != -EPERM && res->err != -ECANCELED)
			sf_log_warn(LOGGER, "event write failed", "event", s->name, "error",
			            sf_kube_result_str(res, buf, sizeof(buf)), NULL);
		if (!s->created) {
			/* never created: the next occurrence starts over */
			series_drop(ev, s);
			return;
		}
	}
	if (s->pending > 0 && send_series(ev, s) < 0)
		ev->st.failed++;
}

/* The Event's name: "<regarding name>.<16 hex>", as client-go; 32 hex
 * digits when that would not be a valid name (client-go then takes a
 * UUID). */
static void event_name(sf_events *ev, const char *obj_name, char *buf, size_t n)
{
	uint64_t x = (uint64_t)sf_wall_ns() ^ (++ev->seq * 0x9e3779b97f4a7c15ULL);
	if (strlen(obj_name) + 17 <= NAME_MAX_LEN)
		snprintf(buf, n, "%s.%016" PRIx64, obj_name, x);
	else
		snprintf(buf, n, "%016" PRIx64 "%016" PRIx64, x,
		         (uint64_t)(ev->seq * 0xbf58476d1ce4e5b9ULL));
}

/* obj's ObjectReference. */
static sf_jd *regarding_ref(const sf_obj *obj, const char *api_version, const char *kind)
{
	int rc = 0;
	sf_jd *r = sf_jd_new_obj();
	if (!r)
		return NULL;
	set_str(r, "apiVersion", api_version, &rc);
	set_str(r, "kind", kind, &rc);
	set_str(r, "namespace", obj->ns, &rc);
	set_str(r, "name", obj->name, &rc);
	set_str(r, "uid", obj->uid, &rc);
	if (obj->rv && obj->rv[0])
		set_str(r, "resourceVersion", obj->rv, &rc);
	if (rc) {
		sf_jd_free(r);
		return NULL;
	}
	return r;
}

/* k = uid US type US reason US action US note (note made valid), with
 * where each field starts. */
static int build_key(sf_buf *k, size_t f[NFIELDS], const char *uid, const char *type,
                     const char *reason, const char *action, const char *note)
{
	const char *v[NFIELDS - 1] = {uid, type, reason, action};
	for (int i = 0; i < NFIELDS - 1; i++) {
		f[i] = k->len;
		if (sf_buf_puts(k, v[i]) < 0 || sf_buf_putc(k, KEY_SEP) < 0)
			return -ENOMEM;
	}
	f[F_NOTE] = k->len;
	return note_put(k, note) < 0 ? -ENOMEM : 0;
}

int sf_events_emit(sf_events *ev, const sf_obj *obj, const char *api_version, const char *kind,
                   const char *type, const char *reason, const char *action, const char *note)
{
	sf_buf k;
	size_t f[NFIELDS];
	int rc;
	if (!obj || !obj->ns || !obj->ns[0] || !obj->name || !obj->name[0] || !obj->uid ||
	    !obj->uid[0] || !api_version || !kind || !type ||
	    (strcmp(type, "Normal") && strcmp(type, "Warning")) ||
	    !word_ok(reason, SF_EVENTS_REASON_MAX) || !word_ok(action, SF_EVENTS_ACTION_MAX))
		return -EINVAL;
	if (!note)
		note = "";
	sf_buf_init(&k, 0);
	if (build_key(&k, f, obj->uid, type, reason, action, note) < 0) {
		sf_buf_free(&k);
		return -ENOMEM;
	}
	sf_log(strcmp(type, "Warning") == 0 ? SF_LOG_WARN : SF_LOG_INFO, LOGGER, k.data + f[F_NOTE],
	       "namespace", obj->ns, "name", obj->name, "reason", reason, "action", action, "type",
	       type, NULL);
	int64_t now_mono = sf_mono_ns();
	series_expire(ev, now_mono);
	series *s = sf_strmap_get(ev->byk, k.data);
	if (s) {
		sf_buf_free(&k);
		s->seen_mono_ns = now_mono;
		s->last_ns = sf_wall_ns();
		s->pending++;
		ev->st.aggregated++;
		series_unlink(ev, s);
		series_append(ev, s);
		if (!s->busy && s->created)
			return send_series(ev, s);
		return 0;
	}
	char name[NAME_MAX_LEN + 1];
	s = calloc(1, sizeof(*s));
	if (!s) {
		sf_buf_free(&k);
		return -ENOMEM;
	}
	s->key = sf_buf_detach(&k, NULL);
	memcpy(s->f, f, sizeof(f));
	event_name(ev, obj->name, name, sizeof(name));
	s->name = strdup(name);
	s->ns = strdup(obj->ns);
	s->regarding = regarding_ref(obj, api_version, kind);
	s->ev = ev;
	s->first_ns = s->last_ns = sf_wall_ns();
	s->seen_mono_ns = now_mono;
	s->count = 1;
	if (!s->key || !s->name || !s->ns || !s->regarding ||
	    sf_strmap_put(ev->byk, s->key, s, NULL) < 0) {
		series_free(s);
		return -ENOMEM;
	}
	series_append(ev, s);
	while (sf_strmap_len(ev->byk) > ev->max_keys && ev->oldest != s) {
		ev->st.dropped++;
		series_drop(ev, ev->oldest);
	}
	ev->st.created++;
	rc = send_create(ev, s);
	if (rc < 0)
		series_drop(ev, s);
	return rc;
}
