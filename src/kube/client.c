/*
 * client.c - Kubernetes REST client over sf_http (see client.h).
 *
 * A call goes through three stages: queued (waiting for a rate-limit token,
 * a Retry-After pause, or an exec credential plugin run on the loop), in
 * flight (an sf_http request), and completed (its callback has run). One
 * loop timer dispatches queued calls in FIFO order as tokens allow; a write
 * asks the write gate each time it is about to be sent (at dispatch, and
 * again after an exec plugin it waited for), so one that waited while its
 * leader lost the lease is refused, not sent. Nothing completes inside the
 * call that started it, so callers never see re-entrant callbacks; a start
 * call that returns an error (such as -EINVAL from a verb that addresses
 * one object, given no name) queued nothing and its callback never runs.
 */
#include "steadfast/client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/credentials.h"
#include "steadfast/http.h"
#include "steadfast/log.h"
#include "steadfast/time.h"

const sf_gvr SF_GVR_NAMESPACES = {"", "v1", "namespaces", 0};
const sf_gvr SF_GVR_CONFIGMAPS = {"", "v1", "configmaps", 1};
const sf_gvr SF_GVR_PODS = {"", "v1", "pods", 1};
const sf_gvr SF_GVR_EVENTS = {"", "v1", "events", 1};
const sf_gvr SF_GVR_EVENTS_K8S_IO = {"events.k8s.io", "v1", "events", 1};
const sf_gvr SF_GVR_LEASES = {"coordination.k8s.io", "v1", "leases", 1};
const sf_gvr SF_GVR_JOBS = {"batch", "v1", "jobs", 1};
const sf_gvr SF_GVR_CRDS = {"apiextensions.k8s.io", "v1", "customresourcedefinitions", 0};

#define DEFAULT_TIMEOUT_MS 60000
#define MAX_RETRY_AFTER_S 60

/* CALL_AUTH: dispatched, waiting for the exec plugin run in flight */
enum call_state { CALL_QUEUED, CALL_AUTH, CALL_INFLIGHT, CALL_DONE_PENDING };

typedef struct resolved {
	char *api_version, *kind;
	char *group, *version, *resource;
	int namespaced;
	struct resolved *next;
} resolved;

struct sf_kube_call {
	sf_kube_client *c;
	enum call_state state;
	char *method, *url, *body, *content_type, *accept;
	size_t body_len;
	long timeout_ms;
	int is_write;
	int fresh;
	sf_kube_req req_view; /* for the write gate: method/gvr/ns/name only */
	sf_gvr gvr_copy;
	char *ns, *name, *sub;
	sf_kube_cb cb;
	void *ud;
	/* streaming */
	sf_list_item_fn list_item;
	sf_watch_event_fn watch_event;
	void *stream_ud;
	sf_list_decoder *ld;
	sf_watch_decoder *wd;
	sf_http_req *hreq;
	sf_cred_exec_wait *cwait; /* in CALL_AUTH */
	int cred_ready;           /* the run it waited for gave a credential */
	int64_t not_before_ns;
	int64_t
	    limiter_from_ns; /* since when it may take a token (queued, or a retry's pause over) */
	int64_t sent_ns;     /* handed to sf_http */
	int retries;
	int pending_err;
	char *pending_msg;
	struct sf_kube_call *prev, *next; /* client's list of live calls */
};

struct sf_kube_client {
	uv_loop_t *loop;
	sf_kube_config *cfg;
	sf_http *http;
	char *base;
	char *ua_header;
	char *host_header;      /* "Host: ..." when the URL carries tls-server-name */
	unsigned long cert_gen; /* exec plugin certificate in use */
	double qps;
	int burst;
	double tokens;
	int64_t tokens_at_ns;
	long timeout_ms;
	int max_retries_429;
	uv_timer_t timer;
	uv_timer_t health; /* read-idle probe */
	long read_idle_ms, ping_timeout_ms;
	sf_http_req *probe;                    /* in flight */
	sf_kube_call *calls_head, *calls_tail; /* FIFO */
	sf_kube_write_gate_fn gate;
	void *gate_ud;
	resolved *resolved;
	sf_kube_client_stats stats;
	int closing;
	int http_closed, timer_closed, health_closed;
	void (*close_cb)(void *);
	void *close_ud;
	/* rest_client_requests_total{code,method}: code 0 = no response */
	unsigned long req_counts[SF_KUBE_NMETHODS][600];
	/* rest_client_rate_limiter_duration_seconds and
	 * rest_client_request_duration_seconds{verb,host}, by method */
	sf_prom_hist limiter_wait[SF_KUBE_NMETHODS];
	sf_prom_hist req_time[SF_KUBE_NMETHODS];
	char *host_label; /* the server URL's host[:port] */
};

/* client-go's buckets for both (k8s.io/component-base restclient metrics) */
static const double latency_buckets[] = {0.005, 0.025, 0.1, 0.25, 0.5,  1.0,
                                         2.0,   4.0,   8.0, 15.0, 30.0, 60.0};

static const sf_kube_status empty_status = {0, "", "", "", "", "", "", -1};

static void dispatch(uv_timer_t *t);

/* ---- small helpers ---- */

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void schedule(sf_kube_client *c, int64_t delay_ns)
{
	if (c->closing && c->timer_closed)
		return;
	uint64_t ms =
	    delay_ns <= 0 ? 0 : (uint64_t)((delay_ns + SF_NSEC_PER_MSEC - 1) / SF_NSEC_PER_MSEC);
	if (uv_is_active((uv_handle_t *)&c->timer) && uv_timer_get_due_in(&c->timer) <= ms)
		return;
	uv_timer_start(&c->timer, dispatch, ms, 0);
}

static void call_unlink(sf_kube_call *k)
{
	sf_kube_client *c = k->c;
	if (k->prev)
		k->prev->next = k->next;
	else
		c->calls_head = k->next;
	if (k->next)
		k->next->prev = k->prev;
	else
		c->calls_tail = k->prev;
	k->prev = k->next = NULL;
}

/* Queues k last in the client's FIFO of live calls. */
static void call_append(sf_kube_client *c, sf_kube_call *k)
{
	k->prev = c->calls_tail;
	if (c->calls_tail)
		c->calls_tail->next = k;
	else
		c->calls_head = k;
	c->calls_tail = k;
}

static void call_free(sf_kube_call *k)
{
	sf_cred_exec_wait_cancel(k->cwait);
	free(k->method);
	free(k->url);
	free(k->body);
	free(k->content_type);
	free(k->accept);
	free(k->ns);
	free(k->name);
	free(k->sub);
	free(k->pending_msg);
	free((char *)k->gvr_copy.group);
	free((char *)k->gvr_copy.version);
	free((char *)k->gvr_copy.resource);
	sf_list_decoder_free(k->ld);
	sf_watch_decoder_free(k->wd);
	free(k);
}

static void status_free(sf_kube_status *s)
{
	free(s->status);
	free(s->reason);
	free(s->message);
	free(s->details_name);
	free(s->details_kind);
	free(s->details_group);
}

static char *jv_dup_or_empty(sf_jv v)
{
	char *s = sf_jv_strdup(v);
	return s ? s : strdup("");
}

/* Fills st from a Status body; a body that is not a Status yields a
 * message made of its first bytes. */
