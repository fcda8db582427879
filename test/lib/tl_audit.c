/*
 * tl_audit.c - the test control plane's audit log read back (see
 * tl_audit.h).
 */
#include "tl_audit.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "steadfast/json.h"
#include "steadfast/time.h"

#define UA_MARK "appwrapper-controller/"

void tl_audit_mark_now(tl_audit_mark *m)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->path, sizeof(m->path), "%s", tl_env("STEADFAST_AUDIT_LOG"));
	struct stat st;
	cr_assert_eq(stat(m->path, &st), 0, "audit log %s", m->path);
	m->dev = (unsigned long long)st.st_dev;
	m->ino = (unsigned long long)st.st_ino;
	m->off = (long long)st.st_size;
}

/* "2026-12-04T17:16:50.319172Z" in microseconds since the epoch (0 when
 * it does not parse). */
static long long ts_us(const char *ts)
{
	struct tm tm = {0};
	char frac[16] = "";
	if (sscanf(ts, "%d-%d-%dT%d:%d:%d.%15[0-9]", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
	           &tm.tm_hour, &tm.tm_min, &tm.tm_sec, frac) < 6)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	long long us = 0;
	for (int i = 0; i < 6; i++)
		us = us * 10 + (frac[i] >= '0' && frac[i] <= '9' ? frac[i] - '0' : 0);
	return (long long)timegm(&tm) * 1000000LL + us;
}

typedef struct collect {
	char needle[96]; /* "namespace":"<ns>" */
	tl_audit_req *v;
	size_t n, cap;
} collect;

static void add_line(collect *c, const char *line, size_t len)
{
	if (!strstr(line, "\"stage\":\"ResponseComplete\"") || !strstr(line, c->needle))
		return;
	char err[128];
	sf_obj *o = sf_obj_parse(line, len, err, sizeof(err));
	if (!o)
		return; /* a line cut by a rotation */
	sf_jv r = sf_obj_root(o);
	tl_audit_req e;
	memset(&e, 0, sizeof(e));
	char ua[512] = "", ts[64] = "";
	int64_t code = 0;
	sf_jv_str(sf_jv_get(r, "verb"), e.verb, sizeof(e.verb));
	sf_jv_str(sf_jv_path(r, "objectRef.resource"), e.resource, sizeof(e.resource));
	sf_jv_str(sf_jv_path(r, "objectRef.subresource"), e.sub, sizeof(e.sub));
	sf_jv_str(sf_jv_path(r, "objectRef.namespace"), e.ns, sizeof(e.ns));
	sf_jv_str(sf_jv_path(r, "objectRef.name"), e.name, sizeof(e.name));
	sf_jv_str(sf_jv_get(r, "userAgent"), ua, sizeof(ua));
	sf_jv_int64(sf_jv_path(r, "responseStatus.code"), &code);
	e.code = (long)code;
	sf_jv_str(sf_jv_get(r, "requestReceivedTimestamp"), ts, sizeof(ts));
	e.recv_us = ts_us(ts);
	sf_jv_str(sf_jv_get(r, "stageTimestamp"), ts, sizeof(ts));
	e.done_us = ts_us(ts);
	const char *id = strstr(ua, UA_MARK);
	if (strncmp(ua, "steadfast/", 10) == 0 && id)
		snprintf(e.who, sizeof(e.who), "%s", id + strlen(UA_MARK));
	sf_obj_unref(o);
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 256;
		c->v = realloc(c->v, c->cap * sizeof(*c->v));
		cr_assert(c->v, "out of memory");
	}
	c->v[c->n++] = e;
}

static void read_from(collect *c, const char *path, long long off)
{
	FILE *f = fopen(path, "r");
	cr_assert(f, "open %s", path);
	cr_assert_eq(fseeko(f, (off_t)off, SEEK_SET), 0);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, f)) > 0)
		if (line[len - 1] == '\n') /* a line still being written is not complete */
			add_line(c, line, (size_t)len);
	free(line);
	fclose(f);
}

/* The file of the directory of m->path that is the one m was taken on
 * (renamed by a rotation) into buf (PATH_MAX + 256 bytes): 0, or -1 when
 * there is none. */
static int rotated(const tl_audit_mark *m, char *buf, size_t n)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", m->path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	DIR *d = opendir(dir);
	cr_assert(d, "opendir %s", dir);
	struct dirent *de;
	int found = -1;
	while (found < 0 && (de = readdir(d))) {
		char p[PATH_MAX + 256];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (stat(p, &st) == 0 && (unsigned long long)st.st_ino == m->ino &&
		    (unsigned long long)st.st_dev == m->dev) {
			snprintf(buf, n, "%s", p);
			found = 0;
		}
	}
	closedir(d);
	return found;
}

size_t tl_audit_read(const tl_audit_mark *m, const char *ns, tl_audit_req **out)
{
	collect c;
	memset(&c, 0, sizeof(c));
	snprintf(c.needle, sizeof(c.needle), "\"namespace\":\"%s\"", ns);
	struct stat st;
	cr_assert_eq(stat(m->path, &st), 0, "audit log %s", m->path);
	if ((unsigned long long)st.st_ino == m->ino && (unsigned long long)st.st_dev == m->dev) {
		read_from(&c, m->path, m->off);
	} else {
		char old[PATH_MAX + 256];
		cr_assert_eq(rotated(m, old, sizeof(old)), 0,
		             "the audit log was rotated and its old file is gone");
		read_from(&c, old, m->off);
		read_from(&c, m->path, 0);
	}
	*out = c.v;
	return c.n;
}

int tl_audit_is_write(const tl_audit_req *r)
{
	static const char *const verbs[] = {"create", "update", "patch", "delete",
	                                    "deletecollection"};
	if (r->code < 200 || r->code >= 300)
		return 0;
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(r->verb, verbs[i]) == 0)
			return 1;
	return 0;
}

static int never(void *ud)
{
	(void)ud;
	return 0;
}

void tl_audit_sync(tl_kube *k, const tl_audit_mark *m, const char *ns, long timeout_ms)
{
	static unsigned seq;
	char name[96];
	snprintf(name, sizeof(name), "tl-audit-sync-%d-%u", (int)getpid(), ++seq);
	tl_res r;
	sf_kube_req q = {.method = "GET", .gvr = &SF_GVR_CONFIGMAPS, .ns = ns, .name = name};
	tl_do(k, &q, &r);
	tl_res_clear(&r);
	int64_t end = sf_mono_ns() + (int64_t)timeout_ms * 1000000;
	for (;;) {
		tl_audit_req *v = NULL;
		size_t n = tl_audit_read(m, ns, &v);
		int found = 0;
		for (size_t i = n; i-- > 0 && !found;)
			found = strcmp(v[i].resource, "configmaps") == 0 &&
			        strcmp(v[i].name, name) == 0;
		free(v);
		if (found)
			return;
		cr_assert(sf_mono_ns() < end,
		          "the audit log did not show the request %s within %ld ms", name,
		          timeout_ms);
		tl_run_until_fn(&k->loop, never, NULL, 50);
	}
}
