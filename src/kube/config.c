/*
 * config.c - kubeconfig and in-cluster configuration (see config.h).
 *
 * A kubeconfig is turned into JSON by the YAML converter (yaml.h, the
 * sigs.k8s.io/yaml rules client-go reads it with; JSON is also YAML) and
 * read with JSON views; the fields client-go's clientcmd uses are copied
 * into small tables, one
 * row per named cluster, user and context, tagged with the file and list
 * position they came from so that messages can point at them. Several files
 * merge as in clientcmd: a name is looked up as its first definition in
 * file order (so the first file wins, as a whole entry), and current-context
 * comes from the first file that sets it. Relative paths resolve against the
 * directory of the file they appear in.
 *
 * Structure and value errors (wrong types, bad base64, duplicate names) fail
 * a file wherever they are, like client-go's decoding does; the deeper
 * checks (server URL, referenced files, credential combinations) apply to
 * the selected context only, like clientcmd's ConfirmUsable. So do the
 * refusals of fields we do not honour (impersonation, basic auth,
 * auth-provider) and the warnings for keys we do not know: a field of a
 * user nobody selects costs nothing, one of the user in use is never
 * silently dropped. Credentials that change at run time (token files, exec
 * plugins) and the memfds of inline data are credentials.c's.
 */
#include "steadfast/config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "steadfast/base64.h"
#include "steadfast/buf.h"
#include "steadfast/credentials.h"
#include "steadfast/json.h"
#include "steadfast/log.h"
#include "steadfast/time.h"
#include "steadfast/yaml.h"

#define KC_LOGGER "kube.config"
#define KC_MAX_FILE (16u * 1024 * 1024) /* a kubeconfig larger than this is refused */
#define KC_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

enum { MEMFD_CA = 0, MEMFD_CERT = 1, MEMFD_KEY = 2 };

struct kc_blob {
	unsigned char *data;
	size_t len;
};

struct kc_cluster {
	char *name;
	char *server;
	char *ca_file; /* resolved against the file's directory */
	struct kc_blob ca_data;
	int insecure;
	char *tls_server_name;
	char *proxy_url;
	int disable_compression;
	char *unknown; /* unknown keys, logged if the cluster is used */
	size_t file;   /* index into kc_set.files */
	size_t index;  /* position in that file's clusters list */
};

/* user.exec as written; checked and moved into the result when used. */
struct kc_exec {
	int set;
	sf_cred_exec *e; /* command, args, env, apiVersion, installHint */
	char *interactive_mode;
	int provide_cluster_info;
	char *unknown;
};

struct kc_user {
	char *name;
	char *cert_file;
	char *key_file;
	char *token;
	char *token_file;
	struct kc_blob cert_data;
	struct kc_blob key_data;
	struct kc_exec exec;
	char *refused; /* 'field "as" (impersonation)': refused if the user is used */
	char *unknown;
	size_t file;
	size_t index;
};

struct kc_context {
	char *name;
	char *cluster;
	char *user;
	char *namespace;
	char *unknown;
	size_t file;
	size_t index;
};

/* Everything read from one or more files. Entries shadowed by an earlier
 * file stay in the tables; lookups return the first match. */
struct kc_set {
	struct kc_cluster *clusters;
	size_t nclusters, capclusters;
	struct kc_user *users;
	size_t nusers, capusers;
	struct kc_context *contexts;
	size_t ncontexts, capcontexts;
	char *current_context;
	size_t current_file;
	char **files; /* names as used in messages */
	size_t nfiles, capfiles;
};

/* State while walking one document. */
struct kc_parse {
	const char *name;
	const char *base_dir;
	struct kc_set *set;
	size_t file;
	char *err;
	size_t errlen;
};

/* --- small helpers ---------------------------------------------------------- */

static int set_err(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int set_err(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sf_verrf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

static int oom(char *err, size_t errlen)
{
	return set_err(err, errlen, -ENOMEM, "kubeconfig: out of memory");
}

/* Writes s as a double-quoted, escaped and shortened string for messages. */
static const char *quote(char *dst, size_t n, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	if (n < 8) {
		if (n)
			dst[0] = '\0';
		return dst;
	}
	dst[o++] = '"';
	for (size_t i = 0; s && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		if (o + 8 >= n) {
			memcpy(dst + o, "...", 3);
			o += 3;
			break;
		}
		if (c == '"' || c == '\\') {
			dst[o++] = '\\';
			dst[o++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			dst[o++] = '\\';
			dst[o++] = 'x';
			dst[o++] = hex[c >> 4];
			dst[o++] = hex[c & 15];
		} else {
			dst[o++] = (char)c;
		}
	}
	dst[o++] = '"';
	dst[o] = '\0';
	return dst;
}

static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 8;
	if (nc > ((size_t)-1) / elem)
		return -ENOMEM;
	void *q = realloc(*p, nc * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = nc;
	return 0;
}

static char *join_path(const char *dir, const char *name)
{
	size_t dl = strlen(dir), nl = strlen(name);
	char *p = malloc(dl + nl + 2);
	if (!p)
		return NULL;
	memcpy(p, dir, dl);
	size_t o = dl;
	if (!dl || dir[dl - 1] != '/')
		p[o++] = '/';
	memcpy(p + o, name, nl + 1);
	return p;
}

/* Absolute directory of path (the cwd joined in when path is relative). */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	if (!slash)
		dir = strdup(".");
	else if (slash == path)
		dir = strdup("/");
	else
		dir = strndup(path, (size_t)(slash - path));
	if (!dir || dir[0] == '/')
		return dir;
	char *cwd = getcwd(NULL, 0);
	if (!cwd)
		return dir; /* stays relative to the cwd, which is still right */
	char *abs = strcmp(dir, ".") == 0 ? strdup(cwd) : join_path(cwd, dir);
	free(cwd);
	free(dir);
	return abs;
}

/* Reads a whole file (at most max bytes) into b. */
static int read_all(const char *path, size_t max, sf_buf *b, struct stat *st_out)
{
	int rc = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = -EISDIR;
		goto out;
	}
	/* back to blocking, so that a pipe (e.g. /dev/fd/N) is read fully */
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	sf_buf_init(b, max);
	char chunk[8192];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		rc = sf_buf_append(b, chunk, (size_t)n);
		if (rc)
			break;
	}
	if (!rc && !b->data)
		rc = sf_buf_append(b, "", 0);
	if (rc)
		sf_buf_free(b);
	else if (st_out)
		*st_out = st;
out:
	close(fd);
	return rc;
}

/* A referenced file must exist and be readable now. Opened non-blocking so
 * that a FIFO does not hang the check. */
static int check_readable(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	int rc = fstat(fd, &st) != 0 ? -errno : S_ISDIR(st.st_mode) ? -EISDIR : 0;
	close(fd);
	return rc;
}

static void blob_free(struct kc_blob *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
}

/* --- JSON document access ------------------------------------------------------ */

