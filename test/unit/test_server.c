/*
 * test_server.c - the probe/metrics HTTP server: the request parser (every
 * prefix of a valid head is incomplete, each kind of malformed input gets
 * its error), bind addresses, and the server on a real loop on 127.0.0.1:0.
 * Clients are raw uv_tcp sockets on the same loop, so abusive clients (idle,
 * trickling, oversized, garbage, not reading) and a well-behaved one can run
 * at the same time and prove that nothing blocks the loop; one test uses
 * libcurl in a thread to check the responses with a real HTTP client.
 * Waiting is always "run the loop until a condition holds, with a deadline".
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "steadfast/buf.h"
#include "steadfast/log.h"
#include "steadfast/server.h"
#include "tl.h"

#define MS 1000000ull

/* ---- running the loop ---- */

typedef int (*cond_fn)(void *ud);

static void ticker_tick(uv_timer_t *t)
{
	(void)t;
}

static void ticker_closed(uv_handle_t *h)
{
	free(h);
}

/* Runs the loop until cond(ud) holds or ms have passed; returns cond(ud). A
 * ticking timer makes sure the deadline is checked even when nothing
 * happens. */
static int run_until(uv_loop_t *loop, cond_fn cond, void *ud, uint64_t ms)
{
	uv_timer_t *t = malloc(sizeof(*t));
	cr_assert_not_null(t);
	uv_timer_init(loop, t);
	uv_timer_start(t, ticker_tick, 5, 5);
	uint64_t end = uv_hrtime() + ms * MS;
	int ok;
	while (!(ok = cond(ud)) && uv_hrtime() < end)
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)t, ticker_closed);
	uv_run(loop, UV_RUN_NOWAIT);
	return ok;
}

static int flag_set(void *ud)
{
	return *(int *)ud != 0;
}

static void set_flag(void *ud)
{
	(*(int *)ud)++;
}

/* ---- raw clients ---- */

typedef struct client {
	uv_tcp_t tcp;
	uv_connect_t creq;
	sf_buf in;
	char *pending; /* sent once connected */
	size_t pending_len;
	int no_read;   /* never read (a client that does not take its response) */
	int connected; /* 1, or a negative error */
	int done;      /* 1 on EOF, or a negative read error */
	int closed;
	int writes_done;
	int write_status; /* the first failed write's status, or 0 */
	uint64_t start_ns;
	uint64_t done_ns;
} client;

typedef struct wreq {
	uv_write_t req;
	client *c;
	char data[];
} wreq;

static void client_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	buf->base = malloc(suggested);
	buf->len = buf->base ? suggested : 0;
}

static void client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	client *c = s->data;
	if (nread > 0)
		cr_assert_eq(sf_buf_append(&c->in, buf->base, (size_t)nread), 0);
	free(buf->base);
	if (nread < 0 && !c->done) {
		c->done = nread == UV_EOF ? 1 : (int)nread;
		c->done_ns = uv_hrtime();
		uv_read_stop(s);
	}
}

static void client_wrote(uv_write_t *req, int status)
{
	wreq *w = (wreq *)req;
	w->c->writes_done++;
	if (status < 0 && !w->c->write_status)
		w->c->write_status = status;
	free(w);
}

static void client_send(client *c, const void *data, size_t len)
{
	wreq *w = malloc(sizeof(*w) + len);
	cr_assert_not_null(w);
	memcpy(w->data, data, len);
	w->c = c;
	uv_buf_t b = uv_buf_init(w->data, (unsigned)len);
	cr_assert_eq(uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, client_wrote), 0);
}

static void client_connected(uv_connect_t *req, int status)
{
	client *c = req->data;
	c->connected = status < 0 ? status : 1;
	if (status < 0)
		return;
	if (!c->no_read)
		cr_assert_eq(uv_read_start((uv_stream_t *)&c->tcp, client_alloc, client_read), 0);
	if (c->pending_len)
		client_send(c, c->pending, c->pending_len);
	free(c->pending);
	c->pending = NULL;
}

static client *client_new_at(uv_loop_t *loop, const struct sockaddr *addr, const void *data,
                             size_t len, int no_read)
{
	client *c = calloc(1, sizeof(*c));
	cr_assert_not_null(c);
	sf_buf_init(&c->in, 0);
	c->no_read = no_read;
	if (len) {
		c->pending = malloc(len);
		memcpy(c->pending, data, len);
		c->pending_len = len;
	}
	cr_assert_eq(uv_tcp_init(loop, &c->tcp), 0);
	c->tcp.data = c;
	c->creq.data = c;
	c->start_ns = uv_hrtime();
	cr_assert_eq(uv_tcp_connect(&c->creq, &c->tcp, addr, client_connected), 0);
	return c;
}

static client *client_new(uv_loop_t *loop, int port, const void *data, size_t len)
{
	struct sockaddr_in sin;
	uv_ip4_addr("127.0.0.1", port, &sin);
	return client_new_at(loop, (const struct sockaddr *)&sin, data, len, 0);
}

static client *client_str(uv_loop_t *loop, int port, const char *req)
{
	return client_new(loop, port, req, strlen(req));
}

static int client_is_done(void *ud)
{
	return ((client *)ud)->done != 0;
}

static int client_is_connected(void *ud)
{
	return ((client *)ud)->connected != 0;
}

static int client_wrote_all(void *ud)
{
	return ((client *)ud)->writes_done > 0;
}

static int client_is_closed(void *ud)
{
	return ((client *)ud)->closed;
}

static void client_closed(uv_handle_t *h)
{
	((client *)h->data)->closed = 1;
}

static void client_free(uv_loop_t *loop, client *c)
{
	if (!uv_is_closing((uv_handle_t *)&c->tcp))
		uv_close((uv_handle_t *)&c->tcp, client_closed);
	cr_assert(run_until(loop, client_is_closed, c, 2000));
	sf_buf_free(&c->in);
	free(c->pending);
	free(c);
}

/* ---- reading responses ---- */

static int resp_status(const client *c)
{
	int status = 0;
	if (!c->in.data || sscanf(c->in.data, "HTTP/1.1 %d ", &status) != 1)
		return 0;
	return status;
}

/* The value of header name (case-sensitive as we write them), or NULL. */
static const char *resp_header(const client *c, const char *name, char *out, size_t n)
{
	const char *end = c->in.data ? strstr(c->in.data, "\r\n\r\n") : NULL;
	if (!end)
		return NULL;
	char pat[64];
	snprintf(pat, sizeof(pat), "\r\n%s: ", name);
	const char *p = strstr(c->in.data, pat);
	if (!p || p > end)
		return NULL;
	p += strlen(pat);
	const char *e = strstr(p, "\r\n");
	snprintf(out, n, "%.*s", (int)(e - p), p);
	return out;
}

