/*
 * tl_aw.c - AppWrapper helpers for the integration tests (see tl_aw.h):
 * CRD install, YAML manifests applied through the real client, structural
 * JSON comparison, and a watched namespace with the waits, Kueue and
 * kubelet of the tests that run the controller.
 */
#include "tl_aw.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "steadfast/buf.h"
#include "steadfast/log.h"
#include "steadfast/time.h"
#include "steadfast/yaml.h"
#include "tl_ctl.h"

/* ---- source tree ---- */

const char *tl_aw_src_path(const char *rel, char *buf, size_t n)
{
	if (access(rel, R_OK) == 0) {
		snprintf(buf, n, "%s", rel);
		return buf;
	}
	const char *src = getenv("STEADFAST_SRC_DIR");
	if (src && *src) {
		snprintf(buf, n, "%s/%s", src, rel);
		if (access(buf, R_OK) == 0)
			return buf;
	}
	cr_assert_fail("%s not found from the working directory nor under $STEADFAST_SRC_DIR (%s)",
	               rel, src ? src : "unset");
	return NULL;
}

/* ---- YAML documents ---- */

typedef struct yaml_docs {
	size_t n;
	char *json[TL_AW_MAX_DOCS];
} yaml_docs;

static int collect_doc(void *ud, size_t index, const char *json, size_t len)
{
	(void)index;
	yaml_docs *d = ud;
	if (d->n == TL_AW_MAX_DOCS)
		return 1;
	d->json[d->n] = strndup(json, len);
	cr_assert(d->json[d->n], "out of memory");
	d->n++;
	return 0;
}

static void read_yaml(const char *path_or_yaml, yaml_docs *d)
{
	char err[512] = "", path[1024];
	int rc;
	memset(d, 0, sizeof(*d));
	if (strchr(path_or_yaml, '\n')) {
		rc = sf_yaml_to_json(path_or_yaml, strlen(path_or_yaml), 0, collect_doc, d, err,
		                     sizeof(err));
		snprintf(path, sizeof(path), "(inline YAML)");
	} else {
		tl_aw_src_path(path_or_yaml, path, sizeof(path));
		rc = sf_yaml_file_to_json(path, 0, collect_doc, d, err, sizeof(err));
	}
	cr_assert(rc != 1, "%s: more than %d documents", path, TL_AW_MAX_DOCS);
	cr_assert_eq(rc, 0, "%s: %d %s", path, rc, err);
}

char *tl_aw_yaml_json(const char *path_or_yaml)
{
	yaml_docs d;
	read_yaml(path_or_yaml, &d);
	cr_assert(d.n > 0, "no document in %s", path_or_yaml);
	for (size_t i = 1; i < d.n; i++)
		free(d.json[i]);
	return d.json[0];
}

/* ---- apply ---- */

typedef struct resolve_res {
	int done;
	int err;
	char errmsg[256];
	char group[128];
	char version[64];
	char resource[64];
	int namespaced;
} resolve_res;

static void on_resolved(void *ud, int err, const char *errmsg, const sf_gvr *gvr)
{
	resolve_res *r = ud;
	r->done = 1;
	r->err = err;
	snprintf(r->errmsg, sizeof(r->errmsg), "%s", errmsg ? errmsg : "");
	if (!err && gvr) {
		snprintf(r->group, sizeof(r->group), "%s", gvr->group);
		snprintf(r->version, sizeof(r->version), "%s", gvr->version);
		snprintf(r->resource, sizeof(r->resource), "%s", gvr->resource);
		r->namespaced = gvr->namespaced;
	}
}

static void jv_copy(sf_jv root, const char *path, char *buf, size_t n)
{
	buf[0] = '\0';
	if (sf_jv_str(sf_jv_path(root, path), buf, n) < 0)
		buf[0] = '\0';
}

