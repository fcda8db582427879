/*
 * config.h - where the API server is and how to authenticate to it.
 *
 * Loads a kubeconfig the way client-go does (--kubeconfig, else $KUBECONFIG
 * with several files merged in order, else in-cluster, else
 * ~/.kube/config) or the in-cluster service-account files. The result is
 * flat and ready for libcurl: inline certificate data is placed in anonymous
 * in-memory files (memfd) and exposed as /proc/self/fd/N paths, because
 * Debian's GnuTLS libcurl ignores certificate blobs. Every error names the
 * file, the field and the problem.
 *
 * The file is read as YAML turned into JSON (yaml.h, as client-go reads it
 * through sigs.k8s.io/yaml) and walked with JSON views. Fields we cannot
 * honour are refused rather than ignored when they belong to the selected
 * context's user or cluster: impersonation (as, as-uid, as-groups,
 * as-user-extra), basic authentication (username, password), auth-provider
 * and exec interactiveMode Always. Keys we do not know are logged and
 * ignored, as client-go ignores them; extensions and preferences are
 * informational and ignored. docs/operations.md has the full table.
 * Credentials that change at run time (token file, exec plugin) are
 * produced by credentials.h.
 */
#ifndef STEADFAST_CONFIG_H
#define STEADFAST_CONFIG_H

#include <stddef.h>
#include <stdint.h>

struct sf_cred_exec;

typedef struct sf_kube_config {
	char *server;           /* "https://host:port[/path]", no trailing slash */
	char *ca_file;          /* CA bundle path (or memfd path); NULL = system CAs */
	char *client_cert_file; /* NULL when not using a client certificate */
	char *client_key_file;
	char *token;           /* static bearer token, or NULL */
	char *token_file;      /* bearer token re-read when it changes, or NULL */
	char *tls_server_name; /* TLS name (SNI and verification) if not the URL's host */
	int insecure_skip_tls_verify;
	char *proxy_url;           /* http://, https://, socks5:// or socks5h:// proxy, or NULL */
	int disable_compression;   /* no Accept-Encoding */
	struct sf_cred_exec *exec; /* exec plugin (credentials.h), or NULL; run by
	                            * sf_kube_config_auth/_token when needed */
	char *namespace;           /* from the context / in-cluster file; "default" if unset */
	char *context;             /* context name used ("" in-cluster) */
	char *source;              /* for messages: file path(s) or "in-cluster" */
	/* internal: memfds backing inline data (-1 if unused) and token cache.
	 * Setting token_checked_ns to 0 makes the next sf_kube_config_token
	 * call look at token_file at once (tests use this). */
	int memfd[3];
	char *token_cache;
	int64_t token_mtime_ns;
	int64_t token_size;
	int64_t token_checked_ns;
} sf_kube_config;

/* Loads following client-go's precedence. explicit_path is --kubeconfig
 * (NULL if not given); context overrides current-context (NULL = current).
 * Returns 0 and *out, or a negative errno with a message in err. */
int sf_kube_config_load(const char *explicit_path, const char *context, sf_kube_config **out,
                        char *err, size_t errlen);

/* Loads and merges the given kubeconfig files in order (first file to set
 * a map entry or current-context wins, as in client-go). Files that do not
 * exist are skipped, as client-go does for $KUBECONFIG; it is an error if
 * none exists. */
int sf_kube_config_load_files(const char *const *paths, size_t npaths, const char *context,
                              sf_kube_config **out, char *err, size_t errlen);

/* Parses one kubeconfig document from memory. name is used in messages;
 * relative file paths inside resolve against base_dir (NULL = cwd). */
int sf_kube_config_parse(const char *yaml, size_t len, const char *name, const char *base_dir,
                         const char *context, sf_kube_config **out, char *err, size_t errlen);

/* In-cluster: KUBERNETES_SERVICE_HOST/PORT and the service-account files
 * token, ca.crt and namespace in sa_dir (NULL =
 * /var/run/secrets/kubernetes.io/serviceaccount). As in client-go,
 * $POD_NAMESPACE overrides the namespace file, and a missing ca.crt is
 * logged and leaves ca_file NULL (system CAs). */
int sf_kube_config_in_cluster(const char *sa_dir, sf_kube_config **out, char *err, size_t errlen);

/* The bearer token to send now: the static token, token_file's content
 * (trimmed), re-read when its mtime or size changed (checked at most once a
 * second), or the exec plugin's token (run when none is cached or it is
 * about to expire). Borrowed, valid until the next call. NULL when no token
 * is configured. On a read error the last good token is kept and -errno
 * returned through *err_out if non-NULL. */
const char *sf_kube_config_token(sf_kube_config *c, int *err_out);

/* As sf_kube_config_token, with the exec plugin's error in err: 0 and
 * *token (NULL if none), or negative errno. A token file that cannot be
 * read keeps its last good token and is not an error here (the request
 * then goes without one and the server answers). When an exec plugin
 * returned a client certificate, c->exec->cert_path/key_path name it and
 * c->exec->generation changes whenever it does. */
int sf_kube_config_auth(sf_kube_config *c, const char **token, char *err, size_t errlen);

/* The server answered 401: the exec plugin's credential is dropped so the
 * next request runs it again (client-go does the same). No-op otherwise. */
void sf_kube_config_unauthorized(sf_kube_config *c);

void sf_kube_config_free(sf_kube_config *c);

#endif