static const char *resp_body(const client *c, size_t *len)
{
	const char *end = c->in.data ? strstr(c->in.data, "\r\n\r\n") : NULL;
	cr_assert_not_null(end, "no response head in [%s]", c->in.data ? c->in.data : "");
	end += 4;
	*len = c->in.len - (size_t)(end - c->in.data);
	return end;
}

/* Checks that the response is complete: Content-Length matches the body
 * (head_only: no body at all) and Connection: close is there. */
static void check_framing(const client *c, int head_only)
{
	char v[64];
	cr_assert_not_null(resp_header(c, "Content-Length", v, sizeof(v)), "[%s]", c->in.data);
	size_t blen;
	resp_body(c, &blen);
	if (head_only)
		cr_assert_eq(blen, 0);
	else
		cr_assert_eq(strtoull(v, NULL, 10), blen, "Content-Length %s, body %zu", v, blen);
	cr_assert_not_null(resp_header(c, "Connection", v, sizeof(v)));
	cr_assert_str_eq(v, "close");
}

/* ---- server fixture ---- */

static int h_text(void *ud, const sf_srv_request *req, sf_srv_response *res)
{
	(void)req;
	return sf_buf_puts(&res->body, ud);
}

static int h_metrics(void *ud, const sf_srv_request *req, sf_srv_response *res)
{
	(void)ud;
	(void)req;
	res->content_type = sf_srv_metrics_content_type();
	return sf_buf_puts(&res->body, "# TYPE up gauge\nup 1\n");
}

static int h_fail(void *ud, const sf_srv_request *req, sf_srv_response *res)
{
	(void)ud;
	(void)req;
	sf_buf_puts(&res->body, "partial");
	return -EIO;
}

static int h_unready(void *ud, const sf_srv_request *req, sf_srv_response *res)
{
	(void)ud;
	(void)req;
	res->status = 503;
	res->content_type = "application/json";
	return sf_buf_puts(&res->body, "{\"ready\":false}");
}

static int h_bad_ct(void *ud, const sf_srv_request *req, sf_srv_response *res)
{
	(void)ud;
	(void)req;
	res->content_type = "text/plain\r\nX-Injected: 1";
	return 0;
}

static int h_bad_status(void *ud, const sf_srv_request *req, sf_srv_response *res)
{
	(void)ud;
	(void)req;
	res->status = 99;
	return 0;
}

/* Echoes path and query. */
static int h_echo(void *ud, const sf_srv_request *req, sf_srv_response *res)
{
	(void)ud;
	return sf_buf_printf(&res->body, "path=%.*s query=%.*s", (int)req->path_len, req->path,
	                     (int)req->query_len, req->query ? req->query : "(none)");
}

/* A body of *(size_t *)ud bytes. */
static int h_big(void *ud, const sf_srv_request *req, sf_srv_response *res)
{
	(void)req;
	size_t n = *(size_t *)ud;
	char chunk[4096];
	for (size_t i = 0; i < sizeof(chunk); i++)
		chunk[i] = (char)('a' + i % 26);
	for (size_t off = 0; off < n; off += sizeof(chunk)) {
		size_t m = n - off < sizeof(chunk) ? n - off : sizeof(chunk);
		int rc = sf_buf_append(&res->body, chunk, m);
		if (rc)
			return rc;
	}
	return 0;
}

static size_t big_size = 3u << 20;

typedef struct fixture {
	uv_loop_t loop;
	sf_srv *srv;
	int port;
} fixture;

static void start(fixture *f, sf_srv_opts *o)
{
	cr_assert_eq(uv_loop_init(&f->loop), 0);
	sf_srv_opts def = {0};
	if (!o)
		o = &def;
	char err[256] = "";
	if (!o->bind)
		o->bind = "127.0.0.1:0";
	o->name = "test";
	o->err = err;
	o->errlen = sizeof(err);
	cr_assert_eq(sf_srv_new(&f->loop, o, &f->srv), 0, "%s", err);
	cr_assert_not_null(f->srv);
	f->port = sf_srv_port(f->srv);
	cr_assert_gt(f->port, 0);
	cr_assert_eq(sf_srv_route(f->srv, "/healthz", h_text, "ok"), 0);
	cr_assert_eq(sf_srv_route(f->srv, "/metrics", h_metrics, NULL), 0);
	cr_assert_eq(sf_srv_route(f->srv, "/fail", h_fail, NULL), 0);
	cr_assert_eq(sf_srv_route(f->srv, "/readyz", h_unready, NULL), 0);
	cr_assert_eq(sf_srv_route(f->srv, "/badct", h_bad_ct, NULL), 0);
	cr_assert_eq(sf_srv_route(f->srv, "/badstatus", h_bad_status, NULL), 0);
	cr_assert_eq(sf_srv_route(f->srv, "/echo", h_echo, NULL), 0);
	cr_assert_eq(sf_srv_route(f->srv, "/big", h_big, &big_size), 0);
}

/* Closes the server and checks that everything on the loop is gone. */
static void stop(fixture *f)
{
	int closed = 0;
	sf_srv_close(f->srv, set_flag, &closed);
	cr_assert(run_until(&f->loop, flag_set, &closed, 2000));
	cr_assert_eq(closed, 1);
	uv_run(&f->loop, UV_RUN_NOWAIT);
	cr_assert_eq(uv_loop_close(&f->loop), 0);
}

static sf_srv_stats stats(const fixture *f)
{
	sf_srv_stats st;
	sf_srv_stats_get(f->srv, &st);
	return st;
}

typedef struct conns_cond {
	fixture *f;
	size_t want;
} conns_cond;

static int conns_are(void *ud)
{
	conns_cond *cc = ud;
	return stats(cc->f).conns == cc->want;
}

/* Sends req on a new connection and waits for the server to close it. */
static client *fetch(fixture *f, const char *req)
{
	client *c = client_str(&f->loop, f->port, req);
	cr_assert(run_until(&f->loop, client_is_done, c, 3000), "no end of response to [%s]", req);
	cr_assert_eq(c->done, 1, "read error %d", c->done);
	return c;
}

/* Fetches req and checks the status (and the framing of the response). */
static void expect_status(fixture *f, const char *req, int status)
{
	client *c = fetch(f, req);
	cr_assert_eq(resp_status(c), status, "request [%s] got [%s]", req,
	             c->in.data ? c->in.data : "");
	check_framing(c, strncmp(req, "HEAD ", 5) == 0);
	client_free(&f->loop, c);
}

#define GET(path) "GET " path " HTTP/1.1\r\nHost: x\r\n\r\n"

/* ---- parser ---- */

static int parse(const char *s, sf_srv_request *r)
{
	return sf_srv_parse_request(s, strlen(s), r);
}

