/*
 * http.c - libcurl multi driven by the libuv loop (see http.h).
 *
 * curl tells us which sockets to watch (socket callback) and when to call it
 * back (timer callback); uv_poll and uv_timer do the waiting. After every
 * curl_multi_socket_action the finished transfers are drained with
 * curl_multi_info_read. Poll errors are passed to curl as CURL_CSELECT_ERR.
 * Requests that end outside a transfer (cancel, close) complete from a
 * zero-delay timer so that on_done never runs inside the caller's call.
 *
 * Dead connections: every socket gets TCP_USER_TIMEOUT, and the sockets
 * curl opens are kept in a list (SOCKOPT/CLOSESOCKET callbacks), so that a
 * connection suspected dead - a request on it timed out - can be shut down:
 * libcurl would otherwise keep multiplexing new requests onto a half-open
 * HTTP/2 connection until the kernel gives up (~15 min).
 */
#include "steadfast/http.h"

#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "steadfast/log.h"
#include "steadfast/time.h"

#define HTTP_DEFAULT_MAX_BODY (64u << 20)
#define MAX_SOCKS 16 /* sockets one client keeps open (HTTP/2: usually one) */

typedef struct sock_ctx sock_ctx;

struct sf_http_req {
	sf_http *h;
	CURL *easy;
	struct curl_slist *hdrs;
	char *body;
	sf_buf buf;
	char errbuf[CURL_ERROR_SIZE];
	char content_type[128];
	long retry_after_s;
	int (*on_data)(void *ud, const char *p, size_t n);
	void (*on_done)(void *ud, const sf_http_result *res);
	void *ud;
	int in_multi;   /* added to the multi handle */
	int finished;   /* on the deferred list or completed */
	int stream_err; /* error chosen by sf_http_req_fail */
	char stream_msg[160];
	int body_overflow;
	int64_t start_ns;
	int pending_err; /* for deferred completion */
	const char *pending_msg;
	struct sf_http_req *prev, *next; /* active list */
	struct sf_http_req *defer_next;  /* deferred completion list */
};

struct sf_http {
	uv_loop_t *loop;
	CURLM *multi;
	uv_timer_t timer; /* curl's timeout */
	uv_timer_t defer; /* deferred completions */
	char *ca_file, *cert_file, *key_file, *proxy, *connect_to_str;
	struct curl_slist *connect_to;
	int insecure, http1_only, no_compression;
	long connect_timeout_ms;
	sf_http_req *reqs;
	sf_http_req *deferred;
	sock_ctx *socks;
	size_t active;
	curl_socket_t fds[MAX_SOCKS]; /* sockets curl opened, -1 = free slot */
	long user_timeout_ms, max_age_s;
	int64_t last_rx_ns;
	unsigned long dropped;
	int closing;
	int open_handles;
	int in_info; /* draining info_read */
	void (*close_cb)(void *ud);
	void *close_ud;
};

struct sock_ctx {
	uv_poll_t poll;
	curl_socket_t fd;
	sf_http *h;
	struct sock_ctx *prev, *next; /* sockets still watched */
};

static int curl_global_done;

/* ---- sockets ---- */

static int sockopt_cb(void *ud, curl_socket_t fd, curlsocktype purpose)
{
	sf_http *h = ud;
	if (purpose != CURLSOCKTYPE_IPCXN)
		return CURL_SOCKOPT_OK;
	if (h->user_timeout_ms > 0) {
		unsigned int v = (unsigned int)h->user_timeout_ms;
		/* best effort: a kernel without it keeps keepalive only */
		(void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &v, sizeof(v));
	}
	for (size_t i = 0; i < MAX_SOCKS; i++)
		if (h->fds[i] == CURL_SOCKET_BAD) {
			h->fds[i] = fd;
			break;
		}
	return CURL_SOCKOPT_OK;
}

static int closesocket_cb(void *ud, curl_socket_t fd)
{
	sf_http *h = ud;
	for (size_t i = 0; i < MAX_SOCKS; i++)
		if (h->fds[i] == fd)
			h->fds[i] = CURL_SOCKET_BAD;
	return close(fd);
}

size_t sf_http_drop_connections(sf_http *h, const char *why)
{
	size_t n = 0;
	for (size_t i = 0; i < MAX_SOCKS; i++)
		if (h->fds[i] != CURL_SOCKET_BAD && shutdown(h->fds[i], SHUT_RDWR) == 0)
			n++;
	h->dropped += n;
	if (n) {
		char b[24];
		snprintf(b, sizeof(b), "%zu", n);
		sf_log_warn("http", "connections to the API server shut down", "reason",
		            why ? why : "", "connections", b, NULL);
	}
	return n;
}

