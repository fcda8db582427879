/*
 * admparams.c - the admission parameters kept in step with discovery and
 * the operator config by the leader (admparams.h).
 *
 * A pass is four requests, one after the other: aggregated discovery of
 * the core group (/api) and of the named groups (/apis), a GET of the
 * ConfigMap, and, only when it says something else than it should, one
 * server-side apply carrying the resourceVersion just read. The decisions
 * (what discovery says, what to write) are pure functions, unit-tested
 * from documents; this file's pass only moves bytes and logs, and the
 * timer, pause and close around it are the shared syncer's (syncer.h).
 */
#include "steadfast/admparams.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/log.h"

#define LOGGER "admission"
#define INTERVAL_MS 60000
#define DISCOVERY_ACCEPT                                                                           \
	"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"

static const sf_gvr CONFIGMAPS = {"", "v1", "configmaps", 1};

/* ---- decisions ---- */

/* A ConfigMap data key: [-._a-zA-Z0-9]+, at most 253. */
static int key_ok(const char *k)
{
	size_t n = strlen(k);
	if (n == 0 || n > 253)
		return 0;
	for (; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
		      (*k >= '0' && *k <= '9') || *k == '-' || *k == '.' || *k == '_'))
			return 0;
	return 1;
}

/* A resource name: lower-case DNS label characters. */
static int resource_ok(const char *r)
{
	size_t n = strlen(r);
	if (n == 0 || n > 253)
		return 0;
	for (; *r; r++)
		if (!((*r >= 'a' && *r <= 'z') || (*r >= '0' && *r <= '9') || *r == '-' ||
		      *r == '.'))
			return 0;
	return 1;
}

static int has_verb(sf_jv verbs, const char *verb)
{
	sf_jv_iter it = sf_jv_iter_init(verbs);
	sf_jv v;
	while (sf_jv_next(&it, NULL, &v))
		if (sf_jv_streq(v, verb))
			return 1;
	return 0;
}

static int add_resource(sf_strmap *out, const char *group, sf_jv r)
{
	char resource[254], kind[254], key[512];
	if (!sf_jv_streq(sf_jv_get(r, "scope"), "Namespaced") ||
	    !has_verb(sf_jv_get(r, "verbs"), "create") ||
	    sf_jv_str(sf_jv_get(r, "resource"), resource, sizeof(resource)) <= 0 ||
	    sf_jv_str(sf_jv_path(r, "responseKind.kind"), kind, sizeof(kind)) <= 0)
		return 0;
	if (*group)
		snprintf(key, sizeof(key), "%s.%s", kind, group);
	else
		snprintf(key, sizeof(key), "%s", kind);
	if (!key_ok(key) || !resource_ok(resource) || sf_strmap_find(out, key, NULL))
		return 0;
	char *v = strdup(resource);
	if (!v)
		return -ENOMEM;
	if (sf_strmap_put(out, key, v, NULL) < 0) {
		free(v);
		return -ENOMEM;
	}
	return 0;
}

int sf_admparams_discovered(sf_jv doc, sf_strmap *out, int *stale, char *err, size_t errlen)
{
	if (!sf_jv_streq(sf_jv_get(doc, "kind"), "APIGroupDiscoveryList") ||
	    sf_jv_type(sf_jv_get(doc, "items")) != SF_JSON_ARRAY) {
		char kind[64] = "";
		sf_jv_str(sf_jv_get(doc, "kind"), kind, sizeof(kind));
		snprintf(err, errlen,
		         "not an aggregated discovery answer (kind \"%s\", want "
		         "APIGroupDiscoveryList of apidiscovery.k8s.io/v2)",
		         kind);
		return -EINVAL;
	}
	sf_jv_iter gi = sf_jv_iter_init(sf_jv_get(doc, "items"));
	sf_jv g;
	while (sf_jv_next(&gi, NULL, &g)) {
		char group[254] = "";
		sf_jv gname = sf_jv_path(g, "metadata.name");
		if (sf_jv_ok(gname) && sf_jv_str(gname, group, sizeof(group)) < 0)
			continue;
		sf_jv_iter vi = sf_jv_iter_init(sf_jv_get(g, "versions"));
		sf_jv v;
		while (sf_jv_next(&vi, NULL, &v)) {
			if (sf_jv_streq(sf_jv_get(v, "freshness"), "Stale")) {
				if (stale)
					(*stale)++;
				continue;
			}
			sf_jv_iter ri = sf_jv_iter_init(sf_jv_get(v, "resources"));
			sf_jv r;
			while (sf_jv_next(&ri, NULL, &r))
				if (add_resource(out, group, r) < 0)
					return -ENOMEM;
		}
	}
	return 0;
}

