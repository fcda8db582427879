/*
 * events.c - aggregated core/v1 Events (see events.h).
 *
 * A series is keyed by the involved object's UID, type, reason and message.
 * Its first occurrence creates an Event named "<object>.<hex>" with count 1;
 * later ones within the window merge-patch count and lastTimestamp. While
 * the create or a patch is in flight, further occurrences are only counted
 * and folded into the next write, so at most one request per series is
 * outstanding. Series are remembered in insertion order and the oldest are
 * dropped past max_keys.
 */
#include "steadfast/events.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "steadfast/buf.h"
#include "steadfast/log.h"
#include "steadfast/strmap.h"
#include "steadfast/time.h"

typedef struct series {
	char *key;
	char *ns;
	char *name;                /* the Event object's name, once created */
	int64_t first_ns, last_ns; /* wall */
	int64_t seen_mono_ns;
	long count;   /* occurrences recorded in the API */
	long pending; /* occurrences not written yet */
	int busy;     /* a write in flight */
	int created;  /* the Event object exists */
	struct series *older, *newer;
	sf_events *ev; /* NULL once the recorder is gone */
} series;

struct sf_events {
	uv_loop_t *loop;
	sf_kube_client *client;
	char *component;
	char *instance;
	long window_ms;
	size_t max_keys;
	sf_strmap *byk;
	series *oldest, *newest;
	sf_events_stats st;
	uint64_t seq;
};

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