int64_t sf_http_last_rx_ns(const sf_http *h)
{
	return h->last_rx_ns;
}

unsigned long sf_http_dropped(const sf_http *h)
{
	return h->dropped;
}

static void check_multi_info(sf_http *h);
static void req_complete(sf_http_req *r, int err, const char *msg);
static void http_handle_released(sf_http *h);

int sf_http_has_http2(void)
{
	curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
	return v && (v->features & CURL_VERSION_HTTP2);
}

static int map_curl_error(CURLcode c)
{
	switch (c) {
	case CURLE_OK: return 0;
	case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY: return -EHOSTUNREACH;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS: return -EPROTO;
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM: return -ECONNRESET;
	case CURLE_OUT_OF_MEMORY: return -ENOMEM;
	case CURLE_WRITE_ERROR:
	case CURLE_ABORTED_BY_CALLBACK: return -ECANCELED;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL: return -EINVAL;
	default: return -EIO;
	}
}

/* ---- the uv <-> curl wiring ---- */

static void poll_close_cb(uv_handle_t *hd)
{
	sock_ctx *s = hd->data;
	sf_http *h = s->h;
	free(s);
	http_handle_released(h);
}

static void sock_close(sf_http *h, sock_ctx *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		h->socks = s->next;
	if (s->next)
		s->next->prev = s->prev;
	uv_poll_stop(&s->poll);
	uv_close((uv_handle_t *)&s->poll, poll_close_cb);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	sock_ctx *s = p->data;
	sf_http *h = s->h;
	int flags = 0;
	if (status < 0) {
		flags = CURL_CSELECT_ERR;
	} else {
		if (events & UV_READABLE)
			flags |= CURL_CSELECT_IN;
		if (events & UV_WRITABLE)
			flags |= CURL_CSELECT_OUT;
		if (events & UV_DISCONNECT)
			flags |= CURL_CSELECT_IN;
	}
	int running;
	CURLMcode mc = curl_multi_socket_action(h->multi, s->fd, flags, &running);
	if (mc != CURLM_OK)
		sf_log_error("http", "curl_multi_socket_action failed", "error",
		             curl_multi_strerror(mc), NULL);
	check_multi_info(h);
}

static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	(void)easy;
	sf_http *h = userp;
	sock_ctx *s = socketp;
	if (what == CURL_POLL_REMOVE) {
		if (s) {
			sock_close(h, s);
			curl_multi_assign(h->multi, fd, NULL);
		}
		return 0;
	}
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return -1;
		s->fd = fd;
		s->h = h;
		int rc = uv_poll_init_socket(h->loop, &s->poll, fd);
		if (rc) {
			sf_log_error("http", "uv_poll_init_socket failed", "error", uv_strerror(rc),
			             NULL);
			free(s);
			return -1;
		}
		s->poll.data = s;
		s->next = h->socks;
		if (h->socks)
			h->socks->prev = s;
		h->socks = s;
		h->open_handles++;
		curl_multi_assign(h->multi, fd, s);
	}
	int ev = 0;
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		ev |= UV_READABLE;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		ev |= UV_WRITABLE;
	int rc = uv_poll_start(&s->poll, ev, on_poll);
	if (rc) {
		sf_log_error("http", "uv_poll_start failed", "error", uv_strerror(rc), NULL);
		return -1;
	}
	return 0;
}

static void on_timer(uv_timer_t *t)
{
	sf_http *h = t->data;
	int running;
	CURLMcode mc = curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	if (mc != CURLM_OK)
		sf_log_error("http", "curl_multi_socket_action(timeout) failed", "error",
		             curl_multi_strerror(mc), NULL);
	check_multi_info(h);
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	(void)multi;
	sf_http *h = userp;
	if (timeout_ms < 0)
		uv_timer_stop(&h->timer);
	else
		uv_timer_start(&h->timer, on_timer, (uint64_t)timeout_ms, 0);
	return 0;
}

/* ---- request lifetime ---- */

static void req_unlink(sf_http_req *r)
{
	sf_http *h = r->h;
	if (r->prev)
		r->prev->next = r->next;
	else if (h->reqs == r)
		h->reqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->prev = r->next = NULL;
}

