/*
 * tl.c - helpers shared by the integration tests (see tl.h).
 */
#include "tl.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "steadfast/log.h"
#include "steadfast/time.h"

const char *tl_env(const char *key)
{
	static char store[64][1024];
	static int nstore;
	const char *path = getenv("STEADFAST_CLUSTER_ENV");
	cr_assert(path && *path,
	          "STEADFAST_CLUSTER_ENV is not set: run through tools/with-cluster.sh");
	FILE *f = fopen(path, "r");
	cr_assert(f, "cannot open cluster env file %s", path);
	char line[1200];
	const char *found = NULL;
	size_t kl = strlen(key);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (strncmp(line, key, kl) == 0 && line[kl] == '=') {
			const char *v = line + kl + 1;
			size_t vl = strlen(v);
			if (vl >= 2 && (v[0] == '"' || v[0] == '\'') && v[vl - 1] == v[0]) {
				v++;
				vl -= 2;
			}
			int slot = nstore++ % 64;
			snprintf(store[slot], sizeof(store[slot]), "%.*s", (int)vl, v);
			found = store[slot];
			break;
		}
	}
	fclose(f);
	cr_assert(found, "key %s missing from %s", key, path);
	return found;
}

typedef struct deadline {
	int fired;
} deadline;

static void on_deadline(uv_timer_t *t)
{
	((deadline *)t->data)->fired = 1;
}

static void on_close_free(uv_handle_t *h)
{
	free(h);
}

typedef struct until {
	int (*pred)(void *ud);
	void *ud;
	int ok;
} until;

/* Runs before the loop blocks for I/O: a callback that ran from a timer
 * (a request completed by the client's dispatch timer) may have made the
 * predicate true, and the loop must not then sleep until the next timer. */
static void until_prepare(uv_prepare_t *p)
{
	until *u = p->data;
	if (!u->ok && u->pred(u->ud)) {
		u->ok = 1;
		uv_stop(p->loop);
	}
}

int tl_run_until_fn(uv_loop_t *loop, int (*pred)(void *ud), void *ud, long timeout_ms)
{
	deadline d = {0};
	until u = {pred, ud, 0};
	uv_timer_t *t = malloc(sizeof(*t));
	uv_prepare_t *p = malloc(sizeof(*p));
	cr_assert(t && p);
	uv_timer_init(loop, t);
	uv_prepare_init(loop, p);
	t->data = &d;
	p->data = &u;
	/* The loop's clock is only refreshed while it runs: after the test
	 * spent time elsewhere (another loop, a blocking call) it is stale,
	 * and the deadline would fire at once. */
	uv_update_time(loop);
	uv_timer_start(t, on_deadline, (uint64_t)timeout_ms, 0);
	uv_prepare_start(p, until_prepare);
	/* pred may have side effects: each answer is asked once and a true
	 * one is kept */
	u.ok = pred(ud);
	while (!u.ok && !d.fired) {
		uv_run(loop, UV_RUN_ONCE);
		if (!u.ok)
			u.ok = pred(ud);
	}
	uv_timer_stop(t);
	uv_prepare_stop(p);
	uv_close((uv_handle_t *)t, on_close_free);
	uv_close((uv_handle_t *)p, on_close_free);
	uv_run(loop, UV_RUN_NOWAIT);
	return u.ok ? 0 : -ETIMEDOUT;
}

static int flag_set(void *ud)
{
	return *(const int *)ud != 0;
}

int tl_run_until(uv_loop_t *loop, const int *flag, long timeout_ms)
{
	return tl_run_until_fn(loop, flag_set, (void *)flag, timeout_ms);
}