static int put_str(sf_strmap *out, const char *key, const char *val)
{
	char *v = strdup(val);
	void *old = NULL;
	if (!v || sf_strmap_put(out, key, v, &old) < 0) {
		free(v);
		return -ENOMEM;
	}
	free(old);
	return 0;
}

int sf_admparams_config(const sf_aw_config *cfg, sf_strmap *out)
{
	if (put_str(out, "enableKueueIntegrations",
	            cfg->enable_kueue_integrations ? "true" : "false") ||
	    put_str(out, "manageJobsWithoutQueueName",
	            cfg->manage_jobs_without_queue_name ? "true" : "false") ||
	    put_str(out, "defaultQueueName", cfg->default_queue_name))
		return -ENOMEM;
	return 0;
}

void sf_admparams_plan_init(sf_admparams_plan *p)
{
	memset(p, 0, sizeof(*p));
	sf_buf_init(&p->body, 0);
}

void sf_admparams_plan_free(sf_admparams_plan *p)
{
	sf_buf_free(&p->body);
}

/* The data keys manager owns by apply: the f:<key> members of f:data in
 * its managedFields entry. Values NULL. */
static int owned_keys(sf_jv cm, const char *manager, sf_strmap *out)
{
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(cm, "metadata.managedFields"));
	sf_jv e;
	while (sf_jv_next(&it, NULL, &e)) {
		if (!sf_jv_streq(sf_jv_get(e, "manager"), manager) ||
		    !sf_jv_streq(sf_jv_get(e, "operation"), "Apply"))
			continue;
		sf_jv_iter fi = sf_jv_iter_init(sf_jv_get(sf_jv_get(e, "fieldsV1"), "f:data"));
		sf_jv k, v;
		while (sf_jv_next(&fi, &k, &v)) {
			char key[300];
			if (sf_jv_str(k, key, sizeof(key)) > 2 && strncmp(key, "f:", 2) == 0 &&
			    key_ok(key + 2) && sf_strmap_put(out, key + 2, NULL, NULL) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of m, sorted (malloc'd array of borrowed keys). */
static const char **sorted_keys(const sf_strmap *m, size_t *n)
{
	size_t len = sf_strmap_len(m);
	const char **ks = malloc((len ? len : 1) * sizeof(*ks));
	if (!ks)
		return NULL;
	sf_strmap_iter it = SF_STRMAP_ITER_INIT;
	const char *k;
	size_t i = 0;
	while (i < len && sf_strmap_next(m, &it, &k, NULL))
		ks[i++] = k;
	qsort(ks, i, sizeof(*ks), cmp_str);
	*n = i;
	return ks;
}

static void note_first(sf_admparams_plan *p, const char *key)
{
	if (!p->first[0])
		snprintf(p->first, sizeof(p->first), "%s", key);
}

static int put_member(sf_buf *b, int *comma, const char *key, sf_jv val_json, const char *val)
{
	int rc = 0;
	if (*comma)
		rc = sf_buf_putc(b, ',');
	*comma = 1;
	if (!rc)
		rc = sf_buf_put_json_str(b, key, strlen(key));
	if (!rc)
		rc = sf_buf_putc(b, ':');
	if (!rc)
		rc = val ? sf_buf_put_json_str(b, val, strlen(val))
		         : sf_buf_append(b, val_json.p, val_json.n);
	return rc;
}

int sf_admparams_plan_make(sf_admparams_plan *p, const sf_strmap *desired, sf_jv cm,
                           const char *manager, int keep_owned)
{
	char name[254], ns[254], rv[64];
	if (sf_jv_str(sf_jv_path(cm, "metadata.name"), name, sizeof(name)) <= 0 ||
	    sf_jv_str(sf_jv_path(cm, "metadata.resourceVersion"), rv, sizeof(rv)) <= 0)
		return -EINVAL;
	if (sf_jv_str(sf_jv_path(cm, "metadata.namespace"), ns, sizeof(ns)) < 0)
		ns[0] = 0;
	sf_jv data = sf_jv_get(cm, "data");
	sf_strmap *owned = NULL;
	const char **dk = NULL, **ok = NULL;
	size_t ndk = 0, nok = 0;
	int rc = sf_strmap_new(0, 0, &owned);
	if (rc == 0)
		rc = owned_keys(cm, manager, owned);
	if (rc == 0 && (!(dk = sorted_keys(desired, &ndk)) || !(ok = sorted_keys(owned, &nok))))
		rc = -ENOMEM;
	p->added = p->changed = p->removed = 0;
	p->first[0] = 0;
	sf_buf_reset(&p->body);
	if (rc == 0)
		rc = sf_buf_puts(&p->body, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
		                           "\"metadata\":{\"name\":");
	if (rc == 0)
		rc = sf_buf_put_json_str(&p->body, name, strlen(name));
	if (rc == 0 && ns[0]) {
		rc = sf_buf_puts(&p->body, ",\"namespace\":");
		if (rc == 0)
			rc = sf_buf_put_json_str(&p->body, ns, strlen(ns));
	}
	if (rc == 0)
		rc = sf_buf_printf(&p->body, ",\"resourceVersion\":\"%s\"},\"data\":{", rv);
	int comma = 0;
	for (size_t i = 0; rc == 0 && i < ndk; i++) {
		const char *want = sf_strmap_get(desired, dk[i]);
		sf_jv have = sf_jv_get(data, dk[i]);
		if (!sf_jv_ok(have)) {
			p->added++;
			note_first(p, dk[i]);
		} else if (!sf_jv_streq(have, want)) {
			p->changed++;
			note_first(p, dk[i]);
		}
		rc = put_member(&p->body, &comma, dk[i], SF_JV_NONE, want);
	}
	for (size_t i = 0; rc == 0 && i < nok; i++) {
		if (sf_strmap_find(desired, ok[i], NULL))
			continue;
		sf_jv have = sf_jv_get(data, ok[i]);
		if (keep_owned) {
			if (sf_jv_ok(have))
				rc = put_member(&p->body, &comma, ok[i], have, NULL);
		} else if (sf_jv_ok(have)) {
			p->removed++;
			note_first(p, ok[i]);
		}
	}
	if (rc == 0)
		rc = sf_buf_puts(&p->body, "}}");
	free(dk);
	free(ok);
	sf_strmap_free(owned, NULL);
	if (rc < 0)
		return rc;
	return p->added || p->changed || p->removed;
}

/* ---- passes ---- */

enum { IDLE, CORE, GROUPS, READ, WRITE };

struct sf_admparams {
	sf_syncer sync; /* the timer, the call in flight, the stats */
	sf_kube_client *client;
	const sf_aw_config *cfg;
	char *ns, *name;
	long interval_ms;
	sf_strmap *desired;
	int stale;
	int conflicts; /* in a row: a 409 re-runs the pass at once, twice at most */
	int last;      /* outcome of the previous pass (log once per change) */
	sf_admparams_plan plan;
};

enum { O_NONE, O_OK, O_ABSENT, O_ERROR };

static void pass_failed(sf_admparams *p, const char *step, const char *error)
{
	p->sync.st.errors++;
	p->sync.step = IDLE;
	sf_log(p->last == O_ERROR ? SF_LOG_DEBUG : SF_LOG_WARN, LOGGER,
	       "cannot bring the admission parameters up to date; kinds installed since the last "
	       "update may be refused as unmapped",
	       "configMap", p->name, "namespace", p->ns, "step", step, "error", error, NULL);
	p->last = O_ERROR;
	sf_syncer_schedule(&p->sync, p->interval_ms);
}

static void pass_done(sf_admparams *p, int outcome)
{
	p->sync.step = IDLE;
	p->conflicts = 0;
	p->last = outcome;
	sf_syncer_schedule(&p->sync, p->interval_ms);
}

static void on_written(void *ud, const sf_kube_result *res)
{
	sf_admparams *p = ud;
	if (!sf_syncer_answer(&p->sync, res))
		return;
	char buf[512];
	if (sf_kube_is_conflict(res) && p->conflicts < 2) {
		/* changed between the read and the write: read again */
		p->conflicts++;
		p->sync.step = IDLE;
		sf_syncer_schedule(&p->sync, 0);
		return;
	}
	if (!sf_kube_ok(res)) {
		pass_failed(p, "apply", sf_kube_result_str(res, buf, sizeof(buf)));
		return;
	}
	p->sync.st.updated++;
	char a[24], c[24], r[24], t[24];
	sf_log_info(LOGGER, "admission parameters updated from discovery and the config",
	            "configMap", p->name, "namespace", p->ns, "added",
	            sf_log_int(a, (long long)p->plan.added), "changed",
	            sf_log_int(c, (long long)p->plan.changed), "removed",
	            sf_log_int(r, (long long)p->plan.removed), "first", p->plan.first, "keys",
	            sf_log_int(t, (long long)sf_strmap_len(p->desired)), NULL);
	pass_done(p, O_OK);
}

static void on_read(void *ud, const sf_kube_result *res)
{
	sf_admparams *p = ud;
	if (!sf_syncer_answer(&p->sync, res))
		return;
	char buf[512];
	if (sf_kube_is_absent(res, p->name)) {
		p->sync.st.absent++;
		if (p->last != O_ABSENT)
			sf_log(
			    p->cfg->webhooks_enabled ? SF_LOG_WARN : SF_LOG_INFO, LOGGER,
			    "admission parameters not found: not created, kept or checked (every "
			    "AppWrapper create is refused while the policies are installed without "
			    "them)",
			    "configMap", p->name, "namespace", p->ns, "webhooksEnabled",
			    p->cfg->webhooks_enabled ? "true" : "false", NULL);
		pass_done(p, O_ABSENT);
		return;
	}
	if (!sf_kube_ok(res) || !res->obj) {
		pass_failed(p, "read", sf_kube_result_str(res, buf, sizeof(buf)));
		return;
	}
	int rc = sf_admparams_plan_make(&p->plan, p->desired, sf_obj_root(res->obj),
	                                SF_ADMPARAMS_MANAGER, p->stale > 0);
	if (rc < 0) {
		pass_failed(p, "plan",
		            rc == -ENOMEM ? "out of memory" : "no name or resourceVersion");
		return;
	}
	if (rc == 0) {
		p->sync.st.unchanged++;
		if (p->last != O_OK)
			sf_log_info(LOGGER,
			            "admission parameters agree with discovery and the config",
			            "configMap", p->name, "namespace", p->ns, NULL);
		pass_done(p, O_OK);
		return;
	}
	char q[128];
	snprintf(q, sizeof(q), "fieldManager=%s&force=true", SF_ADMPARAMS_MANAGER);
	sf_kube_req r = {.method = "PATCH",
	                 .gvr = &CONFIGMAPS,
	                 .ns = p->ns,
	                 .name = p->name,
	                 .query = q,
	                 .body = p->plan.body.data,
	                 .body_len = p->plan.body.len,
	                 .content_type = "application/apply-patch+yaml"};
	p->sync.step = WRITE;
	if ((rc = sf_kube_do(p->client, &r, on_written, p, &p->sync.call)) < 0)
		pass_failed(p, "apply", strerror(-rc));
}

static void discover(sf_admparams *p, const char *path);

static void on_discovery(void *ud, const sf_kube_result *res)
{
	sf_admparams *p = ud;
	if (!sf_syncer_answer(&p->sync, res))
		return;
	char buf[512];
	const char *path = p->sync.step == CORE ? "/api" : "/apis";
	if (!sf_kube_ok(res) || !res->obj) {
		pass_failed(p, path, sf_kube_result_str(res, buf, sizeof(buf)));
		return;
	}
	int rc =
	    sf_admparams_discovered(sf_obj_root(res->obj), p->desired, &p->stale, buf, sizeof(buf));
	if (rc < 0) {
		pass_failed(p, path, rc == -ENOMEM ? "out of memory" : buf);
		return;
	}
	if (p->sync.step == CORE) {
		p->sync.step = GROUPS;
		discover(p, "/apis");
		return;
	}
	if (sf_admparams_config(p->cfg, p->desired) < 0) {
		pass_failed(p, "config", "out of memory");
		return;
	}
	p->sync.step = READ;
	if ((rc = sf_kube_get(p->client, &CONFIGMAPS, p->ns, p->name, on_read, p, &p->sync.call)) <
	    0)
		pass_failed(p, "read", strerror(-rc));
}

static void discover(sf_admparams *p, const char *path)
{
	sf_kube_req r = {.method = "GET", .path = path, .accept = DISCOVERY_ACCEPT};
	int rc = sf_kube_do(p->client, &r, on_discovery, p, &p->sync.call);
	if (rc < 0)
		pass_failed(p, path, strerror(-rc));
}

/* The syncer's pass: running, and no pass under way. */
static void pass(void *ud)
{
	sf_admparams *p = ud;
	sf_strmap_clear(p->desired, free);
	p->stale = 0;
	p->sync.step = CORE;
	discover(p, "/api");
}

/* The syncer's release: closed, nothing in flight. */
static void release(void *ud)
{
	sf_admparams *p = ud;
	sf_strmap_free(p->desired, free);
	sf_admparams_plan_free(&p->plan);
	free(p->ns);
	free(p->name);
	free(p);
}

int sf_admparams_new(uv_loop_t *loop, sf_kube_client *client, const sf_admparams_opts *o,
                     sf_admparams **out)
{
	if (!o || !o->cfg || !o->ns || !*o->ns || !o->name || !*o->name)
		return -EINVAL;
	sf_admparams *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->client = client;
	p->cfg = o->cfg;
	p->interval_ms = o->interval_ms > 0 ? o->interval_ms : INTERVAL_MS;
	p->ns = strdup(o->ns);
	p->name = strdup(o->name);
	sf_admparams_plan_init(&p->plan);
	if (!p->ns || !p->name || sf_strmap_new(0, 64, &p->desired) < 0) {
		free(p->ns);
		free(p->name);
		free(p);
		return -ENOMEM;
	}
	sf_syncer_init(loop, &p->sync, pass, release, p);
	*out = p;
	return 0;
}

void sf_admparams_run(sf_admparams *p)
{
	if (p && sf_syncer_run(&p->sync))
		p->conflicts = 0;
}

void sf_admparams_pause(sf_admparams *p)
{
	if (p)
		sf_syncer_pause(&p->sync);
}

void sf_admparams_close(sf_admparams *p, void (*cb)(void *ud), void *ud)
{
	if (!p) {
		if (cb)
			cb(ud);
		return;
	}
	sf_syncer_close(&p->sync, cb, ud);
}

void sf_admparams_stats_get(const sf_admparams *p, sf_admparams_stats *out)
{
	if (p)
		*out = p->sync.st;
	else
		memset(out, 0, sizeof(*out));
}

int sf_admparams_metrics_write(const sf_admparams *p, sf_prom *prom)
{
	return sf_syncer_metrics_write(
	    p ? &p->sync.st : NULL, prom, "steadfast_admission_params_syncs_total",
	    "Passes over the admission parameters ConfigMap by outcome: unchanged, updated (one "
	    "apply), absent (not installed), error");
}
