/*
 * server.c - HTTP/1.1 server for probes and metrics on the libuv loop (see
 * server.h).
 *
 * The request parser is a pure function over the bytes received so far. It
 * validates as far as the bytes go, so garbage is refused on the first read,
 * and it is only re-run when a read brings a new line end (or on the first
 * read); with the field count capped that bounds the work a client can cause
 * by sending its head a byte at a time.
 *
 * A connection goes through four states:
 *   HEAD    reading the request line and headers into its own buffer of
 *           max_head bytes (libuv reads straight into the free part of it);
 *   BODY    reading and discarding Content-Length bytes into a scratch area
 *           shared by the server's connections (reads never interleave);
 *   WRITE   the response is being written, reading is stopped;
 *   LINGER  the response is out and our side shut down; we read and discard
 *           until the client closes. Closing straight away while unread
 *           bytes (a body we refused, pipelined requests) sit in our receive
 *           queue would make the kernel send a reset, which can destroy the
 *           response before the client has read it.
 * One timer per connection enforces the deadlines: timeout_ms from accept
 * for the whole request (it is not pushed back by data, so trickling bytes
 * does not help a slow client), timeout_ms again for the write, and a short
 * linger. A connection is two handles (socket and timer) and is freed when
 * both are closed; the server is freed when its listener and all its
 * connections are, which is when sf_srv_close's callback runs.
 *
 * A guarded route adds a fifth state, AUTH: the head is in, reading is
 * stopped, and the connection waits for sf_srv_verdict; a connection closed
 * meanwhile is kept (not freed) until the verdict comes.
 *
 * With opts.tls every connection is a GnuTLS session driven by the loop:
 * libuv reads ciphertext into a scratch area that the pull function hands
 * to GnuTLS (EAGAIN once it is used up), and the push function appends what
 * GnuTLS writes to a buffer that is flushed with uv_write after each call
 * into GnuTLS. So the handshake and records never block, the plaintext
 * lands where the plain path would have read it (the head buffer, or the
 * body scratch), and a response is encrypted whole and followed by a
 * close_notify. A failed handshake is answered with its alert (e.g.
 * protocol_version for TLS 1.1) before the connection closes.
 *
 * The listening socket is created, bound and put into listening state with
 * plain socket calls and then handed to libuv, so that bind errors come back
 * from sf_srv_new synchronously with nothing left on the loop.
 */
#include "steadfast/buf.h"
#include "steadfast/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "steadfast/log.h"
#include "steadfast/tlscred.h"

#define DEFAULT_MAX_CONNS 64
#define DEFAULT_TIMEOUT_MS 10000
#define DEFAULT_MAX_HEAD 8192
#define DEFAULT_MAX_BODY 1024
#define DEFAULT_MAX_RESPONSE ((size_t)64 << 20)
#define MIN_HEAD 64
#define MAX_HEAD ((size_t)1 << 20)
#define LINGER_MAX_MS 1000
#define BACKLOG 128
#define SCRATCH_SIZE 4096
#define DEFAULT_CONTENT_TYPE "text/plain; charset=utf-8"
#define ALLOW "GET, HEAD"
#define TLS_READ_SIZE 16384
/* TLS 1.2 minimum, as controller-runtime's secure serving. */
#define TLS_PRIORITY "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

/* --- request parser -------------------------------------------------------- */

/* Line results besides SF_SRV_PARSE_INCOMPLETE and negative errors. */
enum {
	LINE_OK = 2,
	LINE_BLANK = 3,
};

typedef struct pstate {
	unsigned hosts;
	int has_cl;
	int has_te;
} pstate;

static int is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return 1;
	return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int is_target_char(unsigned char c)
{
	return c > 0x20 && c < 0x7f;
}