void tl_res_cb(void *ud, const sf_kube_result *r)
{
	tl_res *o = ud;
	o->done = 1;
	o->err = r->err;
	o->http_status = r->http_status;
	snprintf(o->reason, sizeof(o->reason), "%s", r->status->reason ? r->status->reason : "");
	snprintf(o->message, sizeof(o->message), "%s",
	         r->status->message ? r->status->message : "");
	snprintf(o->errmsg, sizeof(o->errmsg), "%s", r->errmsg ? r->errmsg : "");
	o->obj = r->obj ? sf_obj_ref(r->obj) : NULL;
	snprintf(o->list_rv, sizeof(o->list_rv), "%s", r->list_rv ? r->list_rv : "");
	snprintf(o->list_continue, sizeof(o->list_continue), "%s",
	         r->list_continue ? r->list_continue : "");
	o->items = r->items;
}

void tl_res_clear(tl_res *r)
{
	sf_obj_unref(r->obj);
	memset(r, 0, sizeof(*r));
}

void tl_wait(uv_loop_t *loop, tl_res *r, long timeout_ms)
{
	cr_assert_eq(tl_run_until(loop, &r->done, timeout_ms), 0,
	             "request did not finish within %ld ms", timeout_ms);
}

void tl_kube_open(tl_kube *k, const char *kubeconfig, const sf_kube_client_opts *opts)
{
	char err[512];
	const char *lvl = getenv("STEADFAST_LOG_LEVEL");
	int level;
	if (lvl && sf_log_parse_level(lvl, &level) == 0)
		sf_log_set_level(level);
	cr_assert_eq(uv_loop_init(&k->loop), 0);
	const char *path = kubeconfig ? kubeconfig : tl_env("KUBECONFIG");
	int rc = sf_kube_config_load(path, NULL, &k->cfg, err, sizeof(err));
	cr_assert_eq(rc, 0, "load %s: %s", path, err);
	rc = sf_kube_client_new(&k->loop, k->cfg, opts, &k->client);
	cr_assert_eq(rc, 0, "client: %d", rc);
}

static void on_client_closed(void *ud)
{
	*(int *)ud = 1;
}

void tl_kube_close(tl_kube *k)
{
	int closed = 0;
	sf_kube_client_close(k->client, on_client_closed, &closed);
	cr_assert_eq(tl_run_until(&k->loop, &closed, 10000), 0, "client did not close");
	uv_run(&k->loop, UV_RUN_DEFAULT);
	sf_kube_config_free(k->cfg);
	cr_assert_eq(uv_loop_close(&k->loop), 0, "loop has open handles after close");
}

void tl_do(tl_kube *k, const sf_kube_req *req, tl_res *out)
{
	memset(out, 0, sizeof(*out));
	int rc = sf_kube_do(k->client, req, tl_res_cb, out, NULL);
	cr_assert_eq(rc, 0, "sf_kube_do: %d", rc);
	tl_wait(&k->loop, out, 60000);
}

const char *tl_namespace(tl_kube *k, const char *prefix, char *buf, size_t n)
{
	snprintf(buf, n, "%s-%04x%04x", prefix, (unsigned)rand() & 0xffff,
	         (unsigned)(sf_mono_ns() & 0xffff));
	char body[256];
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}",
	         buf);
	tl_res r;
	sf_kube_req req = {
	    .method = "POST", .gvr = &SF_GVR_NAMESPACES, .body = body, .body_len = strlen(body)};
	tl_do(k, &req, &r);
	cr_assert_eq(r.http_status, 201, "create namespace %s: %ld %s %s", buf, r.http_status,
	             r.message, r.errmsg);
	tl_res_clear(&r);
	return buf;
}

void tl_namespace_delete(tl_kube *k, const char *ns)
{
	tl_res r;
	sf_kube_req req = {.method = "DELETE", .gvr = &SF_GVR_NAMESPACES, .name = ns};
	tl_do(k, &req, &r);
	tl_res_clear(&r);
}

/* ---- a child process's output as lines ---- */

void tl_lines_init(tl_lines *l, uv_loop_t *loop, int tee_fd,
                   void (*on_line)(void *owner, const char *line), void *owner)
{
	memset(l, 0, sizeof(*l));
	l->tee_fd = tee_fd;
	l->on_line = on_line;
	l->owner = owner;
	sf_buf_init(&l->partial, 1 << 20);
	cr_assert_eq(uv_pipe_init(loop, &l->pipe, 0), 0);
	l->pipe.data = l;
	l->open = 1;
}

