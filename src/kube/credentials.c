/*
 * credentials.c - token files, inline certificate data, exec plugins (see
 * credentials.h).
 *
 * What changes while the process runs lives here, apart from the kubeconfig
 * parser: the parser describes a credential once, this module produces the
 * current value on demand. The exec plugin is a child process run with
 * posix_spawn and read through two pipes under one deadline; a plugin that
 * does not finish by then is killed (SIGKILL) and reaped, so a hung plugin
 * costs the caller timeout_ms, never more. Its stdout is an ExecCredential,
 * validated with yajl before any field is read.
 */
#include "steadfast/credentials.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* --- base64 ---------------------------------------------------------------------- */

int sf_cred_b64_decode(const char *s, size_t n, unsigned char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	/* whitespace anywhere is ignored (wrapped values); GnuTLS decodes */
	char *clean = malloc(n + 1);
	if (!clean)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!is_space((unsigned char)s[i]))
			clean[k++] = s[i];
	gnutls_datum_t in = {(unsigned char *)clean, (unsigned int)k}, dec = {NULL, 0};
	int rc = k ? gnutls_base64_decode2(&in, &dec) : 0;
	free(clean);
	if (rc == GNUTLS_E_MEMORY_ERROR)
		return -ENOMEM;
	if (rc < 0)
		return -EINVAL;
	unsigned char *o = malloc((size_t)dec.size + 1);
	if (!o) {
		gnutls_free(dec.data);
		return -ENOMEM;
	}
	if (dec.size)
		memcpy(o, dec.data, dec.size);
	o[dec.size] = '\0';
	gnutls_free(dec.data);
	*out = o;
	*len = dec.size;
	return 0;
}