static void series_free(series *s)
{
	if (!s)
		return;
	free(s->key);
	free(s->ns);
	free(s->name);
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

int sf_events_new(uv_loop_t *loop, sf_kube_client *client, const sf_events_opts *opts,
                  sf_events **out)
{
	sf_events *ev = calloc(1, sizeof(*ev));
	char host[256] = "";
	if (!ev)
		return -ENOMEM;
	ev->loop = loop;
	ev->client = client;
	ev->window_ms = opts && opts->window_ms > 0 ? opts->window_ms : 600000;
	ev->max_keys = opts && opts->max_keys > 0 ? opts->max_keys : 4096;
	if (!(opts && opts->instance && opts->instance[0]))
		gethostname(host, sizeof(host) - 1);
	ev->component =
	    strdup(opts && opts->component && opts->component[0] ? opts->component : "steadfast");
	ev->instance = strdup(opts && opts->instance && opts->instance[0] ? opts->instance : host);
	if (!ev->component || !ev->instance || sf_strmap_new(0, 64, &ev->byk) < 0) {
		sf_events_free(ev);
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

void sf_events_free(sf_events *ev)
{
	if (!ev)
		return;
	sf_events_reset(ev);
	sf_strmap_free(ev->byk, NULL);
	free(ev->component);
	free(ev->instance);
	free(ev);
}

void sf_events_stats_get(const sf_events *ev, sf_events_stats *out)
{
	*out = ev->st;
}

static void write_done(void *ud, const sf_kube_result *res);

static int patch_series(sf_events *ev, series *s)
{
	char ts[40], body[160];
	long count = s->count + s->pending;
	sf_time_rfc3339(s->last_ns, ts, sizeof(ts));
	snprintf(body, sizeof(body), "{\"count\":%ld,\"lastTimestamp\":\"%s\"}", count, ts);
	s->busy = 1;
	s->pending = 0;
	s->count = count;
	int rc = sf_kube_patch(ev->client, &SF_GVR_EVENTS, s->ns, s->name, NULL, SF_PATCH_MERGE,
	                       body, NULL, 0, write_done, s, NULL);
	if (rc < 0)
		s->busy = 0;
	return rc;
}

static void write_done(void *ud, const sf_kube_result *res)
{
	series *s = ud;
	sf_events *ev = s->ev;
	s->busy = 0;
	if (!ev) {
		series_free(s);
		return;
	}
	if (!sf_kube_ok(res)) {
		char buf[512];
		ev->st.failed++;
		if (res->err != -EPERM && res->err != -ECANCELED)
			sf_log_warn("events", "event write failed", "event",
			            s->name ? s->name : s->key, "error",
			            sf_kube_result_str(res, buf, sizeof(buf)), NULL);
		if (!s->created || sf_kube_is_not_found(res)) {
			/* not created (or deleted by someone): start over next time */
			series_drop(ev, s);
			return;
		}
	} else {
		s->created = 1;
	}
	if (s->pending > 0)
		patch_series(ev, s);
}

/* Event object name: "<involved name>.<16 hex>", as client-go. */
static void event_name(sf_events *ev, const char *obj_name, char *buf, size_t n)
{
	uint64_t x = (uint64_t)sf_wall_ns() ^ (++ev->seq * 0x9e3779b97f4a7c15ULL);
	snprintf(buf, n, "%.200s.%016" PRIx64, obj_name, x);
}

static int create_series(sf_events *ev, series *s, const sf_obj *obj, const char *api_version,
                         const char *kind, const char *type, const char *reason,
                         const char *message)
{
	char name[256], ts[40], micro[40];
	sf_buf b;
	int rc = 0;
	event_name(ev, obj->name, name, sizeof(name));
	s->name = strdup(name);
	if (!s->name)
		return -ENOMEM;
	sf_time_rfc3339(s->first_ns, ts, sizeof(ts));
	sf_time_rfc3339micro(s->first_ns, micro, sizeof(micro));
	sf_buf_init(&b, 0);
	rc |= sf_buf_puts(&b, "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":");
	rc |= sf_buf_put_json_str(&b, name, strlen(name));
	rc |= sf_buf_puts(&b, ",\"namespace\":");
	rc |= sf_buf_put_json_str(&b, obj->ns, strlen(obj->ns));
	rc |= sf_buf_puts(&b, "},\"involvedObject\":{\"apiVersion\":");
	rc |= sf_buf_put_json_str(&b, api_version, strlen(api_version));
	rc |= sf_buf_puts(&b, ",\"kind\":");
	rc |= sf_buf_put_json_str(&b, kind, strlen(kind));
	rc |= sf_buf_puts(&b, ",\"namespace\":");
	rc |= sf_buf_put_json_str(&b, obj->ns, strlen(obj->ns));
	rc |= sf_buf_puts(&b, ",\"name\":");
	rc |= sf_buf_put_json_str(&b, obj->name, strlen(obj->name));
	rc |= sf_buf_puts(&b, ",\"uid\":");
	rc |= sf_buf_put_json_str(&b, obj->uid, strlen(obj->uid));
	rc |= sf_buf_puts(&b, ",\"resourceVersion\":");
	rc |= sf_buf_put_json_str(&b, obj->rv, strlen(obj->rv));
	rc |= sf_buf_puts(&b, "},\"reason\":");
	rc |= sf_buf_put_json_str(&b, reason, strlen(reason));
	rc |= sf_buf_puts(&b, ",\"message\":");
	rc |= sf_buf_put_json_str(&b, message, strlen(message));
	rc |= sf_buf_puts(&b, ",\"type\":");
	rc |= sf_buf_put_json_str(&b, type, strlen(type));
	rc |= sf_buf_puts(&b, ",\"source\":{\"component\":");
	rc |= sf_buf_put_json_str(&b, ev->component, strlen(ev->component));
	rc |= sf_buf_puts(&b, "},\"reportingComponent\":");
	rc |= sf_buf_put_json_str(&b, ev->component, strlen(ev->component));
	rc |= sf_buf_puts(&b, ",\"reportingInstance\":");
	rc |= sf_buf_put_json_str(&b, ev->instance, strlen(ev->instance));
	rc |= sf_buf_printf(&b, ",\"firstTimestamp\":\"%s\",\"lastTimestamp\":\"%s\",\"count\":1}",
	                    ts, ts);
	if (rc) {
		sf_buf_free(&b);
		return -ENOMEM;
	}
	s->busy = 1;
	s->count = 1;
	s->pending = 0;
	rc = sf_kube_create(ev->client, &SF_GVR_EVENTS, obj->ns, b.data, write_done, s, NULL);
	sf_buf_free(&b);
	if (rc < 0)
		s->busy = 0;
	return rc;
}

int sf_events_emit(sf_events *ev, const sf_obj *obj, const char *api_version, const char *kind,
                   const char *type, const char *reason, const char *message)
{
	sf_buf k;
	int rc;
	int64_t now_mono = sf_mono_ns();
	sf_buf_init(&k, 0);
	if (sf_buf_printf(&k, "%s\x1f%s\x1f%s\x1f%s", obj->uid, type, reason, message) < 0) {
		sf_buf_free(&k);
		return -ENOMEM;
	}
	sf_log(strcmp(type, "Warning") == 0 ? SF_LOG_WARN : SF_LOG_INFO, "events", message,
	       "namespace", obj->ns, "name", obj->name, "reason", reason, "type", type, NULL);
	series *s = sf_strmap_get(ev->byk, k.data);
	if (s && (now_mono - s->seen_mono_ns) / SF_NSEC_PER_MSEC > ev->window_ms)
		series_drop(ev, s), s = NULL;
	if (s) {
		sf_buf_free(&k);
		s->seen_mono_ns = now_mono;
		s->last_ns = sf_wall_ns();
		s->pending++;
		ev->st.aggregated++;
		/* move to the newest end */
		series_unlink(ev, s);
		s->older = ev->newest;
		if (ev->newest)
			ev->newest->newer = s;
		else
			ev->oldest = s;
		ev->newest = s;
		if (!s->busy && s->created)
			return patch_series(ev, s);
		return 0;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		sf_buf_free(&k);
		return -ENOMEM;
	}
	s->key = sf_buf_detach(&k, NULL);
	s->ns = strdup(obj->ns);
	s->ev = ev;
	s->first_ns = s->last_ns = sf_wall_ns();
	s->seen_mono_ns = now_mono;
	if (!s->key || !s->ns || sf_strmap_put(ev->byk, s->key, s, NULL) < 0) {
		series_free(s);
		return -ENOMEM;
	}
	s->older = ev->newest;
	if (ev->newest)
		ev->newest->newer = s;
	else
		ev->oldest = s;
	ev->newest = s;
	while (sf_strmap_len(ev->byk) > ev->max_keys && ev->oldest != s) {
		ev->st.dropped++;
		series_drop(ev, ev->oldest);
	}
	ev->st.created++;
	rc = create_series(ev, s, obj, api_version, kind, type, reason, message);
	if (rc < 0)
		series_drop(ev, s);
	return rc;
}
