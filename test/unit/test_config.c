/*
 * test_config.c - kubeconfig loading, merging, validation, in-cluster
 * configuration and token rotation.
 *
 * Every test works in its own mkdtemp directory, removed afterwards; the
 * environment variables the loader reads are saved before and restored
 * after each test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "steadfast/config.h"
#include "steadfast/credentials.h"
#include "steadfast/log.h"

#define assert_has(s, sub) cr_assert(strstr((s), (sub)) != NULL, "expected '%s' in: %s", (sub), (s))

static const char PEM_CA[] = "-----BEGIN CERTIFICATE-----\nMIIBdGVzdC1jYQ==\n"
                             "-----END CERTIFICATE-----\n";
static const char PEM_CERT[] = "-----BEGIN CERTIFICATE-----\nMIIBdGVzdC1jZXJ0\n"
                               "-----END CERTIFICATE-----\n";
static const char PEM_KEY[] = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIHRlc3Qta2V5\n"
                              "-----END EC PRIVATE KEY-----\n";

static char dir[PATH_MAX];
static char *owned[128];
static size_t nowned;

static const char *const env_names[] = {"KUBECONFIG", "KUBERNETES_SERVICE_HOST",
                                        "KUBERNETES_SERVICE_PORT", "HOME", "POD_NAMESPACE"};
#define NENV (sizeof(env_names) / sizeof(env_names[0]))
static char *env_saved[NENV];

static char log_lines[8192];

static void capture_log(sf_log_level level, const char *line, void *ud)
{
	(void)level;
	(void)ud;
	size_t l = strlen(log_lines);
	snprintf(log_lines + l, sizeof(log_lines) - l, "%s\n", line);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "%s/sf-config-XXXXXX",
	         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	cr_assert_not_null(mkdtemp(dir));
	for (size_t i = 0; i < NENV; i++) {
		const char *v = getenv(env_names[i]);
		env_saved[i] = v ? strdup(v) : NULL;
		unsetenv(env_names[i]);
	}
	log_lines[0] = '\0';
	sf_log_set_sink(capture_log, NULL);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void teardown(void)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	for (size_t i = 0; i < NENV; i++) {
		if (env_saved[i])
			setenv(env_names[i], env_saved[i], 1);
		else
			unsetenv(env_names[i]);
		free(env_saved[i]);
	}
	for (size_t i = 0; i < nowned; i++)
		free(owned[i]);
	nowned = 0;
	sf_log_set_sink(NULL, NULL);
}

TestSuite(config, .init = setup, .fini = teardown);

/* printf into a string freed at teardown */
static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

static char *fmt(const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	char *s = NULL;
	int n = vasprintf(&s, f, ap);
	va_end(ap);
	cr_assert_geq(n, 0);
	cr_assert_lt(nowned, sizeof(owned) / sizeof(owned[0]));
	owned[nowned++] = s;
	return s;
}

static const char *tpath(const char *rel)
{
	return fmt("%s/%s", dir, rel);
}

/* Writes content to dir/rel (creating one level of subdirectory). */
static const char *put(const char *rel, const char *content)
{
	const char *p = tpath(rel);
	const char *slash = strrchr(rel, '/');
	if (slash) {
		char *sub = fmt("%s/%.*s", dir, (int)(slash - rel), rel);
		mkdir(sub, 0700);
	}
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f, "fopen %s: %s", p, strerror(errno));
	cr_assert_eq(fwrite(content, 1, strlen(content), f), strlen(content));
	cr_assert_eq(fclose(f), 0);
	return p;
}

static char *b64(const char *s, int wrap)
{
	static const char tbl[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(s);
	char *o = malloc(n / 3 * 4 + n / 3 * 4 / 8 * 2 + 16);
	cr_assert_not_null(o);
	size_t k = 0, col = 0;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned char)s[i] << 16;
		if (i + 1 < n)
			v |= (unsigned char)s[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)s[i + 2];
		o[k++] = tbl[v >> 18 & 63];
		o[k++] = tbl[v >> 12 & 63];
		o[k++] = i + 1 < n ? tbl[v >> 6 & 63] : '=';
		o[k++] = i + 2 < n ? tbl[v & 63] : '=';
		if (wrap && (col += 4) % 8 == 0) {
			o[k++] = '\n';
			o[k++] = ' ';
		}
	}
	o[k] = '\0';
	owned[nowned++] = o;
	return o;
}

static int load1(const char *path, const char *context, sf_kube_config **out, char *err,
                 size_t errlen)
{
	const char *paths[] = {path};
	return sf_kube_config_load_files(paths, 1, context, out, err, errlen);
}

/* Loads the content as dir/config and expects an error naming the file and
 * containing each of the given strings. */
static void expect_error(const char *content, const char *context, int want_rc, ...)
{
	const char *path = put("config", content);
	char err[1024] = "";
	sf_kube_config *c = NULL;
	int rc = load1(path, context, &c, err, sizeof(err));
	cr_assert_lt(rc, 0, "expected an error for:\n%s", content);
	cr_assert_null(c);
	if (want_rc)
		cr_assert_eq(rc, want_rc, "rc %d (%s): %s", rc, strerror(-rc), err);
	assert_has(err, path);
	va_list ap;
	va_start(ap, want_rc);
	for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *))
		assert_has(err, s);
	va_end(ap);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "open %s: %s", path, strerror(errno));
	char *buf = malloc(65536);
	cr_assert_not_null(buf);
	*len = fread(buf, 1, 65535, f);
	buf[*len] = '\0';
	fclose(f);
	owned[nowned++] = buf;
	return buf;
}

static const char *simple_config(const char *cluster_extra, const char *user_extra)
{
	return fmt("current-context: dev\n"
	           "clusters:\n"
	           "- name: c1\n"
	           "  cluster:\n"
	           "    server: https://api.example.com:6443\n"
	           "%s"
	           "users:\n"
	           "- name: u1\n"
	           "  user:\n"
	           "    extensions: [{name: informational, extension: {}}]\n"
	           "%s"
	           "contexts:\n"
	           "- name: dev\n"
	           "  context:\n"
	           "    cluster: c1\n"
	           "    user: u1\n",
	           cluster_extra, user_extra);
}

/* --- valid configurations ---------------------------------------------------------- */