uv_stdio_container_t tl_lines_stdio(tl_lines *l)
{
	return (uv_stdio_container_t){.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE,
	                              .data.stream = (uv_stream_t *)&l->pipe};
}

static void lines_add(tl_lines *l, const char *s, size_t len)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 256;
		l->lines = realloc(l->lines, l->cap * sizeof(*l->lines));
		cr_assert(l->lines);
	}
	l->lines[l->n] = strndup(s, len);
	cr_assert(l->lines[l->n]);
	l->n++;
	if (l->on_line)
		l->on_line(l->owner, l->lines[l->n - 1]);
}

static void lines_alloc(uv_handle_t *h, size_t sz, uv_buf_t *b)
{
	(void)h;
	b->base = malloc(sz);
	b->len = b->base ? sz : 0;
}

static void lines_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
	tl_lines *l = s->data;
	if (nread > 0) {
		if (l->tee_fd >= 0 && write(l->tee_fd, b->base, (size_t)nread) < 0) {
			/* the copy is a convenience; the lines are kept anyway */
		}
		sf_buf_append(&l->partial, b->base, (size_t)nread);
		size_t start = 0;
		for (size_t i = 0; i < l->partial.len; i++)
			if (l->partial.data[i] == '\n') {
				lines_add(l, l->partial.data + start, i - start);
				start = i + 1;
			}
		sf_buf_consume(&l->partial, start);
	} else if (nread < 0) {
		l->eof = 1;
		uv_read_stop(s);
	}
	free(b->base);
}

void tl_lines_start(tl_lines *l)
{
	cr_assert_eq(uv_read_start((uv_stream_t *)&l->pipe, lines_alloc, lines_read), 0);
}

static void lines_closed(uv_handle_t *h)
{
	((tl_lines *)h->data)->open = 0;
}

void tl_lines_close(tl_lines *l)
{
	if (!uv_is_closing((uv_handle_t *)&l->pipe))
		uv_close((uv_handle_t *)&l->pipe, lines_closed);
}

void tl_lines_free(tl_lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->lines[i]);
	free(l->lines);
	sf_buf_free(&l->partial);
	l->lines = NULL;
	l->n = l->cap = 0;
}