/* field-vchar, SP and HTAB (obs-text allowed, as RFC 9110 says). */
static int is_value_char(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static int is_alpha(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Splits the request-target into path and query. */
static int split_target(sf_srv_request *r)
{
	const char *t = r->target;
	size_t n = r->target_len;
	size_t start;
	if (t[0] == '/') {
		start = 0;
	} else if (n == 1 && t[0] == '*') {
		r->path = t;
		r->path_len = 1;
		return 0;
	} else {
		/* absolute-form: scheme "://" authority [path] ["?" query] */
		size_t i = 0;
		if (!is_alpha((unsigned char)t[0]))
			return -EBADMSG;
		while (i < n && (is_alpha((unsigned char)t[i]) || (t[i] >= '0' && t[i] <= '9') ||
		                 t[i] == '+' || t[i] == '-' || t[i] == '.'))
			i++;
		if (n - i < 3 || memcmp(t + i, "://", 3) != 0)
			return -EBADMSG;
		i += 3;
		size_t auth = i;
		while (i < n && t[i] != '/' && t[i] != '?')
			i++;
		if (i == auth)
			return -EBADMSG;
		start = i;
	}
	const char *q = memchr(t + start, '?', n - start);
	size_t end = q ? (size_t)(q - t) : n;
	if (q) {
		r->query = q + 1;
		r->query_len = n - end - 1;
	}
	if (end == start) {
		r->path = "/";
		r->path_len = 1;
	} else {
		r->path = t + start;
		r->path_len = end - start;
	}
	return 0;
}

/* method SP request-target SP HTTP-version; s[0..n) without the line end.
 * partial: the line end has not arrived, so s may continue. */
static int request_line(const char *s, size_t n, int partial, sf_srv_request *r)
{
	size_t i = 0;
	while (i < n && is_tchar((unsigned char)s[i]))
		i++;
	if (i == n)
		return partial ? SF_SRV_PARSE_INCOMPLETE : -EBADMSG;
	if (i == 0 || s[i] != ' ')
		return -EBADMSG;
	r->method = s;
	r->method_len = i;

	size_t t = ++i;
	while (i < n && is_target_char((unsigned char)s[i]))
		i++;
	if (i == n)
		return partial ? SF_SRV_PARSE_INCOMPLETE : -EBADMSG;
	if (i == t || s[i] != ' ')
		return -EBADMSG;
	r->target = s + t;
	r->target_len = i - t;

	/* "HTTP/" DIGIT "." DIGIT */
	const char *v = s + i + 1;
	size_t vn = n - i - 1;
	static const char pat[] = "HTTP/0.0";
	if (vn > 8)
		return -EBADMSG;
	for (size_t k = 0; k < vn; k++) {
		if (pat[k] == '0' ? (v[k] < '0' || v[k] > '9') : v[k] != pat[k])
			return -EBADMSG;
	}
	if (partial || vn < 8)
		return partial ? SF_SRV_PARSE_INCOMPLETE : -EBADMSG;
	if (v[5] != '1')
		return -EPROTONOSUPPORT;
	r->version = v[7] == '0' ? 10 : 11;
	int rc = split_target(r);
	return rc ? rc : LINE_OK;
}

static int name_is(const char *s, size_t n, const char *want)
{
	return strlen(want) == n && strncasecmp(s, want, n) == 0;
}

/* 1*DIGIT without overflow. */
static int parse_length(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	if (n == 0)
		return -EBADMSG;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EBADMSG;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EBADMSG;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* field-name ":" OWS field-value OWS, or the blank line ending the head. */
static int field_line(const char *s, size_t n, int partial, sf_srv_request *r, pstate *ps)
{
	if (n == 0)
		return partial ? SF_SRV_PARSE_INCOMPLETE : LINE_BLANK;
	if (s[0] == ' ' || s[0] == '\t')
		return -EBADMSG; /* obs-fold, or whitespace before the first field */
	if (++r->nfields > SF_SRV_MAX_FIELDS)
		return -EMSGSIZE;
	size_t i = 0;
	while (i < n && is_tchar((unsigned char)s[i]))
		i++;
	if (i == n)
		return partial ? SF_SRV_PARSE_INCOMPLETE : -EBADMSG;
	if (i == 0 || s[i] != ':')
		return -EBADMSG;
	size_t name_len = i++;
	for (size_t k = i; k < n; k++) {
		if (!is_value_char((unsigned char)s[k]))
			return -EBADMSG;
	}
	if (partial)
		return SF_SRV_PARSE_INCOMPLETE;
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	size_t end = n;
	while (end > i && (s[end - 1] == ' ' || s[end - 1] == '\t'))
		end--;
	const char *val = s + i;
	size_t val_len = end - i;

	if (name_is(s, name_len, "content-length")) {
		uint64_t cl;
		if (parse_length(val, val_len, &cl) < 0)
			return -EBADMSG;
		if (ps->has_cl && cl != r->content_length)
			return -EBADMSG;
		ps->has_cl = 1;
		r->content_length = cl;
	} else if (name_is(s, name_len, "transfer-encoding")) {
		ps->has_te = 1;
	} else if (name_is(s, name_len, "host")) {
		if (++ps->hosts > 1)
			return -EBADMSG;
	}
	return LINE_OK;
}

int sf_srv_parse_request(const char *buf, size_t len, sf_srv_request *out)
{
	memset(out, 0, sizeof(*out));
	if (len == 0)
		return SF_SRV_PARSE_INCOMPLETE;
	pstate ps = {0};
	size_t pos = 0;
	for (int first = 1;; first = 0) {
		const char *nl = pos < len ? memchr(buf + pos, '\n', len - pos) : NULL;
		size_t end = nl ? (size_t)(nl - buf) : len;
		size_t n = end - pos;
		int partial = nl == NULL;
		/* The CR of CRLF; on a partial line a CR at the end may be one. */
		if (n && buf[pos + n - 1] == '\r')
			n--;
		int rc = first ? request_line(buf + pos, n, partial, out)
		               : field_line(buf + pos, n, partial, out, &ps);
		if (rc == LINE_BLANK) {
			out->head_len = end + 1;
			break;
		}
		if (rc != LINE_OK)
			return rc;
		pos = end + 1;
	}
	if (ps.has_te)
		return ps.has_cl ? -EBADMSG : -ENOTSUP;
	if (out->version >= 11 && ps.hosts == 0)
		return -EBADMSG;
	return SF_SRV_PARSE_COMPLETE;
}

/* --- bind addresses -------------------------------------------------------- */

/* --- header fields ---------------------------------------------------------- */

static int is_ows(char c)
{
	return c == ' ' || c == '\t';
}

int sf_srv_header(const char *head, size_t head_len, const char *name, const char **val,
                  size_t *vlen)
{
	size_t nl = strlen(name);
	const char *p = memchr(head, '\n', head_len); /* skip the request line */
	const char *end = head + head_len;
	while (p && ++p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *le = eol ? eol : end;
		if (le > p && le[-1] == '\r')
			le--;
		if ((size_t)(le - p) > nl && p[nl] == ':' && strncasecmp(p, name, nl) == 0) {
			const char *v = p + nl + 1;
			while (v < le && is_ows(*v))
				v++;
			while (le > v && is_ows(le[-1]))
				le--;
			*val = v;
			*vlen = (size_t)(le - v);
			return 1;
		}
		p = eol;
	}
	return 0;
}

/* token68 (RFC 9110 11.2): what a bearer credential is made of. */
static int is_token68(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c != 0 && strchr("-._~+/=", c) != NULL);
}

int sf_srv_bearer(const char *head, size_t head_len, const char **tok, size_t *toklen)
{
	const char *v;
	size_t n;
	if (!sf_srv_header(head, head_len, "Authorization", &v, &n))
		return 0;
	if (n < 7 || strncasecmp(v, "bearer", 6) != 0 || v[6] != ' ')
		return 0;
	size_t i = 7;
	while (i < n && v[i] == ' ')
		i++;
	if (i == n)
		return 0;
	for (size_t j = i; j < n; j++) {
		if (!is_token68((unsigned char)v[j]))
			return 0;
	}
	*tok = v + i;
	*toklen = n - i;
	return 1;
}

int sf_srv_parse_bind(const char *bind, struct sockaddr_storage *out, char *err, size_t errlen)
{
	if (!bind || !*bind || strcmp(bind, "0") == 0)
		return 1;
	memset(out, 0, sizeof(*out));
	const char *colon = strrchr(bind, ':');
	if (bind[0] == '[') {
		const char *close = strchr(bind, ']');
		if (!close) {
			sf_errf(err, errlen, "address %s: missing ']' in address", bind);
			return -EINVAL;
		}
		colon = close[1] == ':' ? close + 1 : NULL;
	}
	if (!colon) {
		sf_errf(err, errlen, "address %s: missing port in address", bind);
		return -EINVAL;
	}
	const char *port_s = colon + 1;
	unsigned long port = 0;
	size_t plen = strlen(port_s);
	if (plen > 5 || strspn(port_s, "0123456789") != plen) {
		sf_errf(err, errlen, "address %s: port must be a number from 0 to 65535", bind);
		return -EINVAL;
	}
	if (plen)
		port = strtoul(port_s, NULL, 10);
	if (port > 65535) {
		sf_errf(err, errlen, "address %s: port must be a number from 0 to 65535", bind);
		return -EINVAL;
	}

	char host[64];
	size_t hlen = (size_t)(colon - bind);
	const char *h = bind;
	int bracketed = 0;
	if (bind[0] == '[') {
		h = bind + 1;
		hlen -= 2;
		bracketed = 1;
	} else if (memchr(bind, ':', hlen) || memchr(bind, ']', hlen)) {
		sf_errf(err, errlen, "address %s: too many colons in address (use [addr]:port)",
		        bind);
		return -EINVAL;
	}
	if (hlen >= sizeof(host)) {
		sf_errf(err, errlen, "address %s: host is too long", bind);
		return -EINVAL;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';

	struct sockaddr_in *sin = (struct sockaddr_in *)out;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)out;
	if (bracketed) {
		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1) {
			sf_errf(err, errlen, "address %s: %s is not an IPv6 address", bind, host);
			return -EINVAL;
		}
	} else if (hlen == 0) {
		sin6->sin6_addr = in6addr_any;
		bracketed = 1;
	} else if (strcasecmp(host, "localhost") == 0) {
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	} else if (inet_pton(AF_INET, host, &sin->sin_addr) != 1) {
		/* A name would need a DNS lookup, which would block the loop. */
		sf_errf(err, errlen, "address %s: host must be an IP address or localhost", bind);
		return -EINVAL;
	}
	if (bracketed) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
	} else {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
	}
	return 0;
}

