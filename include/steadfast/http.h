/*
 * http.h - HTTP requests on the libuv loop through libcurl's multi interface.
 *
 * libcurl does the protocol (HTTP/1.1 and HTTP/2, TLS 1.2 or newer via
 * GnuTLS); libuv
 * tells it when sockets are ready (CURLMOPT_SOCKETFUNCTION/TIMERFUNCTION).
 * No threads. A response body is either buffered (with a size cap) or
 * streamed to a callback as it arrives (watches, large lists).
 *
 * Every started request ends with exactly one on_done call, always from the
 * loop (never from inside sf_http_start or sf_http_cancel), including when
 * it is cancelled or the client is closed (err = -ECANCELED).
 */
#ifndef STEADFAST_HTTP_H
#define STEADFAST_HTTP_H

#include <stddef.h>
#include <uv.h>

#include "steadfast/buf.h"

typedef struct sf_http sf_http;
typedef struct sf_http_req sf_http_req;

typedef struct sf_http_opts {
	const char *ca_file;   /* NULL = system CAs */
	const char *cert_file; /* client certificate (PEM), or NULL */
	const char *key_file;
	int insecure;            /* skip TLS verification */
	long connect_timeout_ms; /* 0 = 10 s */
	int http1_only;          /* disable HTTP/2 */
	/* "HOST:PORT:CONNECT-HOST:CONNECT-PORT" (CURLOPT_CONNECT_TO): lets the
	 * URL carry the TLS name while connecting elsewhere. NULL = none. */
	const char *connect_to;
	/* Proxy URL for every request (CURLOPT_PROXY): http://, https:// or
	 * socks5[h]://. NULL = libcurl's default, the *_proxy environment
	 * variables (client-go also honours them when no proxy-url is set). */
	const char *proxy;
	int no_compression; /* send no Accept-Encoding */
	/* TCP_USER_TIMEOUT of every socket: data unacknowledged this long
	 * kills the connection (keepalive does not probe while data waits).
	 * 0 = 30 s, < 0 = the kernel's default. */
	long tcp_user_timeout_ms;
	/* Connections older than this are not given new requests (curl's
	 * MAXLIFETIME_CONN, checked when a connection is idle). 0 = 10 min. */
	long max_conn_age_s;
} sf_http_opts;

typedef struct sf_http_result {
	int err;                  /* 0 when a response arrived, else negative errno */
	const char *errmsg;       /* transport error text ("" if none) */
	long status;              /* HTTP status, 0 without a response */
	const sf_buf *body;       /* buffered body (empty when streamed) */
	const char *content_type; /* or "" */
	long retry_after_s;       /* Retry-After seconds, -1 if absent */
	double total_s;           /* time from start to end */
	int http_version;         /* 1 (HTTP/1.x) or 2 (HTTP/2); 0 without a response */
} sf_http_result;

typedef struct sf_http_request {
	const char *method; /* "GET", "POST", ... */
	const char *url;
	const char *const *headers; /* NULL-terminated "Name: value" list, or NULL */
	const char *body;           /* copied; NULL for none */
	size_t body_len;
	long timeout_ms; /* whole-request timeout, 0 = none */
	size_t max_body; /* cap for buffered bodies, 0 = 64 MiB */
	/* Streaming: called with each chunk of a 2xx body instead of buffering
	 * it. Return 0 to go on, non-zero to abort the request (it then ends
	 * with -ECANCELED unless sf_http_req_fail set another error). */
	int (*on_data)(void *ud, const char *p, size_t n);
	void (*on_done)(void *ud, const sf_http_result *res);
	void *ud;
	int fresh_connection; /* a new connection for this request (CURLOPT_FRESH_CONNECT) */
} sf_http_request;

int sf_http_new(uv_loop_t *loop, const sf_http_opts *opts, sf_http **out);
/* Cancels every request (each gets on_done with -ECANCELED), then closes the
 * loop handles; cb runs when all memory is released. */
void sf_http_close(sf_http *h, void (*cb)(void *ud), void *ud);

/* Starts a request. On error (negative errno) on_done is never called. */
int sf_http_start(sf_http *h, const sf_http_request *r, sf_http_req **out);
/* Ends the request early; on_done follows with -ECANCELED. No-op if it
 * already ended (the handle stays valid until on_done returns). */
void sf_http_cancel(sf_http_req *req);
/* Inside on_data: the HTTP status of the response being streamed. */
long sf_http_req_status(const sf_http_req *req);
/* Inside on_data: make the request end with err/msg instead of -ECANCELED
 * when on_data returns non-zero. */
void sf_http_req_fail(sf_http_req *req, int err, const char *msg);
/* Replaces the client certificate (PEM paths) used by requests started
 * from now on; connections already open keep theirs (callers shut them
 * down with sf_http_drop_connections when the old one must stop). 0 or
 * -ENOMEM. */
int sf_http_set_client_cert(sf_http *h, const char *cert_file, const char *key_file);
/* Requests in flight. */
size_t sf_http_active(const sf_http *h);
/* Shuts down every connection open now (shutdown(2) on its socket): each
 * request on them ends with a transport error and new requests open new
 * connections. For a connection suspected dead: a request on it timed out,
 * a health probe got no answer. Returns how many were shut down. A request
 * that ends with a timeout does this by itself. */
size_t sf_http_drop_connections(sf_http *h, const char *why);
/* mono ns of the last bytes received on any connection (0 = none yet). */
int64_t sf_http_last_rx_ns(const sf_http *h);
/* Connections shut down by sf_http_drop_connections so far. */
unsigned long sf_http_dropped(const sf_http *h);
/* Whether libcurl offers HTTP/2. */
int sf_http_has_http2(void);

#endif