static int perr(struct kc_parse *p, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int perr(struct kc_parse *p, int rc, const char *fmt, ...)
{
	if (rc == -ENOMEM)
		return oom(p->err, p->errlen);
	if (p->err && p->errlen) {
		int n = snprintf(p->err, p->errlen, "kubeconfig %s: ", p->name);
		if (n >= 0 && (size_t)n < p->errlen) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	return rc;
}

static int jv_is_null(sf_jv v)
{
	return !sf_jv_ok(v) || sf_jv_type(v) == SF_JSON_NULL;
}

static const char *jv_kind(sf_jv v)
{
	switch (sf_jv_type(v)) {
	case SF_JSON_ARRAY: return "a list";
	case SF_JSON_OBJECT: return "a mapping";
	case SF_JSON_STRING:
	case SF_JSON_NUMBER:
	case SF_JSON_TRUE:
	case SF_JSON_FALSE: return "a scalar";
	default: return "null";
	}
}

/* A value that sets something: not absent, null, "", [] or {}. */
static int jv_is_set(sf_jv v)
{
	switch (sf_jv_type(v)) {
	case SF_JSON_NONE:
	case SF_JSON_NULL: return 0;
	case SF_JSON_STRING: return v.n > 2;
	case SF_JSON_ARRAY:
	case SF_JSON_OBJECT: return sf_jv_len(v) > 0;
	default: return 1;
	}
}

/* Copies the string at map[key] into *out: NULL when absent, null or "".
 * A number is taken as its text (a YAML scalar such as 0123 or 8080). */
static int get_str(struct kc_parse *p, sf_jv map, const char *key, const char *path, char **out)
{
	*out = NULL;
	sf_jv v = sf_jv_get(map, key);
	if (jv_is_null(v))
		return 0;
	if (sf_jv_type(v) == SF_JSON_NUMBER) {
		*out = strndup(v.p, v.n);
		return *out ? 0 : perr(p, -ENOMEM, "out of memory");
	}
	if (sf_jv_type(v) != SF_JSON_STRING)
		return perr(p, -EINVAL, "%s.%s: expected a string, got %s", path, key, jv_kind(v));
	if (memmem(v.p, v.n, "\\u0000", 6))
		return perr(p, -EINVAL, "%s.%s: contains a NUL character", path, key);
	char *s = sf_jv_strdup(v);
	if (!s)
		return perr(p, -ENOMEM, "out of memory");
	if (!*s)
		free(s);
	else
		*out = s;
	return 0;
}

/* A path: relative ones resolve against the file's directory. */
static int resolve(struct kc_parse *p, char **path)
{
	if (!*path || (*path)[0] == '/' || !p->base_dir)
		return 0;
	char *abs = join_path(p->base_dir, *path);
	free(*path);
	*path = abs;
	return abs ? 0 : perr(p, -ENOMEM, "out of memory");
}

static int get_path(struct kc_parse *p, sf_jv map, const char *key, const char *path, char **out)
{
	int rc = get_str(p, map, key, path, out);
	return rc ? rc : resolve(p, out);
}

/* A *-data field: base64 decoded; empty when absent. */
static int get_data(struct kc_parse *p, sf_jv map, const char *key, const char *path,
                    struct kc_blob *out)
{
	char *s;
	out->data = NULL;
	out->len = 0;
	int rc = get_str(p, map, key, path, &s);
	if (rc || !s)
		return rc;
	rc = sf_b64_decode(s, strlen(s), &out->data, &out->len);
	free(s);
	if (rc == -EINVAL)
		return perr(p, rc, "%s.%s: invalid base64", path, key);
	return rc ? perr(p, rc, "out of memory") : 0;
}

static int get_bool(struct kc_parse *p, sf_jv map, const char *key, const char *path, int *out)
{
	*out = 0;
	sf_jv v = sf_jv_get(map, key);
	if (jv_is_null(v) || sf_jv_bool(v, out) == 0)
		return 0;
	char q[80], *s = sf_jv_type(v) == SF_JSON_STRING ? sf_jv_strdup(v) : strndup(v.p, v.n);
	if (!s)
		return perr(p, -ENOMEM, "out of memory");
	if (sf_jv_type(v) == SF_JSON_ARRAY || sf_jv_type(v) == SF_JSON_OBJECT)
		perr(p, -EINVAL, "%s.%s: expected true or false, got %s", path, key, jv_kind(v));
	else
		perr(p, -EINVAL, "%s.%s: expected true or false, got %s", path, key,
		     quote(q, sizeof(q), s));
	free(s);
	return -EINVAL;
}

/* The list at map[key] (SF_JV_NONE if absent), or an error if it is not a
 * list. */
static int get_list(struct kc_parse *p, sf_jv map, const char *key, const char *path, sf_jv *out)
{
	sf_jv v = sf_jv_get(map, key);
	*out = SF_JV_NONE;
	if (jv_is_null(v))
		return 0;
	if (sf_jv_type(v) != SF_JSON_ARRAY)
		return perr(p, -EINVAL, "%s%s%s: expected a list, got %s", path, *path ? "." : "",
		            key, jv_kind(v));
	*out = v;
	return 0;
}

/* For list item i of key: checks it is a mapping with a name and a body
 * mapping under bodykey. */
static int get_entry(struct kc_parse *p, sf_jv item, const char *key, size_t i, const char *bodykey,
                     char **name, sf_jv *body, char *path, size_t pathlen)
{
	snprintf(path, pathlen, "%s[%zu]", key, i);
	*name = NULL;
	if (sf_jv_type(item) != SF_JSON_OBJECT)
		return perr(p, -EINVAL, "%s: expected a mapping, got %s", path, jv_kind(item));
	int rc = get_str(p, item, "name", path, name);
	if (rc)
		return rc;
	if (!*name)
		return perr(p, -EINVAL, "%s.name: missing", path);
	sf_jv b = sf_jv_get(item, bodykey);
	if (jv_is_null(b)) {
		*body = SF_JV_NONE;
	} else if (sf_jv_type(b) != SF_JSON_OBJECT) {
		return perr(p, -EINVAL, "%s.%s: expected a mapping, got %s", path, bodykey,
		            jv_kind(b));
	} else {
		*body = b;
	}
	size_t l = strlen(path);
	snprintf(path + l, pathlen - l, ".%s", bodykey);
	return 0;
}

static int dup_err(struct kc_parse *p, const char *key, size_t i, const char *name)
{
	char q[80];
	return perr(p, -EINVAL, "%s[%zu].name: duplicate name %s", key, i,
	            quote(q, sizeof(q), name));
}

/* The keys of obj not in known[], as "path.a, path.b" (NULL if none). Kept
 * to be logged when the entry is used: unknown keys are ignored as
 * client-go ignores them, but not silently. */
static int unknown_keys(struct kc_parse *p, sf_jv obj, const char *const *known, const char *path,
                        char **out)
{
	*out = NULL;
	sf_buf b;
	sf_buf_init(&b, 4096);
	sf_jv_iter it = sf_jv_iter_init(obj);
	sf_jv k, v;
	while (sf_jv_next(&it, &k, &v)) {
		char name[128];
		if (sf_jv_str(k, name, sizeof(name)) < 0)
			snprintf(name, sizeof(name), "(long key)");
		int found = 0;
		for (size_t i = 0; known[i] && !found; i++)
			found = strcmp(known[i], name) == 0;
		if (found)
			continue;
		char q[80];
		if (sf_cred_has_ctl(name))
			quote(q, sizeof(q), name);
		int rc = sf_buf_printf(&b, "%s%s%s%s", b.len ? ", " : "", path, *path ? "." : "",
		                       sf_cred_has_ctl(name) ? q : name);
		if (rc == -E2BIG)
			break;
		if (rc) {
			sf_buf_free(&b);
			return perr(p, -ENOMEM, "out of memory");
		}
	}
	if (b.len && !(*out = sf_buf_detach(&b, NULL)))
		return perr(p, -ENOMEM, "out of memory");
	sf_buf_free(&b);
	return 0;
}

static void warn_unknown(const char *fields, const char *fname)
{
	if (fields)
		sf_log_warn(KC_LOGGER, "unknown kubeconfig field ignored", "fields", fields,
		            "kubeconfig", fname, (char *)NULL);
}

/* --- the tables ---------------------------------------------------------------- */

static void exec_free(struct kc_exec *x)
{
	sf_cred_exec_free(x->e);
	free(x->interactive_mode);
	free(x->unknown);
	memset(x, 0, sizeof(*x));
}

static void cluster_free(struct kc_cluster *c)
{
	free(c->name);
	free(c->server);
	free(c->ca_file);
	blob_free(&c->ca_data);
	free(c->tls_server_name);
	free(c->proxy_url);
	free(c->unknown);
}

static void user_free(struct kc_user *u)
{
	free(u->name);
	free(u->cert_file);
	free(u->key_file);
	free(u->token);
	free(u->token_file);
	blob_free(&u->cert_data);
	blob_free(&u->key_data);
	free(u->refused);
	free(u->unknown);
	exec_free(&u->exec);
}

static void context_free(struct kc_context *c)
{
	free(c->name);
	free(c->cluster);
	free(c->user);
	free(c->namespace);
	free(c->unknown);
}

static void set_free(struct kc_set *s)
{
	for (size_t i = 0; i < s->nclusters; i++)
		cluster_free(&s->clusters[i]);
	for (size_t i = 0; i < s->nusers; i++)
		user_free(&s->users[i]);
	for (size_t i = 0; i < s->ncontexts; i++)
		context_free(&s->contexts[i]);
	for (size_t i = 0; i < s->nfiles; i++)
		free(s->files[i]);
	free(s->clusters);
	free(s->users);
	free(s->contexts);
	free(s->files);
	free(s->current_context);
	memset(s, 0, sizeof(*s));
}

static struct kc_cluster *find_cluster(struct kc_set *s, const char *name)
{
	for (size_t i = 0; i < s->nclusters; i++)
		if (strcmp(s->clusters[i].name, name) == 0)
			return &s->clusters[i];
	return NULL;
}

static struct kc_user *find_user(struct kc_set *s, const char *name)
{
	for (size_t i = 0; i < s->nusers; i++)
		if (strcmp(s->users[i].name, name) == 0)
			return &s->users[i];
	return NULL;
}

static struct kc_context *find_context(struct kc_set *s, const char *name)
{
	for (size_t i = 0; i < s->ncontexts; i++)
		if (strcmp(s->contexts[i].name, name) == 0)
			return &s->contexts[i];
	return NULL;
}

/* --- one document ----------------------------------------------------------------- */

static const char *const cluster_keys[] = {"server",
                                           "certificate-authority",
                                           "certificate-authority-data",
                                           "insecure-skip-tls-verify",
                                           "tls-server-name",
                                           "proxy-url",
                                           "disable-compression",
                                           "extensions",
                                           NULL};
static const char *const context_keys[] = {"cluster", "user", "namespace", "extensions", NULL};
static const char *const top_keys[] = {"apiVersion",      "kind",       "preferences",
                                       "clusters",        "users",      "contexts",
                                       "current-context", "extensions", NULL};
static const char *const exec_keys[] = {"command",         "args",        "env",
                                        "apiVersion",      "installHint", "provideClusterInfo",
                                        "interactiveMode", NULL};

/* User fields we do not honour: refused when the user is selected. */
static const struct {
	const char *key, *why;
} refused_user_keys[] = {
    {"as", "impersonation"},
    {"as-uid", "impersonation"},
    {"as-groups", "impersonation"},
    {"as-user-extra", "impersonation"},
    {"username", "basic authentication"},
    {"password", "basic authentication"},
    {"auth-provider", "auth-provider plugins"},
};
static const char *const user_keys[] = {"client-certificate",
                                        "client-certificate-data",
                                        "client-key",
                                        "client-key-data",
                                        "token",
                                        "tokenFile",
                                        "exec",
                                        "extensions",
                                        "as",
                                        "as-uid",
                                        "as-groups",
                                        "as-user-extra",
                                        "username",
                                        "password",
                                        "auth-provider",
                                        NULL};

static int parse_clusters(struct kc_parse *p, sf_jv root)
{
	sf_jv list;
	int rc = get_list(p, root, "clusters", "", &list);
	if (rc || !sf_jv_ok(list))
		return rc;
	size_t i = 0;
	sf_jv_iter it = sf_jv_iter_init(list);
	sf_jv item;
	for (; sf_jv_next(&it, NULL, &item); i++) {
		struct kc_cluster c = {.file = p->file, .index = i};
		char path[64];
		sf_jv body = SF_JV_NONE;
		rc = get_entry(p, item, "clusters", i, "cluster", &c.name, &body, path,
		               sizeof(path));
		int b = !rc && sf_jv_ok(body);
		if (b)
			rc = get_str(p, body, "server", path, &c.server);
		if (b && !rc)
			rc = get_path(p, body, "certificate-authority", path, &c.ca_file);
		if (b && !rc)
			rc = get_data(p, body, "certificate-authority-data", path, &c.ca_data);
		if (b && !rc)
			rc = get_bool(p, body, "insecure-skip-tls-verify", path, &c.insecure);
		if (b && !rc)
			rc = get_str(p, body, "tls-server-name", path, &c.tls_server_name);
		if (b && !rc)
			rc = get_str(p, body, "proxy-url", path, &c.proxy_url);
		if (b && !rc)
			rc = get_bool(p, body, "disable-compression", path, &c.disable_compression);
		if (b && !rc)
			rc = unknown_keys(p, body, cluster_keys, path, &c.unknown);
		for (size_t j = 0; !rc && j < p->set->nclusters; j++)
			if (p->set->clusters[j].file == p->file &&
			    strcmp(p->set->clusters[j].name, c.name) == 0)
				rc = dup_err(p, "clusters", i, c.name);
		if (!rc && grow((void **)&p->set->clusters, &p->set->capclusters, p->set->nclusters,
		                sizeof(c)))
			rc = perr(p, -ENOMEM, "out of memory");
		if (rc) {
			cluster_free(&c);
			return rc;
		}
		p->set->clusters[p->set->nclusters++] = c;
	}
	return 0;
}

/* user.exec: the structure only; what it means is checked when the user is
 * selected (check_exec). */
static int parse_exec(struct kc_parse *p, sf_jv body, const char *upath, struct kc_exec *x)
{
	sf_jv ex = sf_jv_get(body, "exec");
	if (jv_is_null(ex))
		return 0;
	char path[80];
	snprintf(path, sizeof(path), "%s.exec", upath);
	if (sf_jv_type(ex) != SF_JSON_OBJECT)
		return perr(p, -EINVAL, "%s: expected a mapping, got %s", path, jv_kind(ex));
	x->set = 1;
	if (!(x->e = sf_cred_exec_new()))
		return perr(p, -ENOMEM, "out of memory");
	sf_cred_exec *e = x->e;
	int rc = get_str(p, ex, "command", path, &e->command);
	/* a command with a slash is a path, relative to the file (clientcmd) */
	if (!rc && e->command && strchr(e->command, '/'))
		rc = resolve(p, &e->command);
	if (!rc)
		rc = get_str(p, ex, "apiVersion", path, &e->api_version);
	if (!rc)
		rc = get_str(p, ex, "installHint", path, &e->install_hint);
	if (!rc)
		rc = get_bool(p, ex, "provideClusterInfo", path, &x->provide_cluster_info);
	if (!rc)
		rc = get_str(p, ex, "interactiveMode", path, &x->interactive_mode);
	if (!rc)
		rc = unknown_keys(p, ex, exec_keys, path, &x->unknown);
	sf_jv args = SF_JV_NONE, env = SF_JV_NONE, v;
	if (!rc)
		rc = get_list(p, ex, "args", path, &args);
	if (!rc && sf_jv_ok(args)) {
		size_t n = sf_jv_len(args);
		if (!(e->args = calloc(n ? n : 1, sizeof(char *))))
			return perr(p, -ENOMEM, "out of memory");
		sf_jv_iter it = sf_jv_iter_init(args);
		for (size_t i = 0; !rc && sf_jv_next(&it, NULL, &v); i++) {
			if (sf_jv_type(v) != SF_JSON_STRING)
				return perr(p, -EINVAL, "%s.args[%zu]: expected a string, got %s",
				            path, i, jv_kind(v));
			if (!(e->args[e->nargs] = sf_jv_strdup(v)))
				return perr(p, -ENOMEM, "out of memory");
			e->nargs++;
		}
	}
	if (!rc)
		rc = get_list(p, ex, "env", path, &env);
	if (!rc && sf_jv_ok(env)) {
		size_t n = sf_jv_len(env);
		if (!(e->env = calloc(n ? n : 1, sizeof(char *))))
			return perr(p, -ENOMEM, "out of memory");
		sf_jv_iter it = sf_jv_iter_init(env);
		for (size_t i = 0; !rc && sf_jv_next(&it, NULL, &v); i++) {
			char ep[96], *name = NULL, *val = NULL;
			snprintf(ep, sizeof(ep), "%s.env[%zu]", path, i);
			if (sf_jv_type(v) != SF_JSON_OBJECT)
				return perr(p, -EINVAL, "%s: expected a mapping, got %s", ep,
				            jv_kind(v));
			rc = get_str(p, v, "name", ep, &name);
			if (!rc && !name)
				rc = perr(p, -EINVAL, "%s.name: missing", ep);
			if (!rc && strchr(name, '='))
				rc = perr(p, -EINVAL, "%s.name: contains '='", ep);
			if (!rc && jv_is_null(sf_jv_get(v, "value")))
				rc = perr(p, -EINVAL, "%s.value: missing", ep);
			if (!rc)
				rc = get_str(p, v, "value", ep, &val);
			if (!rc && asprintf(&e->env[e->nenv], "%s=%s", name, val ? val : "") < 0)
				rc = perr(p, -ENOMEM, "out of memory");
			else if (!rc)
				e->nenv++;
			free(name);
			free(val);
		}
	}
	return rc;
}

static int parse_users(struct kc_parse *p, sf_jv root)
{
	sf_jv list;
	int rc = get_list(p, root, "users", "", &list);
	if (rc || !sf_jv_ok(list))
		return rc;
	size_t i = 0;
	sf_jv_iter it = sf_jv_iter_init(list);
	sf_jv item;
	for (; sf_jv_next(&it, NULL, &item); i++) {
		struct kc_user u = {.file = p->file, .index = i};
		char path[64];
		sf_jv body = SF_JV_NONE;
		rc = get_entry(p, item, "users", i, "user", &u.name, &body, path, sizeof(path));
		int b = !rc && sf_jv_ok(body);
		if (b)
			rc = get_path(p, body, "client-certificate", path, &u.cert_file);
		if (b && !rc)
			rc = get_data(p, body, "client-certificate-data", path, &u.cert_data);
		if (b && !rc)
			rc = get_path(p, body, "client-key", path, &u.key_file);
		if (b && !rc)
			rc = get_data(p, body, "client-key-data", path, &u.key_data);
		if (b && !rc)
			rc = get_str(p, body, "token", path, &u.token);
		if (b && !rc)
			rc = get_path(p, body, "tokenFile", path, &u.token_file);
		if (b && !rc)
			rc = parse_exec(p, body, path, &u.exec);
		for (size_t k = 0; b && !rc && !u.refused &&
		                   k < sizeof(refused_user_keys) / sizeof(refused_user_keys[0]);
		     k++)
			if (jv_is_set(sf_jv_get(body, refused_user_keys[k].key)) &&
			    asprintf(&u.refused, "field \"%s\" (%s)", refused_user_keys[k].key,
			             refused_user_keys[k].why) < 0) {
				u.refused = NULL;
				rc = perr(p, -ENOMEM, "out of memory");
			}
		if (b && !rc)
			rc = unknown_keys(p, body, user_keys, path, &u.unknown);
		for (size_t j = 0; !rc && j < p->set->nusers; j++)
			if (p->set->users[j].file == p->file &&
			    strcmp(p->set->users[j].name, u.name) == 0)
				rc = dup_err(p, "users", i, u.name);
		if (!rc &&
		    grow((void **)&p->set->users, &p->set->capusers, p->set->nusers, sizeof(u)))
			rc = perr(p, -ENOMEM, "out of memory");
		if (rc) {
			user_free(&u);
			return rc;
		}
		p->set->users[p->set->nusers++] = u;
	}
	return 0;
}

static int parse_contexts(struct kc_parse *p, sf_jv root)
{
	sf_jv list;
	int rc = get_list(p, root, "contexts", "", &list);
	if (rc || !sf_jv_ok(list))
		return rc;
	size_t i = 0;
	sf_jv_iter it = sf_jv_iter_init(list);
	sf_jv item;
	for (; sf_jv_next(&it, NULL, &item); i++) {
		struct kc_context c = {.file = p->file, .index = i};
		char path[64];
		sf_jv body = SF_JV_NONE;
		rc = get_entry(p, item, "contexts", i, "context", &c.name, &body, path,
		               sizeof(path));
		int b = !rc && sf_jv_ok(body);
		if (b)
			rc = get_str(p, body, "cluster", path, &c.cluster);
		if (b && !rc)
			rc = get_str(p, body, "user", path, &c.user);
		if (b && !rc)
			rc = get_str(p, body, "namespace", path, &c.namespace);
		if (b && !rc)
			rc = unknown_keys(p, body, context_keys, path, &c.unknown);
		for (size_t j = 0; !rc && j < p->set->ncontexts; j++)
			if (p->set->contexts[j].file == p->file &&
			    strcmp(p->set->contexts[j].name, c.name) == 0)
				rc = dup_err(p, "contexts", i, c.name);
		if (!rc && grow((void **)&p->set->contexts, &p->set->capcontexts, p->set->ncontexts,
		                sizeof(c)))
			rc = perr(p, -ENOMEM, "out of memory");
		if (rc) {
			context_free(&c);
			return rc;
		}
		p->set->contexts[p->set->ncontexts++] = c;
	}
	return 0;
}

/* The converter's "line L column C: problem" as "NAME:L:C: YAML syntax
 * error: problem". */
static int yaml_error(int rc, const char *msg, const char *name, char *err, size_t errlen)
{
	size_t line, col;
	int n = 0;
	if (rc == -ENOMEM)
		return oom(err, errlen);
	if (rc == -EBADMSG && sscanf(msg, "line %zu column %zu: %n", &line, &col, &n) == 2 && n)
		return set_err(err, errlen, -EINVAL, "kubeconfig %s:%zu:%zu: YAML syntax error: %s",
		               name, line, col, msg + n);
	return set_err(err, errlen, rc == -E2BIG ? -E2BIG : -EINVAL, "kubeconfig %s: %s", name,
	               msg);
}

struct first_doc {
	char *json;
	size_t len;
};

static int keep_first(void *ud, size_t index, const char *json, size_t len)
{
	struct first_doc *d = ud;
	(void)index;
	d->json = strndup(json, len);
	d->len = len;
	return d->json ? 1 : -ENOMEM;
}

/* Reads the first document of text into set as file number set->nfiles. */
static int parse_doc(struct kc_set *set, const char *text, size_t len, const char *name,
                     const char *base_dir, char *err, size_t errlen)
{
	struct first_doc d = {NULL, 0};
	char yerr[256] = "";
	int rc = sf_yaml_to_json(text, len, KC_MAX_FILE * 4, keep_first, &d, yerr, sizeof(yerr));
	if (rc < 0) {
		free(d.json);
		return yaml_error(rc, yerr, name, err, errlen);
	}
	if (grow((void **)&set->files, &set->capfiles, set->nfiles, sizeof(char *)) ||
	    !(set->files[set->nfiles] = strdup(name))) {
		free(d.json);
		return oom(err, errlen);
	}
	struct kc_parse p = {.name = name,
	                     .base_dir = base_dir,
	                     .set = set,
	                     .file = set->nfiles++,
	                     .err = err,
	                     .errlen = errlen};
	rc = 0;
	sf_jv root = d.json ? sf_jv_root(d.json, d.len) : SF_JV_NONE;
	if (jv_is_null(root))
		goto out; /* an empty file is an empty configuration, as in client-go */
	if (sf_jv_type(root) != SF_JSON_OBJECT) {
		rc = perr(&p, -EINVAL, "top level: expected a mapping, got %s", jv_kind(root));
		goto out;
	}
	char *unknown = NULL;
	rc = unknown_keys(&p, root, top_keys, "", &unknown);
	warn_unknown(unknown, name);
	free(unknown);
	if (!rc)
		rc = parse_clusters(&p, root);
	if (!rc)
		rc = parse_users(&p, root);
	if (!rc)
		rc = parse_contexts(&p, root);
	if (!rc && !set->current_context) {
		rc = get_str(&p, root, "current-context", "top level", &set->current_context);
		set->current_file = p.file;
	}
out:
	free(d.json);
	return rc;
}
/* --- the result ------------------------------------------------------------------- */

static sf_kube_config *config_new(void)
{
	sf_kube_config *c = calloc(1, sizeof(*c));
	if (c)
		c->memfd[0] = c->memfd[1] = c->memfd[2] = -1;
	return c;
}

static int looks_like_pem(const struct kc_blob *b)
{
	return b->len >= 10 && memmem(b->data, b->len, "-----BEGIN", 10) != NULL;
}

/* Inline data for one of the memfd slots, or a referenced file. */
static int use_pem(sf_kube_config *c, int slot, const struct kc_blob *data, const char *file,
                   char **dst, const char *fname, const char *path, const char *field, char *err,
                   size_t errlen)
{
	static const char *const labels[] = {"kubeconfig-ca", "kubeconfig-cert", "kubeconfig-key"};
	int rc;
	if (data->data) {
		if (!looks_like_pem(data))
			return set_err(
			    err, errlen, -EINVAL,
			    "kubeconfig %s: %s.%s-data: not PEM (no \"-----BEGIN\" line)", fname,
			    path, field);
		rc = sf_cred_memfd(labels[slot], data->data, data->len, &c->memfd[slot], dst);
		if (rc)
			return set_err(err, errlen, rc, "kubeconfig %s: %s.%s-data: memfd: %s",
			               fname, path, field, strerror(-rc));
		return 0;
	}
	if (!file)
		return 0;
	rc = check_readable(file);
	if (rc)
		return set_err(err, errlen, rc, "kubeconfig %s: %s.%s: %s: %s", fname, path, field,
		               file, strerror(-rc));
	*dst = strdup(file);
	return *dst ? 0 : oom(err, errlen);
}

/* server with a scheme (https:// when none, as client-go) and no trailing '/'. */
static int normalize_server(const char *in, char **out, const char *fname, const char *path,
                            char *err, size_t errlen)
{
	char q[160];
	const char *sep = strstr(in, "://");
	if (sf_cred_has_ctl(in) || strpbrk(in, " "))
		return set_err(
		    err, errlen, -EINVAL,
		    "kubeconfig %s: %s.server %s: contains whitespace or control characters", fname,
		    path, quote(q, sizeof(q), in));
	if (sep) {
		size_t sl = (size_t)(sep - in);
		if (!((sl == 5 && strncasecmp(in, "https", 5) == 0) ||
		      (sl == 4 && strncasecmp(in, "http", 4) == 0)))
			return set_err(err, errlen, -EINVAL,
			               "kubeconfig %s: %s.server %s: scheme must be https or http",
			               fname, path, quote(q, sizeof(q), in));
		if (sep[3] == '\0' || sep[3] == '/')
			return set_err(err, errlen, -EINVAL,
			               "kubeconfig %s: %s.server %s: missing host", fname, path,
			               quote(q, sizeof(q), in));
	}
	sf_buf b;
	sf_buf_init(&b, 0);
	if ((!sep && sf_buf_puts(&b, "https://")) || sf_buf_puts(&b, in))
		goto nomem;
	size_t min = (size_t)((sep ? sep - in : 5) + 4); /* keep "scheme://h" */
	while (b.len > min && b.data[b.len - 1] == '/')
		b.data[--b.len] = '\0';
	*out = sf_buf_detach(&b, NULL);
	if (*out)
		return 0;
nomem:
	sf_buf_free(&b);
	return oom(err, errlen);
}

static int fill_cluster(sf_kube_config *c, const struct kc_cluster *cl, const char *fname,
                        char *err, size_t errlen)
{
	char path[64], q[80];
	snprintf(path, sizeof(path), "clusters[%zu].cluster", cl->index);
	if (!cl->server)
		return set_err(err, errlen, -EINVAL, "kubeconfig %s: %s.server: missing", fname,
		               path);
	int rc = normalize_server(cl->server, &c->server, fname, path, err, errlen);
	if (rc)
		return rc;
	if (cl->insecure && (cl->ca_data.data || cl->ca_file))
		return set_err(err, errlen, -EINVAL,
		               "kubeconfig %s: %s: certificate-authority with "
		               "insecure-skip-tls-verify: specifying a root certificates file "
		               "with the insecure flag is not allowed",
		               fname, path);
	rc = use_pem(c, MEMFD_CA, &cl->ca_data, cl->ca_file, &c->ca_file, fname, path,
	             "certificate-authority", err, errlen);
	if (rc)
		return rc;
	if (cl->insecure) {
		c->insecure_skip_tls_verify = 1;
		sf_log_warn(KC_LOGGER,
		            "TLS certificate verification is disabled (insecure-skip-tls-verify)",
		            "cluster", cl->name, "kubeconfig", fname, (char *)NULL);
	}
	if (cl->tls_server_name) {
		if (sf_cred_has_ctl(cl->tls_server_name))
			return set_err(err, errlen, -EINVAL,
			               "kubeconfig %s: %s.tls-server-name %s: contains control "
			               "characters",
			               fname, path, quote(q, sizeof(q), cl->tls_server_name));
		c->tls_server_name = strdup(cl->tls_server_name);
		if (!c->tls_server_name)
			return oom(err, errlen);
	}
	if (cl->proxy_url) {
		static const char *const schemes[] = {"http://", "https://", "socks5://",
		                                      "socks5h://"};
		int ok = 0;
		for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]) && !ok; i++)
			ok = strncasecmp(cl->proxy_url, schemes[i], strlen(schemes[i])) == 0 &&
			     cl->proxy_url[strlen(schemes[i])] != '\0';
		if (!ok || sf_cred_has_ctl(cl->proxy_url) || strchr(cl->proxy_url, ' '))
			return set_err(err, errlen, -EINVAL,
			               "kubeconfig %s: %s.proxy-url %s: expected a URL with scheme "
			               "http, https, socks5 or socks5h and a host",
			               fname, path, quote(q, sizeof(q), cl->proxy_url));
		if (!(c->proxy_url = strdup(cl->proxy_url)))
			return oom(err, errlen);
	}
	c->disable_compression = cl->disable_compression;
	warn_unknown(cl->unknown, fname);
	return 0;
}

