/*
 * elect_proc.c - candidate processes for the election tests (see
 * elect_proc.h).
 */
#include "elect_proc.h"

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

#include "steadfast/time.h"
#include "tl.h"

#define MAX_PROCS 16

struct ep_proc {
	uv_process_t proc;
	tl_lines out; /* stdout, raw; each line parsed into lines[] as it comes */
	char id[160];
	char logpath[PATH_MAX + 64];
	ep_line **lines; /* each line its own allocation: pointers handed out stay valid */
	size_t n, cap;
	int exited, proc_open;
	int64_t exit_status;
	int term_signal;
	double killed_ms, exit_ms;
};

static ep_proc *procs[MAX_PROCS];
static size_t nprocs;

double ep_now_ms(void)
{
	return (double)sf_mono_ns() / 1e6;
}

const char *ep_bin(const char *name, char *buf, size_t n)
{
	char exe[PATH_MAX];
	ssize_t l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert(l > 0, "readlink /proc/self/exe");
	exe[l] = '\0';
	char *slash = strrchr(exe, '/');
	cr_assert(slash);
	*slash = '\0';
	snprintf(buf, n, "%s/%s", exe, name);
	cr_assert_eq(access(buf, X_OK), 0, "%s is missing: build it with make integration", buf);
	return buf;
}

/* A line of the candidate's stdout: "<ms> EVENT rest" (text points into
 * the raw line, which out keeps). */
static void add_line(void *owner, const char *raw)
{
	ep_proc *p = owner;
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 64;
		p->lines = realloc(p->lines, p->cap * sizeof(*p->lines));
		cr_assert(p->lines);
	}
	ep_line *l = calloc(1, sizeof(*l));
	cr_assert(l);
	p->lines[p->n++] = l;
	char *end;
	l->ms = strtod(raw, &end);
	if (end == raw) {
		l->text = raw; /* not one of ours: keep as is */
		snprintf(l->ev, sizeof(l->ev), "?");
		return;
	}
	while (*end == ' ')
		end++;
	size_t evl = strcspn(end, " ");
	snprintf(l->ev, sizeof(l->ev), "%.*s", (int)evl, end);
	end += evl;
	while (*end == ' ')
		end++;
	l->text = end;
}

static void proc_closed(uv_handle_t *h)
{
	ep_proc *p = h->data;
	p->proc_open = 0;
}

static void proc_exited(uv_process_t *pr, int64_t status, int sig)
{
	ep_proc *p = pr->data;
	p->exited = 1;
	p->exit_status = status;
	p->term_signal = sig;
	p->exit_ms = ep_now_ms();
}

