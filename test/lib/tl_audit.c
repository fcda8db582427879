/*
 * tl_audit.c - the test control plane's audit log read back (see
 * tl_audit.h).
 */
#include "tl_audit.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "steadfast/json.h"
#include "steadfast/time.h"

#define UA_MARK "appwrapper-controller/"

/* The mark at the end (or, with at_end 0, the start) of the file at path. */
static void mark_at(tl_audit_mark *m, const char *path, int at_end)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->path, sizeof(m->path), "%s", path ? path : tl_env("STEADFAST_AUDIT_LOG"));
	struct stat st;
	if (stat(m->path, &st) != 0) {
		/* nothing audited yet: the file is made at the first line */
		cr_assert_eq(errno, ENOENT, "audit log %s", m->path);
		return;
	}
	m->dev = (unsigned long long)st.st_dev;
	m->ino = (unsigned long long)st.st_ino;
	m->off = at_end ? (long long)st.st_size : 0;
}

void tl_audit_mark_now(tl_audit_mark *m)
{
	mark_at(m, NULL, 1);
}

void tl_audit_mark_end(tl_audit_mark *m, const char *path)
{
	mark_at(m, path, 1);
}

void tl_audit_mark_start(tl_audit_mark *m, const char *path)
{
	mark_at(m, path, 0);
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
	const tl_audit_query *q;
	/* raw-text filters, each looked for before a line is parsed */
	char ns_needle[96];    /* "namespace":"<ns>" */
	char user_needle[320]; /* "username":"<user>" */
	char stage_needle[48]; /* "stage":"<stage>" */
	tl_audit_req *v;
	size_t n, cap;
	/* q->first: the auditIDs of the requests already taken or seen before
	 * the mark */
	char (*ids)[64];
	size_t nids, capids;
} collect;

static int jv_is(sf_jv v, const char *want, char *buf, size_t n)
{
	return sf_jv_str(v, buf, n) >= 0 && strcmp(buf, want) == 0;
}

/* 1 when q->first and the request of auditID id was seen; records it
 * otherwise. */
static int seen_before(collect *c, const char *id)
{
	for (size_t i = 0; i < c->nids; i++)
		if (strcmp(c->ids[i], id) == 0)
			return 1;
	if (c->nids == c->capids) {
		c->capids = c->capids ? c->capids * 2 : 256;
		c->ids = realloc(c->ids, c->capids * sizeof(*c->ids));
		cr_assert(c->ids, "out of memory");
	}
	snprintf(c->ids[c->nids++], sizeof(c->ids[0]), "%s", id);
	return 0;
}

/* One complete line; before: it began before the mark (q->first only). */
static void add_line(collect *c, const char *line, size_t len, int before)
{
	const tl_audit_query *q = c->q;
	if ((q->ns && !strstr(line, c->ns_needle)) || (q->user && !strstr(line, c->user_needle)) ||
	    (q->stage && !strstr(line, c->stage_needle)) || (q->text && !strstr(line, q->text)))
		return;
	char err[128];
	sf_obj *o = sf_obj_parse(line, len, err, sizeof(err));
	if (!o)
		return; /* a line cut by a rotation */
	sf_jv r = sf_obj_root(o);
	char buf[512];
	if ((q->ns && !jv_is(sf_jv_path(r, "objectRef.namespace"), q->ns, buf, sizeof(buf))) ||
	    (q->user && !jv_is(sf_jv_path(r, "user.username"), q->user, buf, sizeof(buf))) ||
	    (q->stage && !jv_is(sf_jv_get(r, "stage"), q->stage, buf, sizeof(buf)))) {
		sf_obj_unref(o);
		return;
	}
	tl_audit_req e;
	memset(&e, 0, sizeof(e));
	sf_jv_str(sf_jv_get(r, "auditID"), e.id, sizeof(e.id));
	if (q->first && (seen_before(c, e.id) || before)) {
		sf_obj_unref(o);
		return;
	}
	char ts[64] = "";
	int64_t code = 0;
	sf_jv_str(sf_jv_get(r, "verb"), e.verb, sizeof(e.verb));
	sf_jv_str(sf_jv_path(r, "objectRef.resource"), e.resource, sizeof(e.resource));
	sf_jv_str(sf_jv_path(r, "objectRef.subresource"), e.sub, sizeof(e.sub));
	sf_jv_str(sf_jv_path(r, "objectRef.namespace"), e.ns, sizeof(e.ns));
	sf_jv_str(sf_jv_path(r, "objectRef.name"), e.name, sizeof(e.name));
	sf_jv_str(sf_jv_path(r, "objectRef.apiGroup"), e.group, sizeof(e.group));
	sf_jv_str(sf_jv_get(r, "stage"), e.stage, sizeof(e.stage));
	sf_jv_str(sf_jv_path(r, "user.username"), e.user, sizeof(e.user));
	sf_jv_str(sf_jv_get(r, "userAgent"), e.ua, sizeof(e.ua));
	sf_jv_str(sf_jv_get(r, "requestURI"), e.uri, sizeof(e.uri));
	sf_jv_int64(sf_jv_path(r, "responseStatus.code"), &code);
	e.code = (long)code;
	sf_jv_str(sf_jv_get(r, "requestReceivedTimestamp"), ts, sizeof(ts));
	e.recv_us = ts_us(ts);
	sf_jv_str(sf_jv_get(r, "stageTimestamp"), ts, sizeof(ts));
	e.done_us = ts_us(ts);
	const char *id = strstr(e.ua, UA_MARK);
	if (strncmp(e.ua, "steadfast/", 10) == 0 && id)
		snprintf(e.who, sizeof(e.who), "%s", id + strlen(UA_MARK));
	sf_obj_unref(o);
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 256;
		c->v = realloc(c->v, c->cap * sizeof(*c->v));
		cr_assert(c->v, "out of memory");
	}
	c->v[c->n++] = e;
}