/* --- server state ---------------------------------------------------------- */

typedef struct route {
	struct route *next;
	sf_srv_handler_fn fn;
	void *ud;
	sf_srv_guard_fn guard;
	void *guard_ud;
	size_t len;
	char path[];
} route;

enum {
	C_HEAD,
	C_BODY,
	C_AUTH, /* waiting for the guard's verdict, reading stopped */
	C_WRITE,
	C_LINGER,
};

typedef struct conn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	uv_write_t wreq;
	uv_shutdown_t sreq;
	sf_srv *srv;
	struct conn *prev, *next;
	int state;
	int closing;
	int handles; /* open handles; freed at 0 */
	int peer_eof;
	int head_only;    /* HEAD request: no body in the response */
	int auth_pending; /* the guard has not answered yet: not freed */
	int authorized;
	route *guarded;
	uint64_t body_left;
	/* TLS (tls NULL for plain HTTP) */
	gnutls_session_t tls;
	sf_tlscred_ref *cred;
	int hs_done;
	const char *rd; /* ciphertext read and not yet given to GnuTLS */
	size_t rd_len;
	sf_buf tout; /* ciphertext GnuTLS produced, to write */
	sf_srv_request req;
	sf_buf head;
	sf_buf body;
	size_t in_len;
	char in[]; /* max_head bytes */
} conn;

/* A connection over max_conns, closed as soon as it is accepted. */
typedef struct reject {
	uv_tcp_t tcp;
	sf_srv *srv;
} reject;

struct sf_srv {
	uv_loop_t *loop;
	uv_tcp_t listener;
	char *name;
	route *routes;
	conn *conns;
	unsigned max_conns;
	uint64_t timeout_ms;
	uint64_t linger_ms;
	size_t max_head;
	size_t max_body;
	size_t max_response;
	int port;
	int stalled; /* a connection waits in libuv for memory to accept it */
	size_t live; /* listener + connections + rejects not yet freed */
	int closing;
	void (*close_cb)(void *ud);
	void *close_ud;
	sf_srv_stats st;
	sf_tlscred *tlscred;
	gnutls_priority_t prio;
	char scratch[SCRATCH_SIZE];   /* discarded bytes */
	char tscratch[TLS_READ_SIZE]; /* ciphertext reads */
};

