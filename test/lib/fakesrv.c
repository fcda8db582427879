/*
 * fakesrv.c - a scripted HTTP/1.1 server for unit tests (see fakesrv.h).
 */
#include "fakesrv.h"

#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REQ 64

typedef struct conn {
	uv_tcp_t tcp;
	fakesrv *s;
	char buf[16384];
	size_t len;
	int answered;
	struct conn *next;
} conn;

struct fakesrv {
	uv_tcp_t listener;
	const fake_resp *script;
	int n;
	int next;
	int port;
	char *reqs[MAX_REQ];
	char *bodies[MAX_REQ];
	int nreq;
	conn *conns;
	int open;
	int stopping;
};

static void maybe_free(fakesrv *s)
{
	if (s->stopping && s->open == 0) {
		for (int i = 0; i < s->nreq; i++) {
			free(s->reqs[i]);
			free(s->bodies[i]);
		}
		free(s);
	}
}

static void conn_closed(uv_handle_t *h)
{
	conn *c = h->data;
	fakesrv *s = c->s;
	conn **pp = &s->conns;
	while (*pp && *pp != c)
		pp = &(*pp)->next;
	if (*pp)
		*pp = c->next;
	free(c);
	s->open--;
	maybe_free(s);
}

static void conn_close(conn *c)
{
	if (!uv_is_closing((uv_handle_t *)&c->tcp))
		uv_close((uv_handle_t *)&c->tcp, conn_closed);
}

typedef struct wreq {
	uv_write_t w;
	conn *c;
} wreq;

static void on_written(uv_write_t *w, int status)
{
	(void)status;
	wreq *r = (wreq *)w;
	conn_close(r->c);
	free(r);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
	(void)suggested;
	conn *c = h->data;
	b->base = c->buf + c->len;
	b->len = sizeof(c->buf) - c->len - 1;
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	(void)b;
	conn *c = st->data;
	fakesrv *s = c->s;
	if (n < 0) {
		conn_close(c);
		return;
	}
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	char *end = strstr(c->buf, "\r\n\r\n");
	if (!end || c->answered)
		return;
	const char *cl = strcasestr(c->buf, "content-length:");
	size_t body = cl && cl < end ? (size_t)strtoul(cl + 15, NULL, 10) : 0;
	if (c->len < (size_t)(end + 4 - c->buf) + body)
		return;
	c->answered = 1;
	if (s->nreq < MAX_REQ) {
		s->reqs[s->nreq] = strndup(c->buf, (size_t)(end - c->buf));
		s->bodies[s->nreq++] = strndup(end + 4, body);
	}
	if (s->next >= s->n) {
		conn_close(c);
		return;
	}
	const fake_resp *r = &s->script[s->next++];
	if (r->hang)
		return;
	wreq *w = malloc(sizeof(*w));
	w->c = c;
	uv_buf_t out = uv_buf_init((char *)r->raw, (unsigned)strlen(r->raw));
	uv_write(&w->w, (uv_stream_t *)&c->tcp, &out, 1, on_written);
}

static void on_conn(uv_stream_t *l, int status)
{
	fakesrv *s = l->data;
	if (status < 0)
		return;
	conn *c = calloc(1, sizeof(*c));
	c->s = s;
	uv_tcp_init(l->loop, &c->tcp);
	c->tcp.data = c;
	s->open++;
	c->next = s->conns;
	s->conns = c;
	if (uv_accept(l, (uv_stream_t *)&c->tcp) == 0)
		uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, on_read);
	else
		conn_close(c);
}

fakesrv *fakesrv_start(uv_loop_t *loop, const fake_resp *script, int n)
{
	/* libuv writes with write(2): a peer that went away (a killed
	 * candidate, a closed client) must give EPIPE, not kill the test. */
	signal(SIGPIPE, SIG_IGN);
	fakesrv *s = calloc(1, sizeof(*s));
	s->script = script;
	s->n = n;
	uv_tcp_init(loop, &s->listener);
	s->listener.data = s;
	s->open = 1;
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", 0, &a);
	if (uv_tcp_bind(&s->listener, (const struct sockaddr *)&a, 0) ||
	    uv_listen((uv_stream_t *)&s->listener, 16, on_conn)) {
		fprintf(stderr, "fakesrv: cannot listen\n");
		abort();
	}
	struct sockaddr_in got;
	int len = sizeof(got);
	uv_tcp_getsockname(&s->listener, (struct sockaddr *)&got, &len);
	s->port = ntohs(got.sin_port);
	return s;
}

int fakesrv_port(const fakesrv *s)
{
	return s->port;
}

int fakesrv_requests(const fakesrv *s)
{
	return s->nreq;
}

const char *fakesrv_request(const fakesrv *s, int i)
{
	return i >= 0 && i < s->nreq ? s->reqs[i] : NULL;
}

const char *fakesrv_body(const fakesrv *s, int i)
{
	return i >= 0 && i < s->nreq ? s->bodies[i] : NULL;
}

static void listener_closed(uv_handle_t *h)
{
	fakesrv *s = h->data;
	s->open--;
	maybe_free(s);
}

void fakesrv_stop(fakesrv *s)
{
	s->stopping = 1;
	for (conn *c = s->conns; c; c = c->next)
		conn_close(c);
	uv_close((uv_handle_t *)&s->listener, listener_closed);
}