/* KUBERNETES_EXEC_INFO: the ExecCredential the plugin is given, with the
 * cluster when provideClusterInfo is set (client-go's Cluster fields). */
static int exec_info(const sf_kube_config *c, const struct kc_cluster *cl, const char *version,
                     int with_cluster, char **out)
{
	sf_buf b;
	sf_buf_init(&b, 0);
	int rc = sf_buf_puts(&b, "{\"apiVersion\":");
	rc |= sf_buf_put_json_str(&b, version, strlen(version));
	rc |= sf_buf_puts(&b, ",\"kind\":\"ExecCredential\",\"spec\":{\"interactive\":false");
	if (with_cluster) {
		rc |= sf_buf_puts(&b, ",\"cluster\":{\"server\":");
		rc |= sf_buf_put_json_str(&b, c->server, strlen(c->server));
		if (c->tls_server_name) {
			rc |= sf_buf_puts(&b, ",\"tls-server-name\":");
			rc |=
			    sf_buf_put_json_str(&b, c->tls_server_name, strlen(c->tls_server_name));
		}
		if (c->insecure_skip_tls_verify)
			rc |= sf_buf_puts(&b, ",\"insecure-skip-tls-verify\":true");
		sf_buf ca;
		sf_buf_init(&ca, 0);
		const void *cad = cl->ca_data.data;
		size_t cal = cl->ca_data.len;
		if (!cad && c->ca_file && read_all(c->ca_file, KC_MAX_FILE, &ca, NULL) == 0) {
			cad = ca.data;
			cal = ca.len;
		}
		if (cad) {
			char *enc = sf_b64_encode(cad, cal);
			rc |= enc ? 0 : -ENOMEM;
			rc |= sf_buf_puts(&b, ",\"certificate-authority-data\":");
			rc |= sf_buf_put_json_str(&b, enc ? enc : "", enc ? strlen(enc) : 0);
			free(enc);
		}
		sf_buf_free(&ca);
		if (c->proxy_url) {
			rc |= sf_buf_puts(&b, ",\"proxy-url\":");
			rc |= sf_buf_put_json_str(&b, c->proxy_url, strlen(c->proxy_url));
		}
		if (c->disable_compression)
			rc |= sf_buf_puts(&b, ",\"disable-compression\":true");
		rc |= sf_buf_putc(&b, '}');
	}
	rc |= sf_buf_puts(&b, "}}");
	if (rc || !(*out = sf_buf_detach(&b, NULL))) {
		sf_buf_free(&b);
		return -ENOMEM;
	}
	return 0;
}