static void on_connection(uv_stream_t *server, int status);

static void srv_free(sf_srv *srv)
{
	route *r = srv->routes;
	while (r) {
		route *next = r->next;
		free(r);
		r = next;
	}
	if (srv->prio)
		gnutls_priority_deinit(srv->prio);
	free(srv->name);
	free(srv);
}

static void maybe_finish(sf_srv *srv)
{
	if (!srv->closing || srv->live)
		return;
	void (*cb)(void *) = srv->close_cb;
	void *ud = srv->close_ud;
	srv_free(srv);
	if (cb)
		cb(ud);
}

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 413: return "Content Too Large";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "";
	}
}

static int valid_status(int status)
{
	return status >= 200 && status <= 599 && status != 204 && status != 304;
}

static int valid_content_type(const char *ct)
{
	if (!ct || !*ct || strlen(ct) > 256)
		return 0;
	for (const unsigned char *p = (const unsigned char *)ct; *p; p++) {
		if (*p < 0x20 || *p >= 0x7f)
			return 0;
	}
	return 1;
}

/* --- connections ----------------------------------------------------------- */

static void conn_free(conn *c)
{
	sf_srv *srv = c->srv;
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv->st.conns--;
	srv->live--;
	sf_buf_free(&c->head);
	sf_buf_free(&c->body);
	sf_buf_free(&c->tout);
	if (c->tls)
		gnutls_deinit(c->tls);
	sf_tlscred_put(c->cred);
	free(c);
	if (srv->stalled && !srv->closing) {
		/* libuv holds an accepted socket until it is taken. */
		srv->stalled = 0;
		on_connection((uv_stream_t *)&srv->listener, 0);
	}
	maybe_finish(srv);
}

static void conn_handle_closed(uv_handle_t *h)
{
	conn *c = h->data;
	if (--c->handles > 0 || c->auth_pending)
		return;
	conn_free(c);
}

static void conn_close(conn *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	uv_timer_stop(&c->timer);
	uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
	uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
}

static void on_timeout(uv_timer_t *t)
{
	conn *c = t->data;
	if (c->state != C_LINGER) {
		c->srv->st.timeouts++;
		sf_log_debug("server", "connection timed out", "name", c->srv->name, "state",
		             c->state == C_WRITE ? "write" : "read", NULL);
	}
	conn_close(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	conn *c = h->data;
	(void)suggested;
	if (c->tls)
		*buf = uv_buf_init(c->srv->tscratch, sizeof(c->srv->tscratch));
	else if (c->state == C_HEAD)
		*buf = uv_buf_init(c->in + c->in_len, (unsigned)(c->srv->max_head - c->in_len));
	else
		*buf = uv_buf_init(c->srv->scratch, sizeof(c->srv->scratch));
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	conn *c = req->data;
	if (c->closing)
		return;
	if (status < 0)
		conn_close(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

/* The response (and for TLS the close_notify) is out, or failed. */
static void response_written(conn *c, int status)
{
	if (c->closing)
		return;
	if (status < 0) {
		sf_log_debug("server", "write failed", "name", c->srv->name, "error",
		             uv_strerror(status), NULL);
		conn_close(c);
		return;
	}
	c->srv->st.responses++;
	sf_buf_free(&c->body);
	if (c->peer_eof) {
		conn_close(c);
		return;
	}
	c->state = C_LINGER;
	uv_timer_start(&c->timer, on_timeout, c->srv->linger_ms, 0);
	if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) < 0 ||
	    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
		conn_close(c);
}

static void on_write(uv_write_t *req, int status)
{
	response_written(req->data, status);
}

/* A write of ciphertext; the last one of a response ends it, or (a
 * failed handshake's alert) closes the connection. */
#define WRITE_THEN_CLOSE 2
typedef struct twrite {
	uv_write_t req;
	conn *c;
	int last;
	char data[];
} twrite;

static void on_twrite(uv_write_t *req, int status)
{
	twrite *w = req->data;
	conn *c = w->c;
	int last = w->last;
	free(w);
	if (c->closing)
		return;
	if (status < 0) {
		conn_close(c);
		return;
	}
	if (last == WRITE_THEN_CLOSE)
		conn_close(c);
	else if (last)
		response_written(c, 0);
}

/* Writes what GnuTLS produced. 0, or a negative errno (close). */
static int tls_flush(conn *c, int last)
{
	if (!c->tout.len && !last)
		return 0;
	twrite *w = malloc(sizeof(*w) + c->tout.len);
	if (!w)
		return -ENOMEM;
	w->c = c;
	w->last = last;
	w->req.data = w;
	if (c->tout.len)
		memcpy(w->data, c->tout.data, c->tout.len);
	uv_buf_t b = uv_buf_init(w->data, (unsigned)c->tout.len);
	sf_buf_reset(&c->tout);
	int rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_twrite);
	if (rc < 0)
		free(w);
	return rc;
}

static ssize_t tls_push(gnutls_transport_ptr_t p, const void *data, size_t n)
{
	conn *c = p;
	if (sf_buf_append(&c->tout, data, n) < 0) {
		gnutls_transport_set_errno(c->tls, ENOMEM);
		return -1;
	}
	return (ssize_t)n;
}

static ssize_t tls_pull(gnutls_transport_ptr_t p, void *data, size_t n)
{
	conn *c = p;
	if (!c->rd_len) {
		gnutls_transport_set_errno(c->tls, EAGAIN);
		return -1;
	}
	if (n > c->rd_len)
		n = c->rd_len;
	memcpy(data, c->rd, n);
	c->rd += n;
	c->rd_len -= n;
	return (ssize_t)n;
}

/* Encrypts the response and sends it with a close_notify. */
static int tls_send(conn *c, const uv_buf_t *bufs, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		size_t off = 0;
		while (off < bufs[i].len) {
			ssize_t w =
			    gnutls_record_send(c->tls, bufs[i].base + off, bufs[i].len - off);
			if (w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED)
				continue; /* push never blocks */
			if (w < 0)
				return -EIO;
			off += (size_t)w;
		}
	}
	gnutls_bye(c->tls, GNUTLS_SHUT_WR);
	return tls_flush(c, 1);
}