Test(server, parse_complete, .init = tl_log_quiet)
{
	const char *s = "GET /healthz?verbose=1&x HTTP/1.1\r\n"
	                "Host: localhost:8081\r\n"
	                "User-Agent: kube-probe/1.30\r\n"
	                "Accept: */*\r\n"
	                "Content-Length:  0 \r\n"
	                "\r\n"
	                "trailing bytes are not looked at";
	sf_srv_request r;
	cr_assert_eq(parse(s, &r), SF_SRV_PARSE_COMPLETE);
	cr_assert_eq(r.method_len, 3);
	cr_assert_eq(memcmp(r.method, "GET", 3), 0);
	cr_assert_eq(r.target_len, strlen("/healthz?verbose=1&x"));
	cr_assert_eq(r.path_len, strlen("/healthz"));
	cr_assert_eq(memcmp(r.path, "/healthz", r.path_len), 0);
	cr_assert_eq(r.query_len, strlen("verbose=1&x"));
	cr_assert_eq(memcmp(r.query, "verbose=1&x", r.query_len), 0);
	cr_assert_eq(r.version, 11);
	cr_assert_eq(r.content_length, 0);
	cr_assert_eq(r.nfields, 4);
	cr_assert_eq(r.head_len, (size_t)(strstr(s, "trailing") - s));

	/* Bare LF line ends, HTTP/1.0 without Host, no query. */
	cr_assert_eq(parse("HEAD /metrics HTTP/1.0\nX: y\n\n", &r), SF_SRV_PARSE_COMPLETE);
	cr_assert_eq(r.version, 10);
	cr_assert_eq(r.query, NULL);
	cr_assert_eq(r.path_len, 8);
	cr_assert_eq(r.head_len, strlen("HEAD /metrics HTTP/1.0\nX: y\n\n"));
	/* HTTP/1.9 is read as 1.1. */
	cr_assert_eq(parse("GET / HTTP/1.9\r\nHost: a\r\n\r\n", &r), SF_SRV_PARSE_COMPLETE);
	cr_assert_eq(r.version, 11);
}

Test(server, parse_target_forms, .init = tl_log_quiet)
{
	sf_srv_request r;
	cr_assert_eq(
	    parse("GET http://example.com:8080/readyz?a=b HTTP/1.1\r\nHost: h\r\n\r\n", &r),
	    SF_SRV_PARSE_COMPLETE);
	cr_assert_eq(r.path_len, 7);
	cr_assert_eq(memcmp(r.path, "/readyz", 7), 0);
	cr_assert_eq(r.query_len, 3);
	cr_assert_eq(parse("GET HTTPS://h HTTP/1.1\r\nHost: h\r\n\r\n", &r), SF_SRV_PARSE_COMPLETE);
	cr_assert_eq(r.path_len, 1);
	cr_assert_eq(r.path[0], '/');
	cr_assert_eq(parse("GET http://h?q HTTP/1.1\r\nHost: h\r\n\r\n", &r),
	             SF_SRV_PARSE_COMPLETE);
	cr_assert_eq(r.path_len, 1);
	cr_assert_eq(r.query_len, 1);
	cr_assert_eq(parse("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", &r), SF_SRV_PARSE_COMPLETE);
	cr_assert_eq(r.path_len, 1);
	cr_assert_eq(r.path[0], '*');
	cr_assert_eq(parse("GET /? HTTP/1.1\r\nHost: h\r\n\r\n", &r), SF_SRV_PARSE_COMPLETE);
	cr_assert_not_null(r.query);
	cr_assert_eq(r.query_len, 0);
	cr_assert_eq(parse("GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n", &r), -EBADMSG);
	cr_assert_eq(parse("GET healthz HTTP/1.1\r\nHost: h\r\n\r\n", &r), -EBADMSG);
	cr_assert_eq(parse("CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n", &r), -EBADMSG);
}

/* Every proper prefix of a valid head is incomplete, never an error. */
Test(server, parse_prefixes_incomplete, .init = tl_log_quiet)
{
	const char *reqs[] = {
	    "GET /healthz HTTP/1.1\r\nHost: a\r\nUser-Agent: x y\t\r\n\r\n",
	    "HEAD / HTTP/1.0\n\n",
	    "POST /x?y HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n",
	    "GET http://a/b HTTP/1.1\r\nHost:a\r\nX-Empty:\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		size_t n = strlen(reqs[i]);
		sf_srv_request r;
		for (size_t k = 0; k < n; k++)
			cr_assert_eq(sf_srv_parse_request(reqs[i], k, &r), SF_SRV_PARSE_INCOMPLETE,
			             "request %zu, prefix %zu", i, k);
		cr_assert_eq(sf_srv_parse_request(reqs[i], n, &r), SF_SRV_PARSE_COMPLETE);
		cr_assert_eq(r.head_len, n);
	}
}

