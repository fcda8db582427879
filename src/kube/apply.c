/*
 * apply.c - server-side apply of a YAML stream (see apply.h).
 *
 * The stream is converted to JSON documents up front (so a malformed file
 * changes nothing); then one document at a time is resolved and patched,
 * the next started from the previous one's callback.
 */
#include "steadfast/apply.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/json.h"
#include "steadfast/yaml.h"

typedef struct apply_run {
	uv_timer_t kick; /* starts the first document from the loop */
	sf_kube_client *c;
	char **docs;
	size_t n, cap, next;
	char *ns;
	char *manager;
	sf_apply_doc_fn doc;
	sf_apply_done_fn done;
	void *ud;
	int failed;
	/* the document in flight */
	char kind[128], name[254], dns[254];
	sf_gvr gvr;
	char group[128], version[64], resource[128];
} apply_run;

static void run_closed(uv_handle_t *h);

static void run_free(apply_run *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->docs[i]);
	free(a->docs);
	free(a->ns);
	free(a->manager);
	free(a);
}

static int collect(void *ud, size_t index, const char *json, size_t len)
{
	apply_run *a = ud;
	(void)index;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 8;
		char **d = realloc(a->docs, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		a->docs = d;
		a->cap = cap;
	}
	a->docs[a->n] = strndup(json, len);
	if (!a->docs[a->n])
		return -ENOMEM;
	a->n++;
	return 0;
}

static void step(apply_run *a);

static void report(apply_run *a, int err, long status, const char *msg)
{
	sf_apply_result r = {.index = a->next,
	                     .kind = a->kind,
	                     .name = a->name,
	                     .ns = a->dns,
	                     .err = err,
	                     .http_status = status,
	                     .message = msg ? msg : ""};
	if (err)
		a->failed++;
	if (a->doc)
		a->doc(a->ud, &r);
	a->next++;
	step(a);
}

static void on_patched(void *ud, const sf_kube_result *res)
{
	apply_run *a = ud;
	if (sf_kube_ok(res)) {
		report(a, 0, res->http_status, "");
		return;
	}
	char buf[600];
	const char *m = res->status && res->status->message[0]
	                    ? res->status->message
	                    : sf_kube_result_str(res, buf, sizeof(buf));
	report(a, res->err ? res->err : -EIO, res->http_status, m);
}

static void on_resolved(void *ud, int err, const char *errmsg, const sf_gvr *gvr)
{
	apply_run *a = ud;
	if (err) {
		report(a, err, 0,
		       errmsg && errmsg[0] ? errmsg : "kind not served by the API server");
		return;
	}
	snprintf(a->group, sizeof(a->group), "%s", gvr->group);
	snprintf(a->version, sizeof(a->version), "%s", gvr->version);
	snprintf(a->resource, sizeof(a->resource), "%s", gvr->resource);
	a->gvr = (sf_gvr){a->group, a->version, a->resource, gvr->namespaced};
	if (!gvr->namespaced)
		a->dns[0] = 0;
	else if (!a->dns[0])
		snprintf(a->dns, sizeof(a->dns), "%s", a->ns);
	int rc =
	    sf_kube_patch(a->c, &a->gvr, gvr->namespaced ? a->dns : NULL, a->name, NULL,
	                  SF_PATCH_APPLY, a->docs[a->next], a->manager, 1, on_patched, a, NULL);
	if (rc < 0)
		report(a, rc, 0, "cannot send the request");
}

static void run_closed(uv_handle_t *h)
{
	run_free(h->data);
}

static void step(apply_run *a)
{
	if (a->next >= a->n) {
		if (a->done)
			a->done(a->ud, a->failed);
		uv_close((uv_handle_t *)&a->kick, run_closed);
		return;
	}
	sf_jv d = sf_jv_root(a->docs[a->next], strlen(a->docs[a->next]));
	char api[256] = "";
	a->kind[0] = a->name[0] = a->dns[0] = 0;
	sf_jv_str(sf_jv_get(d, "kind"), a->kind, sizeof(a->kind));
	sf_jv_str(sf_jv_path(d, "metadata.name"), a->name, sizeof(a->name));
	sf_jv_str(sf_jv_path(d, "metadata.namespace"), a->dns, sizeof(a->dns));
	if (sf_jv_str(sf_jv_get(d, "apiVersion"), api, sizeof(api)) <= 0 || !a->kind[0] ||
	    !a->name[0]) {
		report(a, -EINVAL, 0, "a document needs apiVersion, kind and metadata.name");
		return;
	}
	int rc = sf_kube_resolve(a->c, api, a->kind, on_resolved, a);
	if (rc < 0)
		report(a, rc, 0, "discovery request failed to start");
}

static void on_kick(uv_timer_t *t)
{
	step(t->data);
}

int sf_apply_yaml(uv_loop_t *loop, sf_kube_client *c, const char *yaml, size_t len, const char *ns,
                  const char *field_manager, sf_apply_doc_fn doc, sf_apply_done_fn done, void *ud,
                  char *err, size_t errlen)
{
	apply_run *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->c = c;
	a->doc = doc;
	a->done = done;
	a->ud = ud;
	a->ns = strdup(ns && ns[0] ? ns : "default");
	a->manager = strdup(field_manager && field_manager[0] ? field_manager : "steadfast-apply");
	if (!a->ns || !a->manager) {
		run_free(a);
		return -ENOMEM;
	}
	int rc = sf_yaml_to_json(yaml, len, 0, collect, a, err, errlen);
	if (rc != 0) {
		run_free(a);
		return rc < 0 ? rc : -ENOMEM;
	}
	uv_timer_init(loop, &a->kick);
	a->kick.data = a;
	uv_timer_start(&a->kick, on_kick, 0, 0);
	return 0;
}