/* The document with metadata.resourceVersion set to rv (malloc'd). */
static char *with_resource_version(const char *json, const char *rv)
{
	sf_jv root = sf_jv_root(json, strlen(json));
	sf_jv meta = sf_jv_get(root, "metadata");
	cr_assert(sf_jv_type(meta) == SF_JSON_OBJECT, "document without metadata: %.200s", json);
	if (sf_jv_ok(sf_jv_get(meta, "resourceVersion")))
		return strdup(json);
	size_t head = (size_t)(meta.p - json) + 1; /* up to and with '{' */
	sf_buf b;
	sf_buf_init(&b, 0);
	int rc = sf_buf_append(&b, json, head);
	rc = rc ? rc : sf_buf_puts(&b, "\"resourceVersion\":");
	rc = rc ? rc : sf_buf_put_json_str(&b, rv, strlen(rv));
	if (!rc && sf_jv_len(meta) > 0)
		rc = sf_buf_putc(&b, ',');
	rc = rc ? rc : sf_buf_puts(&b, json + head);
	cr_assert_eq(rc, 0, "out of memory");
	return sf_buf_detach(&b, NULL);
}

static void record(tl_aw_doc *d, tl_res *r)
{
	d->http_status = r->http_status;
	snprintf(d->reason, sizeof(d->reason), "%s", r->reason);
	snprintf(d->message, sizeof(d->message), "%s", r->message[0] ? r->message : r->errmsg);
	sf_obj_unref(d->obj);
	d->obj = NULL;
	if (r->http_status >= 200 && r->http_status < 300 && r->obj)
		d->obj = sf_obj_ref(r->obj);
}

/* Create, or on AlreadyExists GET + PUT with the current resourceVersion
 * (again on Conflict, a few times). */
static void apply_one(tl_kube *k, const char *ns, const tl_aw_apply_opts *opts, tl_aw_doc *d)
{
	sf_jv root = sf_jv_root(d->sent, strlen(d->sent));
	char doc_ns[254];
	jv_copy(root, "apiVersion", d->api_version, sizeof(d->api_version));
	jv_copy(root, "kind", d->kind, sizeof(d->kind));
	jv_copy(root, "metadata.name", d->name, sizeof(d->name));
	jv_copy(root, "metadata.namespace", doc_ns, sizeof(doc_ns));

	resolve_res rr = {0};
	int rc = sf_kube_resolve(k->client, d->api_version, d->kind, on_resolved, &rr);
	cr_assert_eq(rc, 0, "resolve %s %s: %d", d->api_version, d->kind, rc);
	cr_assert_eq(tl_run_until(&k->loop, &rr.done, 30000), 0, "discovery did not answer");
	if (rr.err) {
		d->http_status = 0;
		snprintf(d->message, sizeof(d->message), "%s", rr.errmsg);
		return;
	}
	snprintf(d->resource, sizeof(d->resource), "%s", rr.resource);
	sf_gvr gvr = {rr.group, rr.version, rr.resource, rr.namespaced};
	const char *target = NULL;
	if (rr.namespaced)
		target = ns ? ns : doc_ns[0] ? doc_ns : "default";
	const char *query = opts ? opts->query : NULL;

	tl_res r;
	sf_kube_req create = {.method = "POST",
	                      .gvr = &gvr,
	                      .ns = target,
	                      .query = query,
	                      .body = d->sent,
	                      .body_len = strlen(d->sent)};
	tl_do(k, &create, &r);
	for (int attempt = 0; attempt < 5 && r.http_status == 409 && d->name[0]; attempt++) {
		if (attempt == 0 && strcmp(r.reason, "AlreadyExists") != 0)
			break;
		tl_res_clear(&r);
		sf_kube_req get = {.method = "GET", .gvr = &gvr, .ns = target, .name = d->name};
		tl_do(k, &get, &r);
		if (r.http_status != 200)
			break;
		char *body = with_resource_version(d->sent, r.obj->rv);
		tl_res_clear(&r);
		sf_kube_req put = {.method = "PUT",
		                   .gvr = &gvr,
		                   .ns = target,
		                   .name = d->name,
		                   .query = query,
		                   .body = body,
		                   .body_len = strlen(body)};
		tl_do(k, &put, &r);
		free(body);
	}
	record(d, &r);
	tl_res_clear(&r);
}

