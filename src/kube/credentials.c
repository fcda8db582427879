/*
 * credentials.c - token files, inline certificate data, exec plugins (see
 * credentials.h).
 *
 * What changes while the process runs lives here, apart from the kubeconfig
 * parser: the parser describes a credential once, this module produces the
 * current value on demand. The exec plugin is a child process started with
 * uv_spawn and read through two pipes on the caller's libuv loop, so the
 * loop keeps running while it works; one run serves every request waiting
 * for the credential (single flight). A plugin that does not finish within
 * timeout_ms fails its waiters at once and is ended (SIGTERM, then SIGKILL)
 * and reaped through its process handle. Its stdout is an ExecCredential,
 * validated with yajl before any field is read. The blocking
 * sf_cred_exec_refresh is the same run on a private loop.
 */
#include "steadfast/credentials.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "steadfast/buf.h"
#include "steadfast/json.h"
#include "steadfast/log.h"
#include "steadfast/time.h"

#define CRED_LOGGER "kube.credentials"
#define CRED_MAX_TOKEN (1024u * 1024)

extern char **environ;

static int is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int sf_cred_has_ctl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			return 1;
	return 0;
}

char *sf_cred_trim(char *s)
{
	size_t n = strlen(s);
	while (n && is_space((unsigned char)s[n - 1]))
		n--;
	s[n] = '\0';
	size_t i = 0;
	while (is_space((unsigned char)s[i]))
		i++;
	if (i)
		memmove(s, s + i, n - i + 1);
	return s;
}

/* --- memfds ---------------------------------------------------------------------- */

int sf_cred_memfd(const char *label, const void *data, size_t len, int *fd_out, char **path)
{
	int rc = 0;
	int fd = memfd_create(label, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	const char *p = data;
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, p + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			goto fail;
		}
		off += (size_t)n;
	}
	/* read-only from here on; failure to seal is harmless */
	(void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
	char buf[40];
	snprintf(buf, sizeof(buf), "/proc/self/fd/%d", fd);
	*path = strdup(buf);
	if (!*path) {
		rc = -ENOMEM;
		goto fail;
	}
	*fd_out = fd;
	return 0;
fail:
	close(fd);
	return rc;
}

/* --- token file ------------------------------------------------------------------ */

int sf_cred_token_file_read(const sf_cred_token_file *tf)
{
	int rc = 0, fd = -1;
	sf_buf b;
	sf_buf_init(&b, CRED_MAX_TOKEN);
	int64_t now = sf_mono_ns();
	/* Until a first good read there is no rate limit, so that the error
	 * keeps being reported. */
	if (*tf->cache && *tf->checked_ns && now - *tf->checked_ns < SF_NSEC_PER_SEC)
		goto out;
	*tf->checked_ns = now ? now : 1;
	fd = open(tf->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		goto out;
	}
	int64_t mtime = (int64_t)st.st_mtim.tv_sec * SF_NSEC_PER_SEC + st.st_mtim.tv_nsec;
	if (*tf->cache && mtime == *tf->mtime_ns && (int64_t)st.st_size == *tf->size)
		goto out;
	char chunk[4096];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			goto out;
		}
		if (n == 0)
			break;
		rc = sf_buf_append(&b, chunk, (size_t)n);
		if (rc)
			goto out;
	}
	if (!b.data || memchr(b.data, '\0', b.len)) {
		rc = b.data ? -EINVAL : -ENODATA;
		goto out;
	}
	sf_cred_trim(b.data);
	if (!b.data[0]) {
		rc = -ENODATA;
		goto out;
	}
	if (sf_cred_has_ctl(b.data)) {
		rc = -EINVAL;
		goto out;
	}
	char *tok = strdup(b.data);
	if (!tok) {
		rc = -ENOMEM;
		goto out;
	}
	free(*tf->cache);
	*tf->cache = tok;
	*tf->mtime_ns = mtime;
	*tf->size = (int64_t)st.st_size;
