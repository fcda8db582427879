/*
 * tl_ctl.c - steadfast controller processes for the integration tests (see
 * tl_ctl.h).
 */
#include "tl_ctl.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "steadfast/buf.h"
#include "tl.h"

#define MAX_CTLS 128

struct tl_ctl {
	uv_process_t proc;
	uv_pipe_t err;
	char id[128];
	char logpath[PATH_MAX];
	int logfd;
	sf_buf partial;
	char **lines;
	size_t n, cap;
	int exited, term_signal;
	int64_t exit_status;
	int handles_open;
};

static tl_ctl *ctls[MAX_CTLS];
static size_t nctls;

static void add_line(tl_ctl *p, const char *s, size_t len)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 256;
		p->lines = realloc(p->lines, p->cap * sizeof(*p->lines));
		cr_assert(p->lines);
	}
	p->lines[p->n] = strndup(s, len);
	cr_assert(p->lines[p->n]);
	p->n++;
}

static void on_alloc(uv_handle_t *h, size_t sz, uv_buf_t *b)
{
	(void)h;
	b->base = malloc(sz);
	b->len = b->base ? sz : 0;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
	tl_ctl *p = s->data;
	if (nread > 0) {
		if (write(p->logfd, b->base, (size_t)nread) < 0) {
			/* the log file is a convenience; the lines are kept anyway */
		}
		sf_buf_append(&p->partial, b->base, (size_t)nread);
		size_t start = 0;
		for (size_t i = 0; i < p->partial.len; i++)
			if (p->partial.data[i] == '\n') {
				add_line(p, p->partial.data + start, i - start);
				start = i + 1;
			}
		sf_buf_consume(&p->partial, start);
	} else if (nread < 0) {
		uv_read_stop(s);
	}
	free(b->base);
}

static void exited(uv_process_t *pr, int64_t status, int sig)
{
	tl_ctl *p = pr->data;
	p->exited = 1;
	p->exit_status = status;
	p->term_signal = sig;
}

static void closed(uv_handle_t *h)
{
	tl_ctl *p = h->data;
	p->handles_open--;
}