size_t tl_aw_apply_yaml(tl_kube *k, const char *ns, const char *path_or_yaml,
                        const tl_aw_apply_opts *opts, tl_aw_applied *out)
{
	yaml_docs yd;
	read_yaml(path_or_yaml, &yd);
	tl_aw_applied local = {0};
	tl_aw_applied *a = out ? out : &local;
	if (out)
		memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < yd.n; i++) {
		tl_aw_doc *d = &a->docs[a->n++];
		d->sent = yd.json[i];
		apply_one(k, ns, opts, d);
		if (!opts || !opts->allow_fail)
			cr_assert(d->http_status >= 200 && d->http_status < 300,
			          "%.80s: document %zu (%s %s/%s): %ld %s %s", path_or_yaml, i,
			          d->api_version, d->kind, d->name, d->http_status, d->reason,
			          d->message);
	}
	size_t n = a->n;
	if (!out)
		tl_aw_applied_clear(&local);
	return n;
}

void tl_aw_applied_clear(tl_aw_applied *a)
{
	for (size_t i = 0; i < a->n; i++) {
		free(a->docs[i].sent);
		sf_obj_unref(a->docs[i].obj);
	}
	memset(a, 0, sizeof(*a));
}

/* ---- the CRD ---- */

/* The condition of the given type in a conditions array: 0, or -ENOENT. */
static int find_condition(sf_jv conditions, const char *type, sf_jv *out)
{
	sf_jv_iter it = sf_jv_iter_init(conditions);
	sf_jv key, c;
	while (sf_jv_next(&it, &key, &c))
		if (sf_jv_streq(sf_jv_get(c, "type"), type)) {
			*out = c;
			return 0;
		}
	return -ENOENT;
}

int tl_aw_condition(sf_jv conditions, const char *type, char *status, size_t n)
{
	sf_jv c;
	if (find_condition(conditions, type, &c) != 0)
		return -ENOENT;
	return sf_jv_str(sf_jv_get(c, "status"), status, n) < 0 ? -ENOENT : 0;
}

static int crd_established(const sf_obj *o)
{
	char st[16];
	return o &&
	       tl_aw_condition(sf_jv_path(sf_obj_root(o), "status.conditions"), "Established", st,
	                       sizeof(st)) == 0 &&
	       strcmp(st, "True") == 0;
}

typedef struct est_watch {
	tl_res end; /* the watch's final callback */
	int established;
	unsigned long events;
} est_watch;

static int on_crd_event(void *ud, sf_watch_type type, sf_obj *obj)
{
	est_watch *w = ud;
	w->events++;
	if ((type == SF_WATCH_ADDED || type == SF_WATCH_MODIFIED) && crd_established(obj))
		w->established = 1;
	sf_obj_unref(obj);
	return 0;
}

static int est_watch_over(void *ud)
{
	const est_watch *w = ud;
	return w->established || w->end.done;
}

void tl_aw_wait_established(tl_kube *k, const char *name, long timeout_ms)
{
	int64_t deadline = sf_mono_ns() + (int64_t)timeout_ms * 1000000;
	char selector[300];
	snprintf(selector, sizeof(selector), "metadata.name=%s", name);
	for (;;) {
		tl_res r;
		sf_kube_req get = {.method = "GET", .gvr = &SF_GVR_CRDS, .name = name};
		tl_do(k, &get, &r);
		cr_assert_eq(r.http_status, 200, "GET CRD %s: %ld %s %s", name, r.http_status,
		             r.message, r.errmsg);
		int done = crd_established(r.obj);
		char rv[64];
		snprintf(rv, sizeof(rv), "%s", r.obj->rv);
		tl_res_clear(&r);
		if (done)
			return;
		long left = (long)((deadline - sf_mono_ns()) / 1000000);
		cr_assert(left > 0, "CRD %s not Established within %ld ms", name, timeout_ms);

		/* Watch from the version we read: the next change is the one
		 * that sets the condition. The server ends the watch after
		 * timeout_seconds; then read again. */
		est_watch w;
		memset(&w, 0, sizeof(w));
		sf_kube_list_opts lo = {
		    .field_selector = selector, .resource_version = rv, .timeout_seconds = 10};
		sf_kube_call *call = NULL;
		int rc = sf_kube_watch(k->client, &SF_GVR_CRDS, NULL, &lo, on_crd_event, tl_res_cb,
		                       &w, &call);
		cr_assert_eq(rc, 0, "watch CRD: %d", rc);
		tl_run_until_fn(&k->loop, est_watch_over, &w, left);
		if (!w.end.done)
			sf_kube_call_cancel(call);
		tl_wait(&k->loop, &w.end, 10000);
		cr_assert(w.end.err == 0 || w.end.err == -ECANCELED || w.end.err == -ETIMEDOUT,
		          "watch CRD: %d %s", w.end.err, w.end.errmsg);
		tl_res_clear(&w.end);
		if (w.established)
			return;
	}
}