out:
	if (fd >= 0)
		close(fd);
	sf_buf_free(&b);
	return rc;
}

/* --- exec plugins ---------------------------------------------------------------- */

struct sf_cred_exec_run;
static void run_detach(struct sf_cred_exec_run *r);

sf_cred_exec *sf_cred_exec_new(void)
{
	sf_cred_exec *e = calloc(1, sizeof(*e));
	if (e)
		e->cert_fd = e->key_fd = -1;
	return e;
}

static void result_clear(sf_cred_exec *e)
{
	free(e->token);
	e->token = NULL;
	free(e->cert_path);
	free(e->key_path);
	e->cert_path = e->key_path = NULL;
	if (e->cert_fd >= 0)
		close(e->cert_fd);
	if (e->key_fd >= 0)
		close(e->key_fd);
	e->cert_fd = e->key_fd = -1;
	e->expiry_ns = 0;
	e->valid = 0;
}

void sf_cred_exec_free(sf_cred_exec *e)
{
	if (!e)
		return;
	if (e->run)
		run_detach(e->run);
	result_clear(e);
	free(e->command);
	for (size_t i = 0; i < e->nargs; i++)
		free(e->args[i]);
	free(e->args);
	for (size_t i = 0; i < e->nenv; i++)
		free(e->env[i]);
	free(e->env);
	free(e->api_version);
	free(e->install_hint);
	free(e->exec_info);
	free(e->user);
	free(e->source);
	free(e);
}

void sf_cred_exec_invalidate(sf_cred_exec *e)
{
	if (e)
		e->valid = 0;
}

/* "kubeconfig FILE: user "U": exec plugin "CMD": " */
static int eprefix(const sf_cred_exec *e, char *err, size_t errlen)
{
	int n = snprintf(err, errlen, "kubeconfig %s: user \"%s\": exec plugin \"%s\": ",
	                 e->source ? e->source : "?", e->user ? e->user : "?",
	                 e->command ? e->command : "?");
	return n < 0 ? 0 : (size_t)n >= errlen ? (int)errlen - 1 : n;
}

