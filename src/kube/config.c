/*
 * config.c - kubeconfig and in-cluster configuration (see config.h).
 *
 * A kubeconfig is read with libyaml's document API (JSON is also YAML) and
 * the fields client-go's clientcmd uses are copied into small tables, one
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
 * the selected context only, like clientcmd's ConfirmUsable.
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
#include <yaml.h>

#include "steadfast/buf.h"
#include "steadfast/log.h"
#include "steadfast/time.h"

#define KC_LOGGER "kube.config"
#define KC_MAX_FILE (16u * 1024 * 1024) /* a kubeconfig larger than this is refused */
#define KC_MAX_TOKEN (1024u * 1024)
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
	size_t file;  /* index into kc_set.files */
	size_t index; /* position in that file's clusters list */
};

struct kc_user {
	char *name;
	char *cert_file;
	char *key_file;
	char *token;
	char *token_file;
	struct kc_blob cert_data;
	struct kc_blob key_data;
	int exec;
	int auth_provider;
	size_t file;
	size_t index;
};

struct kc_context {
	char *name;
	char *cluster;
	char *user;
	char *namespace;
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
	yaml_document_t *doc;
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

static int is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Trims whitespace in place; returns s. */
static char *trim(char *s)
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

static int has_ctl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			return 1;
	return 0;
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

/* --- base64 (standard alphabet, padded; whitespace ignored) ----------------- */

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Returns 0, -EINVAL for malformed input, or -ENOMEM. */
static int b64_decode(const char *s, size_t n, struct kc_blob *out)
{
	enum { PAD = 64 };
	unsigned char *o = malloc(n / 4 * 3 + 3);
	if (!o)
		return -ENOMEM;
	unsigned char q[4];
	size_t nq = 0, len = 0;
	int done = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (is_space(c))
			continue;
		if (done)
			goto bad; /* data after the padding */
		if (c == '=') {
			q[nq++] = PAD;
		} else {
			int v = b64_value(c);
			if (v < 0 || (nq && q[nq - 1] == PAD))
				goto bad;
			q[nq++] = (unsigned char)v;
		}
		if (nq < 4)
			continue;
		if (q[0] == PAD || q[1] == PAD)
			goto bad;
		o[len++] = (unsigned char)(q[0] << 2 | q[1] >> 4);
		if (q[2] == PAD) {
			done = 1;
		} else {
			o[len++] = (unsigned char)((q[1] & 15) << 4 | q[2] >> 2);
			if (q[3] == PAD)
				done = 1;
			else
				o[len++] = (unsigned char)((q[2] & 3) << 6 | q[3]);
		}
		nq = 0;
	}
	if (nq)
		goto bad;
	out->data = o;
	out->len = len;
	return 0;
bad:
	free(o);
	return -EINVAL;
}

static void blob_free(struct kc_blob *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
}

/* --- YAML document access ------------------------------------------------------ */

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

static int scalar_is(const yaml_node_t *n, const char *s)
{
	size_t l = strlen(s);
	return n->data.scalar.length == l && memcmp(n->data.scalar.value, s, l) == 0;
}

static int node_is_null(const yaml_node_t *n)
{
	if (!n)
		return 1;
	if (n->type != YAML_SCALAR_NODE)
		return 0;
	if (n->tag && strcmp((const char *)n->tag, YAML_NULL_TAG) == 0)
		return 1;
	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	return n->data.scalar.length == 0 || scalar_is(n, "~") || scalar_is(n, "null") ||
	       scalar_is(n, "Null") || scalar_is(n, "NULL");
}

static const char *node_kind(const yaml_node_t *n)
{
	if (node_is_null(n))
		return "null";
	switch (n->type) {
	case YAML_SCALAR_NODE: return "a scalar";
	case YAML_SEQUENCE_NODE: return "a list";
	case YAML_MAPPING_NODE: return "a mapping";
	default: return "nothing";
	}
}