static void log_request(const conn *c, int status)
{
	if (!sf_log_enabled(SF_LOG_DEBUG))
		return;
	char method[32] = "", path[128] = "", code[24];
	if (c->req.method)
		snprintf(method, sizeof(method), "%.*s", (int)c->req.method_len, c->req.method);
	if (c->req.path)
		snprintf(path, sizeof(path), "%.*s", (int)c->req.path_len, c->req.path);
	sf_log_debug("server", "request", "name", c->srv->name, "method", method, "path", path,
	             "status", sf_log_int(code, status), NULL);
}

/* Writes the response; takes over body. */
static void send_response(conn *c, int status, const char *content_type, sf_buf *body)
{
	if (c->closing) { /* the handler closed the server */
		sf_buf_free(body);
		return;
	}
	uv_read_stop((uv_stream_t *)&c->tcp);
	c->state = C_WRITE;
	c->body = *body;
	sf_buf_init(body, 0);
	log_request(c, status);
	sf_buf_reset(&c->head);
	int rc = sf_buf_printf(&c->head,
	                       "HTTP/1.1 %d %s\r\n"
	                       "Content-Type: %s\r\n"
	                       "Content-Length: %zu\r\n"
	                       "%s"
	                       "Connection: close\r\n"
	                       "\r\n",
	                       status, reason(status), content_type, c->body.len,
	                       status == 405 ? "Allow: " ALLOW "\r\n" : "");
	if (rc < 0) {
		conn_close(c);
		return;
	}
	uv_buf_t bufs[2];
	unsigned n = 0;
	bufs[n++] = uv_buf_init(c->head.data, (unsigned)c->head.len);
	if (!c->head_only && c->body.len)
		bufs[n++] = uv_buf_init(c->body.data, (unsigned)c->body.len);
	uv_timer_start(&c->timer, on_timeout, c->srv->timeout_ms, 0);
	if (c->tls ? tls_send(c, bufs, n) < 0
	           : uv_write(&c->wreq, (uv_stream_t *)&c->tcp, bufs, n, on_write) < 0)
		conn_close(c);
}

/* A response the server makes itself ("404 Not Found\n"). */
static void send_error(conn *c, int status)
{
	sf_buf body;
	sf_buf_init(&body, 0);
	if (sf_buf_printf(&body, "%d %s\n", status, reason(status)) < 0) {
		conn_close(c);
		return;
	}
	send_response(c, status, DEFAULT_CONTENT_TYPE, &body);
}

static int method_is(const sf_srv_request *r, const char *m)
{
	return r->method_len == strlen(m) && memcmp(r->method, m, r->method_len) == 0;
}

static route *find_route(const sf_srv *srv, const char *path, size_t len)
{
	for (route *r = srv->routes; r; r = r->next) {
		if (r->len == len && memcmp(r->path, path, len) == 0)
			return r;
	}
	return NULL;
}

/* The whole request has arrived: answer it. */
static void dispatch(conn *c)
{
	sf_srv *srv = c->srv;
	const sf_srv_request *req = &c->req;
	c->head_only = method_is(req, "HEAD");
	route *r = find_route(srv, req->path, req->path_len);
	if (!r) {
		send_error(c, 404);
		return;
	}
	if (!c->head_only && !method_is(req, "GET")) {
		send_error(c, 405);
		return;
	}
	if (r->guard && !c->authorized) {
		const char *tok = NULL;
		size_t toklen = 0;
		if (!sf_srv_bearer(c->in, req->head_len, &tok, &toklen))
			tok = NULL;
		uv_read_stop((uv_stream_t *)&c->tcp);
		c->state = C_AUTH;
		c->auth_pending = 1;
		c->guarded = r;
		r->guard(r->guard_ud, tok, tok ? toklen : 0, (sf_srv_pending *)c);
		return;
	}
	sf_srv_response res = {.status = 200, .content_type = DEFAULT_CONTENT_TYPE};
	sf_buf_init(&res.body, srv->max_response);
	int rc = r->fn(r->ud, req, &res);
	const char *why = NULL;
	if (rc < 0)
		why = uv_strerror(rc);
	else if (!valid_status(res.status))
		why = "invalid status code";
	else if (!valid_content_type(res.content_type))
		why = "invalid content type";
	if (why) {
		sf_log_error("server", "handler failed", "name", srv->name, "path", r->path,
		             "error", why, NULL);
		sf_buf_free(&res.body);
		send_error(c, 500);
		return;
	}
	send_response(c, res.status, res.content_type, &res.body);
}

