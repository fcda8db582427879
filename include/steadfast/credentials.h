/*
 * credentials.h - the client credentials a kubeconfig or pod points at.
 *
 * Three sources, kept apart from the kubeconfig parser because they are
 * read again while the process runs:
 *   - a bearer token file (a projected ServiceAccount token, tokenFile),
 *     re-read when its mtime or size changes;
 *   - inline certificate data, decoded from base64 (base64.h) and
 *     placed in sealed anonymous memory files (memfd) whose /proc/self/fd
 *     paths libcurl reads, since Debian's GnuTLS libcurl ignores blobs;
 *   - exec credential plugins (client.authentication.k8s.io/v1 and
 *     v1beta1), run as client-go runs them: KUBERNETES_EXEC_INFO set, the
 *     ExecCredential on stdout parsed, the result cached until its
 *     expirationTimestamp (re-run in the background SF_CRED_EXEC_MARGIN_S
 *     before it, the old one used until then) or a 401 answer
 *     (sf_cred_exec_invalidate).
 *
 * The plugin runs asynchronously on a libuv loop (sf_cred_exec_refresh_async,
 * what the REST client uses): the loop goes on serving timers and watches
 * while it works, and every request that needs the credential meanwhile
 * waits for that one run (single flight). It is bounded by timeout_ms (10 s
 * by default): then its waiters fail and the plugin is sent SIGTERM, and
 * SIGKILL SF_CRED_EXEC_KILL_GRACE_MS later, and reaped. sf_cred_exec_refresh
 * is the blocking form (a private loop), for callers with nothing else to
 * do. Interactive plugins are not supported (stdin is /dev/null,
 * spec.interactive is always false; interactiveMode Always is refused when
 * loading).
 */
#ifndef STEADFAST_CREDENTIALS_H
#define STEADFAST_CREDENTIALS_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define SF_CRED_EXEC_MARGIN_S 5          /* re-run this long before expiry */
#define SF_CRED_EXEC_TIMEOUT_MS 10000    /* default plugin time limit */
#define SF_CRED_EXEC_RETRY_MS 1000       /* a failed run is not retried sooner */
#define SF_CRED_EXEC_MAX_OUT (1u << 20)  /* stdout cap */
#define SF_CRED_EXEC_MAX_ERR (64u << 10) /* stderr cap */
#define SF_CRED_EXEC_KILL_GRACE_MS 1000  /* SIGTERM to SIGKILL at the time limit */
#define SF_CRED_EXEC_PENDING 1           /* sf_cred_exec_refresh_async: wait */

/* Whether s has a control character (refused in tokens, names, URLs). */
int sf_cred_has_ctl(const char *s);
/* Trims ASCII whitespace at both ends, in place; returns s. */
char *sf_cred_trim(char *s);

/* Puts data in a sealed memfd named label; *path is its /proc/self/fd/N
 * path (the caller's to free), *fd the descriptor to close. 0 or -errno. */
int sf_cred_memfd(const char *label, const void *data, size_t len, int *fd, char **path);

/* A token file and what was last read from it. */
typedef struct sf_cred_token_file {
	const char *path; /* borrowed */
	char **cache;     /* the last good token (owned by the caller's struct) */
	int64_t *mtime_ns, *size, *checked_ns;
} sf_cred_token_file;

/* Re-reads the file when its mtime or size changed (at most once a
 * second once a token was read). 0, or -errno (the cache is kept). */
int sf_cred_token_file_read(const sf_cred_token_file *tf);

/* An exec plugin as the kubeconfig describes it, and its cached result. */
typedef struct sf_cred_exec {
	char *command;
	char **args; /* nargs entries */
	size_t nargs;
	char **env; /* "NAME=value", nenv entries, added to the environment */
	size_t nenv;
	char *api_version;  /* client.authentication.k8s.io/v1 or v1beta1 */
	char *install_hint; /* or NULL */
	char *exec_info;    /* KUBERNETES_EXEC_INFO (JSON) */
	char *user;         /* user name, for messages */
	char *source;       /* kubeconfig file, for messages */
	long timeout_ms;    /* 0 = SF_CRED_EXEC_TIMEOUT_MS */
	/* result */
	char *token;
	char *cert_path, *key_path; /* memfd paths of the client certificate */
	int cert_fd, key_fd;
	int64_t expiry_ns; /* wall clock, 0 = no expiry */
	int valid;
	unsigned long runs;       /* plugin runs so far */
	unsigned long generation; /* bumped when the certificate changes */
	/* the last failure, given again without a run for SF_CRED_EXEC_RETRY_MS
	 * (requests queued behind a failing plugin do not each run it) */
	int fail_rc;
	int64_t fail_ns; /* mono */
	char fail_msg[512];
	struct sf_cred_exec_run *run; /* the run in flight, or NULL (internal) */
} sf_cred_exec;

sf_cred_exec *sf_cred_exec_new(void);
/* NULL is a no-op. A run in flight is detached: its waiters are dropped
 * without a callback (cancel them first), its child is killed, and it
 * frees itself on its loop, which must still run (a loop run to its end
 * after this is enough). */
void sf_cred_exec_free(sf_cred_exec *e);

/* A request waiting for a plugin run. Owned by the run: it ends with the
 * callback, or with sf_cred_exec_wait_cancel before it. */
typedef struct sf_cred_exec_wait sf_cred_exec_wait;
/* rc 0: e holds a current credential; else negative errno and err, the
 * message sf_cred_exec_refresh would give (borrowed for the call). */
typedef void (*sf_cred_exec_cb)(void *ud, int rc, const char *err);

/* Makes sure a current credential is cached, without blocking: the plugin
 * runs when none is cached, after sf_cred_exec_invalidate, or when the
 * expiry is near. Returns 0 when the cached one may be used now (cb is not
 * called): it is current, or it expires within SF_CRED_EXEC_MARGIN_S and a
 * run renewing it is started in the background (unless one failed less
 * than SF_CRED_EXEC_RETRY_MS ago); SF_CRED_EXEC_PENDING when a run is in flight on loop (this
 * call's or an earlier one's): cb(ud, ...) will be called once from the
 * loop, *w (if w) is the wait to cancel; or negative errno with err set,
 * without a run: the plugin could not be started, the last run failed less
 * than SF_CRED_EXEC_RETRY_MS ago, or a run is in flight on another loop
 * (-EBUSY). */
int sf_cred_exec_refresh_async(sf_cred_exec *e, uv_loop_t *loop, sf_cred_exec_cb cb, void *ud,
                               sf_cred_exec_wait **w, char *err, size_t errlen);
/* Forgets a wait; its callback will not be called. NULL is a no-op. The
 * run goes on for the other waiters and the cache. */
void sf_cred_exec_wait_cancel(sf_cred_exec_wait *w);

/* The blocking form: runs the plugin if needed on a private loop and
 * returns when it is done (and a killed plugin reaped). 0, or negative
 * errno with a message naming the plugin, its exit, the first lines of its
 * stderr and the install hint; -EBUSY while an asynchronous run is in
 * flight. */
int sf_cred_exec_refresh(sf_cred_exec *e, char *err, size_t errlen);
/* Forgets the cached credential (after a 401), so the next refresh runs
 * the plugin. */
void sf_cred_exec_invalidate(sf_cred_exec *e);

/* Parses an ExecCredential (the plugin's stdout) into e's result fields.
 * Exposed for tests and the fuzz target. 0 or -EINVAL with err set. */
int sf_cred_exec_parse(sf_cred_exec *e, const char *out, size_t len, char *err, size_t errlen);

#endif
