/*
 * tl_ctl.c - steadfast controller processes for the integration tests (see
 * tl_ctl.h).
 */
#include "tl_ctl.h"

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tl.h"

#define MAX_CTLS 128

struct tl_ctl {
	uv_process_t proc;
	tl_lines err; /* stderr: the JSON log, also copied to logfd */
	char id[128];
	char logpath[PATH_MAX];
	int logfd;
	int exited, term_signal;
	int64_t exit_status;
	int proc_open;
};

static tl_ctl *ctls[MAX_CTLS];
static size_t nctls;

static void exited(uv_process_t *pr, int64_t status, int sig)
{
	tl_ctl *p = pr->data;
	p->exited = 1;
	p->exit_status = status;
	p->term_signal = sig;
}

static void proc_closed(uv_handle_t *h)
{
	tl_ctl *p = h->data;
	p->proc_open = 0;
}

tl_ctl *tl_ctl_start(uv_loop_t *loop, const tl_ctl_opts *o)
{
	cr_assert(nctls < MAX_CTLS);
	tl_ctl *p = calloc(1, sizeof(*p));
	cr_assert(p);
	snprintf(p->id, sizeof(p->id), "%s", o->id);
	const char *bin = getenv("STEADFAST_BIN");
	cr_assert(bin && bin[0], "STEADFAST_BIN is not set (run through make integration)");
	const char *run = bin;
	if (o->faults) {
		run = getenv("STEADFAST_FAULT_BIN");
		cr_assert(run && run[0],
		          "STEADFAST_FAULT_BIN is not set (run through make integration)");
	}
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
	const char *args[96];
	size_t na = 0;
	if (o->launcher) {
		for (size_t i = 0; o->launcher[i]; i++) {
			cr_assert(na < 48);
			args[na++] = o->launcher[i];
		}
	} else {
		args[na++] = "setpriv";
		args[na++] = "--pdeathsig";
		args[na++] = "KILL";
		args[na++] = run;
	}
	cr_assert(na > 0);
	if (o->raw) {
		cr_assert(o->launcher, "a raw command needs a launcher");
		goto extra;
	}
	if (!o->in_cluster) {
		args[na++] = "--kubeconfig";
		args[na++] = o->kubeconfig ? o->kubeconfig : tl_env("KUBECONFIG");
		args[na++] = "--identity";
		args[na++] = o->id;
	}
	args[na++] = "--namespace";
	args[na++] = o->ns;
	args[na++] = "--zap-log-level";
	args[na++] = "debug";
	/* ephemeral ports: replicas share the machine (tl_ctl_port finds them) */
	args[na++] = "--metrics-bind-address=127.0.0.1:0";
	args[na++] = "--health-probe-bind-address=127.0.0.1:0";
	if (!o->metrics_secure)
		args[na++] = "--metrics-secure=false";
	if (o->no_leader_elect) {
		args[na++] = "--leader-elect=false";
	} else {
		args[na++] = "--leader-election-namespace";
		args[na++] = o->lease_ns ? o->lease_ns : o->ns;
		args[na++] = "--leader-election-id";
		args[na++] = o->lease;
		args[na++] = "--leader-elect-lease-duration";
		args[na++] = lease;
		args[na++] = "--leader-elect-renew-deadline";
		args[na++] = renew;
		args[na++] = "--leader-elect-retry-period";
		args[na++] = retry;
	}
	char cfgpath[PATH_MAX];
	const char *config = o->config;
	if (!config && !o->shipped_defaults && !o->launcher) {
		int cn = snprintf(cfgpath, sizeof(cfgpath), "%.3000s/tests-config-%d.yaml", dir,
		                  (int)getpid());
		cr_assert(cn > 0 && (size_t)cn < sizeof(cfgpath));
		FILE *f = fopen(cfgpath, "w");
		cr_assert_not_null(f, "open %s", cfgpath);
		fputs("appwrapper:\n  kueueJobReconciller:\n    manageJobsWithoutQueueName: true\n",
		      f);
		cr_assert_eq(fclose(f), 0, "write %s", cfgpath);
		config = cfgpath;
	}
	if (config) {
		args[na++] = "--config";
		args[na++] = config;
	}
extra:
	for (size_t i = 0; o->extra && o->extra[i]; i++) {
		cr_assert(na < 94);
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
	tl_lines_init(&p->err, loop, p->logfd, NULL, NULL);
	uv_stdio_container_t stdio[3] = {
	    {.flags = UV_IGNORE},
	    {.flags = UV_INHERIT_FD, .data.fd = p->logfd},
	    tl_lines_stdio(&p->err),
	};
	uv_process_options_t po = {
	    .exit_cb = exited,
	    .file = args[0],
	    .args = (char **)args,
	    .env = envp,
	    .stdio_count = 3,
	    .stdio = stdio,
	};
	p->proc.data = p;
	int rc = uv_spawn(loop, &p->proc, &po);
	cr_assert_eq(rc, 0, "spawn %s: %s", args[0], uv_strerror(rc));
	p->proc_open = 1;
	tl_lines_start(&p->err);
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
	return p->err.n;
}

const char *tl_ctl_line(const tl_ctl *p, size_t i)
{
	return i < p->err.n ? p->err.lines[i] : NULL;
}

size_t tl_ctl_count(const tl_ctl *p, const char *needle, size_t from)
{
	size_t c = 0;
	for (size_t i = from; i < p->err.n; i++)
		if (strstr(p->err.lines[i], needle))
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
	const tl_lines *l = &w->p->err;
	for (size_t i = w->from; i < l->n; i++)
		if (strstr(l->lines[i], w->needle)) {
			w->found = (long)i;
			return 1;
		}
	w->from = l->n;
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
		const char *line = p->err.lines[i];
		const char *port = strstr(line, "\"port\":\"");
		if (port && strstr(line, "\"msg\":\"serving\""))
			return atoi(port + 8);
		from = (size_t)i + 1;
	}
}