Test(server, parse_errors, .init = tl_log_quiet)
{
	static const struct {
		const char *in;
		int rc;
	} cases[] = {
	    /* request line */
	    {"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", -EBADMSG}, /* TLS, no line end */
	    {"hello world\r\n\r\n", -EBADMSG},
	    {"GET\r\n\r\n", -EBADMSG},
	    {" GET / HTTP/1.1\r\nHost: a\r\n\r\n", -EBADMSG},
	    {"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", -EBADMSG},
	    {"GET / HTTP/1.1 \r\nHost: a\r\n\r\n", -EBADMSG},
	    {"GET /a\x01 HTTP/1.1\r\n", -EBADMSG},
	    {"G(T / HTTP/1.1\r\n", -EBADMSG},
	    {"GET / http/1.1\r\n", -EBADMSG},
	    {"GET / HTTP/1.10\r\n", -EBADMSG},
	    {"GET / HTTP/1.", SF_SRV_PARSE_INCOMPLETE},
	    {"GET / HTTP/1\r\n\r\n", -EBADMSG},
	    {"GET / HTTP/1.1\r\r\nHost: a\r\n\r\n", -EBADMSG},
	    {"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", -EBADMSG},
	    {"GET / HTTP/2.0\r\n\r\n", -EPROTONOSUPPORT},
	    {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", -EPROTONOSUPPORT},
	    {"GET / HTTP/0.9\r\n\r\n", -EPROTONOSUPPORT},
	    /* fields */
	    {"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", -EBADMSG},
	    {"GET / HTTP/1.1\r\n Host: a\r\n\r\n", -EBADMSG},
	    {"GET / HTTP/1.1\r\nHost : a\r\n\r\n", -EBADMSG},
	    {"GET / HTTP/1.1\r\nHost a\r\n\r\n", -EBADMSG},
	    {"GET / HTTP/1.1\r\n: a\r\nHost: a\r\n\r\n", -EBADMSG},
	    {"GET / HTTP/1.1\r\nHost: a\x01\r\n\r\n", -EBADMSG},
	    {"GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", -EBADMSG},
	    {"GET / HTTP/1.1\r\nX: \x7f\r\n", -EBADMSG},
	    {"GET / HTTP/1.1\r\n\r\n", -EBADMSG},                       /* no Host */
	    {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", -EBADMSG}, /* two */
	    {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n", -EBADMSG},
	    {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", -EBADMSG},
	    {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 1\r\n\r\n", -EBADMSG},
	    {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", -EBADMSG},
	    {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", -EBADMSG},
	    {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
	     -EBADMSG},
	    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", -ENOTSUP},
	    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: "
	     "3\r\n\r\n",
	     -EBADMSG},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sf_srv_request r;
		int want = cases[i].rc;
		int rc = parse(cases[i].in, &r);
		cr_assert_eq(rc, want, "case %zu: got %d want %d", i, rc, want);
	}
	/* A NUL is refused wherever it is. */
	sf_srv_request r;
	cr_assert_eq(sf_srv_parse_request("GET /\0 HTTP/1.1\r\n", 17, &r), -EBADMSG);
	cr_assert_eq(sf_srv_parse_request("GET / HTTP/1.1\r\nX: \0\r\n", 22, &r), -EBADMSG);
	/* Same Content-Length twice is fine. */
	cr_assert_eq(
	    parse("GET / HTTP/1.1\r\nHost: a\r\ncontent-length: 7\r\nContent-Length: 7\r\n\r\n",
	          &r),
	    SF_SRV_PARSE_COMPLETE);
	cr_assert_eq(r.content_length, 7);
	cr_assert_eq(
	    parse("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551615\r\n\r\n", &r),
	    SF_SRV_PARSE_COMPLETE);
	cr_assert_eq(r.content_length, UINT64_MAX);
}

Test(server, parse_field_limit, .init = tl_log_quiet)
{
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_assert_eq(sf_buf_puts(&b, "GET / HTTP/1.1\r\nHost: a\r\n"), 0);
	for (int i = 1; i < SF_SRV_MAX_FIELDS; i++)
		cr_assert_eq(sf_buf_printf(&b, "X-%d: v\r\n", i), 0);
	sf_srv_request r;
	cr_assert_eq(sf_srv_parse_request(b.data, b.len, &r), SF_SRV_PARSE_INCOMPLETE);
	cr_assert_eq(sf_buf_puts(&b, "\r\n"), 0);
	cr_assert_eq(sf_srv_parse_request(b.data, b.len, &r), SF_SRV_PARSE_COMPLETE);
	cr_assert_eq(r.nfields, SF_SRV_MAX_FIELDS);
	b.len -= 2;
	/* One more: refused as soon as its first byte is there. */
	cr_assert_eq(sf_buf_puts(&b, "Y"), 0);
	cr_assert_eq(sf_srv_parse_request(b.data, b.len, &r), -EMSGSIZE);
	sf_buf_free(&b);
}

/* ---- bind addresses ---- */

static int port_of(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

static const char *host_of(const struct sockaddr_storage *ss, char *buf, size_t n)
{
	if (ss->ss_family == AF_INET6)
		uv_ip6_name((const struct sockaddr_in6 *)ss, buf, n);
	else
		uv_ip4_name((const struct sockaddr_in *)ss, buf, n);
	return buf;
}

Test(server, parse_bind, .init = tl_log_quiet)
{
	static const struct {
		const char *in;
		int family;
		const char *host;
		int port;
	} good[] = {
	    {":8081", AF_INET6, "::", 8081},         {"127.0.0.1:8080", AF_INET, "127.0.0.1", 8080},
	    {"0.0.0.0:80", AF_INET, "0.0.0.0", 80},  {"[::1]:9090", AF_INET6, "::1", 9090},
	    {"[::]:0", AF_INET6, "::", 0},           {"localhost:8080", AF_INET, "127.0.0.1", 8080},
	    {"127.0.0.1:", AF_INET, "127.0.0.1", 0}, {":65535", AF_INET6, "::", 65535},
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct sockaddr_storage ss;
		char err[128] = "", host[64];
		cr_assert_eq(sf_srv_parse_bind(good[i].in, &ss, err, sizeof(err)), 0, "%s: %s",
		             good[i].in, err);
		cr_assert_eq(ss.ss_family, good[i].family, "%s", good[i].in);
		cr_assert_str_eq(host_of(&ss, host, sizeof(host)), good[i].host, "%s", good[i].in);
		cr_assert_eq(port_of(&ss), good[i].port, "%s", good[i].in);
	}
	struct sockaddr_storage ss;
	cr_assert_eq(sf_srv_parse_bind(NULL, &ss, NULL, 0), 1);
	cr_assert_eq(sf_srv_parse_bind("", &ss, NULL, 0), 1);
	cr_assert_eq(sf_srv_parse_bind("0", &ss, NULL, 0), 1);

	static const struct {
		const char *in;
		const char *msg;
	} bad[] = {
	    {"8080", "missing port"},
	    {"127.0.0.1", "missing port"},
	    {"::1:80", "too many colons"},
	    {"[::1]", "missing port"},
	    {"[::1:80", "missing ']'"},
	    {"[127.0.0.1]:80", "not an IPv6 address"},
	    {":65536", "port must be a number"},
	    {":-1", "port must be a number"},
	    {":http", "port must be a number"},
	    {":123456", "port must be a number"},
	    {"example.com:80", "must be an IP address"},
	    {"1.2.3:80", "must be an IP address"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[128] = "";
		cr_assert_eq(sf_srv_parse_bind(bad[i].in, &ss, err, sizeof(err)), -EINVAL, "%s",
		             bad[i].in);
		cr_assert(strstr(err, bad[i].msg), "%s: %s", bad[i].in, err);
		cr_assert(strstr(err, bad[i].in), "%s: %s", bad[i].in, err);
	}
}

Test(server, disabled, .init = tl_log_quiet)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	const char *binds[] = {NULL, "", "0"};
	for (size_t i = 0; i < 3; i++) {
		sf_srv_opts o = {.bind = binds[i]};
		sf_srv *srv = (sf_srv *)&loop; /* must be overwritten */
		cr_assert_eq(sf_srv_new(&loop, &o, &srv), 0);
		cr_assert_null(srv);
		cr_assert_eq(sf_srv_port(srv), 0);
		int closed = 0;
		sf_srv_close(srv, set_flag, &closed);
		cr_assert_eq(closed, 1);
	}
	cr_assert_eq(uv_loop_close(&loop), 0);
}

Test(server, bind_errors, .init = tl_log_quiet)
{
	fixture f;
	start(&f, NULL);
	/* Failures on a loop of their own: nothing may be left on it, so it
	 * closes without being run. */
	uv_loop_t other;
	cr_assert_eq(uv_loop_init(&other), 0);
	char bind[64], err[256] = "";
	snprintf(bind, sizeof(bind), "127.0.0.1:%d", f.port);
	sf_srv_opts o = {.bind = bind, .err = err, .errlen = sizeof(err)};
	sf_srv *srv = NULL;
	cr_assert_eq(sf_srv_new(&other, &o, &srv), -EADDRINUSE);
	cr_assert_null(srv);
	cr_assert(strstr(err, "address already in use"), "%s", err);
	cr_assert(strstr(err, bind), "%s", err);

	o.bind = "127.0.0.1";
	cr_assert_eq(sf_srv_new(&other, &o, &srv), -EINVAL);
	cr_assert(strstr(err, "missing port"), "%s", err);
	o.bind = "metrics.example:8080";
	cr_assert_eq(sf_srv_new(&other, &o, &srv), -EINVAL);
	cr_assert(strstr(err, "IP address"), "%s", err);
	o.bind = "127.0.0.1:0";
	o.max_head = 10;
	cr_assert_eq(sf_srv_new(&other, &o, &srv), -EINVAL);
	cr_assert(strstr(err, "max_head"), "%s", err);
	cr_assert_null(srv);
	cr_assert_eq(uv_loop_close(&other), 0);
	stop(&f);
}

Test(server, routes_and_content_type, .init = tl_log_quiet)
{
	fixture f;
	start(&f, NULL);
	cr_assert_eq(sf_srv_route(f.srv, "/healthz", h_text, "again"), -EEXIST);
	cr_assert_eq(sf_srv_route(f.srv, "healthz", h_text, "x"), -EINVAL);
	cr_assert_eq(sf_srv_route(f.srv, "", h_text, "x"), -EINVAL);
	cr_assert_eq(sf_srv_route(f.srv, "/x", NULL, NULL), -EINVAL);
	cr_assert_str_eq(sf_srv_metrics_content_type(), "text/plain; version=0.0.4; charset=utf-8");
	stop(&f);
}

/* ---- serving ---- */

Test(server, get_healthz, .init = tl_log_quiet)
{
	fixture f;
	start(&f, NULL);
	client *c = fetch(&f, GET("/healthz"));
	cr_assert_str_eq(c->in.data, "HTTP/1.1 200 OK\r\n"
	                             "Content-Type: text/plain; charset=utf-8\r\n"
	                             "Content-Length: 2\r\n"
	                             "Connection: close\r\n"
	                             "\r\n"
	                             "ok");
	client_free(&f.loop, c);

	c = fetch(&f, GET("/metrics"));
	char v[128];
	cr_assert_eq(resp_status(c), 200);
	cr_assert_str_eq(resp_header(c, "Content-Type", v, sizeof(v)),
	                 "text/plain; version=0.0.4; charset=utf-8");
	size_t blen;
	const char *body = resp_body(c, &blen);
	cr_assert_eq(blen, strlen("# TYPE up gauge\nup 1\n"));
	cr_assert_eq(memcmp(body, "# TYPE up gauge\nup 1\n", blen), 0);
	check_framing(c, 0);
	client_free(&f.loop, c);

	sf_srv_stats st = stats(&f);
	cr_assert_eq(st.responses, 2);
	cr_assert_eq(st.accepted, 2);
	cr_assert_eq(st.conns, 0);
	stop(&f);
}

Test(server, head_has_length_no_body, .init = tl_log_quiet)
{
	fixture f;
	start(&f, NULL);
	client *c = fetch(&f, "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
	cr_assert_str_eq(c->in.data, "HTTP/1.1 200 OK\r\n"
	                             "Content-Type: text/plain; charset=utf-8\r\n"
	                             "Content-Length: 2\r\n"
	                             "Connection: close\r\n"
	                             "\r\n");
	client_free(&f.loop, c);
	expect_status(&f, "HEAD /nope HTTP/1.1\r\nHost: x\r\n\r\n", 404);
	stop(&f);
}

Test(server, not_found_and_method_not_allowed, .init = tl_log_quiet)
{
	fixture f;
	start(&f, NULL);
	expect_status(&f, GET("/nope"), 404);
	expect_status(&f, GET("/healthz/"), 404);
	expect_status(&f, GET("/HEALTHZ"), 404);
	expect_status(&f, "DELETE /nope HTTP/1.1\r\nHost: x\r\n\r\n", 404);

	client *c = fetch(&f, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\na=1");
	cr_assert_eq(resp_status(c), 405);
	char v[64];
	cr_assert_str_eq(resp_header(c, "Allow", v, sizeof(v)), "GET, HEAD");
	check_framing(c, 0);
	client_free(&f.loop, c);
	expect_status(&f, "PUT /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 405);
	expect_status(&f, "get /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 405); /* case-sensitive */
	stop(&f);
}

Test(server, query_and_absolute_form, .init = tl_log_quiet)
{
	fixture f;
	start(&f, NULL);
	client *c = fetch(&f, GET("/echo?verbose=1"));
	size_t blen;
	const char *body = resp_body(c, &blen);
	cr_assert_eq(resp_status(c), 200);
	cr_assert_eq(strncmp(body, "path=/echo query=verbose=1", blen), 0, "%.*s", (int)blen, body);
	client_free(&f.loop, c);
	c = fetch(&f, "GET http://x:1/echo HTTP/1.1\r\nHost: x\r\n\r\n");
	body = resp_body(c, &blen);
	cr_assert_eq(strncmp(body, "path=/echo query=(none)", blen), 0, "%.*s", (int)blen, body);
	client_free(&f.loop, c);
	stop(&f);
}

Test(server, handler_results, .init = tl_log_quiet)
{
	fixture f;
	start(&f, NULL);
	client *c = fetch(&f, GET("/fail"));
	cr_assert_eq(resp_status(c), 500);
	cr_assert_null(strstr(c->in.data, "partial"));
	check_framing(c, 0);
	client_free(&f.loop, c);

	c = fetch(&f, GET("/readyz"));
	char v[64];
	cr_assert_eq(resp_status(c), 503);
	cr_assert(strstr(c->in.data, "HTTP/1.1 503 Service Unavailable\r\n") == c->in.data);
	cr_assert_str_eq(resp_header(c, "Content-Type", v, sizeof(v)), "application/json");
	size_t blen;
	const char *body = resp_body(c, &blen);
	cr_assert_eq(strncmp(body, "{\"ready\":false}", blen), 0);
	check_framing(c, 0);
	client_free(&f.loop, c);

	c = fetch(&f, GET("/badct"));
	cr_assert_eq(resp_status(c), 500);
	cr_assert_null(strstr(c->in.data, "X-Injected"));
	client_free(&f.loop, c);
	expect_status(&f, GET("/badstatus"), 500);
	stop(&f);
}

Test(server, large_response, .init = tl_log_quiet)
{
	fixture f;
	start(&f, NULL);
	client *c = fetch(&f, GET("/big"));
	cr_assert_eq(resp_status(c), 200);
	check_framing(c, 0);
	size_t blen;
	const char *body = resp_body(c, &blen);
	cr_assert_eq(blen, big_size);
	for (size_t i = 0; i < blen; i += 4099)
		cr_assert_eq(body[i], (char)('a' + (i % 4096) % 26), "byte %zu", i);
	client_free(&f.loop, c);
	stop(&f);
}

/* ---- abusive and broken requests ---- */

Test(server, oversized_headers, .init = tl_log_quiet)
{
	fixture f;
	start(&f, NULL);
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_assert_eq(sf_buf_puts(&b, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: "), 0);
	for (int i = 0; i < 9000; i++)
		cr_assert_eq(sf_buf_putc(&b, 'a'), 0);
	cr_assert_eq(sf_buf_puts(&b, "\r\n\r\n"), 0);
	expect_status(&f, b.data, 431);

	/* A request line longer than the cap without any line end. */
	sf_buf_reset(&b);
	cr_assert_eq(sf_buf_puts(&b, "GET /"), 0);
	for (int i = 0; i < 8200; i++)
		cr_assert_eq(sf_buf_putc(&b, 'a'), 0);
	expect_status(&f, b.data, 431);

	/* Too many header fields, each one short. */
	sf_buf_reset(&b);
	cr_assert_eq(sf_buf_puts(&b, "GET /healthz HTTP/1.1\r\nHost: x\r\n"), 0);
	for (int i = 0; i < SF_SRV_MAX_FIELDS + 5; i++)
		cr_assert_eq(sf_buf_printf(&b, "X%d: 1\r\n", i), 0);
	cr_assert_eq(sf_buf_puts(&b, "\r\n"), 0);
	expect_status(&f, b.data, 431);
	sf_buf_free(&b);

	/* Just under the cap is served. */
	sf_buf_init(&b, 0);
	cr_assert_eq(sf_buf_puts(&b, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: "), 0);
	while (b.len < 8192 - 4)
		cr_assert_eq(sf_buf_putc(&b, 'a'), 0);
	cr_assert_eq(sf_buf_puts(&b, "\r\n\r\n"), 0);
	cr_assert_eq(b.len, 8192);
	expect_status(&f, b.data, 200);
	sf_buf_free(&b);
	stop(&f);
}

Test(server, garbage_and_unsupported, .init = tl_log_quiet)
{
	fixture f;
	start(&f, NULL);
	expect_status(&f, "hello world\r\n\r\n", 400);
	/* A TLS ClientHello: refused on the first read, not after the timeout. */
	client *c = client_new(&f.loop, f.port, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
	cr_assert(run_until(&f.loop, client_is_done, c, 3000));
	cr_assert_eq(resp_status(c), 400);
	cr_assert_lt(c->done_ns - c->start_ns, 2000 * MS);
	client_free(&f.loop, c);
	expect_status(&f, "GET /healthz HTTP/1.1\r\n\r\n", 400); /* no Host */
	expect_status(&f, "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", 505);
	expect_status(&f, "POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
	              501);
	stop(&f);
}

Test(server, request_body_discarded_or_refused, .init = tl_log_quiet)
{
	fixture f;
	sf_srv_opts o = {.max_body = 16};
	start(&f, &o);
	/* The response waits for the whole body. */
	const char *head = "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n01234";
	client *c = client_str(&f.loop, f.port, head);
	cr_assert_not(run_until(&f.loop, client_is_done, c, 150));
	cr_assert_eq(c->in.len, 0);
	client_send(c, "56789", 5);
	cr_assert(run_until(&f.loop, client_is_done, c, 3000));
	cr_assert_eq(resp_status(c), 200);
	check_framing(c, 0);
	client_free(&f.loop, c);

	/* Over max_body: 413. The server reads and drops the rest of the body
	 * after answering instead of closing on it (which would reset the
	 * connection and fail the client's upload). */
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_assert_eq(
	    sf_buf_puts(&b, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 4194304\r\n\r\n"),
	    0);
	while (b.len < 4194304)
		cr_assert_eq(sf_buf_puts(&b, "zzzzzzzzzzzzzzzz"), 0);
	c = client_new(&f.loop, f.port, b.data, b.len);
	cr_assert(run_until(&f.loop, client_is_done, c, 3000));
	cr_assert_eq(c->done, 1, "read error %d", c->done);
	cr_assert_eq(resp_status(c), 413);
	check_framing(c, 0);
	cr_assert(run_until(&f.loop, client_wrote_all, c, 3000));
	cr_assert_eq(c->write_status, 0, "upload failed: %s", uv_strerror(c->write_status));
	client_free(&f.loop, c);
	sf_buf_free(&b);

	/* Pipelined requests: one response, then the connection ends. */
	c = fetch(&f, GET("/healthz") GET("/metrics"));
	cr_assert_eq(resp_status(c), 200);
	check_framing(c, 0);
	cr_assert_null(strstr(c->in.data + 1, "HTTP/1.1"));
	client_free(&f.loop, c);
	stop(&f);
}

static void client_shutdown_done(uv_shutdown_t *req, int status)
{
	(void)status;
	free(req);
}

Test(server, half_closed_mid_request, .init = tl_log_quiet)
{
	fixture f;
	start(&f, NULL);
	client *c = client_str(&f.loop, f.port, "GET /heal");
	cr_assert(run_until(&f.loop, client_is_connected, c, 2000));
	uv_shutdown_t *sreq = malloc(sizeof(*sreq));
	cr_assert_eq(uv_shutdown(sreq, (uv_stream_t *)&c->tcp, client_shutdown_done), 0);
	cr_assert(run_until(&f.loop, client_is_done, c, 3000));
	cr_assert_eq(resp_status(c), 400);
	client_free(&f.loop, c);
	stop(&f);
}

/* ---- timeouts and limits ---- */

Test(server, idle_client_times_out_others_served, .init = tl_log_quiet)
{
	fixture f;
	sf_srv_opts o = {.timeout_ms = 200};
	start(&f, &o);
	client *idle = client_new(&f.loop, f.port, NULL, 0);
	cr_assert(run_until(&f.loop, client_is_connected, idle, 2000));
	cr_assert_eq(idle->connected, 1);

	/* Served while the idle one holds its connection. */
	client *c = fetch(&f, GET("/healthz"));
	cr_assert_eq(resp_status(c), 200);
	client_free(&f.loop, c);
	conns_cond cc = {&f, 1};
	cr_assert(run_until(&f.loop, conns_are, &cc, 2000));
	cr_assert_eq(idle->done, 0);

	cr_assert(run_until(&f.loop, client_is_done, idle, 3000));
	uint64_t took = idle->done_ns - idle->start_ns;
	cr_assert_geq(took, 180 * MS, "closed after %llu ms", (unsigned long long)(took / MS));
	cr_assert_lt(took, 2000 * MS);
	cr_assert_eq(idle->in.len, 0, "a timed-out client gets no response");
	sf_srv_stats st = stats(&f);
	cr_assert_eq(st.timeouts, 1);
	cr_assert_eq(st.responses, 1);
	client_free(&f.loop, idle);
	stop(&f);
}

typedef struct trickle {
	client *c;
	uv_timer_t timer;
	int sent;
} trickle;

static void trickle_tick(uv_timer_t *t)
{
	trickle *tr = t->data;
	if (tr->c->done) {
		uv_timer_stop(t);
		return;
	}
	client_send(tr->c, "a", 1);
	tr->sent++;
}

/* A client sending its headers a byte at a time is still closed at the
 * deadline: data does not push it back. */
Test(server, slowloris_deadline, .init = tl_log_quiet)
{
	fixture f;
	sf_srv_opts o = {.timeout_ms = 300};
	start(&f, &o);
	trickle tr = {0};
	tr.c = client_str(&f.loop, f.port, "GET /healthz HTTP/1.1\r\nX-Slow: ");
	cr_assert(run_until(&f.loop, client_is_connected, tr.c, 2000));
	cr_assert_eq(uv_timer_init(&f.loop, &tr.timer), 0);
	tr.timer.data = &tr;
	cr_assert_eq(uv_timer_start(&tr.timer, trickle_tick, 20, 20), 0);

	cr_assert(run_until(&f.loop, client_is_done, tr.c, 3000));
	uint64_t took = tr.c->done_ns - tr.c->start_ns;
	cr_assert_geq(took, 280 * MS, "closed after %llu ms", (unsigned long long)(took / MS));
	cr_assert_lt(took, 2000 * MS);
	cr_assert_geq(tr.sent, 5, "the client kept sending");
	cr_assert_eq(tr.c->in.len, 0);
	cr_assert_eq(stats(&f).timeouts, 1);
	uv_timer_stop(&tr.timer);
	uv_close((uv_handle_t *)&tr.timer, NULL);
	client_free(&f.loop, tr.c);
	stop(&f);
}

Test(server, max_connections, .init = tl_log_quiet)
{
	fixture f;
	sf_srv_opts o = {.max_conns = 3, .timeout_ms = 5000};
	start(&f, &o);
	client *idle[3];
	for (int i = 0; i < 3; i++)
		idle[i] = client_new(&f.loop, f.port, NULL, 0);
	conns_cond cc = {&f, 3};
	cr_assert(run_until(&f.loop, conns_are, &cc, 2000));

	/* The fourth is accepted and closed at once, without a response. */
	client *extra = client_str(&f.loop, f.port, GET("/healthz"));
	cr_assert(run_until(&f.loop, client_is_done, extra, 2000));
	cr_assert_lt(extra->done_ns - extra->start_ns, 2000 * MS);
	cr_assert_eq(extra->in.len, 0);
	sf_srv_stats st = stats(&f);
	cr_assert_eq(st.rejected, 1);
	cr_assert_eq(st.conns, 3);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(idle[i]->done, 0, "idle client %d was closed", i);
	client_free(&f.loop, extra);

	/* A slot freed is a slot to serve. */
	client_free(&f.loop, idle[0]);
	cc.want = 2;
	cr_assert(run_until(&f.loop, conns_are, &cc, 2000));
	expect_status(&f, GET("/healthz"), 200);
	cr_assert_eq(stats(&f).rejected, 1);

	client_free(&f.loop, idle[1]);
	client_free(&f.loop, idle[2]);
	stop(&f);
}

typedef struct stat_cond {
	fixture *f;
	uint64_t timeouts;
} stat_cond;

static int timeouts_reached(void *ud)
{
	stat_cond *sc = ud;
	sf_srv_stats st = stats(sc->f);
	return st.timeouts >= sc->timeouts && st.conns == 0;
}

/* A client that does not read a response bigger than the socket buffers
 * is cut off at the write deadline. */
Test(server, write_timeout, .init = tl_log_quiet)
{
	fixture f;
	sf_srv_opts o = {.timeout_ms = 300};
	start(&f, &o);
	big_size = 48u << 20;
	struct sockaddr_in sin;
	uv_ip4_addr("127.0.0.1", f.port, &sin);
	const char *req = GET("/big");
	client *c = client_new_at(&f.loop, (const struct sockaddr *)&sin, req, strlen(req), 1);
	stat_cond sc = {&f, 1};
	cr_assert(run_until(&f.loop, timeouts_reached, &sc, 5000));
	cr_assert_eq(stats(&f).responses, 0);
	/* Meanwhile and afterwards others are served. */
	expect_status(&f, GET("/healthz"), 200);
	client_free(&f.loop, c);
	stop(&f);
}

/* ---- closing ---- */

Test(server, close_with_open_connections, .init = tl_log_quiet)
{
	fixture f;
	start(&f, NULL);
	client *idle = client_new(&f.loop, f.port, NULL, 0);
	client *partial = client_str(&f.loop, f.port, "GET /healthz HTTP/1.1\r\nHo");
	big_size = 48u << 20;
	struct sockaddr_in sin;
	uv_ip4_addr("127.0.0.1", f.port, &sin);
	const char *req = GET("/big");
	client *writing =
	    client_new_at(&f.loop, (const struct sockaddr *)&sin, req, strlen(req), 1);
	conns_cond cc = {&f, 3};
	cr_assert(run_until(&f.loop, conns_are, &cc, 2000));
	/* Let the big response start. */
	cr_assert(run_until(&f.loop, client_is_connected, writing, 2000));
	uv_run(&f.loop, UV_RUN_NOWAIT);

	int closed = 0;
	sf_srv_close(f.srv, set_flag, &closed);
	cr_assert(run_until(&f.loop, flag_set, &closed, 2000));
	cr_assert_eq(closed, 1);
	cr_assert(run_until(&f.loop, client_is_done, idle, 2000));
	cr_assert(run_until(&f.loop, client_is_done, partial, 2000));
	cr_assert_eq(idle->in.len, 0);
	cr_assert_eq(partial->in.len, 0);

	/* Nothing listens any more. */
	client *late = client_str(&f.loop, f.port, GET("/healthz"));
	cr_assert(run_until(&f.loop, client_is_connected, late, 2000));
	cr_assert_lt(late->connected, 0);

	client_free(&f.loop, idle);
	client_free(&f.loop, partial);
	client_free(&f.loop, writing);
	client_free(&f.loop, late);
	uv_run(&f.loop, UV_RUN_NOWAIT);
	cr_assert_eq(uv_loop_close(&f.loop), 0);
}

typedef struct quitter {
	sf_srv *srv;
	int closed;
} quitter;

static int h_quit(void *ud, const sf_srv_request *req, sf_srv_response *res)
{
	quitter *q = ud;
	(void)req;
	sf_srv_close(q->srv, set_flag, &q->closed);
	return sf_buf_puts(&res->body, "bye");
}

/* A handler may close the server; its own response is then dropped. */
Test(server, handler_closes_server, .init = tl_log_quiet)
{
	fixture f;
	start(&f, NULL);
	quitter q = {f.srv, 0};
	cr_assert_eq(sf_srv_route(f.srv, "/quit", h_quit, &q), 0);
	client *c = client_str(&f.loop, f.port, GET("/quit"));
	cr_assert(run_until(&f.loop, flag_set, &q.closed, 3000));
	cr_assert(run_until(&f.loop, client_is_done, c, 3000));
	cr_assert_eq(c->in.len, 0);
	client_free(&f.loop, c);
	uv_run(&f.loop, UV_RUN_NOWAIT);
	cr_assert_eq(uv_loop_close(&f.loop), 0);
}

/* ---- IPv6 ---- */

Test(server, ipv6_loopback, .init = tl_log_quiet)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	char err[256] = "";
	sf_srv_opts o = {.bind = "[::1]:0", .err = err, .errlen = sizeof(err)};
	sf_srv *srv = NULL;
	int rc = sf_srv_new(&loop, &o, &srv);
	if (rc == -EADDRNOTAVAIL || rc == -EAFNOSUPPORT) {
		cr_assert_eq(uv_loop_close(&loop), 0);
		cr_skip_test("no IPv6 loopback: %s", err);
	}
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_eq(sf_srv_route(srv, "/healthz", h_text, "ok6"), 0);
	struct sockaddr_in6 sin6;
	uv_ip6_addr("::1", sf_srv_port(srv), &sin6);
	const char *req = GET("/healthz");
	client *c = client_new_at(&loop, (const struct sockaddr *)&sin6, req, strlen(req), 0);
	cr_assert(run_until(&loop, client_is_done, c, 3000));
	cr_assert_eq(resp_status(c), 200);
	size_t blen;
	const char *body = resp_body(c, &blen);
	cr_assert_eq(blen, 3);
	cr_assert_eq(memcmp(body, "ok6", 3), 0);
	client_free(&loop, c);
	int closed = 0;
	sf_srv_close(srv, set_flag, &closed);
	cr_assert(run_until(&loop, flag_set, &closed, 2000));
	cr_assert_eq(uv_loop_close(&loop), 0);
}

/* ---- a real HTTP client ---- */

typedef struct curl_job {
	int port;
	atomic_int done;
	/* results */
	CURLcode get_rc, head_rc, metrics_rc, missing_rc;
	long get_status, head_status, metrics_status, missing_status;
	curl_off_t head_length;
	char get_body[64];
	size_t get_len;
	char metrics_type[128];
} curl_job;

typedef struct sink {
	char *buf;
	size_t cap, len;
} sink;

static size_t curl_write(char *p, size_t size, size_t n, void *ud)
{
	sink *s = ud;
	size_t m = size * n;
	for (size_t i = 0; i < m && s->len + 1 < s->cap; i++)
		s->buf[s->len++] = p[i];
	s->buf[s->len] = '\0';
	return m;
}

static CURLcode curl_one(int port, const char *path, int head, long *status, sink *body,
                         char *ctype, size_t ctn, curl_off_t *clen)
{
	CURL *h = curl_easy_init();
	if (!h)
		return CURLE_FAILED_INIT;
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_NOBODY, head ? 1L : 0L);
	char dummy[8];
	sink none = {dummy, sizeof(dummy), 0};
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curl_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, body ? body : &none);
	CURLcode rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	if (ctype) {
		char *ct = NULL;
		curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct);
		snprintf(ctype, ctn, "%s", ct ? ct : "");
	}
	if (clen)
		curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, clen);
	curl_easy_cleanup(h);
	return rc;
}

static void *curl_thread(void *ud)
{
	curl_job *j = ud;
	sink body = {j->get_body, sizeof(j->get_body), 0};
	j->get_rc = curl_one(j->port, "/healthz", 0, &j->get_status, &body, NULL, 0, NULL);
	j->get_len = body.len;
	j->head_rc =
	    curl_one(j->port, "/healthz", 1, &j->head_status, NULL, NULL, 0, &j->head_length);
	j->metrics_rc = curl_one(j->port, "/metrics", 0, &j->metrics_status, NULL, j->metrics_type,
	                         sizeof(j->metrics_type), NULL);
	j->missing_rc = curl_one(j->port, "/missing", 0, &j->missing_status, NULL, NULL, 0, NULL);
	atomic_store(&j->done, 1);
	return NULL;
}

static int job_done(void *ud)
{
	return atomic_load(&((curl_job *)ud)->done) != 0;
}

Test(server, libcurl_client, .init = tl_log_quiet)
{
	cr_assert_eq(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
	fixture f;
	start(&f, NULL);
	curl_job j = {.port = f.port};
	atomic_init(&j.done, 0);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, curl_thread, &j), 0);
	int ok = run_until(&f.loop, job_done, &j, 10000);
	pthread_join(th, NULL);
	cr_assert(ok);
	cr_assert_eq(j.get_rc, CURLE_OK, "%s", curl_easy_strerror(j.get_rc));
	cr_assert_eq(j.get_status, 200);
	cr_assert_eq(j.get_len, 2);
	cr_assert_str_eq(j.get_body, "ok");
	cr_assert_eq(j.head_rc, CURLE_OK, "%s", curl_easy_strerror(j.head_rc));
	cr_assert_eq(j.head_status, 200);
	cr_assert_eq(j.head_length, 2);
	cr_assert_eq(j.metrics_rc, CURLE_OK);
	cr_assert_eq(j.metrics_status, 200);
	cr_assert_str_eq(j.metrics_type, "text/plain; version=0.0.4; charset=utf-8");
	cr_assert_eq(j.missing_rc, CURLE_OK);
	cr_assert_eq(j.missing_status, 404);
	cr_assert_eq(stats(&f).responses, 4);
	stop(&f);
	curl_global_cleanup();
}