static void req_free(sf_http_req *r)
{
	if (r->easy)
		curl_easy_cleanup(r->easy);
	curl_slist_free_all(r->hdrs);
	free(r->body);
	sf_buf_free(&r->buf);
	free(r);
}

/* Removes the transfer and calls on_done once. */
static void req_complete(sf_http_req *r, int err, const char *msg)
{
	sf_http *h = r->h;
	long status = 0;
	if (r->in_multi) {
		curl_multi_remove_handle(h->multi, r->easy);
		r->in_multi = 0;
	}
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
	long hv = 0;
	curl_easy_getinfo(r->easy, CURLINFO_HTTP_VERSION, &hv);
	req_unlink(r);
	h->active--;
	sf_http_result res = {
	    .err = err,
	    .errmsg = msg ? msg : "",
	    .status = err ? (r->stream_err ? status : 0) : status,
	    .body = &r->buf,
	    .content_type = r->content_type,
	    .retry_after_s = r->retry_after_s,
	    .total_s = (double)(sf_mono_ns() - r->start_ns) / 1e9,
	    .http_version = hv == CURL_HTTP_VERSION_2_0 ? 2 : (hv ? 1 : 0),
	};
	if (r->on_done)
		r->on_done(r->ud, &res);
	req_free(r);
}

static void on_defer(uv_timer_t *t)
{
	sf_http *h = t->data;
	while (h->deferred) {
		sf_http_req *r = h->deferred;
		h->deferred = r->defer_next;
		req_complete(r, r->pending_err, r->pending_msg);
	}
}

static void req_defer(sf_http_req *r, int err, const char *msg)
{
	sf_http *h = r->h;
	if (r->finished)
		return;
	r->finished = 1;
	if (r->in_multi) {
		curl_multi_remove_handle(h->multi, r->easy);
		r->in_multi = 0;
	}
	r->pending_err = err;
	r->pending_msg = msg;
	/* append to keep completion order */
	sf_http_req **pp = &h->deferred;
	while (*pp)
		pp = &(*pp)->defer_next;
	r->defer_next = NULL;
	*pp = r;
	uv_timer_start(&h->defer, on_defer, 0, 0);
}

static void check_multi_info(sf_http *h)
{
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(h->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		sf_http_req *r = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		if (!r || r->finished)
			continue;
		r->finished = 1;
		CURLcode rc = m->data.result;
		int err = map_curl_error(rc);
		const char *msg = "";
		if (rc == CURLE_WRITE_ERROR && r->body_overflow) {
			err = -E2BIG;
			msg = "response body exceeds the size limit";
		} else if (rc == CURLE_WRITE_ERROR && r->stream_err) {
			err = r->stream_err;
			msg = r->stream_msg;
		} else if (rc != CURLE_OK) {
			msg = r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc);
		}
		int timed_out = rc == CURLE_OPERATION_TIMEDOUT;
		req_complete(r, err, msg);
		/* no answer in time: the connection may be half-open; never
		 * hand it another request */
		if (timed_out)
			sf_http_drop_connections(h, "a request timed out");
	}
}

static size_t write_cb(char *p, size_t size, size_t n, void *ud)
{
	sf_http_req *r = ud;
	size_t len = size * n;
	r->h->last_rx_ns = sf_mono_ns();
	long status = 0;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
	if (r->on_data && status >= 200 && status < 300) {
		if (r->on_data(r->ud, p, len))
			return 0; /* ends the transfer with CURLE_WRITE_ERROR */
		return len;
	}
	if (sf_buf_append(&r->buf, p, len)) {
		r->body_overflow = 1;
		return 0;
	}
	return len;
}

static size_t header_cb(char *p, size_t size, size_t n, void *ud)
{
	sf_http_req *r = ud;
	r->h->last_rx_ns = sf_mono_ns();
	size_t len = size * n;
	if (len > 12 && strncasecmp(p, "retry-after:", 12) == 0) {
		long v = strtol(p + 12, NULL, 10);
		r->retry_after_s = v > 0 ? v : 1;
	} else if (len > 13 && strncasecmp(p, "content-type:", 13) == 0) {
		const char *v = p + 13;
		size_t vl = len - 13;
		while (vl && (*v == ' ' || *v == '\t'))
			v++, vl--;
		while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
			vl--;
		if (vl >= sizeof(r->content_type))
			vl = sizeof(r->content_type) - 1;
		memcpy(r->content_type, v, vl);
		r->content_type[vl] = '\0';
	}
	return len;
}