int tl_sh(sf_buf *out, const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert(n > 0 && (size_t)n < sizeof(cmd), "command line too long");
	FILE *f = popen(cmd, "r");
	cr_assert(f, "popen %s", cmd);
	if (out)
		sf_buf_reset(out);
	char chunk[4096];
	size_t got;
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (out)
			cr_assert_eq(sf_buf_append(out, chunk, got), 0, "output of %s", cmd);
	if (out && !out->data)
		cr_assert_eq(sf_buf_puts(out, ""), 0);
	int st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

char *tl_mint_token(tl_kube *k, const char *ns, const char *sa)
{
	static const sf_gvr sas = {"", "v1", "serviceaccounts", 1};
	static const char body[] = "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":"
	                           "\"TokenRequest\",\"spec\":{\"expirationSeconds\":3600}}";
	tl_res r;
	sf_kube_req q = {.method = "POST",
	                 .gvr = &sas,
	                 .ns = ns,
	                 .name = sa,
	                 .subresource = "token",
	                 .body = body,
	                 .body_len = strlen(body)};
	tl_do(k, &q, &r);
	cr_assert_eq(r.http_status, 201, "TokenRequest for %s/%s: %ld %s", ns, sa, r.http_status,
	             r.message);
	char *tok = sf_jv_strdup(sf_jv_path(sf_obj_root(r.obj), "status.token"));
	cr_assert(tok && tok[0], "TokenRequest answered without a token");
	tl_res_clear(&r);
	return tok;
}

tp_proxy *tl_api_proxy(uv_loop_t *loop, const char *path)
{
	const char *api = tl_env("STEADFAST_APISERVER"); /* https://127.0.0.1:<port> */
	const char *hp = strstr(api, "://");
	cr_assert(hp, "STEADFAST_APISERVER %s", api);
	hp += 3;
	char host[64];
	size_t hl = strcspn(hp, ":");
	cr_assert(hl < sizeof(host) && hp[hl] == ':', "STEADFAST_APISERVER %s", api);
	snprintf(host, sizeof(host), "%.*s", (int)hl, hp);
	tp_proxy *p = NULL;
	int rc = tp_start(loop, host, atoi(hp + hl + 1), &p);
	cr_assert_eq(rc, 0, "proxy: %s", uv_strerror(rc));
	FILE *f = fopen(path, "w");
	cr_assert(f, "%s", path);
	fprintf(f,
	        "apiVersion: v1\n"
	        "kind: Config\n"
	        "clusters:\n"
	        "  - name: proxied\n"
	        "    cluster:\n"
	        "      server: https://127.0.0.1:%d\n"
	        "      certificate-authority: %s\n"
	        "users:\n"
	        "  - name: admin\n"
	        "    user:\n"
	        "      client-certificate: %s\n"
	        "      client-key: %s\n"
	        "contexts:\n"
	        "  - name: proxied\n"
	        "    context:\n"
	        "      cluster: proxied\n"
	        "      user: admin\n"
	        "      namespace: default\n"
	        "current-context: proxied\n",
	        tp_port(p), tl_env("STEADFAST_CA"), tl_env("STEADFAST_ADMIN_CERT"),
	        tl_env("STEADFAST_ADMIN_KEY"));
	cr_assert_eq(fclose(f), 0);
	return p;
}

void tl_cm_write(tl_kube *k, const char *method, const char *ns, const char *name,
                 const char *labels, const char *value, char *rv, size_t rvlen)
{
	char body[1024];
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
	         "\"labels\":{%s}},\"data\":{\"v\":\"%s\"}}",
	         name, labels ? labels : "", value ? value : "");
	sf_kube_req req = {.method = method,
	                   .gvr = &SF_GVR_CONFIGMAPS,
	                   .ns = ns,
	                   .name = strcmp(method, "POST") ? name : NULL};
	if (strcmp(method, "DELETE") != 0) {
		req.body = body;
		req.body_len = strlen(body);
	}
	tl_res r;
	tl_do(k, &req, &r);
	cr_assert(r.http_status >= 200 && r.http_status < 300, "%s %s/%s: %ld %s %s", method, ns,
	          name, r.http_status, r.message, r.errmsg);
	if (rv) {
		cr_assert_not_null(r.obj);
		snprintf(rv, rvlen, "%s", r.obj->rv);
	}
	tl_res_clear(&r);
}

static void drop_log(sf_log_level level, const char *line, void *ud)
{
	(void)level;
	(void)line;
	(void)ud;
}

void tl_log_quiet(void)
{
	sf_log_set_sink(drop_log, NULL);
}

sf_kube_client *tl_inline_client(uv_loop_t *loop, const char *yaml, const sf_kube_client_opts *co,
                                 sf_kube_config **cfg)
{
	char err[512];
	cr_assert_eq(
	    sf_kube_config_parse(yaml, strlen(yaml), "inline", NULL, NULL, cfg, err, sizeof(err)),
	    0, "%s", err);
	sf_kube_client *c = NULL;
	cr_assert_eq(sf_kube_client_new(loop, *cfg, co, &c), 0);
	return c;
}

sf_kube_client *tl_fakesrv_client(uv_loop_t *loop, const fakesrv *srv,
                                  const sf_kube_client_opts *co, sf_kube_config **cfg)
{
	char y[512];
	snprintf(y, sizeof(y),
	         "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n"
	         "  cluster:\n    server: http://127.0.0.1:%d\nusers:\n- name: u\n  user:\n"
	         "    token: t\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n",
	         fakesrv_port(srv));
	return tl_inline_client(loop, y, co, cfg);
}