/* The value of key in a mapping node (the last one if repeated), or NULL. */
static yaml_node_t *map_get(struct kc_parse *p, yaml_node_t *map, const char *key)
{
	yaml_node_t *found = NULL;
	for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top;
	     pr++) {
		yaml_node_t *k = yaml_document_get_node(p->doc, pr->key);
		if (k && k->type == YAML_SCALAR_NODE && scalar_is(k, key))
			found = yaml_document_get_node(p->doc, pr->value);
	}
	return found;
}

/* Copies the string at map[key] into *out: NULL when absent, null or "". */
static int get_str(struct kc_parse *p, yaml_node_t *map, const char *key, const char *path,
                   char **out)
{
	*out = NULL;
	yaml_node_t *n = map_get(p, map, key);
	if (node_is_null(n))
		return 0;
	if (n->type != YAML_SCALAR_NODE)
		return perr(p, -EINVAL, "%s.%s: expected a string, got %s", path, key,
		            node_kind(n));
	const char *v = (const char *)n->data.scalar.value;
	size_t len = n->data.scalar.length;
	if (memchr(v, '\0', len))
		return perr(p, -EINVAL, "%s.%s: contains a NUL character", path, key);
	if (!len)
		return 0;
	*out = strndup(v, len);
	return *out ? 0 : perr(p, -ENOMEM, "out of memory");
}

/* A path field: as get_str, then resolved against the file's directory. */
static int get_path(struct kc_parse *p, yaml_node_t *map, const char *key, const char *path,
                    char **out)
{
	int rc = get_str(p, map, key, path, out);
	if (rc || !*out || (*out)[0] == '/' || !p->base_dir)
		return rc;
	char *abs = join_path(p->base_dir, *out);
	free(*out);
	*out = abs;
	return abs ? 0 : perr(p, -ENOMEM, "out of memory");
}

/* A *-data field: base64 decoded; empty when absent. */
static int get_data(struct kc_parse *p, yaml_node_t *map, const char *key, const char *path,
                    struct kc_blob *out)
{
	char *s;
	out->data = NULL;
	out->len = 0;
	int rc = get_str(p, map, key, path, &s);
	if (rc || !s)
		return rc;
	rc = b64_decode(s, strlen(s), out);
	free(s);
	if (rc == -EINVAL)
		return perr(p, rc, "%s.%s: invalid base64", path, key);
	return rc ? perr(p, rc, "out of memory") : 0;
}

static int get_bool(struct kc_parse *p, yaml_node_t *map, const char *key, const char *path,
                    int *out)
{
	static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
	                                  "on",   "On",   "ON",   "y",   "Y"};
	static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO",
	                                 "off",   "Off",   "OFF",   "n",  "N"};
	*out = 0;
	yaml_node_t *n = map_get(p, map, key);
	if (node_is_null(n))
		return 0;
	if (n->type == YAML_SCALAR_NODE) {
		for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
			if (scalar_is(n, yes[i])) {
				*out = 1;
				return 0;
			}
			if (scalar_is(n, no[i]))
				return 0;
		}
		char q[80], *v = strndup((const char *)n->data.scalar.value, n->data.scalar.length);
		if (!v)
			return perr(p, -ENOMEM, "out of memory");
		perr(p, -EINVAL, "%s.%s: expected true or false, got %s", path, key,
		     quote(q, sizeof(q), v));
		free(v);
		return -EINVAL;
	}
	return perr(p, -EINVAL, "%s.%s: expected true or false, got %s", path, key, node_kind(n));
}

/* The list at root[key] (NULL if absent), or an error if it is not a list. */
static int get_list(struct kc_parse *p, yaml_node_t *root, const char *key, yaml_node_t **out)
{
	yaml_node_t *n = map_get(p, root, key);
	*out = NULL;
	if (node_is_null(n))
		return 0;
	if (n->type != YAML_SEQUENCE_NODE)
		return perr(p, -EINVAL, "%s: expected a list, got %s", key, node_kind(n));
	*out = n;
	return 0;
}