void sf_srv_verdict(sf_srv_pending *p, int status)
{
	conn *c = (conn *)p;
	c->auth_pending = 0;
	if (c->closing) {
		if (c->handles == 0)
			conn_free(c);
		return;
	}
	if (status == 0) {
		c->authorized = 1;
		dispatch(c);
	} else {
		send_error(c, valid_status(status) ? status : 500);
	}
}

static int error_status(int rc)
{
	switch (rc) {
	case -EMSGSIZE: return 431;
	case -EPROTONOSUPPORT: return 505;
	case -ENOTSUP: return 501;
	default: return 400;
	}
}

static void head_done(conn *c)
{
	uint64_t cl = c->req.content_length;
	if (cl > c->srv->max_body) {
		send_error(c, 413);
		return;
	}
	size_t extra = c->in_len - c->req.head_len;
	c->body_left = extra >= cl ? 0 : cl - extra;
	if (c->body_left) {
		c->state = C_BODY;
		return;
	}
	dispatch(c);
}

static void head_data(conn *c, size_t n)
{
	size_t prev = c->in_len;
	c->in_len += n;
	if (prev == 0 || memchr(c->in + prev, '\n', n)) {
		int rc = sf_srv_parse_request(c->in, c->in_len, &c->req);
		if (rc < 0) {
			memset(&c->req, 0, sizeof(c->req));
			send_error(c, error_status(rc));
			return;
		}
		if (rc == SF_SRV_PARSE_COMPLETE) {
			head_done(c);
			return;
		}
	}
	if (c->in_len >= c->srv->max_head) {
		memset(&c->req, 0, sizeof(c->req));
		send_error(c, 431);
	}
}

static void peer_eof(conn *c)
{
	c->peer_eof = 1;
	if (c->state == C_HEAD && c->in_len > 0) {
		/* Half-closed mid-request: it cannot be completed. */
		memset(&c->req, 0, sizeof(c->req));
		send_error(c, 400);
	} else {
		conn_close(c);
	}
}

/* n bytes of the request arrived (into c->in in HEAD, else scratch). */
static void got_data(conn *c, size_t n)
{
	switch (c->state) {
	case C_HEAD: head_data(c, n); break;
	case C_BODY:
		c->body_left -= n < c->body_left ? n : c->body_left;
		if (c->body_left == 0)
			dispatch(c);
		break;
	default: /* LINGER: discarded */ break;
	}
}

static void tls_failed(conn *c, const char *what, int rc)
{
	c->srv->st.tls_failures++;
	sf_log_debug("server", "TLS failed", "name", c->srv->name, "step", what, "error",
	             gnutls_strerror(rc), NULL);
	/* tell the client why (protocol_version for TLS 1.1), then close */
	gnutls_alert_send_appropriate(c->tls, rc);
	uv_read_stop((uv_stream_t *)&c->tcp);
	c->state = C_WRITE;
	uv_timer_start(&c->timer, on_timeout, c->srv->linger_ms, 0);
	if (tls_flush(c, WRITE_THEN_CLOSE) < 0)
		conn_close(c);
}

/* Ciphertext arrived: drive the handshake, then decrypt the request. */
static void tls_read(conn *c, const char *data, size_t n)
{
	if (c->state == C_LINGER)
		return;
	c->rd = data;
	c->rd_len = n;
	if (!c->hs_done) {
		int rc = gnutls_handshake(c->tls);
		if (rc < 0 && rc != GNUTLS_E_AGAIN && rc != GNUTLS_E_INTERRUPTED) {
			tls_failed(c, "handshake", rc);
			return;
		}
		if (tls_flush(c, 0) < 0) {
			conn_close(c);
			return;
		}
		if (rc < 0)
			return;
		c->hs_done = 1;
	}
	while (!c->closing && (c->state == C_HEAD || c->state == C_BODY)) {
		char *dst = c->srv->scratch;
		size_t cap = sizeof(c->srv->scratch);
		if (c->state == C_HEAD) {
			dst = c->in + c->in_len;
			cap = c->srv->max_head - c->in_len;
		}
		ssize_t r = gnutls_record_recv(c->tls, dst, cap);
		if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
			break;
		if (r == 0) {
			peer_eof(c);
			break;
		}
		if (r < 0) {
			tls_failed(c, "record", (int)r);
			break;
		}
		got_data(c, (size_t)r);
	}
	c->rd_len = 0;
	if (!c->closing && c->state != C_WRITE && c->state != C_LINGER && tls_flush(c, 0) < 0)
		conn_close(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	conn *c = s->data;
	if (c->closing || nread == 0)
		return;
	if (nread < 0) {
		if (nread != UV_EOF)
			conn_close(c);
		else if (c->tls && c->state != C_LINGER)
			conn_close(c); /* no close_notify: nothing to answer */
		else
			peer_eof(c);
		return;
	}
	if (c->tls)
		tls_read(c, buf->base, (size_t)nread);
	else
		got_data(c, (size_t)nread);
}

static void reject_closed(uv_handle_t *h)
{
	reject *r = h->data;
	sf_srv *srv = r->srv;
	free(r);
	srv->live--;
	maybe_finish(srv);
}

/* Accepts a connection over the limit and closes it. */
static int reject_one(sf_srv *srv)
{
	reject *r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	int rc = uv_tcp_init(srv->loop, &r->tcp);
	if (rc) {
		free(r);
		return rc;
	}
	r->srv = srv;
	r->tcp.data = r;
	srv->live++;
	if (uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)&r->tcp) == 0)
		srv->st.rejected++;
	uv_close((uv_handle_t *)&r->tcp, reject_closed);
	return 0;
}