char *sf_cred_b64_encode(const void *p, size_t n)
{
	gnutls_datum_t in = {(unsigned char *)(uintptr_t)p, (unsigned int)n}, enc = {NULL, 0};
	if (!n)
		return strdup("");
	if (gnutls_base64_encode2(&in, &enc) < 0)
		return NULL;
	char *s = strndup((const char *)enc.data, enc.size);
	gnutls_free(enc.data);
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

/* Runs the plugin; its stdout in out, stderr in se. 0, or -errno with a
 * description in why. *status is the wait status. */
static int run_plugin(sf_cred_exec *e, sf_buf *out, sf_buf *se, int *status, char *why,
                      size_t whylen)
{
	int rc = 0, po[2] = {-1, -1}, pe[2] = {-1, -1};
	pid_t pid = -1;
	char **argv = NULL, **envp = NULL, *info = NULL;
	size_t nenv = 0;
	posix_spawn_file_actions_t fa;
	int have_fa = 0;
	why[0] = '\0';
	if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
		rc = -errno;
		snprintf(why, whylen, "pipe: %s", strerror(-rc));
		goto out;
	}
	argv = calloc(e->nargs + 2, sizeof(*argv));
	while (environ && environ[nenv])
		nenv++;
	envp = calloc(nenv + e->nenv + 2, sizeof(*envp));
	if (!argv || !envp || asprintf(&info, "KUBERNETES_EXEC_INFO=%s", e->exec_info) < 0) {
		info = NULL;
		rc = -ENOMEM;
		goto out;
	}
	argv[0] = e->command;
	for (size_t i = 0; i < e->nargs; i++)
		argv[i + 1] = e->args[i];
	size_t k = 0;
	/* the process's environment, then the config's env (which wins), then
	 * KUBERNETES_EXEC_INFO */
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
	envp[k++] = info;
	if (posix_spawn_file_actions_init(&fa)) {
		rc = -ENOMEM;
		goto out;
	}
	have_fa = 1;
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
	int src = posix_spawnp(&pid, e->command, &fa, NULL, argv, envp);
	if (src) {
		pid = -1;
		rc = -src;
		snprintf(why, whylen, "cannot run: %s", strerror(src));
		goto out;
	}
	e->runs++;
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	long tmo = e->timeout_ms > 0 ? e->timeout_ms : SF_CRED_EXEC_TIMEOUT_MS;
	int64_t deadline = sf_mono_ns() + (int64_t)tmo * SF_NSEC_PER_MSEC;
	int open_o = 1, open_e = 1;
	while (open_o || open_e) {
		int64_t left = (deadline - sf_mono_ns()) / SF_NSEC_PER_MSEC;
		if (left <= 0) {
			rc = -ETIMEDOUT;
			break;
		}
		struct pollfd pf[2] = {{open_o ? po[0] : -1, POLLIN, 0},
		                       {open_e ? pe[0] : -1, POLLIN, 0}};
		int n = poll(pf, 2, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (!pf[i].revents)
				continue;
			char chunk[4096];
			ssize_t r = read(pf[i].fd, chunk, sizeof(chunk));
			if (r < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (r <= 0) {
				if (i == 0)
					open_o = 0;
				else
					open_e = 0;
				continue;
			}
			sf_buf *dst = i == 0 ? out : se;
			if (sf_buf_append(dst, chunk, (size_t)r) == -E2BIG && i == 0) {
				rc = -E2BIG;
				snprintf(why, whylen, "output larger than %u bytes",
				         SF_CRED_EXEC_MAX_OUT);
			}
		}
		if (rc)
			break;
	}
	/* closed both pipes: the plugin is ending; wait for it within the
	 * deadline, then kill it */
	for (;;) {
		pid_t w = rc ? 0 : waitpid(pid, status, WNOHANG);
		if (w == pid) {
			pid = -1;
			break;
		}
		if (w < 0 && errno != EINTR) {
			rc = -errno;
			break;
		}
		if (rc || sf_mono_ns() >= deadline) {
			if (!rc)
				rc = -ETIMEDOUT;
			break;
		}
		struct timespec ts = {0, 2 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (rc == -ETIMEDOUT)
		snprintf(why, whylen, "did not finish within %ld ms; killed", tmo);
out:
	if (pid > 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, status, 0) < 0 && errno == EINTR)
			;
	}
	if (have_fa)
		posix_spawn_file_actions_destroy(&fa);
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	free(argv);
	free(envp);
	free(info);
	if (rc && !why[0])
		snprintf(why, whylen, "%s", strerror(-rc));
	return rc;
}

int sf_cred_exec_refresh(sf_cred_exec *e, char *err, size_t errlen)
{
	if (e->valid && (!e->expiry_ns ||
	                 sf_wall_ns() + SF_CRED_EXEC_MARGIN_S * SF_NSEC_PER_SEC < e->expiry_ns))
		return 0;
	if (e->fail_rc && sf_mono_ns() - e->fail_ns < SF_CRED_EXEC_RETRY_MS * SF_NSEC_PER_MSEC) {
		if (err && errlen)
			snprintf(err, errlen, "%s", e->fail_msg);
		return e->fail_rc;
	}
	sf_buf out, se, msg;
	sf_buf_init(&out, SF_CRED_EXEC_MAX_OUT);
	sf_buf_init(&se, SF_CRED_EXEC_MAX_ERR);
	sf_buf_init(&msg, 0);
	char why[160];
	int status = 0;
	int64_t t0 = sf_mono_ns();
	int rc = run_plugin(e, &out, &se, &status, why, sizeof(why));
	if (!rc && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		rc = -EIO;
		if (WIFEXITED(status))
			snprintf(why, sizeof(why), "exit status %d", WEXITSTATUS(status));
		else
			snprintf(why, sizeof(why), "killed by signal %d",
			         WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	}
	if (rc) {
		sf_buf_puts(&msg, why);
		stderr_head(&msg, &se);
		if (e->install_hint && *e->install_hint)
			sf_buf_printf(&msg, "; install hint: %s", e->install_hint);
		exec_err(e, err, errlen, rc, "%s", msg.data ? msg.data : "failed");
	} else {
		rc = sf_cred_exec_parse(e, out.data ? out.data : "", out.len, err, errlen);
	}
	e->fail_rc = rc;
	if (rc) {
		e->fail_ns = sf_mono_ns();
		char fm[sizeof(e->fail_msg)];
		snprintf(fm, sizeof(fm), "%s", err && errlen ? err : "exec plugin failed");
		memcpy(e->fail_msg, fm, sizeof(fm));
	}
	if (!rc) {
		char ms[24], exp[40];
		snprintf(ms, sizeof(ms), "%lld",
		         (long long)((sf_mono_ns() - t0) / SF_NSEC_PER_MSEC));
		sf_log_info(CRED_LOGGER, "exec credential plugin ran", "command", e->command,
		            "user", e->user ? e->user : "", "ms", ms, "expires",
		            e->expiry_ns ? sf_time_rfc3339(e->expiry_ns, exp, sizeof(exp))
		                         : "never",
		            (char *)NULL);
	}
	sf_buf_free(&out);
	sf_buf_free(&se);
	sf_buf_free(&msg);
	return rc;
}
