/*
 * tcpproxy.c - a small TCP proxy for the chaos tests (see tcpproxy.h).
 */
#include "tcpproxy.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

typedef struct conn conn;

struct tp_proxy {
	uv_loop_t *loop;
	uv_tcp_t lst;
	struct sockaddr_in up;
	int port;
	int bh;
	int closing, lst_closed;
	conn *conns;
	size_t n;
	unsigned long accepted;
	int connect_mode;
	unsigned long connects;
	char last_connect[256];
};

struct conn {
	tp_proxy *p;
	uv_tcp_t cl, up; /* the client's side, the upstream side */
	uv_connect_t creq;
	uv_shutdown_t sh_cl, sh_up;
	int connecting, connected;
	int bh;             /* this connection alone is blackholed */
	int cl_eof, up_eof; /* EOF read from that side */
	int closing, nclosed;
	conn *next, *prev;
	int connect_mode; /* reading the CONNECT request into head */
	char head[4096];
	size_t head_len, head_end; /* bytes read, end of the request head */
};

typedef struct wreq {
	uv_write_t req;
	char *base;
} wreq;

static void maybe_free_proxy(tp_proxy *p)
{
	if (p->closing && p->lst_closed && p->n == 0)
		free(p);
}

static void conn_handle_closed(uv_handle_t *h)
{
	conn *c = h->data;
	if (++c->nclosed < 2)
		return;
	tp_proxy *p = c->p;
	if (c->prev)
		c->prev->next = c->next;
	else
		p->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	p->n--;
	free(c);
	maybe_free_proxy(p);
}

static void close_side(uv_tcp_t *t, int rst)
{
	if (uv_is_closing((uv_handle_t *)t))
		return;
	if (rst && uv_tcp_close_reset(t, conn_handle_closed) == 0)
		return;
	uv_close((uv_handle_t *)t, conn_handle_closed);
}

static void conn_close(conn *c, int rst)
{
	if (c->closing)
		return;
	c->closing = 1;
	uv_read_stop((uv_stream_t *)&c->cl);
	uv_read_stop((uv_stream_t *)&c->up);
	close_side(&c->cl, rst);
	close_side(&c->up, rst);
}

static void on_alloc(uv_handle_t *h, size_t sz, uv_buf_t *b)
{
	(void)h;
	if (sz > 65536)
		sz = 65536;
	b->base = malloc(sz);
	b->len = b->base ? sz : 0;
}

static void on_written(uv_write_t *req, int status)
{
	wreq *w = (wreq *)req;
	conn *c = req->data;
	free(w->base);
	free(w);
	if (status < 0 && status != UV_ECANCELED)
		conn_close(c, 0);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	conn *c = req->data;
	if (status < 0 || (c->cl_eof && c->up_eof))
		conn_close(c, 0);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
	conn *c = s->data;
	int from_client = s == (uv_stream_t *)&c->cl;
	uv_stream_t *other = from_client ? (uv_stream_t *)&c->up : (uv_stream_t *)&c->cl;
	if (nread > 0 && !c->closing) {
		wreq *w = malloc(sizeof(*w));
		if (!w) {
			free(b->base);
			conn_close(c, 0);
			return;
		}
		w->base = b->base;
		w->req.data = c;
		uv_buf_t out = uv_buf_init(b->base, (unsigned)nread);
		if (uv_write(&w->req, other, &out, 1, on_written) != 0) {
			free(w->base);
			free(w);
			conn_close(c, 0);
		}
		return;
	}
	free(b->base);
	if (nread == UV_EOF && !c->closing) {
		uv_read_stop(s);
		if (from_client)
			c->cl_eof = 1;
		else
			c->up_eof = 1;
		uv_shutdown_t *sh = from_client ? &c->sh_up : &c->sh_cl;
		sh->data = c;
		if (uv_shutdown(sh, other, on_shutdown) != 0)
			conn_close(c, 0);
	} else if (nread < 0) {
		conn_close(c, 0);
	}
}

static void start_reading(conn *c)
{
	if (c->p->bh || c->bh || !c->connected || c->closing)
		return;
	if (!c->cl_eof)
		uv_read_start((uv_stream_t *)&c->cl, on_alloc, on_read);
	if (!c->up_eof)
		uv_read_start((uv_stream_t *)&c->up, on_alloc, on_read);
}

static void stop_reading(conn *c)
{
	if (c->closing)
		return;
	uv_read_stop((uv_stream_t *)&c->cl);
	uv_read_stop((uv_stream_t *)&c->up);
}

/* Writes a copy of p[0..n) to s. */
static int write_copy(conn *c, uv_stream_t *s, const char *p, size_t n)
{
	wreq *w = malloc(sizeof(*w));
	char *b = malloc(n ? n : 1);
	if (!w || !b) {
		free(w);
		free(b);
		return UV_ENOMEM;
	}
	memcpy(b, p, n);
	w->base = b;
	w->req.data = c;
	uv_buf_t out = uv_buf_init(b, (unsigned)n);
	int rc = uv_write(&w->req, s, &out, 1, on_written);
	if (rc) {
		free(b);
		free(w);
	}
	return rc;
}

static void on_connected(uv_connect_t *req, int status)
{
	conn *c = req->data;
	c->connecting = 0;
	if (c->closing)
		return;
	if (status < 0) {
		conn_close(c, 0);
		return;
	}
	c->connected = 1;
	if (c->connect_mode) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		c->connect_mode = 0;
		if (write_copy(c, (uv_stream_t *)&c->cl, ok, sizeof(ok) - 1) ||
		    (c->head_len > c->head_end &&
		     write_copy(c, (uv_stream_t *)&c->up, c->head + c->head_end,
		                c->head_len - c->head_end))) {
			conn_close(c, 0);
			return;
		}
	}
	start_reading(c);
}