static size_t collect_body(char *p, size_t sz, size_t n, void *ud)
{
	sf_buf_append(ud, p, sz * n);
	return sz * n;
}

/* A blocking GET of url; the status, or (must) the test fails without an
 * answer, (!must) -1. */
static long curl_get_opt(const char *url, const char *token, sf_buf *b, char *subject, size_t n,
                         int must)
{
	char auth[4096];
	CURL *h = curl_easy_init();
	cr_assert(h);
	struct curl_slist *hdr = NULL;
	if (token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		hdr = curl_slist_append(hdr, auth);
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(h, CURLOPT_CERTINFO, subject ? 1L : 0L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, token || subject ? 15000L : 5000L);
	long code = 0;
	CURLcode rc = curl_easy_perform(h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	struct curl_certinfo *ci = NULL;
	if (subject && n) {
		subject[0] = '\0';
		if (rc == CURLE_OK && curl_easy_getinfo(h, CURLINFO_CERTINFO, &ci) == CURLE_OK &&
		    ci && ci->num_of_certs > 0)
			for (struct curl_slist *l = ci->certinfo[0]; l; l = l->next)
				if (strncmp(l->data, "Subject:", 8) == 0)
					snprintf(subject, n, "%s", l->data + 8);
	}
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	if (!must && rc != CURLE_OK)
		return -1;
	cr_assert_eq(rc, CURLE_OK, "GET %s: %s", url, curl_easy_strerror(rc));
	return code;
}

static long curl_get(const char *url, const char *token, sf_buf *b, char *subject, size_t n)
{
	return curl_get_opt(url, token, b, subject, n, 1);
}

long tl_ctl_http_get(int port, const char *path, sf_buf *b)
{
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	return curl_get(url, NULL, b, NULL, 0);
}

long tl_ctl_http_try(int port, const char *path, sf_buf *b)
{
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	return curl_get_opt(url, NULL, b, NULL, 0, 0);
}

long tl_ctl_https_get(int port, const char *path, const char *token, sf_buf *b, char *subject,
                      size_t n)
{
	char url[128];
	snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", port, path);
	return curl_get(url, token, b, subject, n);
}

void tl_ctl_dump(const tl_ctl *p, size_t last)
{
	fprintf(stderr, "--- controller %s (log %s), last %zu lines:\n", p->id, p->logpath, last);
	const tl_lines *l = &p->err;
	for (size_t i = l->n > last ? l->n - last : 0; i < l->n; i++)
		fprintf(stderr, "%s\n", l->lines[i]);
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
		if (ctls[i]->proc_open || ctls[i]->err.open)
			return 0;
	return 1;
}

/* Every controller exited and its stderr read to the end. */
static int all_drained(void *ud)
{
	(void)ud;
	for (size_t i = 0; i < nctls; i++)
		if (!ctls[i]->exited || !ctls[i]->err.eof)
			return 0;
	return 1;
}

/* The sanitizer's reports in controller p's stderr: 0 if none. */
static size_t sanitizer_reports(const tl_ctl *p)
{
	return tl_ctl_count(p, "ERROR: AddressSanitizer", 0) +
	       tl_ctl_count(p, "ERROR: LeakSanitizer", 0) + tl_ctl_count(p, "runtime error: ", 0);
}

void tl_ctl_stop_all(uv_loop_t *loop)
{
	/* a sanitized build gets a clean exit first, so that the leak check
	 * at exit runs, and its reports fail the test */
	const char *san = getenv("STEADFAST_SANITIZED");
	int sanitized = san && strcmp(san, "1") == 0;
	if (sanitized) {
		for (size_t i = 0; i < nctls; i++)
			tl_ctl_signal(ctls[i], SIGTERM);
		tl_run_until_fn(loop, all_drained, NULL, 10000);
	}
	for (size_t i = 0; i < nctls; i++)
		tl_ctl_signal(ctls[i], SIGKILL);
	cr_assert_eq(tl_run_until_fn(loop, all_exited, NULL, 10000), 0,
	             "controllers did not exit after SIGKILL");
	for (size_t i = 0; i < nctls; i++) {
		uv_close((uv_handle_t *)&ctls[i]->proc, proc_closed);
		tl_lines_close(&ctls[i]->err);
	}
	cr_assert_eq(tl_run_until_fn(loop, all_closed, NULL, 5000), 0);
	size_t reports = 0;
	const char *which = NULL;
	for (size_t i = 0; sanitized && i < nctls; i++) {
		size_t n = sanitizer_reports(ctls[i]);
		if (n) {
			tl_ctl_dump(ctls[i], 40);
			which = ctls[i]->id;
		}
		reports += n;
	}
	for (size_t i = 0; i < nctls; i++) {
		tl_ctl *p = ctls[i];
		tl_lines_free(&p->err);
		close(p->logfd);
		free(p);
		ctls[i] = NULL;
	}
	nctls = 0;
	cr_assert_eq(reports, 0, "%zu sanitizer report(s) from the controllers (%s)", reports,
	             which ? which : "");
}

void tl_ctl_term_released(uv_loop_t *loop, tl_ctl *p, long timeout_ms)
{
	size_t from = tl_ctl_nlines(p);
	tl_ctl_signal(p, SIGTERM);
	int64_t status = -1;
	int sig = -1;
	if (tl_ctl_wait_exit(loop, p, timeout_ms, &status, &sig) != 0) {
		tl_ctl_dump(p, 20);
		cr_assert_fail("%s did not exit within %ld ms of SIGTERM", p->id, timeout_ms);
	}
	cr_assert(status == 0 && sig == 0, "%s: exit status %lld, signal %d", p->id,
	          (long long)status, sig);
	cr_assert(tl_ctl_count(p, "released the lease", from) > 0, "%s logged no release", p->id);
}