static int exec_err(const sf_cred_exec *e, char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int exec_err(const sf_cred_exec *e, char *err, size_t errlen, int rc, const char *fmt, ...)
{
	if (!err || !errlen)
		return rc;
	int n = eprefix(e, err, errlen);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return rc;
}

int sf_cred_exec_parse(sf_cred_exec *e, const char *out, size_t len, char *err, size_t errlen)
{
	sf_buf m;
	char jerr[160];
	sf_buf_init(&m, 0);
	int rc = sf_json_minify(out, len, &m, jerr, sizeof(jerr));
	if (rc) {
		sf_buf_free(&m);
		return exec_err(e, err, errlen, rc == -ENOMEM ? rc : -EINVAL,
		                "output is not an ExecCredential: %s", jerr);
	}
	sf_jv root = sf_jv_root(m.data, m.len);
	sf_jv st = sf_jv_get(root, "status");
	char *tok = NULL, *cert = NULL, *key = NULL,
	     *ver = sf_jv_strdup(sf_jv_get(root, "apiVersion"));
	int64_t exp = 0;
	rc = -EINVAL;
	if (sf_jv_type(root) != SF_JSON_OBJECT) {
		exec_err(e, err, errlen, rc, "output is not an ExecCredential (not an object)");
		goto out;
	}
	if (!ver || strcmp(ver, e->api_version) != 0) {
		exec_err(e, err, errlen, rc,
		         "configured to use API version %s, plugin returned version %s",
		         e->api_version, ver ? ver : "(none)");
		goto out;
	}
	if (!sf_jv_streq(sf_jv_get(root, "kind"), "ExecCredential")) {
		exec_err(e, err, errlen, rc, "output kind is not ExecCredential");
		goto out;
	}
	if (sf_jv_type(st) != SF_JSON_OBJECT) {
		exec_err(e, err, errlen, rc, "output has no status");
		goto out;
	}
	sf_jv v = sf_jv_get(st, "token");
	if (sf_jv_ok(v) && sf_jv_type(v) != SF_JSON_NULL && !(tok = sf_jv_strdup(v)))
		goto bad_field;
	v = sf_jv_get(st, "clientCertificateData");
	if (sf_jv_ok(v) && sf_jv_type(v) != SF_JSON_NULL && !(cert = sf_jv_strdup(v)))
		goto bad_field;
	v = sf_jv_get(st, "clientKeyData");
	if (sf_jv_ok(v) && sf_jv_type(v) != SF_JSON_NULL && !(key = sf_jv_strdup(v)))
		goto bad_field;
	v = sf_jv_get(st, "expirationTimestamp");
	if (sf_jv_type(v) == SF_JSON_STRING) {
		char ts[64];
		int l = sf_jv_str(v, ts, sizeof(ts));
		if (l < 0 || sf_time_parse_rfc3339(ts, (size_t)l, &exp) != 0) {
			exec_err(e, err, errlen, rc, "status.expirationTimestamp: not RFC 3339");
			goto out;
		}
	} else if (sf_jv_ok(v) && sf_jv_type(v) != SF_JSON_NULL) {
		exec_err(e, err, errlen, rc, "status.expirationTimestamp: expected a string");
		goto out;
	}
	if (tok && !*tok) {
		free(tok);
		tok = NULL;
	}
	if ((cert && *cert) != (key && *key)) {
		exec_err(e, err, errlen, rc, "status: %s without %s",
		         cert && *cert ? "clientCertificateData" : "clientKeyData",
		         cert && *cert ? "clientKeyData" : "clientCertificateData");
		goto out;
	}
	if (!tok && !(cert && *cert)) {
		exec_err(e, err, errlen, rc,
		         "status has neither a token nor clientCertificateData/clientKeyData");
		goto out;
	}
	if (tok && sf_cred_has_ctl(tok)) {
		exec_err(e, err, errlen, rc, "status.token contains control characters");
		goto out;
	}
	result_clear(e);
	if (cert && *cert) {
		rc = sf_cred_memfd("exec-cert", cert, strlen(cert), &e->cert_fd, &e->cert_path);
		if (!rc)
			rc = sf_cred_memfd("exec-key", key, strlen(key), &e->key_fd, &e->key_path);
		if (rc) {
			result_clear(e);
			exec_err(e, err, errlen, rc, "memfd: %s", strerror(-rc));
			goto out;
		}
		e->generation++;
	}
	e->token = tok;
	tok = NULL;
	e->expiry_ns = exp;
	e->valid = 1;
	rc = 0;
	goto out;
bad_field:
	exec_err(e, err, errlen, rc, "status: token and certificate data must be strings");
out:
	free(tok);
	free(cert);
	free(key);
	free(ver);
	sf_buf_free(&m);
	return rc;
}

/* Appends the first lines of stderr (at most 3, 300 bytes) to b. */
static void stderr_head(sf_buf *b, const sf_buf *se)
{
	if (!se->len)
		return;
	sf_buf_puts(b, "; stderr: ");
	size_t lines = 0, used = 0;
	for (size_t i = 0; i < se->len && lines < 3 && used < 300; i++) {
		char ch = se->data[i];
		if (ch == '\n') {
			lines++;
			while (i + 1 < se->len && se->data[i + 1] == '\n')
				i++;
			if (i + 1 < se->len && lines < 3)
				sf_buf_puts(b, " / ");
			continue;
		}
		sf_buf_putc(b, (unsigned char)ch < 0x20 ? ' ' : ch);
		used++;
	}
}

/* One run of the plugin on a loop, and the requests waiting for it. It is
 * owned by its libuv handles: freed when the last of them has closed, which
 * may be after the result was given (a plugin killed at its time limit is
 * still reaped) or after its sf_cred_exec was freed (run->e is then NULL). */
typedef struct sf_cred_exec_run {
	sf_cred_exec *e; /* NULL once detached */
	uv_process_t proc;
	uv_pipe_t pout, perr;
	uv_timer_t timer;
	int handles; /* initialised and not yet closed */
	int spawned; /* proc is a live child until exited */
	int exited;  /* the child was reaped */
	int out_eof, err_eof;
	int delivered; /* the waiters have their result */
	int term_sent; /* SIGTERM sent; the timer now gives SIGKILL */
	int64_t exit_status;
	int term_signal;
	int rc; /* a failure of the run itself (time limit, output cap) */
	char why[160];
	long limit_ms;
	int64_t t0;
	sf_buf out, se;
	char chunk[4096];           /* each read lands here, then in out or se */
	sf_cred_exec_wait *waiters; /* FIFO, first resumed first */
} cred_run;

struct sf_cred_exec_wait {
	cred_run *run;
	sf_cred_exec_cb cb;
	void *ud;
	sf_cred_exec_wait *next;
};

static int current(const sf_cred_exec *e)
{
	return e->valid && (!e->expiry_ns ||
	                    sf_wall_ns() + SF_CRED_EXEC_MARGIN_S * SF_NSEC_PER_SEC < e->expiry_ns);
}

static long time_limit(const sf_cred_exec *e)
{
	return e->timeout_ms > 0 ? e->timeout_ms : SF_CRED_EXEC_TIMEOUT_MS;
}

static void run_on_closed(uv_handle_t *h)
{
	cred_run *r = h->data;
	if (--r->handles > 0)
		return;
	sf_buf_free(&r->out);
	sf_buf_free(&r->se);
	free(r);
}

static void close_handle(uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, run_on_closed);
}