/* Checks the selected user's exec section and moves it into c. */
static int use_exec(sf_kube_config *c, struct kc_user *u, const struct kc_cluster *cl,
                    const char *fname, const char *path, char *err, size_t errlen)
{
	static const char v1[] = "client.authentication.k8s.io/v1",
	                  v1beta1[] = "client.authentication.k8s.io/v1beta1";
	struct kc_exec *x = &u->exec;
	sf_cred_exec *e = x->e;
	char q[80], q2[80];
	quote(q2, sizeof(q2), u->name);
	if (u->token || u->token_file || u->cert_file || u->cert_data.data)
		return set_err(err, errlen, -EINVAL,
		               "kubeconfig %s: %s (user %s): exec together with %s: use one "
		               "source of credentials",
		               fname, path, q2,
		               u->token        ? "token"
		               : u->token_file ? "tokenFile"
		                               : "client-certificate");
	if (!e->api_version || (strcmp(e->api_version, v1) && strcmp(e->api_version, v1beta1)))
		return set_err(err, errlen, -EINVAL,
		               "kubeconfig %s: %s.exec.apiVersion (user %s): %s is not supported "
		               "(%s or %s)",
		               fname, path, q2,
		               e->api_version ? quote(q, sizeof(q), e->api_version) : "missing", v1,
		               v1beta1);
	if (!e->command)
		return set_err(err, errlen, -EINVAL,
		               "kubeconfig %s: %s.exec.command (user %s): missing", fname, path,
		               q2);
	const char *im = x->interactive_mode;
	if (!im && strcmp(e->api_version, v1) == 0)
		return set_err(
		    err, errlen, -EINVAL,
		    "kubeconfig %s: %s.exec.interactiveMode (user %s): missing (required "
		    "by %s: Never or IfAvailable)",
		    fname, path, q2, v1);
	if (im && strcmp(im, "Always") == 0)
		return set_err(
		    err, errlen, -ENOTSUP,
		    "kubeconfig %s: %s.exec.interactiveMode (user %s): \"Always\" needs a "
		    "terminal, and steadfast is non-interactive (use Never or "
		    "IfAvailable)",
		    fname, path, q2);
	if (im && strcmp(im, "Never") && strcmp(im, "IfAvailable"))
		return set_err(err, errlen, -EINVAL,
		               "kubeconfig %s: %s.exec.interactiveMode (user %s): %s is not one of "
		               "Never, IfAvailable, Always",
		               fname, path, q2, quote(q, sizeof(q), im));
	if (exec_info(c, cl, e->api_version, x->provide_cluster_info, &e->exec_info) ||
	    !(e->user = strdup(u->name)) || !(e->source = strdup(fname)))
		return oom(err, errlen);
	warn_unknown(x->unknown, fname);
	c->exec = e;
	x->e = NULL;
	return 0;
}