static void status_decode(sf_kube_status *st, long http_status, const char *body, size_t len,
                          long retry_after)
{
	memset(st, 0, sizeof(*st));
	st->code = (int)http_status;
	st->retry_after_s = retry_after;
	sf_buf mb;
	sf_buf_init(&mb, len + 16);
	char err[128];
	sf_jv root = SF_JV_NONE;
	if (len && sf_json_minify(body, len, &mb, err, sizeof(err)) == 0)
		root = sf_jv_root(mb.data, mb.len);
	if (sf_jv_type(root) == SF_JSON_OBJECT && sf_jv_streq(sf_jv_get(root, "kind"), "Status")) {
		int64_t code;
		if (sf_jv_int64(sf_jv_get(root, "code"), &code) == 0 && code > 0)
			st->code = (int)code;
		st->status = jv_dup_or_empty(sf_jv_get(root, "status"));
		st->reason = jv_dup_or_empty(sf_jv_get(root, "reason"));
		st->message = jv_dup_or_empty(sf_jv_get(root, "message"));
		sf_jv d = sf_jv_get(root, "details");
		st->details_name = jv_dup_or_empty(sf_jv_get(d, "name"));
		st->details_kind = jv_dup_or_empty(sf_jv_get(d, "kind"));
		st->details_group = jv_dup_or_empty(sf_jv_get(d, "group"));
		int64_t ra;
		if (sf_jv_int64(sf_jv_get(d, "retryAfterSeconds"), &ra) == 0 && ra > 0)
			st->retry_after_s = (long)ra;
	} else {
		st->status =
		    strdup(http_status >= 200 && http_status < 300 ? "Success" : "Failure");
		st->reason = strdup("");
		size_t n = len > 200 ? 200 : len;
		st->message = malloc(n + 1);
		if (st->message) {
			memcpy(st->message, body, n);
			st->message[n] = '\0';
			for (size_t i = 0; i < n; i++)
				if (st->message[i] == '\n' || st->message[i] == '\r')
					st->message[i] = ' ';
		}
		st->details_name = strdup("");
		st->details_kind = strdup("");
		st->details_group = strdup("");
	}
	sf_buf_free(&mb);
}

/* ---- classification ---- */

static int reason_is(const sf_kube_result *r, const char *reason)
{
	return r->status && r->status->reason && strcmp(r->status->reason, reason) == 0;
}

int sf_kube_ok(const sf_kube_result *r)
{
	return r->err == 0 && r->http_status >= 200 && r->http_status < 300;
}
int sf_kube_is_transport(const sf_kube_result *r)
{
	return r->err != 0;
}
int sf_kube_is_not_found(const sf_kube_result *r)
{
	return !r->err && (r->http_status == 404 || reason_is(r, "NotFound"));
}
int sf_kube_is_absent(const sf_kube_result *r, const char *name)
{
	return !r->err && r->http_status == 404 && reason_is(r, "NotFound") && name &&
	       r->status->details_name && strcmp(r->status->details_name, name) == 0;
}
int sf_kube_is_already_exists(const sf_kube_result *r)
{
	return !r->err && reason_is(r, "AlreadyExists");
}
int sf_kube_is_conflict(const sf_kube_result *r)
{
	return !r->err && (reason_is(r, "Conflict") ||
	                   (r->http_status == 409 && !reason_is(r, "AlreadyExists")));
}
int sf_kube_is_gone(const sf_kube_result *r)
{
	return !r->err && (r->http_status == 410 || reason_is(r, "Gone"));
}
int sf_kube_is_expired(const sf_kube_result *r)
{
	return !r->err &&
	       (r->http_status == 410 || reason_is(r, "Expired") || reason_is(r, "Gone"));
}
int sf_kube_is_forbidden(const sf_kube_result *r)
{
	return !r->err && (r->http_status == 403 || reason_is(r, "Forbidden"));
}
int sf_kube_is_unauthorized(const sf_kube_result *r)
{
	return !r->err && (r->http_status == 401 || reason_is(r, "Unauthorized"));
}
int sf_kube_is_too_many_requests(const sf_kube_result *r)
{
	return !r->err && (r->http_status == 429 || reason_is(r, "TooManyRequests"));
}
int sf_kube_is_server_timeout(const sf_kube_result *r)
{
	return !r->err &&
	       (r->http_status == 504 || reason_is(r, "ServerTimeout") || reason_is(r, "Timeout"));
}
int sf_kube_is_invalid(const sf_kube_result *r)
{
	return !r->err && (r->http_status == 422 || reason_is(r, "Invalid"));
}

const char *sf_kube_result_str(const sf_kube_result *r, char *buf, size_t n)
{
	if (r->err)
		snprintf(buf, n, "transport error %d (%s): %s", r->err, strerror(-r->err),
		         r->errmsg);
	else if (sf_kube_ok(r))
		snprintf(buf, n, "%ld", r->http_status);
	else
		snprintf(buf, n, "%ld %s: %s", r->http_status, r->status->reason,
		         r->status->message);
	return buf;
}

/* ---- paths and queries ---- */

static int url_escape(sf_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	int rc = 0;
	for (; *s && !rc; s++) {
		unsigned char ch = (unsigned char)*s;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
			rc = sf_buf_putc(b, (char)ch);
		} else {
			char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
			rc = sf_buf_append(b, e, 3);
		}
	}
	return rc;
}

int sf_kube_query_add(sf_buf *q, const char *key, const char *value)
{
	int rc = 0;
	if (q->len)
		rc = sf_buf_putc(q, '&');
	if (!rc)
		rc = url_escape(q, key);
	if (!rc)
		rc = sf_buf_putc(q, '=');
	if (!rc)
		rc = url_escape(q, value ? value : "");
	return rc;
}