long tl_aw_install_crd(tl_kube *k)
{
	char path[1024];
	tl_aw_src_path(TL_AW_CRD_FILE, path, sizeof(path));
	tl_aw_applied a;
	size_t n = tl_aw_apply_yaml(k, NULL, path, NULL, &a);
	cr_assert_eq(n, 1, "%s holds %zu documents", path, n);
	cr_assert_str_eq(a.docs[0].kind, "CustomResourceDefinition");
	cr_assert_str_eq(a.docs[0].name, SF_AW_CRD_NAME);
	long status = a.docs[0].http_status;
	tl_aw_applied_clear(&a);
	tl_aw_wait_established(k, SF_AW_CRD_NAME, 60000);
	return status;
}

/* ---- sample files ---- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t tl_aw_list_yaml(const char *rel_dir, char ***paths)
{
	char dir[1024];
	tl_aw_src_path(rel_dir, dir, sizeof(dir));
	DIR *dh = opendir(dir);
	cr_assert(dh, "opendir %s: %s", dir, strerror(errno));
	size_t n = 0, cap = 0;
	char **v = NULL;
	struct dirent *e;
	while ((e = readdir(dh))) {
		size_t l = strlen(e->d_name);
		if (l <= 5 || strcmp(e->d_name + l - 5, ".yaml") != 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			char **nv = realloc(v, cap * sizeof(*v));
			cr_assert(nv, "out of memory");
			v = nv;
		}
		size_t pl = strlen(dir) + 1 + l + 1;
		v[n] = malloc(pl);
		cr_assert(v[n], "out of memory");
		snprintf(v[n], pl, "%s/%s", dir, e->d_name);
		n++;
	}
	closedir(dh);
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	*paths = v;
	return n;
}

void tl_aw_files_free(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

/* ---- structural JSON comparison ---- */

typedef struct jpath {
	char buf[512];
	size_t len;
} jpath;

static size_t jpath_append(jpath *p, const char *seg)
{
	size_t old = p->len, room = sizeof(p->buf) - p->len;
	int w = snprintf(p->buf + p->len, room, "%s%s", p->len && seg[0] != '[' ? "." : "", seg);
	if (w > 0)
		p->len += (size_t)w < room ? (size_t)w : room - 1;
	return old;
}

static size_t jpath_index(jpath *p, size_t i)
{
	char seg[32];
	snprintf(seg, sizeof(seg), "[%zu]", i);
	return jpath_append(p, seg);
}

static void jpath_pop(jpath *p, size_t old)
{
	p->len = old;
	p->buf[old] = '\0';
}

static int differ(const jpath *p, char *where, size_t n, const char *why)
{
	if (where && n)
		snprintf(where, n, "%s: %s", p->len ? p->buf : "(root)", why);
	return 0;
}

static int numbers_equal(sf_jv a, sf_jv b)
{
	if (a.n == b.n && memcmp(a.p, b.p, a.n) == 0)
		return 1;
	char x[64], y[64];
	if (a.n >= sizeof(x) || b.n >= sizeof(y))
		return 0;
	memcpy(x, a.p, a.n);
	x[a.n] = '\0';
	memcpy(y, b.p, b.n);
	y[b.n] = '\0';
	return strtod(x, NULL) == strtod(y, NULL);
}