/* Closes what is no longer needed: the pipes once the result is given, the
 * process handle and the timer once the child is also reaped. */
static void run_release(cred_run *r)
{
	if (!r->delivered)
		return;
	close_handle((uv_handle_t *)&r->pout);
	close_handle((uv_handle_t *)&r->perr);
	if (r->exited || !r->spawned) {
		close_handle((uv_handle_t *)&r->timer);
		close_handle((uv_handle_t *)&r->proc);
	}
}

/* The code and message of a run that ended with rc (0: the child ran and
 * exited, with status or by signal), as sf_cred_exec_refresh gives them;
 * on success e holds the new credential. */
static int run_result(sf_cred_exec *e, int rc, const char *why0, int64_t status, int sig,
                      const sf_buf *out, const sf_buf *se, char *err, size_t errlen)
{
	char why[160];
	snprintf(why, sizeof(why), "%s", why0);
	if (!rc && sig) {
		rc = -EIO;
		snprintf(why, sizeof(why), "killed by signal %d", sig);
	} else if (!rc && status != 0) {
		rc = -EIO;
		snprintf(why, sizeof(why), "exit status %lld", (long long)status);
	}
	if (!rc)
		return sf_cred_exec_parse(e, out->data ? out->data : "", out->len, err, errlen);
	sf_buf msg;
	sf_buf_init(&msg, 0);
	sf_buf_puts(&msg, why[0] ? why : strerror(-rc));
	stderr_head(&msg, se);
	if (e->install_hint && *e->install_hint)
		sf_buf_printf(&msg, "; install hint: %s", e->install_hint);
	exec_err(e, err, errlen, rc, "%s", msg.data ? msg.data : "failed");
	sf_buf_free(&msg);
	return rc;
}

/* Records a result in e: the failure cache, the log line. */
static void record(sf_cred_exec *e, int rc, const char *msg, int64_t t0)
{
	e->fail_rc = rc;
	if (rc) {
		e->fail_ns = sf_mono_ns();
		snprintf(e->fail_msg, sizeof(e->fail_msg), "%s", msg);
		return;
	}
	char ms[24], exp[40];
	snprintf(ms, sizeof(ms), "%lld", (long long)((sf_mono_ns() - t0) / SF_NSEC_PER_MSEC));
	sf_log_info(CRED_LOGGER, "exec credential plugin ran", "command", e->command, "user",
	            e->user ? e->user : "", "ms", ms, "expires",
	            e->expiry_ns ? sf_time_rfc3339(e->expiry_ns, exp, sizeof(exp)) : "never",
	            (char *)NULL);
}