static int path_segment_ok(const char *s)
{
	/* names never contain '/', and "." / ".." would change the path */
	return s && *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

int sf_kube_path(sf_buf *out, const sf_gvr *gvr, const char *ns, const char *name, const char *sub)
{
	if (!gvr || !path_segment_ok(gvr->version) || !path_segment_ok(gvr->resource))
		return -EINVAL;
	int rc;
	if (gvr->group && *gvr->group) {
		if (!path_segment_ok(gvr->group))
			return -EINVAL;
		rc = sf_buf_printf(out, "/apis/%s/%s", gvr->group, gvr->version);
	} else {
		rc = sf_buf_printf(out, "/api/%s", gvr->version);
	}
	if (!rc && gvr->namespaced && ns && *ns) {
		if (!path_segment_ok(ns))
			return -EINVAL;
		rc = sf_buf_puts(out, "/namespaces/");
		if (!rc)
			rc = url_escape(out, ns);
	}
	if (!rc)
		rc = sf_buf_printf(out, "/%s", gvr->resource);
	if (!rc && name && *name) {
		if (!path_segment_ok(name))
			return -EINVAL;
		rc = sf_buf_putc(out, '/');
		if (!rc)
			rc = url_escape(out, name);
		if (!rc && sub && *sub) {
			if (!path_segment_ok(sub))
				return -EINVAL;
			rc = sf_buf_printf(out, "/%s", sub);
		}
	} else if (!rc && sub && *sub) {
		return -EINVAL;
	}
	return rc;
}

int sf_kube_label_selector(sf_buf *out, const char *const *kv, size_t npairs)
{
	int rc = 0;
	for (size_t i = 0; i < npairs && !rc; i++) {
		if (i)
			rc = sf_buf_putc(out, ',');
		if (!rc)
			rc = sf_buf_printf(out, "%s=%s", kv[2 * i], kv[2 * i + 1]);
	}
	return rc;
}

/* ---- client ---- */

sf_kube_config *sf_kube_client_config(sf_kube_client *c)
{
	return c->cfg;
}

/* ---- connection health ---- */

static void probe_done(void *ud, const sf_http_result *r)
{
	sf_kube_client *c = ud;
	c->probe = NULL;
	/* any answer proves the connection; a timeout has already shut it
	 * down (sf_http does that for every timed-out request) */
	if (r->err && r->err != -ECANCELED)
		sf_log_warn("kube.client", "the API server did not answer a health probe", "error",
		            r->errmsg, NULL);
}

/* While requests are in flight and nothing came back for read_idle_ms,
 * ask the connection something small. */
static void health_tick(uv_timer_t *t)
{
	sf_kube_client *c = t->data;
	if (c->closing || c->probe || sf_http_active(c->http) == 0)
		return;
	int64_t rx = sf_http_last_rx_ns(c->http);
	if (rx && sf_mono_ns() - rx < (int64_t)c->read_idle_ms * SF_NSEC_PER_MSEC)
		return;
	char url[1100];
	snprintf(url, sizeof(url), "%s/version", c->base);
	const char *headers[] = {c->ua_header, "Accept: application/json", c->host_header, NULL};
	sf_http_request hr = {
	    .method = "GET",
	    .url = url,
	    .headers = headers,
	    .timeout_ms = c->ping_timeout_ms,
	    .on_done = probe_done,
	    .ud = c,
	};
	if (sf_http_start(c->http, &hr, &c->probe) == 0)
		c->stats.health_probes++;
	else
		c->probe = NULL;
}

/* For a tls-server-name: *base = server with its host replaced by name
 * (port and path kept), connect_to = "NAME:PORT:HOST:PORT", *host = "Host:
 * HOST[:PORT]" as written in server. */
static int tls_name_url(const char *server, const char *name, char **base, char *connect_to,
                        size_t cn, char **host)
{
	const char *hp = strstr(server, "://");
	if (!hp)
		return -EINVAL;
	size_t schemelen = (size_t)(hp - server);
	hp += 3;
	size_t hplen = strcspn(hp, "/?#");
	const char *rest = hp + hplen;
	const char *host_end = hp + hplen, *port = NULL;
	size_t portlen = 0;
	if (*hp == '[') {
		const char *rb = memchr(hp, ']', hplen);
		if (!rb)
			return -EINVAL;
		host_end = rb + 1;
	} else {
		const char *colon = memchr(hp, ':', hplen);
		if (colon)
			host_end = colon;
	}
	if (host_end < hp + hplen && *host_end == ':') {
		port = host_end + 1;
		portlen = (size_t)(hp + hplen - port);
	}
	if (!port || !portlen) {
		port = schemelen == 4 ? "80" : "443";
		portlen = strlen(port);
	}
	int v6 = strchr(name, ':') != NULL && name[0] != '[';
	int n =
	    snprintf(connect_to, cn, "%s%s%s:%.*s:%.*s:%.*s", v6 ? "[" : "", name, v6 ? "]" : "",
	             (int)portlen, port, (int)(host_end - hp), hp, (int)portlen, port);
	if (n < 0 || (size_t)n >= cn)
		return -EINVAL;
	sf_buf b, hb;
	sf_buf_init(&b, 0);
	sf_buf_init(&hb, 0);
	if (sf_buf_printf(&b, "%.*s://%s%s%s:%.*s%s", (int)schemelen, server, v6 ? "[" : "", name,
	                  v6 ? "]" : "", (int)portlen, port, rest) ||
	    sf_buf_printf(&hb, "Host: %.*s", (int)hplen, hp)) {
		sf_buf_free(&b);
		sf_buf_free(&hb);
		return -ENOMEM;
	}
	*base = sf_buf_detach(&b, NULL);
	*host = sf_buf_detach(&hb, NULL);
	if (!*base || !*host) {
		free(*base);
		free(*host);
		*base = *host = NULL;
		return -ENOMEM;
	}
	return 0;
}

int sf_kube_client_new(uv_loop_t *loop, sf_kube_config *cfg, const sf_kube_client_opts *opts,
                       sf_kube_client **out)
{
	if (!cfg || !cfg->server)
		return -EINVAL;
	sf_kube_client *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->cfg = cfg;
	c->qps = opts && opts->qps ? opts->qps : 20.0;
	c->burst = opts && opts->burst > 0 ? opts->burst : 30;
	c->tokens = c->burst;
	c->tokens_at_ns = sf_mono_ns();
	c->timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
	c->max_retries_429 = opts && opts->max_retries_429
	                         ? (opts->max_retries_429 < 0 ? 0 : opts->max_retries_429)
	                         : 5;
	char ua[600];
	snprintf(ua, sizeof(ua), "User-Agent: %.580s",
	         opts && opts->user_agent ? opts->user_agent
	                                  : "steadfast/" SF_VERSION " (linux/amd64)");
	c->ua_header = strdup(ua);
	c->base = strdup(cfg->server);
	const char *h = strstr(cfg->server, "://");
	h = h ? h + 3 : cfg->server;
	c->host_label = strndup(h, strcspn(h, "/?#"));
	if (!c->ua_header || !c->base || !c->host_label)
		goto nomem;
	for (int m = 0; m < SF_KUBE_NMETHODS; m++) {
		sf_prom_hist_init(&c->limiter_wait[m], latency_buckets,
		                  sizeof(latency_buckets) / sizeof(latency_buckets[0]));
		sf_prom_hist_init(&c->req_time[m], latency_buckets,
		                  sizeof(latency_buckets) / sizeof(latency_buckets[0]));
	}

	sf_http_opts ho = {
	    .ca_file = cfg->ca_file,
	    .cert_file = cfg->client_cert_file,
	    .key_file = cfg->client_key_file,
	    .insecure = cfg->insecure_skip_tls_verify,
	    .proxy = cfg->proxy_url,
	    .no_compression = cfg->disable_compression,
	    .http1_only = opts && opts->http1_only,
	    .tcp_user_timeout_ms = opts ? opts->tcp_user_timeout_ms : 0,
	};
	c->read_idle_ms = opts && opts->read_idle_ms ? opts->read_idle_ms : 30000;
	c->ping_timeout_ms = opts && opts->ping_timeout_ms > 0 ? opts->ping_timeout_ms : 15000;
	char connect_to[600];
	if (cfg->tls_server_name && *cfg->tls_server_name) {
		/* The URL carries the TLS name (SNI and the name the certificate
		 * is checked against), CONNECT_TO sends it to the real host, and
		 * Host (":authority" over HTTP/2) stays the server's, as Go's
		 * TLSClientConfig.ServerName does. The server's path is kept.
		 * libcurl 7.88 turns the Host header into ":authority" over
		 * HTTP/2 (seen in its verbose output against kube-apiserver). */
		free(c->base); /* replaced by the URL carrying the TLS name */
		c->base = NULL;
		int rc = tls_name_url(cfg->server, cfg->tls_server_name, &c->base, connect_to,
		                      sizeof(connect_to), &c->host_header);
		if (rc) {
			free(c->ua_header);
			free(c->base);
			free(c->host_label);
			free(c);
			return rc;
		}
		ho.connect_to = connect_to;
	}
	int rc = sf_http_new(loop, &ho, &c->http);
	if (rc) {
		free(c->ua_header);
		free(c->base);
		free(c->host_header);
		free(c->host_label);
		free(c);
		return rc;
	}
	uv_timer_init(loop, &c->timer);
	c->timer.data = c;
	uv_timer_init(loop, &c->health);
	c->health.data = c;
	if (c->read_idle_ms > 0) {
		uint64_t tick = (uint64_t)(c->read_idle_ms / 4 > 0 ? c->read_idle_ms / 4 : 1);
		uv_timer_start(&c->health, health_tick, tick, tick);
	}
	*out = c;
	return 0;
nomem:
	free(c->ua_header);
	free(c->base);
	free(c->host_header);
	free(c->host_label);
	free(c);
	return -ENOMEM;
}

void sf_kube_client_set_write_gate(sf_kube_client *c, sf_kube_write_gate_fn gate, void *ud)
{
	c->gate = gate;
	c->gate_ud = ud;
}

void sf_kube_client_stats_get(const sf_kube_client *c, sf_kube_client_stats *out)
{
	*out = c->stats;
	out->connections_dropped = sf_http_dropped(c->http);
}

/* Completes a call that is not in flight, from the dispatcher. */
static void call_fail_later(sf_kube_call *k, int err, const char *msg)
{
	k->state = CALL_DONE_PENDING;
	k->pending_err = err;
	free(k->pending_msg);
	k->pending_msg = strdup(msg ? msg : "");
	schedule(k->c, 0);
}

static void call_finish(sf_kube_call *k, const sf_kube_result *res)
{
	call_unlink(k);
	if (k->cb)
		k->cb(k->ud, res);
	call_free(k);
}

static void call_finish_err(sf_kube_call *k, int err, const char *msg)
{
	sf_kube_result res = {.err = err,
	                      .errmsg = msg ? msg : "",
	                      .status = &empty_status,
	                      .body = "",
	                      .list_rv = "",
	                      .list_continue = "",
	                      .list_remaining = -1};
	call_finish(k, &res);
}

static int stream_list_item(void *ud, sf_obj *item)
{
	sf_kube_call *k = ud;
	return k->list_item(k->stream_ud, item);
}

static int stream_watch_event(void *ud, sf_watch_type t, sf_obj *obj)
{
	sf_kube_call *k = ud;
	return k->watch_event(k->stream_ud, t, obj);
}

static int on_stream_data(void *ud, const char *p, size_t n)
{
	sf_kube_call *k = ud;
	int rc;
	const char *msg;
	if (k->ld) {
		rc = sf_list_decoder_feed(k->ld, p, n);
		msg = sf_list_decoder_error(k->ld);
	} else {
		rc = sf_watch_decoder_feed(k->wd, p, n);
		msg = sf_watch_decoder_error(k->wd);
	}
	if (rc) {
		sf_http_req_fail(k->hreq, rc, msg);
		return 1;
	}
	return 0;
}

static const char *const method_names[SF_KUBE_NMETHODS] = {"GET",   "POST",   "PUT",
                                                           "PATCH", "DELETE", "OTHER"};

static int method_index(const char *method)
{
	for (int i = 0; i < SF_KUBE_NMETHODS - 1; i++)
		if (method && strcmp(method, method_names[i]) == 0)
			return i;
	return SF_KUBE_NMETHODS - 1;
}

static double since_s(int64_t from_ns, int64_t now_ns)
{
	return now_ns > from_ns ? (double)(now_ns - from_ns) / 1e9 : 0;
}

static void count_request(sf_kube_client *c, const char *method, long code)
{
	int m = method_index(method);
	if (code < 0 || code >= 600)
		code = 0;
	c->req_counts[m][code]++;
}

int sf_kube_client_metrics_write(const sf_kube_client *c, sf_prom *p)
{
	sf_prom_family *f =
	    sf_prom_family_get(p, "rest_client_requests_total", SF_PROM_COUNTER,
	                       "Number of HTTP requests, partitioned by status code and method.");
	for (int m = 0; m < SF_KUBE_NMETHODS; m++)
		for (int code = 0; code < 600; code++)
			if (c->req_counts[m][code]) {
				char cs[8];
				if (code)
					snprintf(cs, sizeof(cs), "%d", code);
				else
					snprintf(cs, sizeof(cs), "<error>");
				sf_prom_add_u(
				    f,
				    (const char *[]){"code", cs, "method", method_names[m], NULL},
				    c->req_counts[m][code]);
			}
	sf_prom_family *rl = sf_prom_family_get(
	    p, "rest_client_rate_limiter_duration_seconds", SF_PROM_HISTOGRAM,
	    "Client side rate limiter latency in seconds. Broken down by verb, and host.");
	sf_prom_family *rt = sf_prom_family_get(
	    p, "rest_client_request_duration_seconds", SF_PROM_HISTOGRAM,
	    "Request latency in seconds, from sending to the answer (not the client side "
	    "rate limiter's wait). Broken down by verb, and host.");
	for (int m = 0; m < SF_KUBE_NMETHODS; m++) {
		const char *labels[] = {"verb", method_names[m], "host", c->host_label, NULL};
		if (c->limiter_wait[m].count)
			sf_prom_add_hist(rl, labels, &c->limiter_wait[m]);
		if (c->req_time[m].count)
			sf_prom_add_hist(rt, labels, &c->req_time[m]);
	}
	sf_prom_add_u(sf_prom_family_get(p, "steadfast_rest_client_health_probes_total",
	                                 SF_PROM_COUNTER,
	                                 "Read-idle probes of the API server connection."),
	              NULL, c->stats.health_probes);
	return sf_prom_add_u(sf_prom_family_get(p,
	                                        "steadfast_rest_client_connections_dropped_total",
	                                        SF_PROM_COUNTER,
	                                        "Connections shut down as dead (a request or probe "
	                                        "timed out)."),
	                     NULL, sf_http_dropped(c->http));
}

/* A request that may be sent again after an error answer. */
static int idempotent(const char *method)
{
	return !strcmp(method, "GET") || !strcmp(method, "PUT") || !strcmp(method, "DELETE") ||
	       !strcmp(method, "HEAD");
}

static void on_http_done(void *ud, const sf_http_result *hr)
{
	sf_kube_call *k = ud;
	sf_kube_client *c = k->c;
	k->hreq = NULL;
	/* a watch's answer is its whole stream: not a request's latency
	 * (client-go does not observe watches either) */
	if (!k->wd)
		sf_prom_hist_observe(&c->req_time[method_index(k->method)],
		                     since_s(k->sent_ns, sf_mono_ns()));
	sf_kube_status st;
	memset(&st, 0, sizeof(st));
	sf_kube_result res = {.err = hr->err,
	                      .errmsg = hr->errmsg,
	                      .http_status = hr->status,
	                      .status = &empty_status,
	                      .body = "",
	                      .list_rv = "",
	                      .list_continue = "",
	                      .list_remaining = -1};
	int stat_idx = hr->err ? 0 : (int)(hr->status / 100);
	if (stat_idx >= 0 && stat_idx < 6)
		c->stats.by_code[stat_idx]++;
	count_request(c, k->method, hr->err ? 0 : hr->status);
	if (hr->http_version == 2)
		c->stats.http2_responses++;
	if (!hr->err && hr->status == 401)
		sf_kube_config_unauthorized(c->cfg); /* an exec plugin runs again */
	if (hr->err == -ECANCELED && k->is_write)
		c->stats.writes_cancelled++;

	int ok = !hr->err && hr->status >= 200 && hr->status < 300;
	if (hr->body && hr->body->len) {
		res.body = hr->body->data;
		res.body_len = hr->body->len;
	}
	if (ok && k->ld) {
		int rc = sf_list_decoder_finish(k->ld);
		if (rc) {
			res.err = rc;
			res.errmsg = sf_list_decoder_error(k->ld);
		}
		res.list_rv = sf_list_decoder_rv(k->ld);
		res.list_continue = sf_list_decoder_continue(k->ld);
		res.list_remaining = sf_list_decoder_remaining(k->ld);
		res.items = sf_list_decoder_count(k->ld);
	} else if (ok && k->wd) {
		int rc = sf_watch_decoder_finish(k->wd);
		if (rc) {
			res.err = rc;
			res.errmsg = sf_watch_decoder_error(k->wd);
		}
		res.items = sf_watch_decoder_count(k->wd);
	} else if (k->wd && hr->err && hr->status >= 200 && hr->status < 300) {
		res.items = sf_watch_decoder_count(k->wd);
	} else if (ok && res.body_len) {
		char err[160];
		res.obj = sf_obj_parse(res.body, res.body_len, err, sizeof(err));
		if (!res.obj) {
			res.err = -EBADMSG;
			res.errmsg = "response body is not valid JSON";
		}
	} else if (!hr->err && !ok) {
		status_decode(&st, hr->status, res.body, res.body_len, hr->retry_after_s);
		res.status = &st;
		res.errmsg = st.message ? st.message : "";
		/* 429 always (nothing was done); a 5xx only with Retry-After
		 * (the server says it is temporary, as client-go's checkWait
		 * reads it) and only for a request that is safe to repeat: a
		 * create that may have happened is never sent again blindly */
		int retry_5xx = hr->status >= 500 && hr->status <= 599 && hr->retry_after_s > 0 &&
		                idempotent(k->method);
		if ((sf_kube_is_too_many_requests(&res) || retry_5xx) &&
		    k->retries < c->max_retries_429 && !c->closing) {
			long wait = st.retry_after_s > 0 ? st.retry_after_s : 1;
			if (wait > MAX_RETRY_AFTER_S)
				wait = MAX_RETRY_AFTER_S;
			char ws[24];
			sf_log_debug("kube.client", "throttled by the server; retrying", "url",
			             k->url, "retryAfterSeconds", sf_log_int(ws, wait), NULL);
			k->retries++;
			if (retry_5xx)
				c->stats.retries_5xx++;
			else
				c->stats.retries_429++;
			k->state = CALL_QUEUED;
			k->not_before_ns = sf_mono_ns() + wait * SF_NSEC_PER_SEC;
			k->limiter_from_ns = k->not_before_ns;
			if (k->ld) {
				sf_list_decoder_free(k->ld);
				k->ld = sf_list_decoder_new(stream_list_item, k, 0);
			}
			status_free(&st);
			schedule(c, wait * SF_NSEC_PER_SEC);
			return;
		}
	}
	call_finish(k, &res);
	sf_obj_unref(res.obj);
	if (res.status == &st)
		status_free(&st);
}

/* An exec plugin's client certificate changed: new requests use it, and
 * connections made with the old one are shut down (client-go closes them
 * too when its certificate rotates). */
static int use_exec_cert(sf_kube_client *c)
{
	const sf_cred_exec *e = c->cfg->exec;
	if (!e || e->generation == c->cert_gen)
		return 0;
	int rc = sf_http_set_client_cert(c->http, e->cert_path, e->key_path);
	if (rc)
		return rc;
	if (c->cert_gen)
		sf_http_drop_connections(c->http, "exec plugin returned a new client certificate");
	c->cert_gen = e->generation;
	return 0;
}

static void call_start(sf_kube_call *k, int take, int64_t now);

/* The exec plugin run that k waited for has ended. */
static void on_cred_ready(void *ud, int rc, const char *err)
{
	sf_kube_call *k = ud;
	k->cwait = NULL;
	k->state = CALL_QUEUED;
	if (k->c->closing) {
		call_finish_err(k, -ECANCELED, "client closed");
		return;
	}
	if (rc) {
		sf_log_error("kube.client", "no credentials for the request", "error", err,
		             (char *)NULL);
		call_finish_err(k, rc, err);
		return;
	}
	k->cred_ready = 1;
	call_start(k, 0, 0); /* it took its token when it was dispatched */
}

/* Sends k, or (0, CALL_AUTH) parks it until the exec plugin has run. */
static int call_send(sf_kube_call *k, char *msg, size_t msglen)
{
	sf_kube_client *c = k->c;
	const char *headers[8];
	size_t nh = 0;
	char *auth = NULL;
	const char *tok = NULL;
	int rc;
	if (c->cfg->exec) {
		sf_cred_exec *e = c->cfg->exec;
		/* a credential just handed out is used even if it expires within
		 * the refresh margin (checking again would run the plugin in a
		 * loop) */
		rc = k->cred_ready && e->valid
		         ? 0
		         : sf_cred_exec_refresh_async(e, c->loop, on_cred_ready, k, &k->cwait, msg,
		                                      msglen);
		k->cred_ready = 0;
		if (rc == SF_CRED_EXEC_PENDING) {
			k->state = CALL_AUTH;
			return 0;
		}
		tok = e->token;
	} else {
		rc = sf_kube_config_auth(c->cfg, &tok, msg, msglen);
	}
	if (!rc)
		rc = use_exec_cert(c);
	if (rc) {
		if (!msg[0])
			snprintf(msg, msglen, "credentials: %s", strerror(-rc));
		sf_log_error("kube.client", "no credentials for the request", "error", msg,
		             (char *)NULL);
		return rc;
	}
	if (tok && *tok) {
		size_t l = strlen(tok) + 32;
		auth = malloc(l);
		if (!auth)
			return -ENOMEM;
		snprintf(auth, l, "Authorization: Bearer %s", tok);
		headers[nh++] = auth;
	}
	headers[nh++] = c->ua_header;
	char accept[256];
	if (k->accept) {
		snprintf(accept, sizeof(accept), "Accept: %s", k->accept);
		headers[nh++] = accept;
	} else {
		headers[nh++] = "Accept: application/json";
	}
	if (c->host_header)
		headers[nh++] = c->host_header;
	if (k->wd)
		/* a WatchList answer may be gzip, one gzip stream per flush
		 * (WatchListCompression); libcurl ends the transfer with a
		 * write error at the second. Watches are asked for as is. */
		headers[nh++] = "Accept-Encoding: identity";
	char ct[128];
	if (k->body) {
		snprintf(ct, sizeof(ct), "Content-Type: %s",
		         k->content_type ? k->content_type : "application/json");
		headers[nh++] = ct;
	}
	headers[nh] = NULL;
	sf_http_request hr = {
	    .method = k->method,
	    .url = k->url,
	    .headers = headers,
	    .body = k->body,
	    .body_len = k->body_len,
	    .timeout_ms = k->timeout_ms > 0 ? k->timeout_ms : 0,
	    .on_data = (k->ld || k->wd) ? on_stream_data : NULL,
	    .on_done = on_http_done,
	    .ud = k,
	    .fresh_connection = k->fresh,
	};
	k->sent_ns = sf_mono_ns();
	rc = sf_http_start(c->http, &hr, &k->hreq);
	free(auth);
	if (rc)
		snprintf(msg, msglen, "could not start request");
	if (rc == 0) {
		k->state = CALL_INFLIGHT;
		c->stats.requests++;
	}
	return rc;
}

/* Takes k's rate-limit token at now. */
static void take_token(sf_kube_client *c, sf_kube_call *k, int64_t now)
{
	if (c->qps <= 0)
		return;
	c->tokens -= 1.0;
	sf_prom_hist_observe(&c->limiter_wait[method_index(k->method)],
	                     since_s(k->limiter_from_ns, now));
}

/* Sends k, finishing it if it cannot go. The only caller of call_send:
 * a write may wait between dispatch and its send (for an exec plugin),
 * and its leader may lose the lease meanwhile, so the fence is asked
 * here, each time a write is about to leave. take: k takes its token at
 * now (a refused write takes none). */
static void call_start(sf_kube_call *k, int take, int64_t now)
{
	sf_kube_client *c = k->c;
	if (k->is_write && c->gate && c->gate(c->gate_ud, &k->req_view)) {
		c->stats.writes_refused++;
		call_finish_err(k, -EPERM, "write refused by fence: not the leader");
		return;
	}
	if (take)
		take_token(c, k, now);
	char msg[1024] = "";
	int rc = call_send(k, msg, sizeof(msg));
	if (rc)
		call_finish_err(k, rc, msg);
}

static void dispatch(uv_timer_t *t)
{
	sf_kube_client *c = t->data;
	int64_t now = sf_mono_ns();
	if (c->qps > 0) {
		c->tokens += (double)(now - c->tokens_at_ns) / 1e9 * c->qps;
		if (c->tokens > c->burst)
			c->tokens = c->burst;
	}
	c->tokens_at_ns = now;
	int64_t next = -1;
	sf_kube_call *k = c->calls_head;
	while (k) {
		sf_kube_call *nx = k->next;
		if (k->state == CALL_DONE_PENDING) {
			call_finish_err(k, k->pending_err, k->pending_msg);
		} else if (k->state == CALL_QUEUED) {
			if (k->not_before_ns > now) {
				if (next < 0 || k->not_before_ns - now < next)
					next = k->not_before_ns - now;
			} else if (c->qps > 0 && c->tokens < 1.0) {
				int64_t wait = (int64_t)((1.0 - c->tokens) / c->qps * 1e9);
				if (next < 0 || wait < next)
					next = wait;
			} else {
				call_start(k, 1, now);
			}
		}
		k = nx;
	}
	if (next >= 0) {
		c->stats.throttled++;
		schedule(c, next);
	}
}

int sf_kube_do(sf_kube_client *c, const sf_kube_req *req, sf_kube_cb cb, void *ud,
               sf_kube_call **out)
{
	if (c->closing)
		return -ESHUTDOWN;
	if (!req->method)
		return -EINVAL;
	sf_buf url;
	sf_buf_init(&url, 0);
	int rc = sf_buf_puts(&url, c->base);
	if (!rc && req->path)
		rc = sf_buf_puts(&url, req->path);
	else if (!rc)
		rc = sf_kube_path(&url, req->gvr, req->ns, req->name, req->subresource);
	if (!rc && req->query && *req->query)
		rc = sf_buf_printf(&url, "?%s", req->query);
	if (rc) {
		sf_buf_free(&url);
		return rc;
	}
	sf_kube_call *k = calloc(1, sizeof(*k));
	if (!k) {
		sf_buf_free(&url);
		return -ENOMEM;
	}
	k->c = c;
	k->state = CALL_QUEUED;
	k->limiter_from_ns = sf_mono_ns();
	k->url = sf_buf_detach(&url, NULL);
	k->method = strdup(req->method);
	k->content_type = xstrdup(req->content_type);
	k->accept = xstrdup(req->accept);
	k->ns = xstrdup(req->ns);
	k->name = xstrdup(req->name);
	k->sub = xstrdup(req->subresource);
	if (req->gvr) {
		k->gvr_copy.group = xstrdup(req->gvr->group ? req->gvr->group : "");
		k->gvr_copy.version = xstrdup(req->gvr->version);
		k->gvr_copy.resource = xstrdup(req->gvr->resource);
		k->gvr_copy.namespaced = req->gvr->namespaced;
	}
	k->timeout_ms = req->timeout_ms == 0 ? c->timeout_ms : req->timeout_ms;
	k->fresh = req->fresh_connection;
	k->is_write = strcmp(req->method, "GET") != 0;
	k->cb = cb;
	k->ud = ud;
	k->list_item = req->list_item;
	k->watch_event = req->watch_event;
	k->stream_ud = req->stream_ud;
	if (req->body) {
		k->body = malloc(req->body_len + 1);
		if (k->body) {
			memcpy(k->body, req->body, req->body_len);
			k->body[req->body_len] = '\0';
			k->body_len = req->body_len;
		}
	}
	if (req->list_item)
		k->ld = sf_list_decoder_new(stream_list_item, k, 0);
	if (req->watch_event)
		k->wd = sf_watch_decoder_new(stream_watch_event, k, 0);
	if (!k->url || !k->method || (req->body && !k->body) || (req->list_item && !k->ld) ||
	    (req->content_type && !k->content_type) || (req->accept && !k->accept) ||
	    (req->watch_event && !k->wd)) {
		call_free(k);
		return -ENOMEM;
	}
	k->req_view = (sf_kube_req){.method = k->method,
	                            .gvr = req->gvr ? &k->gvr_copy : NULL,
	                            .ns = k->ns,
	                            .name = k->name,
	                            .subresource = k->sub,
	                            .path = NULL};
	call_append(c, k);
	schedule(c, 0);
	if (out)
		*out = k;
	return 0;
}

void sf_kube_call_cancel(sf_kube_call *k)
{
	if (!k)
		return;
	if (k->state == CALL_INFLIGHT && k->hreq) {
		sf_http_cancel(k->hreq);
	} else if (k->state == CALL_QUEUED || k->state == CALL_AUTH) {
		sf_cred_exec_wait_cancel(k->cwait);
		k->cwait = NULL;
		call_fail_later(k, -ECANCELED, "request cancelled");
	}
}

void sf_kube_client_cancel_writes(sf_kube_client *c)
{
	for (sf_kube_call *k = c->calls_head; k; k = k->next)
		if (k->is_write)
			sf_kube_call_cancel(k);
}

/* ---- verbs ---- */

/* Whether a verb that addresses one object was given its name. Without
 * one sf_kube_path addresses the collection: a GET would LIST it, a
 * DELETE would delete every object in it, and the caller would read the
 * answer as one about the object. */
static int names_one(const char *name)
{
	return name && *name;
}

int sf_kube_get(sf_kube_client *c, const sf_gvr *gvr, const char *ns, const char *name,
                sf_kube_cb cb, void *ud, sf_kube_call **out)
{
	if (!names_one(name))
		return -EINVAL;
	sf_kube_req r = {.method = "GET", .gvr = gvr, .ns = ns, .name = name};
	return sf_kube_do(c, &r, cb, ud, out);
}

int sf_kube_create(sf_kube_client *c, const sf_gvr *gvr, const char *ns, const char *body,
                   sf_kube_cb cb, void *ud, sf_kube_call **out)
{
	sf_kube_req r = {
	    .method = "POST", .gvr = gvr, .ns = ns, .body = body, .body_len = strlen(body)};
	return sf_kube_do(c, &r, cb, ud, out);
}

int sf_kube_update(sf_kube_client *c, const sf_gvr *gvr, const char *ns, const char *name,
                   const char *sub, const char *body, sf_kube_cb cb, void *ud, sf_kube_call **out)
{
	if (!names_one(name))
		return -EINVAL;
	sf_kube_req r = {.method = "PUT",
	                 .gvr = gvr,
	                 .ns = ns,
	                 .name = name,
	                 .subresource = sub,
	                 .body = body,
	                 .body_len = strlen(body)};
	return sf_kube_do(c, &r, cb, ud, out);
}

int sf_kube_patch(sf_kube_client *c, const sf_gvr *gvr, const char *ns, const char *name,
                  const char *sub, sf_patch_type type, const char *body, const char *field_manager,
                  int force, sf_kube_cb cb, void *ud, sf_kube_call **out)
{
	if (!names_one(name))
		return -EINVAL;
	const char *ct;
	switch (type) {
	case SF_PATCH_MERGE: ct = "application/merge-patch+json"; break;
	case SF_PATCH_JSON: ct = "application/json-patch+json"; break;
	case SF_PATCH_STRATEGIC: ct = "application/strategic-merge-patch+json"; break;
	case SF_PATCH_APPLY: ct = "application/apply-patch+yaml"; break;
	default: return -EINVAL;
	}
	if (type == SF_PATCH_APPLY && (!field_manager || !*field_manager))
		return -EINVAL; /* the server requires a field manager for apply */
	sf_buf q;
	sf_buf_init(&q, 0);
	int rc = 0;
	if (field_manager && *field_manager)
		rc = sf_kube_query_add(&q, "fieldManager", field_manager);
	if (!rc && force && type == SF_PATCH_APPLY)
		rc = sf_kube_query_add(&q, "force", "true");
	if (!rc) {
		sf_kube_req r = {.method = "PATCH",
		                 .gvr = gvr,
		                 .ns = ns,
		                 .name = name,
		                 .subresource = sub,
		                 .query = q.data,
		                 .body = body,
		                 .body_len = strlen(body),
		                 .content_type = ct};
		rc = sf_kube_do(c, &r, cb, ud, out);
	}
	sf_buf_free(&q);
	return rc;
}

int sf_kube_delete(sf_kube_client *c, const sf_gvr *gvr, const char *ns, const char *name,
                   const sf_kube_delete_opts *o, sf_kube_cb cb, void *ud, sf_kube_call **out)
{
	if (!names_one(name))
		return -EINVAL;
	sf_buf b;
	sf_buf_init(&b, 0);
	int rc = sf_buf_puts(&b, "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\"");
	if (o && o->propagation) {
		sf_buf_puts(&b, ",\"propagationPolicy\":");
		sf_buf_put_json_str(&b, o->propagation, strlen(o->propagation));
	}
	if (o && o->grace_seconds >= 0)
		sf_buf_printf(&b, ",\"gracePeriodSeconds\":%ld", o->grace_seconds);
	if (o && (o->precond_uid || o->precond_rv)) {
		sf_buf_puts(&b, ",\"preconditions\":{");
		if (o->precond_uid) {
			sf_buf_puts(&b, "\"uid\":");
			sf_buf_put_json_str(&b, o->precond_uid, strlen(o->precond_uid));
		}
		if (o->precond_rv) {
			if (o->precond_uid)
				sf_buf_putc(&b, ',');
			sf_buf_puts(&b, "\"resourceVersion\":");
			sf_buf_put_json_str(&b, o->precond_rv, strlen(o->precond_rv));
		}
		sf_buf_putc(&b, '}');
	}
	rc = sf_buf_putc(&b, '}');
	if (!rc) {
		sf_kube_req r = {.method = "DELETE",
		                 .gvr = gvr,
		                 .ns = ns,
		                 .name = name,
		                 .body = b.data,
		                 .body_len = b.len};
		rc = sf_kube_do(c, &r, cb, ud, out);
	}
	sf_buf_free(&b);
	return rc;
}

static int list_query(sf_buf *q, const sf_kube_list_opts *o, int watch)
{
	int rc = 0;
	char num[32];
	if (watch)
		rc = sf_kube_query_add(q, "watch", "true");
	if (!o)
		return rc;
	if (!rc && o->label_selector && *o->label_selector)
		rc = sf_kube_query_add(q, "labelSelector", o->label_selector);
	if (!rc && o->field_selector && *o->field_selector)
		rc = sf_kube_query_add(q, "fieldSelector", o->field_selector);
	/* a continue token carries its list's version: the server refuses
	 * resourceVersion or resourceVersionMatch next to it */
	int cont = !watch && o->continue_token && *o->continue_token;
	if (!rc && !cont && o->resource_version && *o->resource_version)
		rc = sf_kube_query_add(q, "resourceVersion", o->resource_version);
	if (!rc && !cont && o->resource_version_match && *o->resource_version_match)
		rc = sf_kube_query_add(q, "resourceVersionMatch", o->resource_version_match);
	if (!watch) {
		if (!rc && o->limit > 0) {
			snprintf(num, sizeof(num), "%ld", o->limit);
			rc = sf_kube_query_add(q, "limit", num);
		}
		if (!rc && o->continue_token && *o->continue_token)
			rc = sf_kube_query_add(q, "continue", o->continue_token);
	} else {
		if (!rc && o->timeout_seconds > 0) {
			snprintf(num, sizeof(num), "%ld", o->timeout_seconds);
			rc = sf_kube_query_add(q, "timeoutSeconds", num);
		}
		if (!rc && o->allow_bookmarks)
			rc = sf_kube_query_add(q, "allowWatchBookmarks", "true");
		if (!rc && o->send_initial_events)
			rc = sf_kube_query_add(q, "sendInitialEvents", "true");
	}
	return rc;
}

int sf_kube_list(sf_kube_client *c, const sf_gvr *gvr, const char *ns, const sf_kube_list_opts *o,
                 sf_list_item_fn item, sf_kube_cb cb, void *ud, sf_kube_call **out)
{
	if (!item)
		return -EINVAL;
	sf_buf q;
	sf_buf_init(&q, 0);
	int rc = list_query(&q, o, 0);
	if (!rc) {
		sf_kube_req r = {.method = "GET",
		                 .gvr = gvr,
		                 .ns = ns,
		                 .query = q.data,
		                 .list_item = item,
		                 .stream_ud = ud};
		rc = sf_kube_do(c, &r, cb, ud, out);
	}
	sf_buf_free(&q);
	return rc;
}

int sf_kube_watch(sf_kube_client *c, const sf_gvr *gvr, const char *ns, const sf_kube_list_opts *o,
                  sf_watch_event_fn event, sf_kube_cb cb, void *ud, sf_kube_call **out)
{
	if (!event)
		return -EINVAL;
	sf_buf q;
	sf_buf_init(&q, 0);
	int rc = list_query(&q, o, 1);
	if (!rc) {
		/* the server ends the watch after timeoutSeconds; allow a margin */
		long to = o && o->timeout_seconds > 0 ? (o->timeout_seconds + 30) * 1000 : -1;
		sf_kube_req r = {.method = "GET",
		                 .gvr = gvr,
		                 .ns = ns,
		                 .query = q.data,
		                 .timeout_ms = to,
		                 .watch_event = event,
		                 .stream_ud = ud,
		                 .fresh_connection = o && o->fresh_connection};
		rc = sf_kube_do(c, &r, cb, ud, out);
	}
	sf_buf_free(&q);
	return rc;
}

/* ---- discovery ---- */

typedef struct resolve_ctx {
	sf_kube_client *c;
	char *api_version, *kind;
	sf_kube_resolve_cb cb;
	void *ud;
} resolve_ctx;

static const resolved *resolved_find(sf_kube_client *c, const char *api_version, const char *kind)
{
	for (resolved *r = c->resolved; r; r = r->next)
		if (strcmp(r->api_version, api_version) == 0 && strcmp(r->kind, kind) == 0)
			return r;
	return NULL;
}

static void resolved_free(resolved *r)
{
	free(r->api_version);
	free(r->kind);
	free(r->group);
	free(r->version);
	free(r->resource);
	free(r);
}

void sf_kube_forget_api_version(sf_kube_client *c, const char *api_version)
{
	resolved **pp = &c->resolved;
	while (*pp) {
		resolved *r = *pp;
		if (strcmp(r->api_version, api_version) == 0) {
			*pp = r->next;
			resolved_free(r);
		} else {
			pp = &r->next;
		}
	}
}

static void resolve_deliver(resolve_ctx *x, const resolved *r, int err, const char *msg)
{
	if (r) {
		sf_gvr g = {r->group, r->version, r->resource, r->namespaced};
		x->cb(x->ud, 0, "", &g);
	} else {
		x->cb(x->ud, err, msg, NULL);
	}
}

static void resolve_ctx_free(resolve_ctx *x)
{
	free(x->api_version);
	free(x->kind);
	free(x);
}

static void on_discovery(void *ud, const sf_kube_result *res)
{
	resolve_ctx *x = ud;
	sf_kube_client *c = x->c;
	char msg[512];
	if (res->err == 0 && res->http_status == 0) {
		/* answered from the cache (see sf_kube_resolve) */
		resolve_deliver(x, resolved_find(c, x->api_version, x->kind), -ENOENT, "");
	} else if (sf_kube_ok(res) && res->obj) {
		sf_jv list = sf_jv_get(sf_obj_root(res->obj), "resources");
		sf_jv_iter it = sf_jv_iter_init(list);
		sf_jv v;
		const char *slash = strchr(x->api_version, '/');
		while (sf_jv_next(&it, NULL, &v)) {
			char *name = sf_jv_strdup(sf_jv_get(v, "name"));
			char *kind = sf_jv_strdup(sf_jv_get(v, "kind"));
			int namespaced = 0;
			sf_jv_bool(sf_jv_get(v, "namespaced"), &namespaced);
			if (name && kind && !strchr(name, '/') &&
			    !resolved_find(c, x->api_version, kind)) {
				resolved *r = calloc(1, sizeof(*r));
				if (r) {
					r->api_version = strdup(x->api_version);
					r->kind = kind;
					kind = NULL;
					r->group = slash ? strndup(x->api_version,
					                           (size_t)(slash - x->api_version))
					                 : strdup("");
					r->version = strdup(slash ? slash + 1 : x->api_version);
					r->resource = name;
					name = NULL;
					r->namespaced = namespaced;
					r->next = c->resolved;
					c->resolved = r;
				}
			}
			free(name);
			free(kind);
		}
		const resolved *r = resolved_find(c, x->api_version, x->kind);
		snprintf(msg, sizeof(msg), "no kind %s is served by %s (is its CRD installed?)",
		         x->kind, x->api_version);
		resolve_deliver(x, r, -ENOENT, msg);
	} else if (sf_kube_is_not_found(res)) {
		/* the group version is not served (kube-apiserver answers that
		 * with a plain-text 404). Callers must not read this as "its
		 * objects are gone": see sf_kube_is_absent. */
		snprintf(msg, sizeof(msg),
		         "apiVersion %s is not served (is its CRD installed?); kind %s",
		         x->api_version, x->kind);
		resolve_deliver(x, NULL, -ENOENT, msg);
	} else {
		char rs[256];
		snprintf(msg, sizeof(msg), "discovery of %s failed: %s", x->api_version,
		         sf_kube_result_str(res, rs, sizeof(rs)));
		resolve_deliver(x, NULL, res->err ? res->err : -EIO, msg);
	}
	resolve_ctx_free(x);
}

int sf_kube_resolve(sf_kube_client *c, const char *api_version, const char *kind,
                    sf_kube_resolve_cb cb, void *ud)
{
	if (!api_version || !*api_version || !kind || !*kind)
		return -EINVAL;
	resolve_ctx *x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->c = c;
	x->api_version = strdup(api_version);
	x->kind = strdup(kind);
	x->cb = cb;
	x->ud = ud;
	if (!x->api_version || !x->kind) {
		resolve_ctx_free(x);
		return -ENOMEM;
	}
	if (resolved_find(c, api_version, kind)) {
		/* cached: complete from the loop, never inside this call */
		sf_kube_call *k = calloc(1, sizeof(*k));
		if (!k) {
			resolve_ctx_free(x);
			return -ENOMEM;
		}
		k->c = c;
		k->cb = on_discovery;
		k->ud = x;
		call_append(c, k);
		call_fail_later(k, 0, "");
		return 0;
	}
	sf_buf p;
	sf_buf_init(&p, 0);
	const char *slash = strchr(api_version, '/');
	int rc = slash ? sf_buf_printf(&p, "/apis/%s", api_version)
	               : sf_buf_printf(&p, "/api/%s", api_version);
	if (rc || strstr(api_version, "..") || (slash && strchr(slash + 1, '/'))) {
		sf_buf_free(&p);
		resolve_ctx_free(x);
		return -EINVAL;
	}
	sf_kube_req r = {.method = "GET", .path = p.data};
	rc = sf_kube_do(c, &r, on_discovery, x, NULL);
	sf_buf_free(&p);
	if (rc)
		resolve_ctx_free(x);
	return rc;
}

/* ---- close ---- */

static void client_maybe_free(sf_kube_client *c)
{
	if (!c->http_closed || !c->timer_closed || !c->health_closed)
		return;
	while (c->resolved) {
		resolved *r = c->resolved;
		c->resolved = r->next;
		resolved_free(r);
	}
	void (*cb)(void *) = c->close_cb;
	void *ud = c->close_ud;
	free(c->base);
	free(c->host_header);
	free(c->host_label);
	free(c->ua_header);
	free(c);
	if (cb)
		cb(ud);
}

static void on_timer_closed(uv_handle_t *h)
{
	sf_kube_client *c = h->data;
	if (h == (uv_handle_t *)&c->health)
		c->health_closed = 1;
	else
		c->timer_closed = 1;
	client_maybe_free(c);
}

static void on_http_closed(void *ud)
{
	sf_kube_client *c = ud;
	sf_log_debug("kube.client", "transport closed", NULL);
	c->http_closed = 1;
	/* queued calls never sent: complete them now */
	while (c->calls_head)
		call_finish_err(c->calls_head, -ECANCELED, "client closed");
	uv_close((uv_handle_t *)&c->timer, on_timer_closed);
	uv_close((uv_handle_t *)&c->health, on_timer_closed);
}

void sf_kube_client_close(sf_kube_client *c, void (*cb)(void *ud), void *ud)
{
	if (c->closing)
		return;
	c->closing = 1;
	c->close_cb = cb;
	c->close_ud = ud;
	uv_timer_stop(&c->timer);
	uv_timer_stop(&c->health);
	/* in-flight calls end through on_http_done with -ECANCELED */
	sf_http_close(c->http, on_http_closed, c);
}