static int tls_start(conn *c)
{
	gnutls_certificate_credentials_t x = sf_tlscred_get(c->srv->tlscred, &c->cred);
	int rc = gnutls_init(&c->tls, GNUTLS_SERVER | GNUTLS_NONBLOCK | GNUTLS_NO_TICKETS);
	if (rc < 0) {
		c->tls = NULL;
		return -ENOMEM;
	}
	rc = gnutls_priority_set(c->tls, c->srv->prio);
	if (rc == 0)
		rc = gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, x);
	if (rc < 0)
		return -ENOMEM;
	gnutls_transport_set_ptr(c->tls, c);
	gnutls_transport_set_push_function(c->tls, tls_push);
	gnutls_transport_set_pull_function(c->tls, tls_pull);
	return 0;
}

static int conn_start(sf_srv *srv)
{
	conn *c = calloc(1, sizeof(*c) + srv->max_head);
	if (!c)
		return -ENOMEM;
	int rc = uv_tcp_init(srv->loop, &c->tcp);
	if (rc) {
		free(c);
		return rc;
	}
	c->handles = 1;
	rc = uv_timer_init(srv->loop, &c->timer);
	if (rc) {
		/* Only the socket is open: close it with the timer counted as done. */
		c->closing = 1;
		uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
	} else {
		c->handles = 2;
	}
	c->srv = srv;
	c->tcp.data = c->timer.data = c->wreq.data = c->sreq.data = c;
	sf_buf_init(&c->head, 0);
	sf_buf_init(&c->body, 0);
	sf_buf_init(&c->tout, 0);
	c->next = srv->conns;
	if (srv->conns)
		srv->conns->prev = c;
	srv->conns = c;
	srv->st.conns++;
	srv->live++;
	if (rc)
		return rc;
	if (srv->tlscred && (rc = tls_start(c)) < 0) {
		conn_close(c);
		return rc;
	}
	rc = uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)&c->tcp);
	if (rc == 0)
		rc = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
	if (rc == 0)
		rc = uv_timer_start(&c->timer, on_timeout, srv->timeout_ms, 0);
	if (rc) {
		conn_close(c);
		return rc;
	}
	srv->st.accepted++;
	return 0;
}

static void on_connection(uv_stream_t *server, int status)
{
	sf_srv *srv = server->data;
	if (srv->closing)
		return;
	if (status < 0) {
		sf_log_warn("server", "accept failed", "name", srv->name, "error",
		            uv_strerror(status), NULL);
		return;
	}
	int rc = srv->st.conns < srv->max_conns ? conn_start(srv) : reject_one(srv);
	if (rc == -ENOMEM || rc == UV_ENOMEM) {
		/* libuv keeps the socket and stops accepting until it is taken;
		 * try again when a connection goes away. */
		srv->stalled = srv->st.conns > 0;
		sf_log_error("server", "cannot take a connection", "name", srv->name, "error",
		             uv_strerror(rc), NULL);
	} else if (rc < 0) {
		sf_log_warn("server", "connection failed", "name", srv->name, "error",
		            uv_strerror(rc), NULL);
	}
}

/* --- listener -------------------------------------------------------------- */

static socklen_t addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static int is_any6(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
	return ss->ss_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr);
}

/* A non-blocking listening socket bound to ss. 0 and *fd_out, or -errno
 * with *step naming the call that failed. */
static int listen_socket(const struct sockaddr_storage *ss, int *fd_out, const char **step)
{
	*step = "socket";
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1, zero = 0;
	*step = "setsockopt";
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto fail;
	/* All interfaces means IPv4 too, as with Go's net.Listen. */
	if (is_any6(ss) && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) < 0)
		goto fail;
	*step = "bind";
	if (bind(fd, (const struct sockaddr *)ss, addr_len(ss)) < 0)
		goto fail;
	*step = "listen";
	if (listen(fd, BACKLOG) < 0)
		goto fail;
	*fd_out = fd;
	return 0;
fail:;
	int rc = -errno;
	close(fd);
	return rc;
}

/* Binds ss, falling back to IPv4 for "all interfaces" without IPv6. */
static int open_listener(struct sockaddr_storage *ss, int *fd, const char **step)
{
	int rc = listen_socket(ss, fd, step);
	if ((rc == -EAFNOSUPPORT || rc == -EADDRNOTAVAIL) && is_any6(ss)) {
		uint16_t port = ((struct sockaddr_in6 *)ss)->sin6_port;
		memset(ss, 0, sizeof(*ss));
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;
		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = htonl(INADDR_ANY);
		sin->sin_port = port;
		rc = listen_socket(ss, fd, step);
	}
	return rc;
}

static void listener_closed(uv_handle_t *h)
{
	sf_srv *srv = h->data;
	srv->live--;
	maybe_finish(srv);
}