/* Gives the result to every waiter (once), then lets the handles go. */
static void run_deliver(cred_run *r)
{
	if (r->delivered)
		return;
	r->delivered = 1;
	sf_cred_exec *e = r->e;
	if (e) {
		char msg[sizeof(e->fail_msg)] = "";
		int rc = run_result(e, r->rc, r->why, r->exit_status, r->term_signal, &r->out,
		                    &r->se, msg, sizeof(msg));
		record(e, rc, msg, r->t0);
		e->run = NULL;
		r->e = NULL;
		if (rc && !r->waiters)
			sf_log_warn(CRED_LOGGER,
			            "exec credential plugin failed; the current credential is used "
			            "until it expires",
			            "error", msg, (char *)NULL);
		/* a waiter's callback may cancel later waiters or start a new
		 * run: take them one at a time */
		while (r->waiters) {
			sf_cred_exec_wait *w = r->waiters;
			r->waiters = w->next;
			sf_cred_exec_cb cb = w->cb;
			void *ud = w->ud;
			free(w);
			cb(ud, rc, rc ? msg : "");
		}
	}
	run_release(r);
}

/* Ends the child: SIGTERM now, SIGKILL after SF_CRED_EXEC_KILL_GRACE_MS. */
static void on_timer(uv_timer_t *t);

static void run_kill(cred_run *r, int sig)
{
	if (!r->spawned || r->exited)
		return;
	uv_process_kill(&r->proc, sig);
	if (sig == SIGTERM) {
		r->term_sent = 1;
		uv_timer_start(&r->timer, on_timer, SF_CRED_EXEC_KILL_GRACE_MS, 0);
	}
}

/* Fails the run now (the waiters get it at once) and ends the child. */
static void run_fail(cred_run *r, int rc, const char *why)
{
	if (!r->delivered) {
		r->rc = rc;
		snprintf(r->why, sizeof(r->why), "%s", why);
	}
	run_deliver(r);
	run_kill(r, SIGTERM);
}

static void on_timer(uv_timer_t *t)
{
	cred_run *r = t->data;
	if (r->term_sent) {
		run_kill(r, SIGKILL);
		return;
	}
	char why[96];
	snprintf(why, sizeof(why), "did not finish within %ld ms; killed", r->limit_ms);
	run_fail(r, -ETIMEDOUT, why);
}

/* Done when the child has exited and both pipes reached their end. */
static void run_check(cred_run *r)
{
	if (r->exited && r->out_eof && r->err_eof)
		run_deliver(r);
	else if (r->delivered)
		run_release(r);
}

static void on_exit_cb(uv_process_t *p, int64_t status, int sig)
{
	cred_run *r = p->data;
	r->exited = 1;
	r->exit_status = status;
	r->term_signal = sig;
	run_check(r);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	cred_run *r = h->data;
	(void)hint;
	*b = uv_buf_init(r->chunk, sizeof(r->chunk));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	cred_run *r = s->data;
	int is_out = s == (uv_stream_t *)&r->pout;
	if (n < 0) {
		uv_read_stop(s);
		if (is_out)
			r->out_eof = 1;
		else
			r->err_eof = 1;
		run_check(r);
		return;
	}
	if (n == 0 || r->delivered)
		return;
	/* stderr past its cap is dropped; stdout past its cap fails the run */
	if (sf_buf_append(is_out ? &r->out : &r->se, b->base, (size_t)n) == -E2BIG && is_out) {
		char why[64];
		snprintf(why, sizeof(why), "output larger than %u bytes", SF_CRED_EXEC_MAX_OUT);
		run_fail(r, -E2BIG, why);
	}
}