tl_ctl *tl_ctl_start(uv_loop_t *loop, const tl_ctl_opts *o)
{
	cr_assert(nctls < MAX_CTLS);
	tl_ctl *p = calloc(1, sizeof(*p));
	cr_assert(p);
	sf_buf_init(&p->partial, 1 << 20);
	snprintf(p->id, sizeof(p->id), "%s", o->id);
	const char *bin = getenv("STEADFAST_BIN");
	cr_assert(bin && bin[0], "STEADFAST_BIN is not set (run through make integration)");
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", bin);
	char *slash = strrchr(dir, '/');
	snprintf(slash ? slash + 1 : dir, sizeof(dir) - (size_t)(slash ? slash + 1 - dir : 0),
	         "test/controller-logs");
	mkdir(dir, 0755);
	int ln = snprintf(p->logpath, sizeof(p->logpath), "%.3000s/%.200s-%d.log", dir, o->id,
	                  (int)getpid());
	cr_assert(ln > 0 && (size_t)ln < sizeof(p->logpath));
	p->logfd = open(p->logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert(p->logfd >= 0, "open %s", p->logpath);

	char lease[32], renew[32], retry[32];
	snprintf(lease, sizeof(lease), "%ldms", o->lease_ms ? o->lease_ms : 3000);
	snprintf(renew, sizeof(renew), "%ldms", o->renew_ms ? o->renew_ms : 2000);
	snprintf(retry, sizeof(retry), "%ldms", o->retry_ms ? o->retry_ms : 500);
	const char *args[64];
	size_t na = 0;
	args[na++] = "setpriv";
	args[na++] = "--pdeathsig";
	args[na++] = "KILL";
	args[na++] = bin;
	args[na++] = "--kubeconfig";
	args[na++] = o->kubeconfig ? o->kubeconfig : tl_env("KUBECONFIG");
	args[na++] = "--namespace";
	args[na++] = o->ns;
	args[na++] = "--identity";
	args[na++] = o->id;
	args[na++] = "--zap-log-level";
	args[na++] = "debug";
	/* ephemeral ports: replicas share the machine (tl_ctl_port finds them) */
	args[na++] = "--metrics-bind-address=127.0.0.1:0";
	args[na++] = "--health-probe-bind-address=127.0.0.1:0";
	if (o->no_leader_elect) {
		args[na++] = "--leader-elect=false";
	} else {
		args[na++] = "--leader-election-namespace";
		args[na++] = o->ns;
		args[na++] = "--leader-election-id";
		args[na++] = o->lease;
		args[na++] = "--leader-elect-lease-duration";
		args[na++] = lease;
		args[na++] = "--leader-elect-renew-deadline";
		args[na++] = renew;
		args[na++] = "--leader-elect-retry-period";
		args[na++] = retry;
	}
	if (o->config) {
		args[na++] = "--config";
		args[na++] = o->config;
	}
	for (size_t i = 0; o->extra && o->extra[i]; i++) {
		cr_assert(na < 62);
		args[na++] = o->extra[i];
	}
	args[na] = NULL;

	extern char **environ;
	char *envp[512];
	size_t ne = 0;
	for (char **e = environ; *e && ne < 480; e++)
		envp[ne++] = *e;
	for (size_t i = 0; o->env && o->env[i] && ne < 510; i++)
		envp[ne++] = (char *)o->env[i];
	envp[ne] = NULL;
	uv_pipe_init(loop, &p->err, 0);
	p->err.data = p;
	uv_stdio_container_t stdio[3] = {
	    {.flags = UV_IGNORE},
	    {.flags = UV_INHERIT_FD, .data.fd = p->logfd},
	    {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&p->err},
	};
	uv_process_options_t po = {
	    .exit_cb = exited,
	    .file = "setpriv",
	    .args = (char **)args,
	    .env = envp,
	    .stdio_count = 3,
	    .stdio = stdio,
	};
	p->proc.data = p;
	int rc = uv_spawn(loop, &p->proc, &po);
	cr_assert_eq(rc, 0, "spawn %s: %s", bin, uv_strerror(rc));
	p->handles_open = 2;
	uv_read_start((uv_stream_t *)&p->err, on_alloc, on_read);
	ctls[nctls++] = p;
	return p;
}

const char *tl_ctl_id(const tl_ctl *p)
{
	return p->id;
}

int tl_ctl_pid(const tl_ctl *p)
{
	return p->proc.pid;
}

int tl_ctl_alive(const tl_ctl *p)
{
	return !p->exited;
}

void tl_ctl_signal(tl_ctl *p, int sig)
{
	if (!p->exited)
		uv_process_kill(&p->proc, sig);
}

static int is_exited(void *ud)
{
	return ((tl_ctl *)ud)->exited;
}

int tl_ctl_wait_exit(uv_loop_t *loop, tl_ctl *p, long timeout_ms, int64_t *status, int *sig)
{
	if (tl_run_until_fn(loop, is_exited, p, timeout_ms) != 0)
		return -ETIMEDOUT;
	if (status)
		*status = p->exit_status;
	if (sig)
		*sig = p->term_signal;
	return 0;
}

size_t tl_ctl_nlines(const tl_ctl *p)
{
	return p->n;
}

size_t tl_ctl_count(const tl_ctl *p, const char *needle, size_t from)
{
	size_t c = 0;
	for (size_t i = from; i < p->n; i++)
		if (strstr(p->lines[i], needle))
			c++;
	return c;
}

typedef struct wait_log {
	tl_ctl *p;
	const char *needle;
	size_t from;
	long found;
} wait_log;

static int log_found(void *ud)
{
	wait_log *w = ud;
	for (size_t i = w->from; i < w->p->n; i++)
		if (strstr(w->p->lines[i], w->needle)) {
			w->found = (long)i;
			return 1;
		}
	w->from = w->p->n;
	return 0;
}

long tl_ctl_wait_log(uv_loop_t *loop, tl_ctl *p, const char *needle, size_t from, long timeout_ms)
{
	wait_log w = {p, needle, from, -1};
	if (tl_run_until_fn(loop, log_found, &w, timeout_ms) != 0)
		return -1;
	return w.found;
}

int tl_ctl_port(uv_loop_t *loop, tl_ctl *p, const char *server)
{
	char needle[64];
	snprintf(needle, sizeof(needle), "\"server\":\"%s\"", server);
	size_t from = 0;
	for (;;) {
		long i = tl_ctl_wait_log(loop, p, needle, from, 10000);
		cr_assert(i >= 0, "%s: no %s server in the log", p->id, server);
		const char *port = strstr(p->lines[i], "\"port\":\"");
		if (port && strstr(p->lines[i], "\"msg\":\"serving\""))
			return atoi(port + 8);
		from = (size_t)i + 1;
	}
}

void tl_ctl_dump(const tl_ctl *p, size_t last)
{
	fprintf(stderr, "--- controller %s (log %s), last %zu lines:\n", p->id, p->logpath, last);
	for (size_t i = p->n > last ? p->n - last : 0; i < p->n; i++)
		fprintf(stderr, "%s\n", p->lines[i]);
}

static int all_exited(void *ud)
{
	(void)ud;
	for (size_t i = 0; i < nctls; i++)
		if (!ctls[i]->exited)
			return 0;
	return 1;
}

static int all_closed(void *ud)
{
	(void)ud;
	for (size_t i = 0; i < nctls; i++)
		if (ctls[i]->handles_open > 0)
			return 0;
	return 1;
}

void tl_ctl_stop_all(uv_loop_t *loop)
{
	for (size_t i = 0; i < nctls; i++)
		tl_ctl_signal(ctls[i], SIGKILL);
	cr_assert_eq(tl_run_until_fn(loop, all_exited, NULL, 10000), 0,
	             "controllers did not exit after SIGKILL");
	for (size_t i = 0; i < nctls; i++) {
		uv_close((uv_handle_t *)&ctls[i]->proc, closed);
		uv_close((uv_handle_t *)&ctls[i]->err, closed);
	}
	cr_assert_eq(tl_run_until_fn(loop, all_closed, NULL, 5000), 0);
	for (size_t i = 0; i < nctls; i++) {
		tl_ctl *p = ctls[i];
		for (size_t k = 0; k < p->n; k++)
			free(p->lines[k]);
		free(p->lines);
		sf_buf_free(&p->partial);
		close(p->logfd);
		free(p);
		ctls[i] = NULL;
	}
	nctls = 0;
}