Test(config, file_paths)
{
	const char *ca = put("ca.crt", PEM_CA);
	const char *crt = put("tls.crt", PEM_CERT);
	const char *key = put("tls.key", PEM_KEY);
	const char *path = put("config", fmt("apiVersion: v1\n"
	                                     "kind: Config\n"
	                                     "preferences: {}\n"
	                                     "unknown-top: [1, 2]\n"
	                                     "current-context: dev\n"
	                                     "clusters:\n"
	                                     "- name: c1\n"
	                                     "  cluster:\n"
	                                     "    server: https://api.example.com:6443//\n"
	                                     "    certificate-authority: %s\n"
	                                     "    tls-server-name: api.internal\n"
	                                     "    extensions: [{name: x, extension: {a: b}}]\n"
	                                     "users:\n"
	                                     "- name: u1\n"
	                                     "  user:\n"
	                                     "    client-certificate: %s\n"
	                                     "    client-key: %s\n"
	                                     "contexts:\n"
	                                     "- name: dev\n"
	                                     "  context:\n"
	                                     "    cluster: c1\n"
	                                     "    user: u1\n"
	                                     "    namespace: team-a\n",
	                                     ca, crt, key));
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(load1(path, NULL, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c->server, "https://api.example.com:6443");
	cr_assert_str_eq(c->ca_file, ca);
	cr_assert_str_eq(c->client_cert_file, crt);
	cr_assert_str_eq(c->client_key_file, key);
	cr_assert_str_eq(c->tls_server_name, "api.internal");
	cr_assert_str_eq(c->namespace, "team-a");
	cr_assert_str_eq(c->context, "dev");
	cr_assert_str_eq(c->source, path);
	cr_assert_eq(c->insecure_skip_tls_verify, 0);
	cr_assert_null(c->token);
	cr_assert_null(c->token_file);
	cr_assert_null(sf_kube_config_token(c, NULL));
	for (int i = 0; i < 3; i++)
		cr_assert_eq(c->memfd[i], -1);
	sf_kube_config_free(c);
}

Test(config, inline_data_in_memfds)
{
	const char *yaml =
	    simple_config(fmt("    certificate-authority-data: %s\n", b64(PEM_CA, 0)),
	                  fmt("    client-certificate-data: %s\n"
	                      "    client-key-data: \"%s\"\n",
	                      b64(PEM_CERT, 0), b64(PEM_KEY, 0)));
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(
	    sf_kube_config_parse(yaml, strlen(yaml), "mem", dir, NULL, &c, err, sizeof(err)), 0,
	    "%s", err);
	const char *files[3] = {c->ca_file, c->client_cert_file, c->client_key_file};
	const char *want[3] = {PEM_CA, PEM_CERT, PEM_KEY};
	int fds[3];
	for (int i = 0; i < 3; i++) {
		fds[i] = c->memfd[i];
		cr_assert_geq(fds[i], 0);
		cr_assert_str_eq(files[i], fmt("/proc/self/fd/%d", fds[i]));
		size_t len;
		const char *got = slurp(files[i], &len);
		cr_assert_eq(len, strlen(want[i]));
		cr_assert_str_eq(got, want[i]);
		cr_assert_eq(fcntl(fds[i], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	}
	sf_kube_config_free(c);
	for (int i = 0; i < 3; i++) {
		errno = 0;
		cr_assert_eq(fcntl(fds[i], F_GETFD), -1, "memfd %d still open after free", fds[i]);
		cr_assert_eq(errno, EBADF);
	}
}

Test(config, base64_with_whitespace_and_newlines)
{
	/* spaces, tabs and line breaks anywhere in the value are ignored */
	const char *data = b64(PEM_CA, 1);
	cr_assert_not_null(strchr(data, '\n'));
	const char *yaml = simple_config(
	    fmt("    certificate-authority-data: \"%.12s \\t\\r\\n%s\"\n", data, data + 12), "");
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(
	    sf_kube_config_parse(yaml, strlen(yaml), "mem", dir, NULL, &c, err, sizeof(err)), 0,
	    "%s", err);
	size_t len;
	cr_assert_str_eq(slurp(c->ca_file, &len), PEM_CA);
	sf_kube_config_free(c);

	/* a block scalar keeps the line breaks of a wrapped value */
	const char *plain = b64(PEM_CA, 0);
	yaml = simple_config(
	    fmt("    certificate-authority-data: |\n      %.16s\n      %s\n", plain, plain + 16),
	    "");
	c = NULL;
	cr_assert_eq(
	    sf_kube_config_parse(yaml, strlen(yaml), "mem", dir, NULL, &c, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_str_eq(slurp(c->ca_file, &len), PEM_CA);
	sf_kube_config_free(c);
}

Test(config, json_kubeconfig)
{
	const char *json =
	    "{\"apiVersion\":\"v1\",\"kind\":\"Config\","
	    "\"current-context\":\"j\","
	    "\"clusters\":[{\"name\":\"jc\",\"cluster\":{\"server\":\"http://127.0.0.1:8080\","
	    "\"insecure-skip-tls-verify\":false}}],"
	    "\"users\":[{\"name\":\"ju\",\"user\":{\"token\":\"abc.def\"}}],"
	    "\"contexts\":[{\"name\":\"j\",\"context\":{\"cluster\":\"jc\",\"user\":\"ju\","
	    "\"namespace\":\"json-ns\"}}]}";
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(
	    sf_kube_config_parse(json, strlen(json), "j.json", NULL, NULL, &c, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_str_eq(c->server, "http://127.0.0.1:8080");
	cr_assert_str_eq(c->namespace, "json-ns");
	cr_assert_str_eq(sf_kube_config_token(c, NULL), "abc.def");
	cr_assert_eq(c->insecure_skip_tls_verify, 0);
	sf_kube_config_free(c);
}

Test(config, namespace_defaults)
{
	const char *path = put("config", simple_config("", "    token: t0k\n"));
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(load1(path, NULL, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c->namespace, "default");
	int e = -1;
	cr_assert_str_eq(sf_kube_config_token(c, &e), "t0k");
	cr_assert_eq(e, 0);
	sf_kube_config_free(c);
}

Test(config, server_normalized)
{
	const char *yaml = "current-context: a\n"
	                   "clusters: [{name: c, cluster: {server: 'api.example.com:6443/'}}]\n"
	                   "contexts: [{name: a, context: {cluster: c}}]\n";
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(
	    sf_kube_config_parse(yaml, strlen(yaml), "m", NULL, NULL, &c, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_str_eq(c->server, "https://api.example.com:6443");
	sf_kube_config_free(c);

	yaml = "current-context: a\n"
	       "clusters: [{name: c, cluster: {server: 'https://h.example/prefix/'}}]\n"
	       "contexts: [{name: a, context: {cluster: c}}]\n";
	cr_assert_eq(
	    sf_kube_config_parse(yaml, strlen(yaml), "m", NULL, NULL, &c, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_str_eq(c->server, "https://h.example/prefix");
	sf_kube_config_free(c);
}

Test(config, context_override)
{
	const char *yaml = "current-context: one\n"
	                   "clusters:\n"
	                   "- {name: c1, cluster: {server: 'https://one.example'}}\n"
	                   "- {name: c2, cluster: {server: 'https://two.example'}}\n"
	                   "contexts:\n"
	                   "- {name: one, context: {cluster: c1, namespace: ns1}}\n"
	                   "- {name: two, context: {cluster: c2, namespace: ns2}}\n";
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(
	    sf_kube_config_parse(yaml, strlen(yaml), "m", NULL, "two", &c, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_str_eq(c->server, "https://two.example");
	cr_assert_str_eq(c->namespace, "ns2");
	cr_assert_str_eq(c->context, "two");
	sf_kube_config_free(c);
	cr_assert_eq(
	    sf_kube_config_parse(yaml, strlen(yaml), "m", NULL, NULL, &c, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_str_eq(c->server, "https://one.example");
	cr_assert_str_eq(c->context, "one");
	sf_kube_config_free(c);
}

Test(config, merge_first_file_wins)
{
	const char *a =
	    put("a", "clusters:\n"
	             "- {name: shared, cluster: {server: 'https://a.example'}}\n"
	             "contexts:\n"
	             "- {name: ctx-b, context: {cluster: shared, namespace: from-a}}\n");
	const char *b = put("b", "current-context: ctx-b\n"
	                         "clusters:\n"
	                         "- {name: shared, cluster: {server: 'https://b.example'}}\n"
	                         "- {name: only-b, cluster: {server: 'https://only-b.example'}}\n"
	                         "contexts:\n"
	                         "- {name: ctx-b, context: {cluster: only-b, namespace: from-b}}\n"
	                         "- {name: other, context: {cluster: only-b}}\n");
	const char *paths[] = {a, b};
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(sf_kube_config_load_files(paths, 2, NULL, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c->context, "ctx-b"); /* current-context from b, the only setter */
	cr_assert_str_eq(c->server, "https://a.example"); /* context and cluster from a */
	cr_assert_str_eq(c->namespace, "from-a");
	cr_assert_str_eq(c->source, fmt("%s:%s", a, b));
	sf_kube_config_free(c);

	cr_assert_eq(sf_kube_config_load_files(paths, 2, "other", &c, err, sizeof(err)), 0, "%s",
	             err);
	cr_assert_str_eq(c->server, "https://only-b.example");
	sf_kube_config_free(c);
}

Test(config, merge_current_context_from_first_setter)
{
	const char *a =
	    put("a", "current-context: one\n"
	             "clusters: [{name: c1, cluster: {server: 'https://one.example'}}]\n"
	             "contexts: [{name: one, context: {cluster: c1}}]\n");
	const char *b =
	    put("b", "current-context: two\n"
	             "clusters: [{name: c2, cluster: {server: 'https://two.example'}}]\n"
	             "contexts: [{name: two, context: {cluster: c2}}]\n");
	const char *empty = put("empty", "");
	const char *paths[] = {empty, b, a};
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(sf_kube_config_load_files(paths, 3, NULL, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c->context, "two");
	cr_assert_str_eq(c->server, "https://two.example");
	sf_kube_config_free(c);
	paths[1] = a;
	paths[2] = b;
	cr_assert_eq(sf_kube_config_load_files(paths, 3, NULL, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c->context, "one");
	cr_assert_str_eq(c->server, "https://one.example");
	sf_kube_config_free(c);
}

Test(config, merge_user_from_later_file)
{
	/* entries referenced from one file may live in another */
	const char *a = put("a", "current-context: x\n"
	                         "contexts: [{name: x, context: {cluster: c, user: u}}]\n");
	const char *b = put("b", "clusters: [{name: c, cluster: {server: 'https://b.example'}}]\n"
	                         "users: [{name: u, user: {token: from-b}}]\n");
	const char *paths[] = {a, b};
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(sf_kube_config_load_files(paths, 2, NULL, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c->token, "from-b");
	cr_assert_str_eq(c->server, "https://b.example");
	sf_kube_config_free(c);
}

Test(config, relative_paths_resolve_against_file_dir)
{
	put("sub/ca.crt", PEM_CA);
	put("tok", "sa-token\n");
	const char *path = put("sub/config", simple_config("    certificate-authority: ca.crt\n",
	                                                   "    tokenFile: ../tok\n"));
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(load1(path, NULL, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c->ca_file, fmt("%s/sub/ca.crt", dir));
	cr_assert_str_eq(c->token_file, fmt("%s/sub/../tok", dir));
	cr_assert_str_eq(sf_kube_config_token(c, NULL), "sa-token");
	sf_kube_config_free(c);

	/* a kubeconfig named by a relative path: its directory is made absolute */
	cr_assert_eq(chdir(dir), 0);
	char cwd[PATH_MAX];
	cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
	cr_assert_eq(load1("sub/config", NULL, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c->ca_file, fmt("%s/sub/ca.crt", cwd));
	sf_kube_config_free(c);
}

Test(config, data_wins_over_file_and_token_over_token_file)
{
	put("tok", "from-file");
	const char *yaml =
	    simple_config(fmt("    certificate-authority: /nonexistent/ca.crt\n"
	                      "    certificate-authority-data: %s\n",
	                      b64(PEM_CA, 0)),
	                  fmt("    token: static-token\n    tokenFile: %s\n", tpath("tok")));
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(sf_kube_config_parse(yaml, strlen(yaml), "m", dir, NULL, &c, err, sizeof(err)),
	             0, "%s", err);
	cr_assert_str_eq(c->ca_file, fmt("/proc/self/fd/%d", c->memfd[0]));
	cr_assert_str_eq(c->token, "static-token");
	cr_assert_null(c->token_file);
	cr_assert_str_eq(sf_kube_config_token(c, NULL), "static-token");
	sf_kube_config_free(c);
}

Test(config, insecure_sets_flag_and_warns)
{
	const char *yaml = "current-context: a\n"
	                   "clusters: [{name: risky, cluster: {server: 'https://h', "
	                   "insecure-skip-tls-verify: true}}]\n"
	                   "contexts: [{name: a, context: {cluster: risky}}]\n";
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(
	    sf_kube_config_parse(yaml, strlen(yaml), "m", NULL, NULL, &c, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(c->insecure_skip_tls_verify, 1);
	cr_assert_null(c->ca_file);
	assert_has(log_lines, "\"level\":\"warn\"");
	assert_has(log_lines, "\"logger\":\"kube.config\"");
	assert_has(log_lines, "\"cluster\":\"risky\"");
	sf_kube_config_free(c);
}

/* --- broken files ---------------------------------------------------------------- */

Test(config, error_yaml_syntax)
{
	expect_error("current-context: dev\nclusters: x: y\n", NULL, -EINVAL, "YAML syntax error",
	             "config:2:", NULL);
	expect_error("clusters:\n- name: a\n  cluster: {server: x\nusers: []\n", NULL, -EINVAL,
	             "YAML syntax error", NULL);
}

Test(config, error_invalid_utf8)
{
	expect_error("current-context: \x80\x81\n", NULL, -EINVAL, "config:1:18:", "UTF-8",
	             "byte 17", NULL);
}

Test(config, error_missing_server)
{
	expect_error("current-context: a\nclusters:\n- name: c\n  cluster:\n"
	             "    certificate-authority: x\ncontexts: [{name: a, context: {cluster: c}}]\n",
	             NULL, -EINVAL, "clusters[0].cluster.server: missing", NULL);
	expect_error("current-context: a\nclusters:\n- name: c\n"
	             "contexts: [{name: a, context: {cluster: c}}]\n",
	             NULL, -EINVAL, "clusters[0].cluster.server: missing", NULL);
}

Test(config, error_unknown_context)
{
	const char *yaml = simple_config("", "");
	char *renamed = fmt("%s", yaml);
	memcpy(strstr(renamed, "current-context: dev"), "current-context: xyz", 20);
	expect_error(renamed, NULL, -ENOENT, "current-context", "context \"xyz\" not found", NULL);
	expect_error(yaml, "nope", -ENOENT, "context \"nope\" not found", NULL);
}

Test(config, error_unknown_user)
{
	expect_error("current-context: dev\n"
	             "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
	             "users: [{name: alice, user: {token: t}}]\n"
	             "contexts: [{name: dev, context: {cluster: c, user: bob}}]\n",
	             NULL, -ENOENT, "context \"dev\": user \"bob\" not found", NULL);
}

Test(config, error_unknown_cluster)
{
	expect_error("current-context: dev\n"
	             "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
	             "contexts: [{name: dev, context: {cluster: prod}}]\n",
	             NULL, -ENOENT, "context \"dev\": cluster \"prod\" not found", NULL);
	expect_error("current-context: dev\n"
	             "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
	             "contexts: [{name: dev, context: {namespace: x}}]\n",
	             NULL, -EINVAL, "contexts[0].context.cluster", "missing", NULL);
}

Test(config, error_bad_base64)
{
	static const char *const bad[] = {"abc",   "ab=c",     "a===",     "ab*d",     "=abc",
	                                  "QUJD=", "QUI=QUJD", "QQ==QQ==", "QUJD\\x01"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_error(
		    simple_config(fmt("    certificate-authority-data: \"%s\"\n", bad[i]), ""),
		    NULL, -EINVAL, "clusters[0].cluster.certificate-authority-data",
		    "invalid base64", NULL);
	expect_error(simple_config("", "    client-key-data: '!!!!'\n"), NULL, -EINVAL,
	             "users[0].user.client-key-data", "invalid base64", NULL);
}

Test(config, error_data_not_pem)
{
	expect_error(
	    simple_config(fmt("    certificate-authority-data: %s\n", b64("hello", 0)), ""), NULL,
	    -EINVAL, "clusters[0].cluster.certificate-authority-data", "not PEM", NULL);
	expect_error(simple_config("", fmt("    client-certificate-data: %s\n"
	                                   "    client-key-data: %s\n",
	                                   b64(PEM_CERT, 0), b64("not a key", 0))),
	             NULL, -EINVAL, "users[0].user.client-key-data", "not PEM", NULL);
}

Test(config, error_cert_without_key)
{
	expect_error(simple_config("", fmt("    client-certificate-data: %s\n", b64(PEM_CERT, 0))),
	             NULL, -EINVAL, "users[0].user", "client-certificate without client-key", NULL);
	put("k", PEM_KEY);
	expect_error(simple_config("", fmt("    client-key: %s\n", tpath("k"))), NULL, -EINVAL,
	             "users[0].user", "client-key without client-certificate", NULL);
}

Test(config, error_missing_referenced_file)
{
	expect_error(simple_config("    certificate-authority: missing-ca.crt\n", ""), NULL,
	             -ENOENT, "clusters[0].cluster.certificate-authority",
	             fmt("%s/missing-ca.crt", dir), strerror(ENOENT), NULL);
	put("c", PEM_CERT);
	expect_error(simple_config("", "    client-certificate: c\n    client-key: nokey\n"), NULL,
	             -ENOENT, "users[0].user.client-key", fmt("%s/nokey", dir), strerror(ENOENT),
	             NULL);
	expect_error(simple_config("", "    tokenFile: /nonexistent/token\n"), NULL, -ENOENT,
	             "users[0].user.tokenFile", "/nonexistent/token", strerror(ENOENT), NULL);
	mkdir(tpath("adir"), 0700);
	expect_error(simple_config("    certificate-authority: adir\n", ""), NULL, -EISDIR,
	             "certificate-authority", strerror(EISDIR), NULL);
}

Test(config, error_exec_plugin_and_auth_provider)
{
	expect_error("current-context: dev\n"
	             "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
	             "users:\n"
	             "- name: bob\n"
	             "  user:\n"
	             "    exec:\n"
	             "      apiVersion: client.authentication.k8s.io/v1\n"
	             "      command: aws\n"
	             "contexts: [{name: dev, context: {cluster: c, user: bob}}]\n",
	             NULL, -EINVAL, "users[0].user.exec.interactiveMode", "\"bob\"", "missing",
	             NULL);
	expect_error("current-context: dev\n"
	             "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
	             "users: [{name: g, user: {auth-provider: {name: gcp}}}]\n"
	             "contexts: [{name: dev, context: {cluster: c, user: g}}]\n",
	             NULL, -ENOTSUP, "auth-provider", "\"g\"", NULL);
}

Test(config, error_insecure_with_ca)
{
	expect_error(simple_config(fmt("    insecure-skip-tls-verify: true\n"
	                               "    certificate-authority-data: %s\n",
	                               b64(PEM_CA, 0)),
	                           ""),
	             NULL, -EINVAL, "clusters[0].cluster", "insecure flag is not allowed", NULL);
	cr_assert_null(strstr(log_lines, "disabled"), "no warning for a refused config");
	expect_error(simple_config("    insecure-skip-tls-verify: maybe\n", ""), NULL, -EINVAL,
	             "clusters[0].cluster.insecure-skip-tls-verify", "expected true or false",
	             NULL);
}

Test(config, error_bad_scheme)
{
	expect_error("current-context: a\nclusters: [{name: c, cluster: {server: 'ftp://x'}}]\n"
	             "contexts: [{name: a, context: {cluster: c}}]\n",
	             NULL, -EINVAL,
	             "clusters[0].cluster.server \"ftp://x\": scheme must be https or http", NULL);
	expect_error("current-context: a\nclusters: [{name: c, cluster: {server: 'https://'}}]\n"
	             "contexts: [{name: a, context: {cluster: c}}]\n",
	             NULL, -EINVAL, "clusters[0].cluster.server", "missing host", NULL);
}

Test(config, error_empty_file)
{
	expect_error("", NULL, -EINVAL, "configuration is empty", "current-context", NULL);
	expect_error("# only a comment\n", NULL, -EINVAL, "configuration is empty", NULL);
}

Test(config, error_not_a_mapping)
{
	expect_error("- a\n- b\n", NULL, -EINVAL, "top level: expected a mapping, got a list",
	             NULL);
	expect_error("just a string\n", NULL, -EINVAL, "top level: expected a mapping", NULL);
	expect_error("clusters: {a: b}\n", NULL, -EINVAL, "clusters: expected a list", NULL);
	expect_error("clusters: [a]\n", NULL, -EINVAL, "clusters[0]: expected a mapping", NULL);
	expect_error("users: [{name: [x]}]\n", NULL, -EINVAL, "users[0].name: expected a string",
	             NULL);
	expect_error("contexts: [{context: {}}]\n", NULL, -EINVAL, "contexts[0].name: missing",
	             NULL);
	expect_error("clusters: [{name: c, cluster: [1]}]\n", NULL, -EINVAL,
	             "clusters[0].cluster: expected a mapping", NULL);
	/* a list that contains itself through an alias */
	expect_error("clusters: &a [*a]\n", NULL, -EINVAL, "anchor 'a' value contains itself",
	             NULL);
}

Test(config, error_duplicate_name)
{
	expect_error("clusters:\n- {name: c, cluster: {server: 'https://a'}}\n"
	             "- {name: c, cluster: {server: 'https://b'}}\n",
	             NULL, -EINVAL, "clusters[1].name: duplicate name \"c\"", NULL);
}

Test(config, error_none_of_the_files_exist)
{
	const char *paths[] = {tpath("nope1"), "", tpath("nope2")};
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(sf_kube_config_load_files(paths, 3, NULL, &c, err, sizeof(err)), -ENOENT);
	cr_assert_null(c);
	assert_has(err, paths[0]);
	assert_has(err, paths[2]);
}

Test(config, error_unreadable_is_not_skipped)
{
	mkdir(tpath("isdir"), 0700);
	const char *good = put("good", simple_config("", ""));
	const char *paths[] = {tpath("isdir"), good};
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(sf_kube_config_load_files(paths, 2, NULL, &c, err, sizeof(err)), -EISDIR);
	assert_has(err, paths[0]);
}

/* --- precedence -------------------------------------------------------------------- */

Test(config, load_explicit_path_wins)
{
	const char *a = put("a", simple_config("", ""));
	const char *b = put("b", "current-context: x\n"
	                         "clusters: [{name: c, cluster: {server: 'https://b.example'}}]\n"
	                         "contexts: [{name: x, context: {cluster: c}}]\n");
	setenv("KUBECONFIG", b, 1);
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(sf_kube_config_load(a, NULL, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c->source, a);
	sf_kube_config_free(c);

	/* an explicit path must exist */
	const char *missing = tpath("missing");
	cr_assert_eq(sf_kube_config_load(missing, NULL, &c, err, sizeof(err)), -ENOENT);
	cr_assert_null(c);
	assert_has(err, missing);
}

Test(config, load_kubeconfig_env_skips_missing_and_empty_entries)
{
	const char *a = put("a", simple_config("", ""));
	const char *b = put("b", "clusters: [{name: c1, cluster: {server: 'https://other'}}]\n");
	setenv("KUBECONFIG", fmt("::%s:%s::%s:", tpath("missing"), a, b), 1);
	setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(sf_kube_config_load(NULL, NULL, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c->source, fmt("%s:%s", a, b));
	cr_assert_str_eq(c->server, "https://api.example.com:6443");
	sf_kube_config_free(c);

	setenv("KUBECONFIG", fmt("%s:%s", tpath("m1"), tpath("m2")), 1);
	cr_assert_eq(sf_kube_config_load(NULL, NULL, &c, err, sizeof(err)), -ENOENT);
	assert_has(err, tpath("m1"));
	assert_has(err, tpath("m2"));
}

Test(config, load_in_cluster_before_home)
{
	put(".kube/config", simple_config("", ""));
	setenv("HOME", dir, 1);
	setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	sf_kube_config *c = NULL;
	char err[512] = "";
	/* the default service-account directory does not exist here */
	int rc = sf_kube_config_load(NULL, NULL, &c, err, sizeof(err));
	if (rc == 0) {
		cr_assert_str_eq(c->source, "in-cluster");
		sf_kube_config_free(c);
	} else {
		assert_has(err, "in-cluster");
		assert_has(err, "/var/run/secrets/kubernetes.io/serviceaccount/token");
	}
	/* a requested context skips in-cluster, which has none */
	cr_assert_eq(sf_kube_config_load(NULL, "dev", &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c->source, fmt("%s/.kube/config", dir));
	sf_kube_config_free(c);
}

Test(config, load_home_fallback_and_nothing_found)
{
	setenv("HOME", dir, 1);
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(sf_kube_config_load(NULL, NULL, &c, err, sizeof(err)), -ENOENT);
	cr_assert_null(c);
	assert_has(err, "KUBECONFIG");
	assert_has(err, "in-cluster");
	assert_has(err, fmt("%s/.kube/config", dir));

	put(".kube/config", simple_config("", ""));
	setenv("KUBECONFIG", ":", 1); /* only separators: as if unset */
	cr_assert_eq(sf_kube_config_load(NULL, NULL, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c->source, fmt("%s/.kube/config", dir));
	cr_assert_str_eq(c->context, "dev");
	sf_kube_config_free(c);
}

/* --- in-cluster ---------------------------------------------------------------------- */

static const char *sa_dir(const char *token, const char *ns, int with_ca)
{
	const char *d = tpath("sa");
	mkdir(d, 0700);
	if (token)
		put("sa/token", token);
	if (ns)
		put("sa/namespace", ns);
	if (with_ca)
		put("sa/ca.crt", PEM_CA);
	return d;
}

Test(config, in_cluster)
{
	const char *d = sa_dir("sa-token-1\n", "  kube-system \n", 1);
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(sf_kube_config_in_cluster(d, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c->server, "https://10.96.0.1:443");
	cr_assert_str_eq(c->token_file, fmt("%s/token", d));
	cr_assert_str_eq(c->ca_file, fmt("%s/ca.crt", d));
	cr_assert_str_eq(c->namespace, "kube-system");
	cr_assert_str_eq(c->source, "in-cluster");
	cr_assert_str_eq(c->context, "");
	cr_assert_null(c->token);
	int e = -1;
	cr_assert_str_eq(sf_kube_config_token(c, &e), "sa-token-1");
	cr_assert_eq(e, 0);
	sf_kube_config_free(c);

	setenv("POD_NAMESPACE", "from-env", 1);
	cr_assert_eq(sf_kube_config_in_cluster(d, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c->namespace, "from-env");
	sf_kube_config_free(c);
}

Test(config, in_cluster_ipv6_and_default_namespace)
{
	const char *d = sa_dir("t", NULL, 0);
	setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(sf_kube_config_in_cluster(d, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c->server, "https://[fd00:10:96::1]:6443");
	cr_assert_str_eq(c->namespace, "default");
	cr_assert_null(c->ca_file); /* missing ca.crt: system CAs, as client-go */
	assert_has(log_lines, "ca.crt");
	sf_kube_config_free(c);
}

Test(config, in_cluster_errors)
{
	const char *d = sa_dir(NULL, "ns", 1);
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(sf_kube_config_in_cluster(d, &c, err, sizeof(err)), -ENOENT);
	assert_has(err, "KUBERNETES_SERVICE_HOST");
	setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
	cr_assert_eq(sf_kube_config_in_cluster(d, &c, err, sizeof(err)), -ENOENT);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	/* no token file */
	cr_assert_eq(sf_kube_config_in_cluster(d, &c, err, sizeof(err)), -ENOENT);
	cr_assert_null(c);
	assert_has(err, fmt("%s/token", d));
	assert_has(err, strerror(ENOENT));
}

/* --- token rotation ------------------------------------------------------------------ */

static sf_kube_config *token_file_config(const char *tok_path)
{
	const char *yaml = simple_config("", fmt("    tokenFile: %s\n", tok_path));
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(sf_kube_config_parse(yaml, strlen(yaml), "m", dir, NULL, &c, err, sizeof(err)),
	             0, "%s", err);
	return c;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

Test(config, token_file_rotation)
{
	const char *tok = put("token", "first-token\n");
	sf_kube_config *c = token_file_config(tok);
	int e = -1;
	double t0 = mono_s();
	cr_assert_str_eq(sf_kube_config_token(c, &e), "first-token");
	cr_assert_eq(e, 0);
	put("token", "  second-token-longer \n");
	const char *got = sf_kube_config_token(c, &e);
	if (mono_s() - t0 < 0.9) /* within the check interval: cached */
		cr_assert_str_eq(got, "first-token");
	c->token_checked_ns = 0; /* forces the next call to look at the file */
	cr_assert_str_eq(sf_kube_config_token(c, &e), "second-token-longer");
	cr_assert_eq(e, 0);

	/* same size, new content: noticed through the mtime */
	put("token", "second-token-LONGER");
	struct timespec ts[2] = {{.tv_sec = 1000000000, .tv_nsec = 0},
	                         {.tv_sec = 1000000000, .tv_nsec = 0}};
	cr_assert_eq(utimensat(AT_FDCWD, tok, ts, 0), 0);
	c->token_checked_ns = 0;
	cr_assert_str_eq(sf_kube_config_token(c, &e), "second-token-LONGER");
	sf_kube_config_free(c);
}

Test(config, token_file_rotation_after_interval)
{
	const char *tok = put("token", "aaa");
	sf_kube_config *c = token_file_config(tok);
	cr_assert_str_eq(sf_kube_config_token(c, NULL), "aaa");
	put("token", "bbbb");
	usleep(1100 * 1000);
	cr_assert_str_eq(sf_kube_config_token(c, NULL), "bbbb");
	sf_kube_config_free(c);
}

Test(config, token_file_empty_or_gone_keeps_last_good)
{
	const char *tok = put("token", "good-token");
	sf_kube_config *c = token_file_config(tok);
	int e = -1;
	cr_assert_str_eq(sf_kube_config_token(c, &e), "good-token");
	put("token", "");
	c->token_checked_ns = 0;
	cr_assert_str_eq(sf_kube_config_token(c, &e), "good-token");
	cr_assert_eq(e, -ENODATA);
	put("token", " \n\t\n");
	c->token_checked_ns = 0;
	cr_assert_str_eq(sf_kube_config_token(c, &e), "good-token");
	cr_assert_eq(e, -ENODATA);
	put("token", "bad\ntoken");
	c->token_checked_ns = 0;
	cr_assert_str_eq(sf_kube_config_token(c, &e), "good-token");
	cr_assert_eq(e, -EINVAL);
	cr_assert_eq(unlink(tok), 0);
	c->token_checked_ns = 0;
	cr_assert_str_eq(sf_kube_config_token(c, &e), "good-token");
	cr_assert_eq(e, -ENOENT);
	put("token", "back-again");
	c->token_checked_ns = 0;
	cr_assert_str_eq(sf_kube_config_token(c, &e), "back-again");
	cr_assert_eq(e, 0);
	sf_kube_config_free(c);
}

Test(config, token_file_empty_from_start)
{
	const char *tok = put("token", "");
	sf_kube_config *c = token_file_config(tok);
	int e = 0;
	cr_assert_null(sf_kube_config_token(c, &e));
	cr_assert_eq(e, -ENODATA);
	/* no good token yet: every call looks again and reports */
	e = 0;
	cr_assert_null(sf_kube_config_token(c, &e));
	cr_assert_eq(e, -ENODATA);
	put("token", "now-set");
	cr_assert_str_eq(sf_kube_config_token(c, &e), "now-set");
	cr_assert_eq(e, 0);
	sf_kube_config_free(c);
}

/* --- fields we refuse, honour or ignore ------------------------------------------- */

/* A config whose selected user "x" has the given user fields. */
static const char *user_config(const char *user_fields)
{
	return fmt("current-context: dev\n"
	           "clusters: [{name: c, cluster: {server: 'https://h:6443'}}]\n"
	           "users:\n"
	           "- name: other\n"
	           "  user: {username: not-selected, password: never-read}\n"
	           "- name: x\n"
	           "  user:\n"
	           "%s"
	           "contexts: [{name: dev, context: {cluster: c, user: x}}]\n",
	           user_fields);
}

Test(config, refused_user_fields)
{
	static const struct {
		const char *yaml, *field, *why;
	} cases[] = {
	    {"    as: admin\n", "\"as\"", "impersonation"},
	    {"    as-uid: \"1234\"\n", "\"as-uid\"", "impersonation"},
	    {"    as-groups: [system:masters]\n", "\"as-groups\"", "impersonation"},
	    {"    as-user-extra: {scopes: [a]}\n", "\"as-user-extra\"", "impersonation"},
	    {"    username: alice\n", "\"username\"", "basic authentication"},
	    {"    password: secret\n", "\"password\"", "basic authentication"},
	    {"    auth-provider: {name: oidc}\n", "\"auth-provider\"", "auth-provider"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_error(user_config(fmt("    token: t\n%s", cases[i].yaml)), NULL, -ENOTSUP,
		             "users[1].user", "user \"x\"", fmt("field %s", cases[i].field),
		             cases[i].why, "is not supported", NULL);
	/* empty values are unset, as in client-go */
	const char *path =
	    put("config", user_config("    token: t\n    as: ''\n    as-groups: []\n"));
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(load1(path, NULL, &c, err, sizeof(err)), 0, "%s", err);
	sf_kube_config_free(c);
}

Test(config, refused_cluster_and_context_fields)
{
	expect_error(
	    "current-context: dev\n"
	    "clusters: [{name: c, cluster: {server: 'https://h', proxy-url: 'ftp://p:1'}}]\n"
	    "contexts: [{name: dev, context: {cluster: c}}]\n",
	    NULL, -EINVAL, "clusters[0].cluster.proxy-url", "\"ftp://p:1\"", "http, https, socks5",
	    NULL);
	expect_error("current-context: dev\n"
	             "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
	             "contexts: [{name: dev, context: {cluster: c, namespace: [a]}}]\n",
	             NULL, -EINVAL, "contexts[0].context.namespace", "expected a string", NULL);
}

Test(config, unknown_fields_are_warned_and_ignored)
{
	const char *path = put("config", "current-context: dev\n"
	                                 "clusters: [{name: c, cluster: {server: 'https://h', "
	                                 "colour: blue}}]\n"
	                                 "users: [{name: u, user: {token: t, flavour: x}}]\n"
	                                 "contexts: [{name: dev, context: {cluster: c, user: u, "
	                                 "mood: ok}}]\n");
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(load1(path, NULL, &c, err, sizeof(err)), 0, "%s", err);
	assert_has(log_lines, "unknown kubeconfig field ignored");
	assert_has(log_lines, "clusters[0].cluster.colour");
	assert_has(log_lines, "users[0].user.flavour");
	assert_has(log_lines, "contexts[0].context.mood");
	sf_kube_config_free(c);
}

Test(config, proxy_url_and_disable_compression)
{
	const char *path = put("config", "current-context: dev\n"
	                                 "clusters: [{name: c, cluster: {server: 'https://h/pfx', "
	                                 "proxy-url: 'http://127.0.0.1:3128', "
	                                 "disable-compression: true}}]\n"
	                                 "contexts: [{name: dev, context: {cluster: c}}]\n");
	sf_kube_config *c = NULL;
	char err[512] = "";
	cr_assert_eq(load1(path, NULL, &c, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c->server, "https://h/pfx");
	cr_assert_str_eq(c->proxy_url, "http://127.0.0.1:3128");
	cr_assert_eq(c->disable_compression, 1);
	sf_kube_config_free(c);
}

/* --- exec credential plugins ------------------------------------------------------ */

/* An executable script at dir/rel. */
static const char *put_script(const char *rel, const char *body)
{
	const char *p = put(rel, fmt("#!/bin/sh\n%s", body));
	cr_assert_eq(chmod(p, 0700), 0);
	return p;
}

static const char *exec_config(const char *exec_fields)
{
	return fmt("current-context: dev\n"
	           "clusters: [{name: c, cluster: {server: 'https://h:6443', "
	           "tls-server-name: api.internal}}]\n"
	           "users:\n"
	           "- name: plug\n"
	           "  user:\n"
	           "    exec:\n"
	           "%s"
	           "contexts: [{name: dev, context: {cluster: c, user: plug}}]\n",
	           exec_fields);
}

static sf_kube_config *load_ok(const char *yaml)
{
	const char *path = put("config", yaml);
	sf_kube_config *c = NULL;
	char err[1024] = "";
	cr_assert_eq(load1(path, NULL, &c, err, sizeof(err)), 0, "%s", err);
	return c;
}

Test(config, exec_plugin_token_args_env_and_exec_info)
{
	put_script("plugin",
	           "n=$(cat \"$0.count\" 2>/dev/null || echo 0)\n"
	           "echo $((n + 1)) > \"$0.count\"\n"
	           "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$0.info\"\n"
	           "printf '%s %s' \"$1\" \"$PLUGIN_VAR\" > \"$0.args\"\n"
	           "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
	           "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"tok-'$((n + 1))'\"}}'\n");
	sf_kube_config *c =
	    load_ok(exec_config("      apiVersion: client.authentication.k8s.io/v1\n"
	                        "      command: ./plugin\n"
	                        "      args: [first]\n"
	                        "      env: [{name: PLUGIN_VAR, value: v1}]\n"
	                        "      interactiveMode: Never\n"
	                        "      provideClusterInfo: true\n"));
	cr_assert_not_null(c->exec);
	int e = 0;
	cr_assert_str_eq(sf_kube_config_token(c, &e), "tok-1");
	cr_assert_eq(e, 0);
	/* no expiry: cached */
	cr_assert_str_eq(sf_kube_config_token(c, &e), "tok-1");
	size_t len;
	cr_assert_str_eq(slurp(tpath("plugin.count"), &len), "1\n");
	cr_assert_str_eq(slurp(tpath("plugin.args"), &len), "first v1");
	const char *info = slurp(tpath("plugin.info"), &len);
	assert_has(info, "\"apiVersion\":\"client.authentication.k8s.io/v1\"");
	assert_has(info, "\"kind\":\"ExecCredential\"");
	assert_has(info, "\"interactive\":false");
	assert_has(info, "\"server\":\"https://h:6443\"");
	assert_has(info, "\"tls-server-name\":\"api.internal\"");
	/* after a 401 the plugin runs again */
	sf_kube_config_unauthorized(c);
	cr_assert_str_eq(sf_kube_config_token(c, &e), "tok-2");
	cr_assert_str_eq(slurp(tpath("plugin.count"), &len), "2\n");
	sf_kube_config_free(c);
}

Test(config, exec_plugin_expiry_reruns)
{
	/* an expiry inside the refresh margin is "expired now": each use runs it */
	put_script("plugin", "n=$(cat \"$0.count\" 2>/dev/null || echo 0)\n"
	                     "echo $((n + 1)) > \"$0.count\"\n"
	                     "exp=$(date -u -d '+2 seconds' +%Y-%m-%dT%H:%M:%SZ)\n"
	                     "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
	                     "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t'$n'\","
	                     "\"expirationTimestamp\":\"'$exp'\"}}'\n");
	sf_kube_config *c =
	    load_ok(exec_config("      apiVersion: client.authentication.k8s.io/v1beta1\n"
	                        "      command: ./plugin\n"));
	cr_assert_str_eq(sf_kube_config_token(c, NULL), "t0");
	cr_assert_str_eq(sf_kube_config_token(c, NULL), "t1");
	size_t len;
	cr_assert_str_eq(slurp(tpath("plugin.count"), &len), "2\n");
	cr_assert_gt(c->exec->expiry_ns, 0);
	sf_kube_config_free(c);
}

Test(config, exec_plugin_client_certificate)
{
	put_script("plugin", fmt("echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
	                         "\"kind\":\"ExecCredential\",\"status\":{"
	                         "\"clientCertificateData\":\"%s\",\"clientKeyData\":\"%s\"}}'\n",
	                         "-----BEGIN CERTIFICATE-----\\\\nMIIB\\\\n-----END "
	                         "CERTIFICATE-----\\\\n",
	                         "-----BEGIN EC PRIVATE KEY-----\\\\nMHcC\\\\n-----END EC PRIVATE "
	                         "KEY-----\\\\n"));
	sf_kube_config *c =
	    load_ok(exec_config("      apiVersion: client.authentication.k8s.io/v1\n"
	                        "      command: ./plugin\n"
	                        "      interactiveMode: IfAvailable\n"));
	char err[512] = "";
	const char *tok = (const char *)1;
	cr_assert_eq(sf_kube_config_auth(c, &tok, err, sizeof(err)), 0, "%s", err);
	cr_assert_null(tok);
	size_t len;
	cr_assert_not_null(c->exec->cert_path);
	cr_assert_str_eq(slurp(c->exec->cert_path, &len),
	                 "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
	assert_has(slurp(c->exec->key_path, &len), "BEGIN EC PRIVATE KEY");
	sf_kube_config_free(c);
}

Test(config, exec_plugin_failures_are_clear)
{
	put_script("fails", "echo 'token expired: run login' >&2\necho second >&2\nexit 3\n");
	sf_kube_config *c =
	    load_ok(exec_config("      apiVersion: client.authentication.k8s.io/v1\n"
	                        "      command: ./fails\n"
	                        "      interactiveMode: Never\n"
	                        "      installHint: 'install it from the wiki'\n"));
	char err[1024] = "";
	const char *tok;
	cr_assert_eq(sf_kube_config_auth(c, &tok, err, sizeof(err)), -EIO, "%s", err);
	assert_has(err, "exec plugin");
	assert_has(err, "fails");
	assert_has(err, "user \"plug\"");
	assert_has(err, "exit status 3");
	assert_has(err, "token expired: run login");
	assert_has(err, "install it from the wiki");
	sf_kube_config_free(c);

	c = load_ok(exec_config("      apiVersion: client.authentication.k8s.io/v1\n"
	                        "      command: ./not-there\n"
	                        "      interactiveMode: Never\n"
	                        "      installHint: get not-there\n"));
	cr_assert_lt(sf_kube_config_auth(c, &tok, err, sizeof(err)), 0);
	assert_has(err, "not-there");
	assert_has(err, "get not-there");
	sf_kube_config_free(c);

	put_script("wrongver", "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
	                       "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"x\"}}'\n");
	c = load_ok(exec_config("      apiVersion: client.authentication.k8s.io/v1\n"
	                        "      command: ./wrongver\n"
	                        "      interactiveMode: Never\n"));
	cr_assert_eq(sf_kube_config_auth(c, &tok, err, sizeof(err)), -EINVAL, "%s", err);
	assert_has(err, "client.authentication.k8s.io/v1beta1");
	sf_kube_config_free(c);

	put_script("notoken", "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
	                      "\"kind\":\"ExecCredential\",\"status\":{}}'\n");
	c = load_ok(exec_config("      apiVersion: client.authentication.k8s.io/v1\n"
	                        "      command: ./notoken\n"
	                        "      interactiveMode: Never\n"));
	cr_assert_eq(sf_kube_config_auth(c, &tok, err, sizeof(err)), -EINVAL, "%s", err);
	assert_has(err, "token");
	sf_kube_config_free(c);
}

Test(config, exec_plugin_failure_is_not_rerun_at_once)
{
	put_script("fails", "n=$(cat \"$0.count\" 2>/dev/null || echo 0)\n"
	                    "echo $((n + 1)) > \"$0.count\"\necho broken >&2\nexit 1\n");
	sf_kube_config *c =
	    load_ok(exec_config("      apiVersion: client.authentication.k8s.io/v1\n"
	                        "      command: ./fails\n"
	                        "      interactiveMode: Never\n"));
	char err1[1024] = "", err2[1024] = "";
	const char *tok;
	cr_assert_eq(sf_kube_config_auth(c, &tok, err1, sizeof(err1)), -EIO);
	cr_assert_eq(sf_kube_config_auth(c, &tok, err2, sizeof(err2)), -EIO);
	cr_assert_str_eq(err1, err2);
	assert_has(err2, "broken");
	size_t len;
	cr_assert_str_eq(slurp(tpath("fails.count"), &len), "1\n",
	                 "requests queued behind a failing plugin each ran it");
	/* later it is tried again */
	c->exec->fail_ns -= 2 * SF_CRED_EXEC_RETRY_MS * 1000000LL;
	cr_assert_eq(sf_kube_config_auth(c, &tok, err2, sizeof(err2)), -EIO);
	cr_assert_str_eq(slurp(tpath("fails.count"), &len), "2\n");
	sf_kube_config_free(c);
}

Test(config, exec_plugin_timeout)
{
	put_script("slow", "exec sleep 30\n");
	sf_kube_config *c =
	    load_ok(exec_config("      apiVersion: client.authentication.k8s.io/v1\n"
	                        "      command: ./slow\n"
	                        "      interactiveMode: Never\n"));
	c->exec->timeout_ms = 300;
	char err[1024] = "";
	const char *tok;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	cr_assert_eq(sf_kube_config_auth(c, &tok, err, sizeof(err)), -ETIMEDOUT, "%s", err);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	cr_assert_lt(s, 5.0, "the plugin was not stopped at its time limit (%.1f s)", s);
	assert_has(err, "slow");
	assert_has(err, "did not finish");
	sf_kube_config_free(c);
}

/* What the asynchronous form gave one waiter. */
struct exec_wait {
	int calls, rc;
	char err[512];
};

static void exec_wait_cb(void *ud, int rc, const char *err)
{
	struct exec_wait *w = ud;
	w->calls++;
	w->rc = rc;
	snprintf(w->err, sizeof(w->err), "%s", err);
}

/* dir/plugin counts its runs in plugin.count, runs the shell lines pre and
 * prints token tok-N (N its run) with the status members extra. */
static sf_kube_config *counting_plugin(const char *pre, const char *extra)
{
	put_script("plugin", fmt("n=$(cat \"$0.count\" 2>/dev/null || echo 0)\n"
	                         "echo $((n + 1)) > \"$0.count\"\n%s"
	                         "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
	                         "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"tok-'$((n + "
	                         "1))'\"%s}}'\n",
	                         pre, extra));
	return load_ok(exec_config("      apiVersion: client.authentication.k8s.io/v1\n"
	                           "      command: ./plugin\n"
	                           "      interactiveMode: Never\n"));
}

Test(config, exec_plugin_async_one_run_for_all_waiters)
{
	sf_kube_config *c = counting_plugin("sleep 0.3\n", "");
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	struct exec_wait got[3];
	memset(got, 0, sizeof(got));
	sf_cred_exec_wait *w[3];
	char err[512] = "";
	for (int i = 0; i < 3; i++)
		cr_assert_eq(sf_cred_exec_refresh_async(c->exec, &loop, exec_wait_cb, &got[i],
		                                        &w[i], err, sizeof(err)),
		             SF_CRED_EXEC_PENDING, "%s", err);
	sf_cred_exec_wait_cancel(w[1]);
	/* the blocking form does not start a second run meanwhile */
	cr_assert_eq(sf_cred_exec_refresh(c->exec, err, sizeof(err)), -EBUSY);
	cr_assert_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
	cr_assert_eq(got[0].calls, 1);
	cr_assert_eq(got[0].rc, 0, "%s", got[0].err);
	cr_assert_eq(got[1].calls, 0, "a cancelled wait was called");
	cr_assert_eq(got[2].calls, 1);
	cr_assert_eq(got[2].rc, 0, "%s", got[2].err);
	cr_assert_str_eq(c->exec->token, "tok-1");
	size_t len;
	cr_assert_str_eq(slurp(tpath("plugin.count"), &len), "1\n");
	/* current now: no run, no callback */
	cr_assert_eq(sf_cred_exec_refresh_async(c->exec, &loop, exec_wait_cb, &got[0], &w[0], err,
	                                        sizeof(err)),
	             0);
	cr_assert_null(w[0]);
	/* freed while a run is in flight: the run ends on the loop, no call */
	sf_kube_config_unauthorized(c);
	cr_assert_eq(sf_cred_exec_refresh_async(c->exec, &loop, exec_wait_cb, &got[2], NULL, err,
	                                        sizeof(err)),
	             SF_CRED_EXEC_PENDING);
	sf_kube_config_free(c);
	cr_assert_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
	cr_assert_eq(got[2].calls, 1, "the wait of a freed credential was called");
	cr_assert_eq(uv_loop_close(&loop), 0);
}

Test(config, exec_plugin_async_renews_in_the_background_before_expiry)
{
	/* its credentials expire in 3 s: inside the 5 s margin, still valid */
	sf_kube_config *c = counting_plugin("exp=$(date -u -d '+3 seconds' +%Y-%m-%dT%H:%M:%SZ)\n",
	                                    ",\"expirationTimestamp\":\"'$exp'\"");
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	struct exec_wait got = {0};
	sf_cred_exec_wait *w;
	char err[512] = "";
	cr_assert_eq(
	    sf_cred_exec_refresh_async(c->exec, &loop, exec_wait_cb, &got, &w, err, sizeof(err)),
	    SF_CRED_EXEC_PENDING, "%s", err);
	cr_assert_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
	cr_assert_eq(got.rc, 0, "%s", got.err);
	cr_assert_str_eq(c->exec->token, "tok-1");
	/* usable now, renewed meanwhile */
	cr_assert_eq(
	    sf_cred_exec_refresh_async(c->exec, &loop, exec_wait_cb, &got, &w, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_null(w);
	cr_assert_str_eq(c->exec->token, "tok-1");
	cr_assert_eq(c->exec->runs, 2, "no renewal was started");
	cr_assert_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
	cr_assert_eq(got.calls, 1);
	cr_assert_str_eq(c->exec->token, "tok-2");
	sf_kube_config_free(c);
	cr_assert_eq(uv_loop_close(&loop), 0);
}

Test(config, exec_plugin_config_errors)
{
	expect_error(exec_config("      apiVersion: client.authentication.k8s.io/v1\n"
	                         "      command: x\n"
	                         "      interactiveMode: Always\n"),
	             NULL, -ENOTSUP, "users[0].user.exec.interactiveMode", "\"Always\"",
	             "non-interactive", NULL);
	expect_error(exec_config("      apiVersion: client.authentication.k8s.io/v1\n"
	                         "      command: x\n"
	                         "      interactiveMode: Sometimes\n"),
	             NULL, -EINVAL, "users[0].user.exec.interactiveMode", "\"Sometimes\"", NULL);
	expect_error(exec_config("      apiVersion: client.authentication.k8s.io/v1alpha1\n"
	                         "      command: x\n"),
	             NULL, -EINVAL, "users[0].user.exec.apiVersion",
	             "client.authentication.k8s.io/v1alpha1", NULL);
	expect_error(exec_config("      apiVersion: client.authentication.k8s.io/v1\n"
	                         "      interactiveMode: Never\n"),
	             NULL, -EINVAL, "users[0].user.exec.command", "missing", NULL);
	expect_error(exec_config("      apiVersion: client.authentication.k8s.io/v1\n"
	                         "      command: x\n"
	                         "      interactiveMode: Never\n"
	                         "      env: [{name: A}]\n"),
	             NULL, -EINVAL, "users[0].user.exec.env[0].value", NULL);
	expect_error(fmt("current-context: dev\n"
	                 "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
	                 "users: [{name: u, user: {token: t, exec: {command: x, interactiveMode: "
	                 "Never, apiVersion: client.authentication.k8s.io/v1}}}]\n"
	                 "contexts: [{name: dev, context: {cluster: c, user: u}}]\n"),
	             NULL, -EINVAL, "users[0].user", "token", "exec", NULL);
}