/* The environment of the plugin: the process's, then the config's env
 * (which wins), then KUBERNETES_EXEC_INFO. Entries are borrowed except
 * *info, the caller's to free with the array. */
static char **plugin_env(const sf_cred_exec *e, char **info)
{
	size_t nenv = 0;
	while (environ && environ[nenv])
		nenv++;
	char **envp = calloc(nenv + e->nenv + 2, sizeof(*envp));
	if (!envp || asprintf(info, "KUBERNETES_EXEC_INFO=%s", e->exec_info) < 0) {
		free(envp);
		*info = NULL;
		return NULL;
	}
	size_t k = 0;
	for (size_t i = 0; i < nenv; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t nl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
		int shadowed = nl == 20 && strncmp(environ[i], "KUBERNETES_EXEC_INFO", 20) == 0;
		for (size_t j = 0; j < e->nenv && !shadowed; j++)
			shadowed = strncmp(e->env[j], environ[i], nl) == 0 && e->env[j][nl] == '=';
		if (!shadowed)
			envp[k++] = environ[i];
	}
	for (size_t j = 0; j < e->nenv; j++)
		envp[k++] = e->env[j];
	envp[k] = *info;
	return envp;
}

/* Starts the plugin on loop. 0 and e->run, or -errno with why set. */
static int run_start(sf_cred_exec *e, uv_loop_t *loop, char *why, size_t whylen)
{
	cred_run *r = calloc(1, sizeof(*r));
	char **argv = calloc(e->nargs + 2, sizeof(*argv));
	char *info = NULL;
	char **envp = r && argv ? plugin_env(e, &info) : NULL;
	if (!envp) {
		free(r);
		free(argv);
		snprintf(why, whylen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	argv[0] = e->command;
	for (size_t i = 0; i < e->nargs; i++)
		argv[i + 1] = e->args[i];
	r->e = e;
	r->t0 = sf_mono_ns();
	r->limit_ms = time_limit(e);
	sf_buf_init(&r->out, SF_CRED_EXEC_MAX_OUT);
	sf_buf_init(&r->se, SF_CRED_EXEC_MAX_ERR);
	uv_pipe_init(loop, &r->pout, 0);
	uv_pipe_init(loop, &r->perr, 0);
	uv_timer_init(loop, &r->timer);
	r->pout.data = r->perr.data = r->timer.data = r->proc.data = r;
	r->handles = 4;
	/* stdin is /dev/null: interactive plugins are refused when loading */
	uv_stdio_container_t stdio[3] = {
	    {.flags = UV_IGNORE},
	    {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&r->pout},
	    {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&r->perr},
	};
	uv_process_options_t o = {
	    .exit_cb = on_exit_cb,
	    .file = e->command,
	    .args = argv,
	    .env = envp,
	    .stdio_count = 3,
	    .stdio = stdio,
	};
	int rc = uv_spawn(loop, &r->proc, &o);
	free(argv);
	free(envp);
	free(info);
	if (rc) {
		/* the handles are initialised (uv_spawn's too): closed, and r
		 * freed, on the loop's next turn */
		snprintf(why, whylen, "cannot run: %s", uv_strerror(rc));
		r->e = NULL;
		r->delivered = 1;
		run_release(r);
		return rc;
	}
	r->spawned = 1;
	e->runs++;
	uv_read_start((uv_stream_t *)&r->pout, on_alloc, on_read);
	uv_read_start((uv_stream_t *)&r->perr, on_alloc, on_read);
	uv_timer_start(&r->timer, on_timer, (uint64_t)r->limit_ms, 0);
	e->run = r;
	return 0;
}

/* run_start, or its failure recorded and described in err. */
static int start(sf_cred_exec *e, uv_loop_t *loop, char *err, size_t errlen)
{
	char why[160];
	int rc = run_start(e, loop, why, sizeof(why));
	if (!rc)
		return 0;
	char msg[sizeof(e->fail_msg)];
	sf_buf none;
	sf_buf_init(&none, 0);
	rc = run_result(e, rc, why, 0, 0, &none, &none, msg, sizeof(msg));
	record(e, rc, msg, 0);
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
	return rc;
}

static int failed_lately(const sf_cred_exec *e)
{
	return e->fail_rc && sf_mono_ns() - e->fail_ns < SF_CRED_EXEC_RETRY_MS * SF_NSEC_PER_MSEC;
}

int sf_cred_exec_refresh_async(sf_cred_exec *e, uv_loop_t *loop, sf_cred_exec_cb cb, void *ud,
                               sf_cred_exec_wait **out, char *err, size_t errlen)
{
	if (out)
		*out = NULL;
	if (!e->run && current(e))
		return 0;
	if (e->run && e->run->proc.loop != loop)
		return exec_err(e, err, errlen, -EBUSY, "already running on another loop");
	/* within the margin but not expired: renewed in the background, and
	 * used meanwhile (a failed renewal is retried after the usual pause) */
	if (e->valid && e->expiry_ns && sf_wall_ns() < e->expiry_ns) {
		if (!e->run && !failed_lately(e))
			(void)start(e, loop, NULL, 0);
		return 0;
	}
	if (!e->run && failed_lately(e)) {
		if (err && errlen)
			snprintf(err, errlen, "%s", e->fail_msg);
		return e->fail_rc;
	}
	if (!e->run) {
		int rc = start(e, loop, err, errlen);
		if (rc)
			return rc;
	}
	sf_cred_exec_wait *w = calloc(1, sizeof(*w));
	if (!w)
		return exec_err(e, err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
	w->run = e->run;
	w->cb = cb;
	w->ud = ud;
	sf_cred_exec_wait **tail = &e->run->waiters;
	while (*tail)
		tail = &(*tail)->next;
	*tail = w;
	if (out)
		*out = w;
	return SF_CRED_EXEC_PENDING;
}

void sf_cred_exec_wait_cancel(sf_cred_exec_wait *w)
{
	if (!w)
		return;
	for (sf_cred_exec_wait **p = &w->run->waiters; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			break;
		}
	free(w);
}

/* Called from sf_cred_exec_free: the child is killed, the waiters are
 * dropped (their owners cancel them first), the run frees itself. */
static void run_detach(struct sf_cred_exec_run *r)
{
	while (r->waiters) {
		sf_cred_exec_wait *w = r->waiters;
		r->waiters = w->next;
		free(w);
	}
	r->e = NULL;
	r->delivered = 1;
	uv_timer_stop(&r->timer);
	run_kill(r, SIGKILL);
	run_release(r);
}

struct sync_wait {
	int done, rc;
	char *err;
	size_t errlen;
};

static void sync_done(void *ud, int rc, const char *err)
{
	struct sync_wait *s = ud;
	s->done = 1;
	s->rc = rc;
	if (s->err && s->errlen)
		snprintf(s->err, s->errlen, "%s", err);
}

int sf_cred_exec_refresh(sf_cred_exec *e, char *err, size_t errlen)
{
	if (e->run)
		return exec_err(e, err, errlen, -EBUSY, "already running on a loop");
	uv_loop_t loop;
	int rc = uv_loop_init(&loop);
	if (rc)
		return exec_err(e, err, errlen, rc, "uv_loop_init: %s", uv_strerror(rc));
	struct sync_wait s = {0, 0, err, errlen};
	rc = sf_cred_exec_refresh_async(e, &loop, sync_done, &s, NULL, err, errlen);
	/* until every handle is closed: a killed plugin is reaped too */
	uv_run(&loop, UV_RUN_DEFAULT);
	if (rc == SF_CRED_EXEC_PENDING)
		rc = s.done ? s.rc : -EIO;
	uv_loop_close(&loop);
	return rc;
}