ep_proc *ep_start(uv_loop_t *loop, const ep_opts *o)
{
	cr_assert(nprocs < MAX_PROCS);
	ep_proc *p = calloc(1, sizeof(*p));
	cr_assert(p);
	snprintf(p->id, sizeof(p->id), "%s", o->id);
	char bin[PATH_MAX];
	/* logs next to the test binary: $(O)/test/election-logs/ */
	ep_bin("", bin, sizeof(bin) - 64);
	snprintf(p->logpath, sizeof(p->logpath), "%selection-logs", bin);
	mkdir(p->logpath, 0755);
	snprintf(p->logpath, sizeof(p->logpath), "%selection-logs/%s-%d.log", bin, o->id,
	         (int)getpid());
	ep_bin(o->kind == EP_GO ? "election-clientgo" : "election-candidate", bin, sizeof(bin));
	char lease[24], renew[24], retry[24], work[24], unreach[24];
	snprintf(lease, sizeof(lease), "%ld", o->lease_ms);
	snprintf(renew, sizeof(renew), "%ld", o->renew_ms);
	snprintf(retry, sizeof(retry), "%ld", o->retry_ms);
	snprintf(work, sizeof(work), "%ld", o->work_ms ? o->work_ms : 100);
	snprintf(unreach, sizeof(unreach), "%ld", o->api_unreachable_ms);
	const char *args[40];
	size_t na = 0;
	args[na++] = bin;
	args[na++] = "--kubeconfig";
	args[na++] = o->kubeconfig ? o->kubeconfig : tl_env("KUBECONFIG");
	args[na++] = "--namespace";
	args[na++] = o->ns;
	args[na++] = "--name";
	args[na++] = o->lease;
	args[na++] = "--identity";
	args[na++] = o->id;
	args[na++] = "--lease-duration";
	args[na++] = lease;
	args[na++] = "--renew-deadline";
	args[na++] = renew;
	args[na++] = "--retry-period";
	args[na++] = retry;
	args[na++] = "--die-with-parent";
	if (o->work_cm) {
		args[na++] = "--work-configmap";
		args[na++] = o->work_cm;
		args[na++] = "--work-interval";
		args[na++] = work;
	}
	if (o->kind == EP_C) {
		if (o->api_unreachable_ms) {
			args[na++] = "--api-unreachable";
			args[na++] = unreach;
		}
		if (o->print_renews)
			args[na++] = "--print-renews";
		args[na++] = "--log-level";
		args[na++] = "debug";
	}
	args[na] = NULL;

	int logfd = open(p->logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert(logfd >= 0, "open %s", p->logpath);
	tl_lines_init(&p->out, loop, -1, add_line, p);
	uv_stdio_container_t stdio[3] = {
	    {.flags = UV_IGNORE},
	    tl_lines_stdio(&p->out),
	    {.flags = UV_INHERIT_FD, .data.fd = logfd},
	};
	uv_process_options_t po = {
	    .exit_cb = proc_exited,
	    .file = bin,
	    .args = (char **)args,
	    .stdio_count = 3,
	    .stdio = stdio,
	};
	p->proc.data = p;
	int rc = uv_spawn(loop, &p->proc, &po);
	close(logfd);
	cr_assert_eq(rc, 0, "spawn %s: %s", bin, uv_strerror(rc));
	p->proc_open = 1;
	tl_lines_start(&p->out);
	procs[nprocs++] = p;
	return p;
}

const char *ep_id(const ep_proc *p)
{
	return p->id;
}

const char *ep_log_path(const ep_proc *p)
{
	return p->logpath;
}

size_t ep_nlines(const ep_proc *p)
{
	return p->n;
}

const ep_line *ep_line_at(const ep_proc *p, size_t i)
{
	return i < p->n ? p->lines[i] : NULL;
}

const ep_line *ep_find(const ep_proc *p, const char *ev, double after_ms)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->lines[i]->ms > after_ms && strcmp(p->lines[i]->ev, ev) == 0)
			return p->lines[i];
	return NULL;
}

const ep_line *ep_find_last(const ep_proc *p, const char *ev)
{
	for (size_t i = p->n; i-- > 0;)
		if (strcmp(p->lines[i]->ev, ev) == 0)
			return p->lines[i];
	return NULL;
}

typedef struct wait_ctx {
	ep_proc **ps;
	size_t n;
	const char *ev;
	double after;
	const ep_line *found;
	size_t who;
} wait_ctx;

static int wait_pred(void *ud)
{
	wait_ctx *w = ud;
	for (size_t i = 0; i < w->n; i++) {
		const ep_line *l = ep_find(w->ps[i], w->ev, w->after);
		if (l) {
			w->found = l;
			w->who = i;
			return 1;
		}
	}
	return 0;
}

const ep_line *ep_wait_any(uv_loop_t *loop, ep_proc **ps, size_t n, const char *ev, double after_ms,
                           long timeout_ms, size_t *who)
{
	wait_ctx w = {.ps = ps, .n = n, .ev = ev, .after = after_ms};
	if (tl_run_until_fn(loop, wait_pred, &w, timeout_ms) != 0)
		return NULL;
	if (who)
		*who = w.who;
	return w.found;
}

const ep_line *ep_wait(uv_loop_t *loop, ep_proc *p, const char *ev, double after_ms,
                       long timeout_ms)
{
	return ep_wait_any(loop, &p, 1, ev, after_ms, timeout_ms, NULL);
}

double ep_field(const ep_line *l, const char *key)
{
	const char *s = l ? strstr(l->text, key) : NULL;
	if (!s)
		return -1;
	return strtod(s + strlen(key), NULL);
}

int ep_alive(const ep_proc *p)
{
	return !p->exited;
}

int ep_leading(const ep_proc *p)
{
	if (p->exited)
		return 0;
	/* leading if the last of its LEADING/STOPPED lines is a LEADING */
	for (size_t i = p->n; i-- > 0;) {
		if (strcmp(p->lines[i]->ev, "LEADING") == 0)
			return 1;
		if (strcmp(p->lines[i]->ev, "STOPPED") == 0)
			return 0;
	}
	return 0;
}