int sf_http_new(uv_loop_t *loop, const sf_http_opts *opts, sf_http **out)
{
	if (!curl_global_done) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return -EIO;
		curl_global_done = 1;
	}
	sf_http *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->loop = loop;
	h->insecure = opts && opts->insecure;
	h->http1_only = opts && opts->http1_only;
	h->no_compression = opts && opts->no_compression;
	h->connect_timeout_ms = opts && opts->connect_timeout_ms ? opts->connect_timeout_ms : 10000;
	h->user_timeout_ms = opts && opts->tcp_user_timeout_ms ? opts->tcp_user_timeout_ms : 30000;
	h->max_age_s = opts && opts->max_conn_age_s > 0 ? opts->max_conn_age_s : 600;
	for (size_t i = 0; i < MAX_SOCKS; i++)
		h->fds[i] = CURL_SOCKET_BAD;
#define DUP(f) (opts && opts->f ? strdup(opts->f) : NULL)
	h->ca_file = DUP(ca_file);
	h->cert_file = DUP(cert_file);
	h->key_file = DUP(key_file);
	h->proxy = DUP(proxy);
	h->connect_to_str = DUP(connect_to);
#undef DUP
	if (h->connect_to_str)
		h->connect_to = curl_slist_append(NULL, h->connect_to_str);
	h->multi = curl_multi_init();
	if (!h->multi)
		goto fail;
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	uv_timer_init(loop, &h->timer);
	uv_timer_init(loop, &h->defer);
	h->timer.data = h;
	h->defer.data = h;
	h->open_handles = 2;
	*out = h;
	return 0;
fail:
	free(h->ca_file);
	free(h->cert_file);
	free(h->key_file);
	free(h->proxy);
	free(h->connect_to_str);
	curl_slist_free_all(h->connect_to);
	free(h);
	return -ENOMEM;
}

static const char *method_or_get(const char *m)
{
	return m && *m ? m : "GET";
}

int sf_http_start(sf_http *h, const sf_http_request *rq, sf_http_req **out)
{
	if (h->closing)
		return -ESHUTDOWN;
	if (!rq->url)
		return -EINVAL;
	sf_http_req *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->h = h;
	r->on_data = rq->on_data;
	r->on_done = rq->on_done;
	r->ud = rq->ud;
	r->retry_after_s = -1;
	r->start_ns = sf_mono_ns();
	sf_buf_init(&r->buf, rq->max_body ? rq->max_body : HTTP_DEFAULT_MAX_BODY);
	r->easy = curl_easy_init();
	if (!r->easy)
		goto nomem;
	for (const char *const *hp = rq->headers; hp && *hp; hp++) {
		struct curl_slist *n = curl_slist_append(r->hdrs, *hp);
		if (!n)
			goto nomem;
		r->hdrs = n;
	}
	/* curl adds "Expect: 100-continue" to large POSTs: one round trip less. */
	struct curl_slist *n = curl_slist_append(r->hdrs, "Expect:");
	if (!n)
		goto nomem;
	r->hdrs = n;
	CURL *e = r->easy;
	const char *method = method_or_get(rq->method);
	curl_easy_setopt(e, CURLOPT_URL, rq->url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)r);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->hdrs);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, h->connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 10L);
	curl_easy_setopt(e, CURLOPT_SOCKOPTFUNCTION, sockopt_cb);
	curl_easy_setopt(e, CURLOPT_SOCKOPTDATA, h);
	curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, closesocket_cb);
	curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, h);
	curl_easy_setopt(e, CURLOPT_MAXLIFETIME_CONN, h->max_age_s);
	if (rq->fresh_connection)
		curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
	if (!h->no_compression)
		curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	/* TLS 1.2 at least, as client-go (and the API server's default) */
	curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	if (h->proxy) {
		curl_easy_setopt(e, CURLOPT_PROXY, h->proxy);
		/* an https:// proxy is verified against the same CA bundle */
		if (h->ca_file)
			curl_easy_setopt(e, CURLOPT_PROXY_CAINFO, h->ca_file);
		curl_easy_setopt(e, CURLOPT_PROXY_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	}
	curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
	                 h->http1_only ? (long)CURL_HTTP_VERSION_1_1
	                               : (long)CURL_HTTP_VERSION_2TLS);
	if (rq->timeout_ms > 0)
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, rq->timeout_ms);
	if (h->ca_file) {
		/* The cluster's CA replaces the system roots (as in client-go).
		 * Without clearing CAPATH, GnuTLS would also load every
		 * certificate in Debian's /etc/ssl/certs: ~9 MiB per process. */
		curl_easy_setopt(e, CURLOPT_CAINFO, h->ca_file);
		curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
	}
	if (h->cert_file)
		curl_easy_setopt(e, CURLOPT_SSLCERT, h->cert_file);
	if (h->key_file)
		curl_easy_setopt(e, CURLOPT_SSLKEY, h->key_file);
	if (h->insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (h->connect_to)
		curl_easy_setopt(e, CURLOPT_CONNECT_TO, h->connect_to);
	if (strcmp(method, "GET") != 0)
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	if (rq->body) {
		r->body = malloc(rq->body_len ? rq->body_len : 1);
		if (!r->body)
			goto nomem;
		memcpy(r->body, rq->body, rq->body_len);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
	} else if (strcmp(method, "GET") != 0 && strcmp(method, "DELETE") != 0) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
	}
	CURLMcode mc = curl_multi_add_handle(h->multi, e);
	if (mc != CURLM_OK) {
		req_free(r);
		return mc == CURLM_OUT_OF_MEMORY ? -ENOMEM : -EIO;
	}
	r->in_multi = 1;
	r->next = h->reqs;
	if (h->reqs)
		h->reqs->prev = r;
	h->reqs = r;
	h->active++;
	if (out)
		*out = r;
	return 0;