static int fill_user(sf_kube_config *c, struct kc_user *u, const struct kc_cluster *cl,
                     const char *fname, char *err, size_t errlen)
{
	char path[64], q[80];
	snprintf(path, sizeof(path), "users[%zu].user", u->index);
	if (u->refused)
		return set_err(err, errlen, -ENOTSUP,
		               "kubeconfig %s: %s (user %s): %s is not supported", fname, path,
		               quote(q, sizeof(q), u->name), u->refused);
	warn_unknown(u->unknown, fname);
	if (u->exec.set)
		return use_exec(c, u, cl, fname, path, err, errlen);
	int have_cert = u->cert_data.data || u->cert_file;
	int have_key = u->key_data.data || u->key_file;
	if (have_cert != have_key)
		return set_err(err, errlen, -EINVAL, "kubeconfig %s: %s (user %s): %s without %s",
		               fname, path, quote(q, sizeof(q), u->name),
		               have_cert ? "client-certificate" : "client-key",
		               have_cert ? "client-key" : "client-certificate");
	int rc = use_pem(c, MEMFD_CERT, &u->cert_data, u->cert_file, &c->client_cert_file, fname,
	                 path, "client-certificate", err, errlen);
	if (!rc)
		rc = use_pem(c, MEMFD_KEY, &u->key_data, u->key_file, &c->client_key_file, fname,
		             path, "client-key", err, errlen);
	if (rc)
		return rc;
	if (u->token) { /* token wins over tokenFile, as in client-go */
		if (sf_cred_has_ctl(u->token))
			return set_err(err, errlen, -EINVAL,
			               "kubeconfig %s: %s.token: contains control characters",
			               fname, path);
		c->token = strdup(u->token);
		return c->token ? 0 : oom(err, errlen);
	}
	if (u->token_file) {
		rc = check_readable(u->token_file);
		if (rc)
			return set_err(err, errlen, rc, "kubeconfig %s: %s.tokenFile: %s: %s",
			               fname, path, u->token_file, strerror(-rc));
		c->token_file = strdup(u->token_file);
		return c->token_file ? 0 : oom(err, errlen);
	}
	return 0;
}