void ep_kill(ep_proc *p, int sig)
{
	if (p->exited)
		return;
	if (!p->killed_ms && sig == SIGKILL)
		p->killed_ms = ep_now_ms();
	uv_process_kill(&p->proc, sig);
}

static int exited_pred(void *ud)
{
	return ((ep_proc *)ud)->exited;
}

int ep_wait_exit(uv_loop_t *loop, ep_proc *p, long timeout_ms)
{
	return tl_run_until_fn(loop, exited_pred, p, timeout_ms);
}

static int never(void *ud)
{
	(void)ud;
	return 0;
}

void ep_run_for(uv_loop_t *loop, long ms)
{
	tl_run_until_fn(loop, never, NULL, ms);
}

typedef struct ival {
	double from, to;
	size_t who;
} ival;

int ep_check_exclusive(ep_proc **ps, size_t n, double renew_deadline_ms, char *msg, size_t len)
{
	ival iv[256];
	size_t ni = 0;
	double now = ep_now_ms();
	for (size_t k = 0; k < n; k++) {
		ep_proc *p = ps[k];
		double from = -1, last_renew = -1;
		for (size_t i = 0; i < p->n && ni < 256; i++) {
			const ep_line *l = p->lines[i];
			if (strcmp(l->ev, "RENEWED") == 0)
				last_renew = ep_field(l, "at=");
			if (strcmp(l->ev, "LEADING") == 0 && from < 0) {
				from = l->ms;
			} else if (strcmp(l->ev, "STOPPED") == 0 && from >= 0) {
				iv[ni++] = (ival){from, l->ms, k};
				from = -1;
			}
		}
		if (from >= 0 && ni < 256) {
			double to = p->exited ? (p->killed_ms ? p->killed_ms : p->exit_ms) : now;
			if (p->killed_ms && last_renew > 0 && last_renew + renew_deadline_ms < to)
				to = last_renew + renew_deadline_ms;
			iv[ni++] = (ival){from, to, k};
		}
	}
	for (size_t i = 0; i < ni; i++)
		for (size_t j = i + 1; j < ni; j++)
			if (iv[i].from < iv[j].to && iv[j].from < iv[i].to) {
				snprintf(msg, len, "%s led [%.3f, %.3f] while %s led [%.3f, %.3f]",
				         ps[iv[i].who]->id, iv[i].from, iv[i].to, ps[iv[j].who]->id,
				         iv[j].from, iv[j].to);
				return -1;
			}
	snprintf(msg, len, "%zu leadership intervals, none overlapping", ni);
	return 0;
}

void ep_dump(ep_proc **ps, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		fprintf(stderr, "--- %s (log %s)\n", ps[k]->id, ps[k]->logpath);
		for (size_t i = 0; i < ps[k]->n; i++)
			if (strcmp(ps[k]->lines[i]->ev, "WRITE") != 0)
				fprintf(stderr, "  %.3f %s %s\n", ps[k]->lines[i]->ms,
				        ps[k]->lines[i]->ev, ps[k]->lines[i]->text);
	}
}

static int all_closed(void *ud)
{
	(void)ud;
	for (size_t i = 0; i < nprocs; i++)
		if (procs[i]->proc_open || procs[i]->out.open || !procs[i]->exited)
			return 0;
	return 1;
}

void ep_cleanup(uv_loop_t *loop)
{
	for (size_t i = 0; i < nprocs; i++)
		if (!procs[i]->exited)
			ep_kill(procs[i], SIGKILL);
	for (size_t i = 0; i < nprocs; i++) {
		ep_proc *p = procs[i];
		int w = 0;
		while (!p->exited && w++ < 1000)
			uv_run(loop, UV_RUN_ONCE);
		if (!uv_is_closing((uv_handle_t *)&p->proc))
			uv_close((uv_handle_t *)&p->proc, proc_closed);
		tl_lines_close(&p->out);
	}
	tl_run_until_fn(loop, all_closed, NULL, 10000);
	for (size_t i = 0; i < nprocs; i++) {
		ep_proc *p = procs[i];
		for (size_t j = 0; j < p->n; j++)
			free(p->lines[j]);
		free(p->lines);
		p->lines = NULL;
		p->n = p->cap = 0;
		if (!p->proc_open && !p->out.open) {
			tl_lines_free(&p->out);
			free(p);
		}
	}
	nprocs = 0;
}