static int jeq(sf_jv a, sf_jv b, jpath *p, char *where, size_t n)
{
	sf_json_type ta = sf_jv_type(a), tb = sf_jv_type(b);
	if (ta != tb)
		return differ(p, where, n, tb == SF_JSON_NONE ? "missing" : "types differ");
	switch (ta) {
	case SF_JSON_NONE:
	case SF_JSON_NULL:
	case SF_JSON_TRUE:
	case SF_JSON_FALSE: return 1;
	case SF_JSON_NUMBER: return numbers_equal(a, b) ? 1 : differ(p, where, n, "numbers differ");
	case SF_JSON_STRING: {
		char *x = sf_jv_strdup(a), *y = sf_jv_strdup(b);
		int eq = x && y && strcmp(x, y) == 0;
		free(x);
		free(y);
		return eq ? 1 : differ(p, where, n, "strings differ");
	}
	case SF_JSON_ARRAY: {
		if (sf_jv_len(a) != sf_jv_len(b))
			return differ(p, where, n, "array lengths differ");
		sf_jv_iter ia = sf_jv_iter_init(a), ib = sf_jv_iter_init(b);
		sf_jv ka, kb, va, vb;
		for (size_t i = 0; sf_jv_next(&ia, &ka, &va) && sf_jv_next(&ib, &kb, &vb); i++) {
			size_t old = jpath_index(p, i);
			int eq = jeq(va, vb, p, where, n);
			jpath_pop(p, old);
			if (!eq)
				return 0;
		}
		return 1;
	}
	case SF_JSON_OBJECT: {
		sf_jv_iter ia = sf_jv_iter_init(a);
		sf_jv ka, va;
		while (sf_jv_next(&ia, &ka, &va)) {
			char *key = sf_jv_strdup(ka);
			cr_assert(key, "out of memory");
			size_t old = jpath_append(p, key);
			int eq = jeq(va, sf_jv_get(b, key), p, where, n);
			jpath_pop(p, old);
			free(key);
			if (!eq)
				return 0;
		}
		if (sf_jv_len(a) != sf_jv_len(b)) {
			/* b has a member a lacks: name it */
			sf_jv_iter ib = sf_jv_iter_init(b);
			sf_jv kb, vb;
			while (sf_jv_next(&ib, &kb, &vb)) {
				char *key = sf_jv_strdup(kb);
				cr_assert(key, "out of memory");
				int missing = !sf_jv_ok(sf_jv_get(a, key));
				size_t old = jpath_append(p, key);
				free(key);
				if (missing)
					return differ(p, where, n, "only in the second");
				jpath_pop(p, old);
			}
			return differ(p, where, n, "member counts differ");
		}
		return 1;
	}
	}
	return 0;
}

int tl_aw_json_equal(sf_jv a, sf_jv b, char *where, size_t n)
{
	jpath p;
	p.len = 0;
	p.buf[0] = '\0';
	if (where && n)
		where[0] = '\0';
	return jeq(a, b, &p, where, n);
}

/* ---- a namespace of AppWrappers under watch ---- */

const sf_gvr TL_GVR_EVENTS = {"events.k8s.io", "v1", "events", 1};

static sf_informer *watch_one(tl_aw_watch *w, const sf_gvr *gvr)
{
	sf_informer *inf = NULL;
	sf_informer_opts o = {.reflector = {.gvr = gvr, .ns = w->ns}};
	cr_assert_eq(sf_informer_new(&w->k->loop, w->k->client, &o, &inf), 0);
	cr_assert_eq(sf_informer_start(inf), 0);
	return inf;
}

static int all_synced(void *ud)
{
	const tl_aw_watch *w = ud;
	return sf_informer_synced(w->aws) && sf_informer_synced(w->pods) &&
	       sf_informer_synced(w->jobs) && sf_informer_synced(w->events);
}

void tl_aw_watch_start(tl_aw_watch *w, tl_kube *k, const char *ns)
{
	memset(w, 0, sizeof(*w));
	w->k = k;
	snprintf(w->ns, sizeof(w->ns), "%s", ns);
	w->aws = watch_one(w, &SF_GVR_APPWRAPPERS);
	w->pods = watch_one(w, &SF_GVR_PODS);
	w->jobs = watch_one(w, &SF_GVR_JOBS);
	w->events = watch_one(w, &TL_GVR_EVENTS);
	cr_assert_eq(tl_run_until_fn(&k->loop, all_synced, w, 10000), 0,
	             "informers on %s did not sync within 10 s", ns);
}