/* For list item i of key: checks it is a mapping with a name and a body
 * mapping under bodykey. */
static int get_entry(struct kc_parse *p, yaml_node_t *item, const char *key, size_t i,
                     const char *bodykey, char **name, yaml_node_t **body, char *path,
                     size_t pathlen)
{
	snprintf(path, pathlen, "%s[%zu]", key, i);
	*name = NULL;
	if (!item || item->type != YAML_MAPPING_NODE)
		return perr(p, -EINVAL, "%s: expected a mapping, got %s", path, node_kind(item));
	int rc = get_str(p, item, "name", path, name);
	if (rc)
		return rc;
	if (!*name)
		return perr(p, -EINVAL, "%s.name: missing", path);
	yaml_node_t *b = map_get(p, item, bodykey);
	if (node_is_null(b)) {
		*body = NULL;
	} else if (b->type != YAML_MAPPING_NODE) {
		return perr(p, -EINVAL, "%s.%s: expected a mapping, got %s", path, bodykey,
		            node_kind(b));
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

/* --- the tables ---------------------------------------------------------------- */

static void cluster_free(struct kc_cluster *c)
{
	free(c->name);
	free(c->server);
	free(c->ca_file);
	blob_free(&c->ca_data);
	free(c->tls_server_name);
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
}

static void context_free(struct kc_context *c)
{
	free(c->name);
	free(c->cluster);
	free(c->user);
	free(c->namespace);
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

static int parse_clusters(struct kc_parse *p, yaml_node_t *root)
{
	yaml_node_t *list;
	int rc = get_list(p, root, "clusters", &list);
	if (rc || !list)
		return rc;
	size_t i = 0;
	for (yaml_node_item_t *it = list->data.sequence.items.start;
	     it < list->data.sequence.items.top; it++, i++) {
		struct kc_cluster c = {.file = p->file, .index = i};
		char path[64];
		yaml_node_t *body = NULL;
		rc = get_entry(p, yaml_document_get_node(p->doc, *it), "clusters", i, "cluster",
		               &c.name, &body, path, sizeof(path));
		if (!rc && body)
			rc = get_str(p, body, "server", path, &c.server);
		if (!rc && body)
			rc = get_path(p, body, "certificate-authority", path, &c.ca_file);
		if (!rc && body)
			rc = get_data(p, body, "certificate-authority-data", path, &c.ca_data);
		if (!rc && body)
			rc = get_bool(p, body, "insecure-skip-tls-verify", path, &c.insecure);
		if (!rc && body)
			rc = get_str(p, body, "tls-server-name", path, &c.tls_server_name);
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

static int parse_users(struct kc_parse *p, yaml_node_t *root)
{
	yaml_node_t *list;
	int rc = get_list(p, root, "users", &list);
	if (rc || !list)
		return rc;
	size_t i = 0;
	for (yaml_node_item_t *it = list->data.sequence.items.start;
	     it < list->data.sequence.items.top; it++, i++) {
		struct kc_user u = {.file = p->file, .index = i};
		char path[64];
		yaml_node_t *body = NULL;
		rc = get_entry(p, yaml_document_get_node(p->doc, *it), "users", i, "user", &u.name,
		               &body, path, sizeof(path));
		if (!rc && body)
			rc = get_path(p, body, "client-certificate", path, &u.cert_file);
		if (!rc && body)
			rc = get_data(p, body, "client-certificate-data", path, &u.cert_data);
		if (!rc && body)
			rc = get_path(p, body, "client-key", path, &u.key_file);
		if (!rc && body)
			rc = get_data(p, body, "client-key-data", path, &u.key_data);
		if (!rc && body)
			rc = get_str(p, body, "token", path, &u.token);
		if (!rc && body)
			rc = get_path(p, body, "tokenFile", path, &u.token_file);
		if (!rc && body) {
			u.exec = !node_is_null(map_get(p, body, "exec"));
			u.auth_provider = !node_is_null(map_get(p, body, "auth-provider"));
		}
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

static int parse_contexts(struct kc_parse *p, yaml_node_t *root)
{
	yaml_node_t *list;
	int rc = get_list(p, root, "contexts", &list);
	if (rc || !list)
		return rc;
	size_t i = 0;
	for (yaml_node_item_t *it = list->data.sequence.items.start;
	     it < list->data.sequence.items.top; it++, i++) {
		struct kc_context c = {.file = p->file, .index = i};
		char path[64];
		yaml_node_t *body = NULL;
		rc = get_entry(p, yaml_document_get_node(p->doc, *it), "contexts", i, "context",
		               &c.name, &body, path, sizeof(path));
		if (!rc && body)
			rc = get_str(p, body, "cluster", path, &c.cluster);
		if (!rc && body)
			rc = get_str(p, body, "user", path, &c.user);
		if (!rc && body)
			rc = get_str(p, body, "namespace", path, &c.namespace);
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

static int yaml_error(yaml_parser_t *yp, const char *name, char *err, size_t errlen)
{
	const char *problem = yp->problem ? yp->problem : "malformed document";
	switch (yp->error) {
	case YAML_MEMORY_ERROR: return oom(err, errlen);
	case YAML_READER_ERROR:
		return set_err(err, errlen, -EINVAL, "kubeconfig %s: byte offset %zu: %s", name,
		               yp->problem_offset, problem);
	default:
		if (yp->context)
			return set_err(
			    err, errlen, -EINVAL,
			    "kubeconfig %s:%zu:%zu: YAML syntax error: %s (%s at line %zu)", name,
			    yp->problem_mark.line + 1, yp->problem_mark.column + 1, problem,
			    yp->context, yp->context_mark.line + 1);
		return set_err(err, errlen, -EINVAL, "kubeconfig %s:%zu:%zu: YAML syntax error: %s",
		               name, yp->problem_mark.line + 1, yp->problem_mark.column + 1,
		               problem);
	}
}

/* Reads the first document of text into set as file number set->nfiles. */
static int parse_doc(struct kc_set *set, const char *text, size_t len, const char *name,
                     const char *base_dir, char *err, size_t errlen)
{
	yaml_parser_t yp;
	yaml_document_t doc;
	int have_doc = 0, rc = 0;
	if (!yaml_parser_initialize(&yp))
		return oom(err, errlen);
	yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
	if (!yaml_parser_load(&yp, &doc)) {
		rc = yaml_error(&yp, name, err, errlen);
		goto out;
	}
	have_doc = 1;
	if (grow((void **)&set->files, &set->capfiles, set->nfiles, sizeof(char *)) ||
	    !(set->files[set->nfiles] = strdup(name))) {
		rc = oom(err, errlen);
		goto out;
	}
	struct kc_parse p = {.doc = &doc,
	                     .name = name,
	                     .base_dir = base_dir,
	                     .set = set,
	                     .file = set->nfiles++,
	                     .err = err,
	                     .errlen = errlen};
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (node_is_null(root))
		goto out; /* an empty file is an empty configuration, as in client-go */
	if (root->type != YAML_MAPPING_NODE) {
		rc = perr(&p, -EINVAL, "top level: expected a mapping, got %s", node_kind(root));
		goto out;
	}
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
	if (have_doc)
		yaml_document_delete(&doc);
	yaml_parser_delete(&yp);
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

/* Puts PEM bytes into an anonymous sealed memory file; *path is its
 * /proc/self/fd path. */
static int make_memfd(const char *label, const struct kc_blob *b, int *fd_out, char **path)
{
	int rc = 0;
	int fd = memfd_create(label, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	for (size_t off = 0; off < b->len;) {
		ssize_t n = write(fd, b->data + off, b->len - off);
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
		rc = make_memfd(labels[slot], data, &c->memfd[slot], dst);
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
	if (has_ctl(in) || strpbrk(in, " "))
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
		if (has_ctl(cl->tls_server_name))
			return set_err(err, errlen, -EINVAL,
			               "kubeconfig %s: %s.tls-server-name %s: contains control "
			               "characters",
			               fname, path, quote(q, sizeof(q), cl->tls_server_name));
		c->tls_server_name = strdup(cl->tls_server_name);
		if (!c->tls_server_name)
			return oom(err, errlen);
	}
	return 0;
}

static int fill_user(sf_kube_config *c, const struct kc_user *u, const char *fname, char *err,
                     size_t errlen)
{
	char path[64], q[80];
	snprintf(path, sizeof(path), "users[%zu].user", u->index);
	if (u->exec)
		return set_err(err, errlen, -ENOTSUP,
		               "kubeconfig %s: %s.exec (user %s): exec credential plugins are not "
		               "supported",
		               fname, path, quote(q, sizeof(q), u->name));
	if (u->auth_provider)
		return set_err(err, errlen, -ENOTSUP,
		               "kubeconfig %s: %s.auth-provider (user %s): auth-provider plugins "
		               "are not supported",
		               fname, path, quote(q, sizeof(q), u->name));
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
		if (has_ctl(u->token))
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
		rc = fill_user(c, u, s->files[u->file], err, errlen);
	if (rc)
		goto fail;
	if (ctx->namespace && has_ctl(ctx->namespace)) {
		rc = set_err(err, errlen, -EINVAL,
		             "kubeconfig %s: contexts[%zu].context.namespace: contains control "
		             "characters",
		             cf, ctx->index);
		goto fail;
	}
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
	if (env && *env && !has_ctl(env))
		return strdup(env);
	char *path = join_path(dir, "namespace");
	if (!path)
		return NULL;
	sf_buf b;
	char *ns = NULL;
	if (read_all(path, 4096, &b, NULL) == 0) {
		trim(b.data);
		if (b.data[0] && !has_ctl(b.data))
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
	if (has_ctl(host) || strpbrk(host, " /") || has_ctl(port) || strpbrk(port, " /"))
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
	int rc = 0, fd = -1;
	sf_buf b;
	sf_buf_init(&b, KC_MAX_TOKEN);
	if (c->token || !c->token_file)
		goto out;
	int64_t now = sf_mono_ns();
	/* Until a first good read there is no rate limit, so that the error
	 * keeps being reported. */
	if (c->token_cache && c->token_checked_ns && now - c->token_checked_ns < SF_NSEC_PER_SEC)
		goto out;
	c->token_checked_ns = now ? now : 1;
	fd = open(c->token_file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
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
	if (c->token_cache && mtime == c->token_mtime_ns && (int64_t)st.st_size == c->token_size)
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
	trim(b.data);
	if (!b.data[0]) {
		rc = -ENODATA;
		goto out;
	}
	if (has_ctl(b.data)) {
		rc = -EINVAL;
		goto out;
	}
	char *tok = strdup(b.data);
	if (!tok) {
		rc = -ENOMEM;
		goto out;
	}
	free(c->token_cache);
	c->token_cache = tok;
	c->token_mtime_ns = mtime;
	c->token_size = (int64_t)st.st_size;
out:
	if (fd >= 0)
		close(fd);
	sf_buf_free(&b);
	if (err_out)
		*err_out = rc;
	if (c->token)
		return c->token;
	return c->token_file ? c->token_cache : NULL;
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
	free(c->namespace);
	free(c->context);
	free(c->source);
	for (int i = 0; i < 3; i++)
		if (c->memfd[i] >= 0)
			close(c->memfd[i]);
	free(c->token_cache);
	free(c);
}