/* Selects the context and turns it into the flat result. */
static int build(struct kc_set *s, const char *context, const char *source, sf_kube_config **out,
                 char *err, size_t errlen)
{
	char q1[80], q2[80];
	int rc;
	const char *name = context && *context ? context : s->current_context;
	if (!name) {
		if (!s->nclusters && !s->nusers && !s->ncontexts)
			return set_err(err, errlen, -EINVAL,
			               "kubeconfig %s: configuration is empty (no current-context, "
			               "clusters, users or contexts)",
			               source);
		return set_err(err, errlen, -EINVAL,
		               "kubeconfig %s: current-context: not set and no context given",
		               source);
	}
	struct kc_context *ctx = find_context(s, name);
	if (!ctx) {
		if (context && *context)
			return set_err(err, errlen, -ENOENT, "kubeconfig %s: context %s not found",
			               source, quote(q1, sizeof(q1), name));
		return set_err(err, errlen, -ENOENT,
		               "kubeconfig %s: current-context: context %s not found",
		               s->files[s->current_file], quote(q1, sizeof(q1), name));
	}
	const char *cf = s->files[ctx->file];
	quote(q1, sizeof(q1), ctx->name);
	if (!ctx->cluster)
		return set_err(err, errlen, -EINVAL,
		               "kubeconfig %s: contexts[%zu].context.cluster (context %s): missing",
		               cf, ctx->index, q1);
	struct kc_cluster *cl = find_cluster(s, ctx->cluster);
	if (!cl)
		return set_err(err, errlen, -ENOENT,
		               "kubeconfig %s: context %s: cluster %s not found", cf, q1,
		               quote(q2, sizeof(q2), ctx->cluster));
	struct kc_user *u = NULL;
	if (ctx->user && !(u = find_user(s, ctx->user)))
		return set_err(err, errlen, -ENOENT, "kubeconfig %s: context %s: user %s not found",
		               cf, q1, quote(q2, sizeof(q2), ctx->user));

	sf_kube_config *c = config_new();
	if (!c)
		return oom(err, errlen);
	rc = fill_cluster(c, cl, s->files[cl->file], err, errlen);
	if (!rc && u)
		rc = fill_user(c, u, cl, s->files[u->file], err, errlen);
	if (rc)
		goto fail;
	if (ctx->namespace && sf_cred_has_ctl(ctx->namespace)) {
		rc = set_err(err, errlen, -EINVAL,
		             "kubeconfig %s: contexts[%zu].context.namespace: contains control "
		             "characters",
		             cf, ctx->index);
		goto fail;
	}
	warn_unknown(ctx->unknown, cf);
	c->namespace = strdup(ctx->namespace ? ctx->namespace : "default");
	c->context = strdup(name);
	c->source = strdup(source);
	if (!c->namespace || !c->context || !c->source) {
		rc = oom(err, errlen);
		goto fail;
	}
	*out = c;
	return 0;
fail:
	sf_kube_config_free(c);
	return rc;
}

