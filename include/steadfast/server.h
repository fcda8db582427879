/*
 * server.h - minimal HTTP/1.1 server on the libuv loop for probes and metrics.
 *
 * The manager serves /healthz, /readyz and /metrics from in-memory state, so
 * the server only needs what the kubelet and Prometheus use: GET and HEAD on
 * exact paths, one request per connection (every response carries
 * Connection: close and a Content-Length), synchronous handlers. Being on the
 * controller's only loop, it must never block it and must not let a client
 * hold resources: the request line and headers are capped (431), a request
 * body is read and discarded up to a small cap (413 beyond), malformed input
 * gets 400 and the connection closed, at most max_conns connections are open
 * (more are accepted and closed at once), and a connection that has not sent
 * its whole request within timeout_ms of being accepted (slowloris) or not
 * taken its response within timeout_ms is closed.
 *
 * Bind addresses use the Go/controller-runtime form of --metrics-bind-address
 * and --health-probe-bind-address: ":8081" (all interfaces, IPv6 and IPv4),
 * "127.0.0.1:8080", "[::1]:9090", "localhost:8080" (127.0.0.1); "0" or ""
 * disables the server. Port 0 picks an ephemeral port (see sf_srv_port).
 * Binding is done synchronously so that "address already in use" is an
 * error of sf_srv_new rather than something found later on the loop.
 *
 * All calls must be made on the loop's thread.
 */
#ifndef STEADFAST_SERVER_H
#define STEADFAST_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "steadfast/buf.h"

typedef struct sf_srv sf_srv;

/* --- request parsing (pure; used by the server, unit-tested and fuzzed) --- */

enum {
	SF_SRV_PARSE_INCOMPLETE = 0, /* valid so far; more bytes needed */
	SF_SRV_PARSE_COMPLETE = 1,   /* the request line and headers are all there */
};

/* Header fields beyond this many are refused (-EMSGSIZE, answered with 431).
 * It also bounds how often the server re-parses a growing request. */
#define SF_SRV_MAX_FIELDS 100

/* A parsed request head. Strings point into the parsed buffer (path may also
 * point to a static "/") and are not NUL-terminated. */
typedef struct sf_srv_request {
	const char *method; /* token, case-sensitive ("GET") */
	size_t method_len;
	const char *target; /* request-target as sent */
	size_t target_len;
	const char *path; /* target without query; for the absolute form
	                   * ("http://host/p?q") the path part, "/" if none */
	size_t path_len;
	const char *query; /* after '?', without it; NULL if the target has none */
	size_t query_len;
	int version;             /* 10 for HTTP/1.0, 11 for HTTP/1.1 (and 1.2-1.9) */
	size_t head_len;         /* bytes of request line and headers incl. the blank line */
	uint64_t content_length; /* 0 when absent */
	unsigned nfields;        /* header fields seen */
} sf_srv_request;

/* Parses the request line and header fields at the start of buf (RFC 9112:
 * CRLF or bare LF line ends, no obsolete line folding, a Host field required
 * once for HTTP/1.1). Bytes after the head (a body) are not looked at.
 * Returns SF_SRV_PARSE_COMPLETE with *out filled in; SF_SRV_PARSE_INCOMPLETE
 * when buf is a valid prefix of a request (*out is then unspecified); or
 *   -EBADMSG          malformed (400)
 *   -EMSGSIZE         more than SF_SRV_MAX_FIELDS header fields (431)
 *   -EPROTONOSUPPORT  an HTTP version other than 1.x (505)
 *   -ENOTSUP          Transfer-Encoding, i.e. a chunked body (501)
 * An error is reported as soon as the bytes seen so far show it, so garbage
 * is refused without waiting for a line end. */
int sf_srv_parse_request(const char *buf, size_t len, sf_srv_request *out);

/* Finds the first header field called name (case-insensitive) in the head
 * of a request, head_len bytes as sf_srv_parse_request measured them.
 * Returns 1 with the value (optional whitespace trimmed, not
 * NUL-terminated), 0 when there is none. Safe on any bytes. */
int sf_srv_header(const char *head, size_t head_len, const char *name, const char **val,
                  size_t *vlen);
/* The token of an "Authorization: Bearer <token>" field (the scheme is
 * case-insensitive, as the API server reads it): 1 with the token, 0 when
 * the field is absent or not a well-formed bearer credential. */
int sf_srv_bearer(const char *head, size_t head_len, const char **tok, size_t *toklen);

/* Parses a bind address (see the top of this file). Returns 0 with *out set
 * (the port may be 0), 1 when the address disables the server, or -EINVAL
 * with a message in err. The unspecified IPv6 address in *out means all
 * interfaces, IPv4 included. */