static void inf_stopped(void *ud)
{
	(*(int *)ud)--;
}

void tl_aw_watch_stop(tl_aw_watch *w)
{
	if (!w->k)
		return;
	sf_informer *infs[] = {w->events, w->aws, w->pods, w->jobs};
	int n = 0;
	for (size_t i = 0; i < 4; i++)
		if (infs[i]) {
			n++;
			sf_informer_stop(infs[i], inf_stopped, &n);
		}
	tl_run_until(&w->k->loop, &(int){0}, 0);
	while (n > 0)
		uv_run(&w->k->loop, UV_RUN_ONCE);
	for (size_t i = 0; i < 4; i++)
		sf_informer_free(infs[i]);
	w->aws = w->pods = w->jobs = w->events = NULL;
	w->k = NULL;
}

sf_obj *tl_aw_cached(const tl_aw_watch *w, const char *name)
{
	return sf_store_get_ns(sf_informer_store(w->aws), w->ns, name);
}

void tl_aw_dump(const tl_aw_watch *w, const char *name)
{
	sf_obj *o = tl_aw_cached(w, name);
	fprintf(stderr, "AppWrapper %s/%s: %s\n", w->ns, name, o ? o->json : "(absent)");
}

typedef struct aw_wait {
	const tl_aw_watch *w;
	const char *name, *phase_or_type, *status;
} aw_wait;

static int has_phase(void *ud)
{
	const aw_wait *a = ud;
	sf_obj *o = tl_aw_cached(a->w, a->name);
	return o && sf_jv_streq(sf_jv_path(sf_obj_root(o), "status.phase"), a->phase_or_type);
}

void tl_aw_wait_phase(tl_aw_watch *w, const char *name, const char *phase, long timeout_ms)
{
	aw_wait a = {w, name, phase, NULL};
	if (tl_run_until_fn(&w->k->loop, has_phase, &a, timeout_ms) != 0) {
		tl_aw_dump(w, name);
		cr_assert_fail("%s did not reach phase %s within %ld ms", name, phase, timeout_ms);
	}
}

const char *tl_aw_cond(const tl_aw_watch *w, const char *name, const char *type, char *reason,
                       char *message)
{
	static char status[16];
	status[0] = '\0';
	sf_obj *o = tl_aw_cached(w, name);
	sf_jv c;
	if (!o || find_condition(sf_jv_path(sf_obj_root(o), "status.conditions"), type, &c) != 0)
		return status;
	sf_jv_str(sf_jv_get(c, "status"), status, sizeof(status));
	if (reason)
		sf_jv_str(sf_jv_get(c, "reason"), reason, TL_AW_REASON_LEN);
	if (message)
		sf_jv_str(sf_jv_get(c, "message"), message, TL_AW_MESSAGE_LEN);
	return status;
}

static int cond_is(void *ud)
{
	const aw_wait *a = ud;
	return strcmp(tl_aw_cond(a->w, a->name, a->phase_or_type, NULL, NULL), a->status) == 0;
}

void tl_aw_wait_cond(tl_aw_watch *w, const char *name, const char *type, const char *status,
                     long timeout_ms)
{
	aw_wait a = {w, name, type, status};
	if (tl_run_until_fn(&w->k->loop, cond_is, &a, timeout_ms) != 0) {
		tl_aw_dump(w, name);
		cr_assert_fail("%s: %s did not become %s within %ld ms", name, type, status,
		               timeout_ms);
	}
}

typedef struct labelled_ctx {
	const char *aw;
	int n;          /* objects with aw's label */
	char live[254]; /* the name of a live one ("" if none) */
} labelled_ctx;

static int labelled_visit(void *ud, sf_obj *o)
{
	labelled_ctx *c = ud;
	sf_jv root = sf_obj_root(o);
	if (!sf_jv_streq(sf_jv_get(sf_jv_path(root, "metadata.labels"), SF_AW_LABEL), c->aw))
		return 0;
	c->n++;
	if (!sf_jv_ok(sf_jv_path(root, "metadata.deletionTimestamp")))
		snprintf(c->live, sizeof(c->live), "%s", o->name);
	return 0;
}