/* --- public ----------------------------------------------------------------------- */

int sf_kube_config_parse(const char *yaml, size_t len, const char *name, const char *base_dir,
                         const char *context, sf_kube_config **out, char *err, size_t errlen)
{
	struct kc_set s = {0};
	*out = NULL;
	if (!name)
		name = "<memory>";
	int rc = parse_doc(&s, yaml, len, name, base_dir, err, errlen);
	if (!rc)
		rc = build(&s, context, name, out, err, errlen);
	set_free(&s);
	return rc;
}

static int load_paths(const char *const *paths, size_t n, int skip_missing, const char *context,
                      sf_kube_config **out, char *err, size_t errlen)
{
	struct kc_set s = {0};
	sf_buf source, missing;
	sf_buf_init(&source, 0);
	sf_buf_init(&missing, 0);
	int rc = 0;
	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		const char *path = paths[i];
		if (!path || !*path)
			continue;
		sf_buf data;
		rc = read_all(path, KC_MAX_FILE, &data, NULL);
		if (rc == -ENOENT && skip_missing) {
			if ((missing.len && sf_buf_puts(&missing, ", ")) ||
			    sf_buf_puts(&missing, path))
				goto nomem;
			rc = 0;
			continue;
		}
		if (rc) {
			set_err(err, errlen, rc, "kubeconfig %s: %s", path,
			        rc == -E2BIG ? "file too large" : strerror(-rc));
			goto out;
		}
		char *dir = dir_of(path);
		if (!dir) {
			sf_buf_free(&data);
			goto nomem;
		}
		rc = parse_doc(&s, data.data, data.len, path, dir, err, errlen);
		free(dir);
		sf_buf_free(&data);
		if (rc)
			goto out;
		if ((source.len && sf_buf_putc(&source, ':')) || sf_buf_puts(&source, path))
			goto nomem;
	}
	if (!s.nfiles) {
		if (missing.len)
			rc = set_err(err, errlen, -ENOENT,
			             "kubeconfig: none of the files exist: %s", missing.data);
		else
			rc = set_err(err, errlen, -EINVAL, "kubeconfig: no file given");
		goto out;
	}
	rc = build(&s, context, source.data, out, err, errlen);
	goto out;
nomem:
	rc = oom(err, errlen);