static void connect_up(conn *c);

/* CONNECT mode: collects the request head, then connects upstream. */
static void on_read_head(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
	conn *c = s->data;
	tp_proxy *p = c->p;
	if (nread <= 0 || c->closing) {
		free(b->base);
		if (nread < 0)
			conn_close(c, 0);
		return;
	}
	size_t room = sizeof(c->head) - 1 - c->head_len;
	size_t n = (size_t)nread < room ? (size_t)nread : room;
	memcpy(c->head + c->head_len, b->base, n);
	c->head_len += n;
	c->head[c->head_len] = '\0';
	free(b->base);
	char *end = strstr(c->head, "\r\n\r\n");
	if (!end) {
		if (c->head_len == sizeof(c->head) - 1)
			conn_close(c, 0);
		return;
	}
	uv_read_stop(s);
	c->head_end = (size_t)(end - c->head) + 4;
	char target[256];
	if (sscanf(c->head, "CONNECT %255s HTTP/1.", target) != 1) {
		static const char bad[] = "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: "
		                          "0\r\nConnection: close\r\n\r\n";
		write_copy(c, (uv_stream_t *)&c->cl, bad, sizeof(bad) - 1);
		conn_close(c, 0);
		return;
	}
	snprintf(p->last_connect, sizeof(p->last_connect), "%s", target);
	p->connects++;
	connect_up(c);
}

static void connect_up(conn *c)
{
	c->creq.data = c;
	if (uv_tcp_connect(&c->creq, &c->up, (const struct sockaddr *)&c->p->up, on_connected) == 0)
		c->connecting = 1;
	else
		conn_close(c, 0);
}

static void on_conn(uv_stream_t *server, int status)
{
	tp_proxy *p = server->data;
	if (status < 0 || p->closing)
		return;
	conn *c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->p = p;
	uv_tcp_init(p->loop, &c->cl);
	uv_tcp_init(p->loop, &c->up);
	c->cl.data = c->up.data = c;
	c->next = p->conns;
	if (p->conns)
		p->conns->prev = c;
	p->conns = c;
	p->n++;
	if (uv_accept(server, (uv_stream_t *)&c->cl) != 0) {
		conn_close(c, 0);
		return;
	}
	p->accepted++;
	uv_tcp_nodelay(&c->cl, 1);
	uv_tcp_nodelay(&c->up, 1);
	if (p->connect_mode) {
		c->connect_mode = 1;
		if (uv_read_start((uv_stream_t *)&c->cl, on_alloc, on_read_head) != 0)
			conn_close(c, 0);
		return;
	}
	if (!p->bh)
		connect_up(c); /* in blackhole mode: when it ends */
}

static void on_lst_closed(uv_handle_t *h)
{
	tp_proxy *p = h->data;
	p->lst_closed = 1;
	maybe_free_proxy(p);
}

int tp_start(uv_loop_t *loop, const char *up_ip, int up_port, tp_proxy **out)
{
	/* libuv writes with write(2): a peer that went away (a killed
	 * candidate, a closed client) must give EPIPE, not kill the test. */
	signal(SIGPIPE, SIG_IGN);
	tp_proxy *p = calloc(1, sizeof(*p));
	if (!p)
		return UV_ENOMEM;
	p->loop = loop;
	int rc = uv_ip4_addr(up_ip, up_port, &p->up);
	if (rc) {
		free(p);
		return rc;
	}
	uv_tcp_init(loop, &p->lst);
	p->lst.data = p;
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", 0, &a);
	rc = uv_tcp_bind(&p->lst, (const struct sockaddr *)&a, 0);
	if (!rc)
		rc = uv_listen((uv_stream_t *)&p->lst, 128, on_conn);
	struct sockaddr_storage ss;
	int len = sizeof(ss);
	if (!rc)
		rc = uv_tcp_getsockname(&p->lst, (struct sockaddr *)&ss, &len);
	if (rc) {
		p->closing = 1;
		uv_close((uv_handle_t *)&p->lst, on_lst_closed);
		return rc;
	}
	p->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	*out = p;
	return 0;
}

int tp_port(const tp_proxy *p)
{
	return p->port;
}

void tp_blackhole(tp_proxy *p, int on)
{
	p->bh = on ? 1 : 0;
	for (conn *c = p->conns; c; c = c->next) {
		if (c->closing)
			continue;
		if (on)
			stop_reading(c);
		else if (!c->connected && !c->connecting)
			connect_up(c);
		else
			start_reading(c);
	}
}

void tp_blackhole_existing(tp_proxy *p)
{
	for (conn *c = p->conns; c; c = c->next)
		if (!c->closing) {
			c->bh = 1;
			stop_reading(c);
		}
}

int tp_is_blackholed(const tp_proxy *p)
{
	return p->bh;
}

void tp_reset(tp_proxy *p)
{
	for (conn *c = p->conns; c; c = c->next)
		conn_close(c, 1);
}

size_t tp_nconns(const tp_proxy *p)
{
	size_t n = 0;
	for (const conn *c = p->conns; c; c = c->next)
		n += !c->closing;
	return n;
}

unsigned long tp_accepted(const tp_proxy *p)
{
	return p->accepted;
}

void tp_connect_mode(tp_proxy *p, int on)
{
	p->connect_mode = on ? 1 : 0;
}

unsigned long tp_connects(const tp_proxy *p)
{
	return p->connects;
}

const char *tp_last_connect(const tp_proxy *p)
{
	return p->last_connect;
}

void tp_close(tp_proxy *p)
{
	if (!p || p->closing)
		return;
	p->closing = 1;
	for (conn *c = p->conns; c; c = c->next)
		conn_close(c, 0);
	uv_close((uv_handle_t *)&p->lst, on_lst_closed);
}