/* The lines of the file at path from byte from on; those that begin
 * before byte mark are read as before the mark. A line that begins before
 * from (a mark taken while it was written) is not read. */
static void read_from(collect *c, const char *path, long long from, long long mark)
{
	FILE *f = fopen(path, "r");
	cr_assert(f, "open %s", path);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	long long at = from;
	if (from > 0) {
		cr_assert_eq(fseeko(f, (off_t)(from - 1), SEEK_SET), 0);
		if (fgetc(f) != '\n' && (len = getline(&line, &cap, f)) > 0)
			at += len; /* the rest of a line begun before from */
	}
	while ((len = getline(&line, &cap, f)) > 0) {
		if (line[len - 1] == '\n') /* a line still being written is not complete */
			add_line(c, line, (size_t)len, at < mark);
		at += len;
	}
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

size_t tl_audit_select(const tl_audit_mark *m, const tl_audit_query *q, tl_audit_req **out)
{
	collect c;
	memset(&c, 0, sizeof(c));
	c.q = q;
	if (q->ns)
		snprintf(c.ns_needle, sizeof(c.ns_needle), "\"namespace\":\"%s\"", q->ns);
	if (q->user)
		snprintf(c.user_needle, sizeof(c.user_needle), "\"username\":\"%s\"", q->user);
	if (q->stage)
		snprintf(c.stage_needle, sizeof(c.stage_needle), "\"stage\":\"%s\"", q->stage);
	long long from = q->first ? 0 : m->off;
	struct stat st;
	if (stat(m->path, &st) != 0) {
		cr_assert_eq(errno, ENOENT, "audit log %s", m->path);
		cr_assert_eq(m->ino, 0, "the audit log %s is gone", m->path);
	} else if (m->ino == 0) {
		read_from(&c, m->path, 0, 0); /* made after the mark */
	} else if ((unsigned long long)st.st_ino == m->ino &&
	           (unsigned long long)st.st_dev == m->dev) {
		read_from(&c, m->path, from, m->off);
	} else {
		char old[PATH_MAX + 256];
		cr_assert_eq(rotated(m, old, sizeof(old)), 0,
		             "the audit log was rotated and its old file is gone");
		read_from(&c, old, from, m->off);
		read_from(&c, m->path, 0, 0);
	}
	free(c.ids);
	*out = c.v;
	return c.n;
}

size_t tl_audit_read(const tl_audit_mark *m, const char *ns, tl_audit_req **out)
{
	tl_audit_query q = {.ns = ns, .stage = "ResponseComplete"};
	return tl_audit_select(m, &q, out);
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