nomem:
	req_free(r);
	return -ENOMEM;
}

void sf_http_cancel(sf_http_req *r)
{
	if (!r || r->finished)
		return;
	req_defer(r, -ECANCELED, "request cancelled");
}

long sf_http_req_status(const sf_http_req *r)
{
	long status = 0;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
	return status;
}

void sf_http_req_fail(sf_http_req *r, int err, const char *msg)
{
	r->stream_err = err;
	snprintf(r->stream_msg, sizeof(r->stream_msg), "%s", msg ? msg : "");
}

int sf_http_set_client_cert(sf_http *h, const char *cert_file, const char *key_file)
{
	char *c = cert_file ? strdup(cert_file) : NULL, *k = key_file ? strdup(key_file) : NULL;
	if ((cert_file && !c) || (key_file && !k)) {
		free(c);
		free(k);
		return -ENOMEM;
	}
	free(h->cert_file);
	free(h->key_file);
	h->cert_file = c;
	h->key_file = k;
	return 0;
}

size_t sf_http_active(const sf_http *h)
{
	return h->active;
}

static void http_handle_closed(uv_handle_t *hd)
{
	http_handle_released(hd->data);
}

/* Called once per closed loop handle; the last one frees h. */
static void http_handle_released(sf_http *h)
{
	if (--h->open_handles > 0 || !h->closing)
		return;
	void (*cb)(void *) = h->close_cb;
	void *ud = h->close_ud;
	free(h->ca_file);
	free(h->cert_file);
	free(h->key_file);
	free(h->proxy);
	free(h->connect_to_str);
	curl_slist_free_all(h->connect_to);
	free(h);
	if (cb)
		cb(ud);
}

static void http_finish_close(uv_timer_t *t)
{
	sf_http *h = t->data;
	char n1[24], n2[24];
	sf_log_debug("http", "closing", "requests", sf_log_int(n1, (long long)h->active), "handles",
	             sf_log_int(n2, h->open_handles), NULL);
	/* every request has completed; curl may still hold sockets: cleaning
	 * up the multi handle makes it call socket_cb(REMOVE) for each. */
	curl_multi_cleanup(h->multi);
	h->multi = NULL;
	/* sockets curl did not report as removed are closed here; each poll
	 * handle and the two timers release h from their close callbacks. */
	while (h->socks)
		sock_close(h, h->socks);
	uv_close((uv_handle_t *)&h->timer, http_handle_closed);
	uv_close((uv_handle_t *)&h->defer, http_handle_closed);
}

static void on_close_defer(uv_timer_t *t)
{
	on_defer(t);
	http_finish_close(t);
}

void sf_http_close(sf_http *h, void (*cb)(void *ud), void *ud)
{
	if (h->closing)
		return;
	h->closing = 1;
	h->close_cb = cb;
	h->close_ud = ud;
	for (sf_http_req *r = h->reqs; r; r = r->next)
		if (!r->finished)
			req_defer(r, -ECANCELED, "client closed");
	uv_timer_stop(&h->timer);
	uv_timer_start(&h->defer, on_close_defer, 0, 0);
}