static labelled_ctx labelled(sf_informer *inf, const char *aw)
{
	labelled_ctx c = {.aw = aw};
	sf_store_each(sf_informer_store(inf), labelled_visit, &c);
	return c;
}

int tl_aw_labelled(sf_informer *inf, const char *aw)
{
	return labelled(inf, aw).n;
}

typedef struct pod_wait {
	const tl_aw_watch *w;
	const char *aw;
	char name[254];
} pod_wait;

static int pod_live(void *ud)
{
	pod_wait *p = ud;
	labelled_ctx c = labelled(p->w->pods, p->aw);
	snprintf(p->name, sizeof(p->name), "%s", c.live);
	return p->name[0] != '\0';
}

void tl_aw_wait_pod(tl_aw_watch *w, const char *aw, char *buf, size_t n, long timeout_ms)
{
	pod_wait p = {.w = w, .aw = aw};
	if (tl_run_until_fn(&w->k->loop, pod_live, &p, timeout_ms) != 0) {
		tl_aw_dump(w, aw);
		cr_assert_fail("no pod of %s within %ld ms", aw, timeout_ms);
	}
	snprintf(buf, n, "%s", p.name);
}

void tl_aw_pod_ready(tl_aw_watch *w, const char *aw, char *buf, size_t n, long timeout_ms)
{
	tl_aw_wait_pod(w, aw, buf, n, timeout_ms);
	tl_aw_kubelet(w, buf, "Running", 0, NULL);
	tl_aw_wait_cond(w, aw, "PodsReady", "True", timeout_ms);
}

static int all_gone(void *ud)
{
	const aw_wait *a = ud;
	return tl_aw_labelled(a->w->pods, a->name) == 0 && tl_aw_labelled(a->w->jobs, a->name) == 0;
}

void tl_aw_wait_all_gone(tl_aw_watch *w, const char *aw, long timeout_ms)
{
	aw_wait a = {w, aw, NULL, NULL};
	if (tl_run_until_fn(&w->k->loop, all_gone, &a, timeout_ms) != 0) {
		tl_aw_dump(w, aw);
		cr_assert_fail("components/pods of %s still there after %ld ms (pods %d, jobs %d)",
		               aw, timeout_ms, tl_aw_labelled(w->pods, aw),
		               tl_aw_labelled(w->jobs, aw));
	}
}

long tl_aw_req(tl_aw_watch *w, const char *method, const sf_gvr *gvr, const char *name,
               const char *sub, const char *body)
{
	tl_res r;
	sf_kube_req q = {.method = method,
	                 .gvr = gvr,
	                 .ns = w->ns,
	                 .name = name,
	                 .subresource = sub,
	                 .body = body,
	                 .body_len = body ? strlen(body) : 0,
	                 .content_type =
	                     strcmp(method, "PATCH") == 0 ? "application/merge-patch+json" : NULL};
	tl_do(w->k, &q, &r);
	long st = r.http_status;
	tl_res_clear(&r);
	return st;
}

void tl_aw_create(tl_aw_watch *w, const char *json)
{
	tl_res r;
	sf_kube_req q = {.method = "POST",
	                 .gvr = &SF_GVR_APPWRAPPERS,
	                 .ns = w->ns,
	                 .body = json,
	                 .body_len = strlen(json)};
	tl_do(w->k, &q, &r);
	cr_assert_eq(r.http_status, 201, "create AppWrapper: %ld %s %s", r.http_status, r.reason,
	             r.message);
	tl_res_clear(&r);
}

void tl_aw_admit(tl_aw_watch *w, const char *name, const char *patch)
{
	long st = tl_aw_req(w, "PATCH", &SF_GVR_APPWRAPPERS, name, NULL,
	                    patch ? patch : "{\"spec\":{\"suspend\":false}}");
	cr_assert_eq(st, 200, "admit %s: %ld", name, st);
}