int sf_srv_new(uv_loop_t *loop, const sf_srv_opts *opts, sf_srv **out)
{
	sf_srv_opts o = {0};
	if (opts)
		o = *opts;
	*out = NULL;
	if (o.err && o.errlen)
		o.err[0] = '\0';
	struct sockaddr_storage ss;
	int rc = sf_srv_parse_bind(o.bind, &ss, o.err, o.errlen);
	if (rc < 0)
		return rc;
	if (rc == 1) {
		sf_log_debug("server", "server disabled", "name", o.name ? o.name : "", NULL);
		return 0;
	}
	if (o.max_head && (o.max_head < MIN_HEAD || o.max_head > MAX_HEAD)) {
		sf_errf(o.err, o.errlen, "max_head must be from %d to %zu bytes", MIN_HEAD,
		        MAX_HEAD);
		return -EINVAL;
	}
	if (o.max_response > UINT32_MAX) {
		sf_errf(o.err, o.errlen, "max_response must be at most %u bytes", UINT32_MAX);
		return -EINVAL;
	}
	sf_srv *srv = calloc(1, sizeof(*srv));
	if (!srv || !(srv->name = strdup(o.name ? o.name : ""))) {
		free(srv);
		sf_errf(o.err, o.errlen, "out of memory");
		return -ENOMEM;
	}
	srv->loop = loop;
	srv->max_conns = o.max_conns ? o.max_conns : DEFAULT_MAX_CONNS;
	srv->timeout_ms = o.timeout_ms ? o.timeout_ms : DEFAULT_TIMEOUT_MS;
	srv->linger_ms = srv->timeout_ms < LINGER_MAX_MS ? srv->timeout_ms : LINGER_MAX_MS;
	srv->max_head = o.max_head ? o.max_head : DEFAULT_MAX_HEAD;
	srv->max_body = o.max_body ? o.max_body : DEFAULT_MAX_BODY;
	srv->max_response = o.max_response ? o.max_response : DEFAULT_MAX_RESPONSE;
	srv->tlscred = o.tls;
	if (o.tls && gnutls_priority_init(&srv->prio, TLS_PRIORITY, NULL) < 0) {
		sf_errf(o.err, o.errlen, "TLS priority %s refused by GnuTLS", TLS_PRIORITY);
		srv->prio = NULL;
		srv_free(srv);
		return -EINVAL;
	}

	int fd = -1;
	const char *step;
	rc = open_listener(&ss, &fd, &step);
	if (rc < 0) {
		sf_errf(o.err, o.errlen, "listen on %s: %s: %s", o.bind, step, uv_strerror(rc));
		srv_free(srv);
		return rc;
	}
	socklen_t sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		rc = -errno;
		sf_errf(o.err, o.errlen, "listen on %s: getsockname: %s", o.bind, uv_strerror(rc));
		close(fd);
		srv_free(srv);
		return rc;
	}
	char host[INET6_ADDRSTRLEN] = "";
	if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&ss;
		srv->port = ntohs(sin6->sin6_port);
		uv_ip6_name(sin6, host, sizeof(host));
	} else {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)&ss;
		srv->port = ntohs(sin->sin_port);
		uv_ip4_name(sin, host, sizeof(host));
	}

	rc = uv_tcp_init(loop, &srv->listener);
	if (rc) {
		sf_errf(o.err, o.errlen, "listen on %s: %s", o.bind, uv_strerror(rc));
		close(fd);
		srv_free(srv);
		return rc;
	}
	srv->listener.data = srv;
	srv->live = 1;
	rc = uv_tcp_open(&srv->listener, fd);
	if (rc)
		close(fd);
	else
		rc = uv_listen((uv_stream_t *)&srv->listener, BACKLOG, on_connection);
	if (rc) {
		/* The handle is on the loop now: it is freed when libuv has closed it. */
		sf_errf(o.err, o.errlen, "listen on %s: %s", o.bind, uv_strerror(rc));
		srv->closing = 1;
		uv_close((uv_handle_t *)&srv->listener, listener_closed);
		return rc;
	}
	char port[24], addr[INET6_ADDRSTRLEN + 32];
	snprintf(addr, sizeof(addr), ss.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", host,
	         srv->port);
	sf_log_info("server", "serving", "name", srv->name, "addr", addr, "port",
	            sf_log_int(port, srv->port), "scheme", srv->tlscred ? "https" : "http", NULL);
	*out = srv;
	return 0;
}

int sf_srv_route(sf_srv *srv, const char *path, sf_srv_handler_fn handler, void *ud)
{
	return sf_srv_route_guarded(srv, path, handler, ud, NULL, NULL);
}

int sf_srv_route_guarded(sf_srv *srv, const char *path, sf_srv_handler_fn handler, void *ud,
                         sf_srv_guard_fn guard, void *guard_ud)
{
	if (!path || path[0] != '/' || !handler)
		return -EINVAL;
	size_t len = strlen(path);
	if (find_route(srv, path, len))
		return -EEXIST;
	route *r = malloc(sizeof(*r) + len + 1);
	if (!r)
		return -ENOMEM;
	memcpy(r->path, path, len + 1);
	r->len = len;
	r->fn = handler;
	r->ud = ud;
	r->guard = guard;
	r->guard_ud = guard_ud;
	r->next = srv->routes;
	srv->routes = r;
	return 0;
}

int sf_srv_port(const sf_srv *srv)
{
	return srv ? srv->port : 0;
}

void sf_srv_stats_get(const sf_srv *srv, sf_srv_stats *st)
{
	if (srv)
		*st = srv->st;
	else
		memset(st, 0, sizeof(*st));
}

void sf_srv_close(sf_srv *srv, void (*cb)(void *ud), void *ud)
{
	if (!srv) {
		if (cb)
			cb(ud);
		return;
	}
	if (srv->closing)
		return;
	srv->closing = 1;
	srv->close_cb = cb;
	srv->close_ud = ud;
	uv_close((uv_handle_t *)&srv->listener, listener_closed);
	for (conn *c = srv->conns; c; c = c->next)
		conn_close(c);
}

const char *sf_srv_metrics_content_type(void)
{
	return "text/plain; version=0.0.4; charset=utf-8";
}