out:
	set_free(&s);
	sf_buf_free(&source);
	sf_buf_free(&missing);
	return rc;
}

int sf_kube_config_load_files(const char *const *paths, size_t npaths, const char *context,
                              sf_kube_config **out, char *err, size_t errlen)
{
	return load_paths(paths, npaths, 1, context, out, err, errlen);
}

int sf_kube_config_load(const char *explicit_path, const char *context, sf_kube_config **out,
                        char *err, size_t errlen)
{
	int rc;
	*out = NULL;
	if (explicit_path && *explicit_path)
		return load_paths(&explicit_path, 1, 0, context, out, err, errlen);

	const char *env = getenv("KUBECONFIG");
	if (env && *env) {
		char *copy = strdup(env);
		const char **list = calloc(strlen(env) / 2 + 1, sizeof(*list));
		size_t n = 0;
		if (!copy || !list) {
			free(copy);
			free(list);
			return oom(err, errlen);
		}
		for (char *save = NULL, *tok = strtok_r(copy, ":", &save); tok;
		     tok = strtok_r(NULL, ":", &save))
			list[n++] = tok;
		rc = n ? load_paths(list, n, 1, context, out, err, errlen) : 1;
		free(list);
		free(copy);
		if (rc <= 0)
			return rc;
		/* only separators: treated as unset, as client-go does */
	}

	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	int in_cluster_env = host && *host && port && *port;
	if (in_cluster_env && !(context && *context))
		return sf_kube_config_in_cluster(NULL, out, err, errlen);

	const char *home = getenv("HOME");
	char *home_cfg = home && *home ? join_path(home, ".kube/config") : NULL;
	if (home && *home && !home_cfg)
		return oom(err, errlen);
	if (home_cfg) {
		struct stat st;
		if (stat(home_cfg, &st) == 0 || errno != ENOENT) {
			const char *p = home_cfg;
			rc = load_paths(&p, 1, 0, context, out, err, errlen);
			free(home_cfg);
			return rc;
		}
	}
	set_err(err, errlen, -ENOENT,
	        "no Kubernetes configuration found; tried: --kubeconfig (not given), "
	        "$KUBECONFIG (not set), in-cluster (%s), %s%s",
	        in_cluster_env ? "skipped because a context was requested"
	                       : "KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT not set",
	        home_cfg ? home_cfg : "$HOME/.kube/config ($HOME not set)",
	        home_cfg ? " (does not exist)" : "");
	free(home_cfg);
	return -ENOENT;
}

/* Reads sa_dir/namespace (POD_NAMESPACE first, as clientcmd's in-cluster
 * config does); "default" when neither is there. */
static char *in_cluster_namespace(const char *dir)
{
	const char *env = getenv("POD_NAMESPACE");
	if (env && *env && !sf_cred_has_ctl(env))
		return strdup(env);
	char *path = join_path(dir, "namespace");
	if (!path)
		return NULL;
	sf_buf b;
	char *ns = NULL;
	if (read_all(path, 4096, &b, NULL) == 0) {
		sf_cred_trim(b.data);
		if (b.data[0] && !sf_cred_has_ctl(b.data))
			ns = strdup(b.data);
		sf_buf_free(&b);
	}
	free(path);
	return ns ? ns : strdup("default");
}

int sf_kube_config_in_cluster(const char *sa_dir, sf_kube_config **out, char *err, size_t errlen)
{
	int rc;
	*out = NULL;
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	if (!host || !*host || !port || !*port)
		return set_err(err, errlen, -ENOENT,
		               "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
		               "must be set");
	if (sf_cred_has_ctl(host) || strpbrk(host, " /") || sf_cred_has_ctl(port) ||
	    strpbrk(port, " /"))
		return set_err(err, errlen, -EINVAL,
		               "in-cluster: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT: "
		               "invalid value");
	const char *dir = sa_dir ? sa_dir : KC_SA_DIR;
	sf_kube_config *c = config_new();
	if (!c)
		return oom(err, errlen);
	sf_buf b;
	sf_buf_init(&b, 0);
	int v6 = strchr(host, ':') && host[0] != '[';
	if (sf_buf_printf(&b, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port) ||
	    !(c->server = sf_buf_detach(&b, NULL)))
		goto nomem;
	if (!(c->token_file = join_path(dir, "token")))
		goto nomem;
	/* Read once now: a missing token file is a load error as in client-go,
	 * while an empty one is left to fail at request time. */
	int terr = 0;
	if (!sf_kube_config_token(c, &terr) && terr && terr != -ENODATA) {
		rc = set_err(err, errlen, terr, "in-cluster: %s: %s", c->token_file,
		             strerror(-terr));
		goto fail;
	}
	char *ca = join_path(dir, "ca.crt");
	if (!ca)
		goto nomem;
	rc = check_readable(ca);
	if (rc) {
		/* client-go logs this and goes on with the system CAs */
		sf_log_error(KC_LOGGER, "in-cluster CA bundle not readable; using the system CAs",
		             "path", ca, "error", strerror(-rc), (char *)NULL);
		free(ca);
	} else {
		c->ca_file = ca;
	}
	c->namespace = in_cluster_namespace(dir);
	c->context = strdup("");
	c->source = strdup("in-cluster");
	if (!c->namespace || !c->context || !c->source)
		goto nomem;
	*out = c;
	return 0;
nomem:
	sf_buf_free(&b);
	rc = oom(err, errlen);
fail:
	sf_kube_config_free(c);
	return rc;
}

const char *sf_kube_config_token(sf_kube_config *c, int *err_out)
{
	int rc = 0;
	if (c->exec) {
		char msg[512];
		rc = sf_cred_exec_refresh(c->exec, msg, sizeof(msg));
		if (err_out)
			*err_out = rc;
		return c->exec->valid ? c->exec->token : NULL;
	}
	if (!c->token && c->token_file) {
		sf_cred_token_file tf = {c->token_file, &c->token_cache, &c->token_mtime_ns,
		                         &c->token_size, &c->token_checked_ns};
		rc = sf_cred_token_file_read(&tf);
	}
	if (err_out)
		*err_out = rc;
	if (c->token)
		return c->token;
	return c->token_file ? c->token_cache : NULL;
}

int sf_kube_config_auth(sf_kube_config *c, const char **token, char *err, size_t errlen)
{
	*token = NULL;
	if (c->exec) {
		int rc = sf_cred_exec_refresh(c->exec, err, errlen);
		if (rc)
			return rc;
		*token = c->exec->token;
		return 0;
	}
	*token = sf_kube_config_token(c, NULL);
	return 0;
}

void sf_kube_config_unauthorized(sf_kube_config *c)
{
	if (c && c->exec)
		sf_cred_exec_invalidate(c->exec);
}

void sf_kube_config_free(sf_kube_config *c)
{
	if (!c)
		return;
	free(c->server);
	free(c->ca_file);
	free(c->client_cert_file);
	free(c->client_key_file);
	free(c->token);
	free(c->token_file);
	free(c->tls_server_name);
	free(c->proxy_url);
	sf_cred_exec_free(c->exec);
	free(c->namespace);
	free(c->context);
	free(c->source);
	for (int i = 0; i < 3; i++)
		if (c->memfd[i] >= 0)
			close(c->memfd[i]);
	free(c->token_cache);
	free(c);
}