long tl_aw_kubelet_try(tl_aw_watch *w, const char *pod, const char *phase, int exit_code,
                       const char *message)
{
	char body[2048], ts[40];
	sf_time_rfc3339(sf_wall_ns(), ts, sizeof(ts));
	if (strcmp(phase, "Running") == 0)
		snprintf(
		    body, sizeof(body),
		    "{\"status\":{\"phase\":\"Running\",\"startTime\":\"%s\",\"conditions\":[{"
		    "\"type\":\"Ready\",\"status\":\"True\"}],\"containerStatuses\":[{\"name\":"
		    "\"main\",\"image\":\"busybox\",\"imageID\":\"\",\"ready\":true,"
		    "\"restartCount\":0,\"state\":{\"running\":{\"startedAt\":\"%s\"}}}]}}",
		    ts, ts);
	else
		snprintf(
		    body, sizeof(body),
		    "{\"status\":{\"phase\":\"%s\",\"startTime\":\"%s\",\"containerStatuses\":[{"
		    "\"name\":\"main\",\"image\":\"busybox\",\"imageID\":\"\",\"ready\":false,"
		    "\"restartCount\":0,\"state\":{\"terminated\":{\"exitCode\":%d,\"reason\":"
		    "\"%s\",\"message\":\"%s\",\"startedAt\":\"%s\",\"finishedAt\":\"%s\"}}}]}}",
		    phase, ts, exit_code, exit_code ? "Error" : "Completed", message ? message : "",
		    ts, ts);
	return tl_aw_req(w, "PATCH", &SF_GVR_PODS, pod, "status", body);
}

void tl_aw_kubelet(tl_aw_watch *w, const char *pod, const char *phase, int exit_code,
                   const char *message)
{
	long st = tl_aw_kubelet_try(w, pod, phase, exit_code, message);
	cr_assert_eq(st, 200, "kubelet patch of %s: %ld", pod, st);
}

static int events_visit(void *ud, sf_obj *o)
{
	tl_aw_events *e = ud;
	sf_jv ev = sf_obj_root(o);
	char note[1100] = "";
	if (!sf_jv_streq(sf_jv_path(ev, "regarding.kind"), SF_AW_KIND) ||
	    !sf_jv_streq(sf_jv_path(ev, "regarding.name"), e->aw))
		return 0;
	sf_jv_str(sf_jv_get(ev, "note"), note, sizeof(note));
	if (strstr(note, e->needle)) {
		int64_t c = 1;
		e->found++;
		e->warning = sf_jv_streq(sf_jv_get(ev, "type"), "Warning");
		if (sf_jv_ok(sf_jv_get(ev, "series")))
			sf_jv_int64(sf_jv_path(ev, "series.count"), &c);
		if ((long)c > e->count)
			e->count = (long)c;
	}
	return 0;
}

int tl_aw_events_scan(const tl_aw_watch *w, tl_aw_events *e)
{
	e->found = 0;
	e->warning = 0;
	e->count = 0;
	sf_store_each(sf_informer_store(w->events), events_visit, e);
	return e->found;
}

typedef struct events_wait {
	const tl_aw_watch *w;
	tl_aw_events e;
} events_wait;

static int events_found(void *ud)
{
	events_wait *ew = ud;
	return tl_aw_events_scan(ew->w, &ew->e) > 0;
}

tl_aw_events tl_aw_wait_event(tl_aw_watch *w, const char *aw, const char *needle, long timeout_ms)
{
	events_wait ew = {w, {.aw = aw, .needle = needle}};
	if (tl_run_until_fn(&w->k->loop, events_found, &ew, timeout_ms) != 0)
		cr_assert_fail("no event about %s containing \"%s\" within %ld ms", aw, needle,
		               timeout_ms);
	return ew.e;
}

void tl_aw_env_open(tl_kube *k, tl_aw_watch *w, const char *prefix, char *ns, size_t n)
{
	sf_log_set_level(getenv("SF_DEBUG") ? SF_LOG_DEBUG : SF_LOG_WARN);
	tl_kube_open(k, NULL, NULL);
	tl_aw_install_crd(k);
	tl_namespace(k, prefix, ns, n);
	tl_aw_watch_start(w, k, ns);
}

void tl_aw_env_close(tl_kube *k, tl_aw_watch *w, const char *ns)
{
	tl_ctl_stop_all(&k->loop);
	tl_aw_watch_stop(w);
	tl_namespace_delete(k, ns);
	tl_kube_close(k);
}