int sf_srv_parse_bind(const char *bind, struct sockaddr_storage *out, char *err, size_t errlen);

/* --- server --- */

typedef struct sf_srv_response {
	int status;               /* 200 on entry; 200-599 except 204 and 304 */
	const char *content_type; /* "text/plain; charset=utf-8" on entry; read
	                           * after the handler returns: a literal, or
	                           * memory that outlives the call (in ud) */
	sf_buf body;              /* empty on entry, owned by the server, capped
	                           * at opts.max_response */
} sf_srv_response;

/* Fills res for req; runs synchronously on the loop and must not block.
 * Returns 0, or a negative errno to answer 500 instead of whatever is in
 * res (the error is logged). */
typedef int (*sf_srv_handler_fn)(void *ud, const sf_srv_request *req, sf_srv_response *res);

/* A guard decides, asynchronously, whether a request to its route is
 * served: the server calls it with the request's bearer token (NULL when
 * there is none; borrowed for the call only) once the request is in, stops
 * reading, and waits (within timeout_ms from accept) until sf_srv_verdict
 * is called with p, exactly once, even after the connection or the server
 * was closed (a closed one is then freed): 0 to run the handler, or the
 * status to answer instead (401, 403, 500). It may be called from the
 * guard itself. */
typedef struct sf_srv_pending sf_srv_pending;
typedef void (*sf_srv_guard_fn)(void *ud, const char *token, size_t token_len, sf_srv_pending *p);
void sf_srv_verdict(sf_srv_pending *p, int status);

struct sf_tlscred;

typedef struct sf_srv_opts {
	const char *bind;    /* see the top of this file; NULL = disabled */
	const char *name;    /* for logs ("health", "metrics"); copied; NULL = "" */
	unsigned max_conns;  /* open connections at most; 0 = 64 */
	uint64_t timeout_ms; /* to receive a request, and again to send its
	                      * response; 0 = 10000 */
	size_t max_head;     /* request line and headers; 0 = 8192 */
	size_t max_body;     /* Content-Length read and discarded; larger is
	                      * answered with 413; 0 = 1024 */
	size_t max_response; /* cap on a handler's body; 0 = 64 MiB */
	/* HTTPS (GnuTLS, TLS 1.2 and 1.3 only) with the certificate from tls
	 * (borrowed: it must outlive the server); NULL = plain HTTP. The
	 * handshake counts against the request deadline. */
	struct sf_tlscred *tls;
	char *err; /* if not NULL, sf_srv_new puts a message here */
	size_t errlen;
} sf_srv_opts;

typedef struct sf_srv_stats {
	size_t conns;          /* connections open now */
	uint64_t accepted;     /* connections taken on */
	uint64_t rejected;     /* connections closed at once: max_conns were open */
	uint64_t responses;    /* responses sent, any status */
	uint64_t timeouts;     /* connections closed by their deadline */
	uint64_t tls_failures; /* TLS handshakes or records that failed */
} sf_srv_stats;

/* Binds and starts listening. Returns 0 and *out, 0 with *out NULL when the
 * bind address disables the server, or a negative errno with a message in
 * opts->err: -EINVAL (bad address or options), -EADDRINUSE, -EACCES,
 * -EADDRNOTAVAIL, ... from binding, -ENOMEM. These failures leave nothing
 * on the loop (only if libuv refused the bound socket would its handle be
 * closed on the loop's next run). */
int sf_srv_new(uv_loop_t *loop, const sf_srv_opts *opts, sf_srv **out);
/* Serves path (exact match, the query ignored) with handler. 0, -EINVAL
 * (path not starting with '/'), -EEXIST or -ENOMEM. */
int sf_srv_route(sf_srv *srv, const char *path, sf_srv_handler_fn handler, void *ud);
/* sf_srv_route with a guard that must let each request through first. */
int sf_srv_route_guarded(sf_srv *srv, const char *path, sf_srv_handler_fn handler, void *ud,
                         sf_srv_guard_fn guard, void *guard_ud);
/* The bound port (the ephemeral one for port 0); 0 for a NULL server. */
int sf_srv_port(const sf_srv *srv);
void sf_srv_stats_get(const sf_srv *srv, sf_srv_stats *st);
/* Stops listening and closes every connection (responses being written are
 * cut off). Memory is freed once libuv has closed all handles, then cb(ud)
 * is called (cb may be NULL). With srv NULL (a disabled server) cb is called
 * at once. srv must not be used afterwards. */
void sf_srv_close(sf_srv *srv, void (*cb)(void *ud), void *ud);

/* The Prometheus text exposition format's content type. */
const char *sf_srv_metrics_content_type(void);

#endif
