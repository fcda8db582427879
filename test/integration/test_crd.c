/*
 * test_crd.c - our AppWrapper CRD and sample set against a real kube-apiserver.
 *
 * The CRD in manifests/crd installs (and reinstalls) and becomes Established;
 * discovery serves it with its short name and status subresource; the
 * printer columns, the schema and the markers are served as written; every
 * sample in test/samples is accepted (also as a server-side dry run) and
 * read back with its templates unchanged; the status subresource splits
 * status from spec; invalid AppWrappers are refused with 422 naming the
 * field; unknown fields are pruned outside templates and kept inside.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/awapi.h"
#include "steadfast/buf.h"
#include "steadfast/client.h"
#include "steadfast/json.h"
#include "steadfast/time.h"
#include "tl.h"
#include "tl_aw.h"

static tl_kube K;

static void setup(void)
{
	srand((unsigned)sf_mono_ns());
	tl_kube_open(&K, NULL, NULL);
}

static void teardown(void)
{
	tl_kube_close(&K);
}

TestSuite(crd, .init = setup, .fini = teardown, .timeout = 240);

/* ---- helpers ---- */

static sf_jv jpath(const sf_obj *o, const char *path)
{
	cr_assert(o, "no object");
	return sf_jv_path(sf_obj_root(o), path);
}

static void jstr(const sf_obj *o, const char *path, char *buf, size_t n)
{
	int rc = sf_jv_str(jpath(o, path), buf, n);
	cr_assert(rc >= 0, "%s missing in %.300s", path, o->json);
}

static int64_t jint(const sf_obj *o, const char *path)
{
	int64_t v = 0;
	cr_assert_eq(sf_jv_int64(jpath(o, path), &v), 0, "%s not an integer in %.300s", path,
	             o->json);
	return v;
}

static sf_jv sent_root(const tl_aw_doc *d)
{
	return sf_jv_root(d->sent, strlen(d->sent));
}

static void expect_json_equal(sf_jv want, sf_jv got, const char *what)
{
	char where[600];
	cr_assert(sf_jv_ok(want), "%s: nothing to compare", what);
	cr_expect(tl_aw_json_equal(want, got, where, sizeof(where)),
	          "%s: %s\nsent: %.*s\ngot:  %.*s", what, where,
	          (int)(want.n > 1500 ? 1500 : want.n), want.p, (int)(got.n > 1500 ? 1500 : got.n),
	          got.p ? got.p : "");
}

/* Does the string array v hold s? */
static int has_str(sf_jv v, const char *s)
{
	sf_jv_iter it = sf_jv_iter_init(v);
	sf_jv k, e;
	while (sf_jv_next(&it, &k, &e))
		if (sf_jv_streq(e, s))
			return 1;
	return 0;
}

/* json with the bytes of view `at` (which points into json) replaced. */
static char *replace_view(const char *json, sf_jv at, const char *with)
{
	cr_assert(sf_jv_ok(at) && at.p >= json && at.p + at.n <= json + strlen(json));
	sf_buf b;
	sf_buf_init(&b, 0);
	int rc = sf_buf_append(&b, json, (size_t)(at.p - json));
	rc = rc ? rc : sf_buf_puts(&b, with);
	rc = rc ? rc : sf_buf_puts(&b, at.p + at.n);
	cr_assert_eq(rc, 0);
	return sf_buf_detach(&b, NULL);
}

static sf_obj *get_aw(const char *ns, const char *name, long want_status)
{
	tl_res r;
	sf_kube_req req = {.method = "GET", .gvr = &SF_GVR_APPWRAPPERS, .ns = ns, .name = name};
	tl_do(&K, &req, &r);
	cr_assert_eq(r.http_status, want_status, "GET appwrapper %s/%s: %ld %s %s", ns, name,
	             r.http_status, r.message, r.errmsg);
	sf_obj *o = r.obj ? sf_obj_ref(r.obj) : NULL;
	tl_res_clear(&r);
	return o;
}

static unsigned long count_aws(const char *ns)
{
	tl_res r;
	sf_kube_req req = {.method = "GET", .gvr = &SF_GVR_APPWRAPPERS, .ns = ns};
	tl_do(&K, &req, &r);
	cr_assert_eq(r.http_status, 200, "LIST appwrappers: %ld %s", r.http_status, r.message);
	cr_assert(r.obj, "LIST without a body");
	unsigned long n = (unsigned long)sf_jv_len(jpath(r.obj, "items"));
	tl_res_clear(&r);
	return n;
}

static sf_obj *get_crd(void)
{
	tl_res r;
	sf_kube_req req = {.method = "GET", .gvr = &SF_GVR_CRDS, .name = SF_AW_CRD_NAME};
	tl_do(&K, &req, &r);
	cr_assert_eq(r.http_status, 200, "GET CRD: %ld %s", r.http_status, r.message);
	sf_obj *o = sf_obj_ref(r.obj);
	tl_res_clear(&r);
	return o;
}

/* ---- install ---- */

Test(crd, installs_established_and_reinstall_is_a_no_op)
{
	long first = tl_aw_install_crd(&K);
	cr_assert(first == 201 || first == 200, "first install: %ld", first);
	sf_obj *a = get_crd();
	char st[16];
	sf_jv conds = jpath(a, "status.conditions");
	cr_assert_eq(tl_aw_condition(conds, "Established", st, sizeof(st)), 0, "%s", a->json);
	cr_assert_str_eq(st, "True");
	cr_assert_eq(tl_aw_condition(conds, "NamesAccepted", st, sizeof(st)), 0);
	cr_assert_str_eq(st, "True", "names not accepted: %s", a->json);

	/* what is served is what we wrote */
	char v[128];
	jstr(a, "spec.group", v, sizeof(v));
	cr_assert_str_eq(v, SF_AW_GROUP);
	jstr(a, "spec.scope", v, sizeof(v));
	cr_assert_str_eq(v, "Namespaced");
	jstr(a, "spec.names.plural", v, sizeof(v));
	cr_assert_str_eq(v, "appwrappers");
	jstr(a, "spec.names.singular", v, sizeof(v));
	cr_assert_str_eq(v, "appwrapper");
	jstr(a, "spec.names.kind", v, sizeof(v));
	cr_assert_str_eq(v, "AppWrapper");
	jstr(a, "spec.names.listKind", v, sizeof(v));
	cr_assert_str_eq(v, "AppWrapperList");
	cr_assert_eq(sf_jv_len(jpath(a, "spec.names.shortNames")), 1);
	cr_assert(sf_jv_streq(jpath(a, "spec.names.shortNames[0]"), "aw"));
	cr_assert_eq(sf_jv_len(jpath(a, "spec.versions")), 1);
	jstr(a, "spec.versions[0].name", v, sizeof(v));
	cr_assert_str_eq(v, "v1beta2");
	cr_assert_eq(sf_jv_type(jpath(a, "spec.versions[0].served")), SF_JSON_TRUE);
	cr_assert_eq(sf_jv_type(jpath(a, "spec.versions[0].storage")), SF_JSON_TRUE);
	cr_assert_eq(sf_jv_type(jpath(a, "spec.versions[0].subresources.status")), SF_JSON_OBJECT);
	cr_assert(has_str(jpath(a, "status.acceptedNames.shortNames"), "aw"));
	cr_assert(has_str(jpath(a, "status.storedVersions"), "v1beta2"));

	/* the schema came through the server unchanged (nothing dropped) */
	char *file = tl_aw_yaml_json(TL_AW_CRD_FILE);
	sf_jv fschema =
	    sf_jv_path(sf_jv_root(file, strlen(file)), "spec.versions[0].schema.openAPIV3Schema");
	expect_json_equal(fschema, jpath(a, "spec.versions[0].schema.openAPIV3Schema"), "schema");
	free(file);

	/* a second install updates in place: same object, same generation */
	long second = tl_aw_install_crd(&K);
	cr_assert_eq(second, 200, "second install: %ld", second);
	sf_obj *b = get_crd();
	cr_assert_str_eq(b->uid, a->uid, "the CRD was recreated");
	cr_assert_eq(jint(b, "metadata.generation"), jint(a, "metadata.generation"),
	             "reinstalling the same CRD changed its spec");
	cr_assert_eq(tl_aw_condition(jpath(b, "status.conditions"), "Established", st, sizeof(st)),
	             0);
	cr_assert_str_eq(st, "True");
	sf_obj_unref(a);
	sf_obj_unref(b);
}

/* ---- discovery ---- */

static int appwrappers_listed(const sf_obj *list)
{
	sf_jv_iter it = sf_jv_iter_init(jpath(list, "resources"));
	sf_jv k, r;
	while (sf_jv_next(&it, &k, &r))
		if (sf_jv_streq(sf_jv_get(r, "name"), "appwrappers"))
			return 1;
	return 0;
}

typedef struct resolved {
	int done, err;
	char resource[64];
	int namespaced;
} resolved;

static void on_resolved(void *ud, int err, const char *errmsg, const sf_gvr *gvr)
{
	(void)errmsg;
	resolved *r = ud;
	r->done = 1;
	r->err = err;
	if (!err) {
		snprintf(r->resource, sizeof(r->resource), "%s", gvr->resource);
		r->namespaced = gvr->namespaced;
	}
}

static int resolved_done(void *ud)
{
	return ((resolved *)ud)->done;
}

static int never(void *ud)
{
	(void)ud;
	return 0;
}

Test(crd, discovery_shows_short_name_and_status_subresource)
{
	tl_aw_install_crd(&K);
	/* discovery is refreshed asynchronously after Established: poll,
	 * bounded */
	tl_res r = {0};
	int64_t deadline = sf_mono_ns() + 30 * 1000000000LL;
	for (;;) {
		sf_kube_req req = {.method = "GET", .path = "/apis/" SF_AW_API_VERSION};
		tl_do(&K, &req, &r);
		if (r.http_status == 200 && appwrappers_listed(r.obj))
			break;
		cr_assert(sf_mono_ns() < deadline, "appwrappers never listed by discovery: %ld %s",
		          r.http_status, r.obj ? r.obj->json : r.message);
		tl_res_clear(&r);
		tl_run_until_fn(&K.loop, never, NULL, 200);
	}
	int main_seen = 0, status_seen = 0;
	sf_jv_iter it = sf_jv_iter_init(jpath(r.obj, "resources"));
	sf_jv k, res;
	while (sf_jv_next(&it, &k, &res)) {
		if (sf_jv_streq(sf_jv_get(res, "name"), "appwrappers")) {
			main_seen = 1;
			cr_expect(sf_jv_streq(sf_jv_get(res, "kind"), "AppWrapper"));
			cr_expect(sf_jv_streq(sf_jv_get(res, "singularName"), "appwrapper"));
			cr_expect_eq(sf_jv_type(sf_jv_get(res, "namespaced")), SF_JSON_TRUE);
			sf_jv sn = sf_jv_get(res, "shortNames");
			cr_expect(has_str(sn, "aw"), "shortNames: %.*s", (int)sn.n,
			          sn.p ? sn.p : "");
			sf_jv verbs = sf_jv_get(res, "verbs");
			const char *want[] = {"create", "delete", "deletecollection", "get",
			                      "list",   "patch",  "update",           "watch"};
			for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
				cr_expect(has_str(verbs, want[i]), "verb %s missing", want[i]);
		} else if (sf_jv_streq(sf_jv_get(res, "name"), "appwrappers/status")) {
			status_seen = 1;
			sf_jv verbs = sf_jv_get(res, "verbs");
			cr_expect(has_str(verbs, "get") && has_str(verbs, "patch") &&
			              has_str(verbs, "update"),
			          "status verbs: %.*s", (int)verbs.n, verbs.p ? verbs.p : "");
		}
	}
	cr_assert(main_seen);
	cr_assert(status_seen, "no appwrappers/status in %s", r.obj->json);
	tl_res_clear(&r);

	/* the group prefers v1beta2 */
	sf_kube_req grp = {.method = "GET", .path = "/apis/" SF_AW_GROUP};
	tl_do(&K, &grp, &r);
	cr_assert_eq(r.http_status, 200, "%s", r.message);
	cr_assert(sf_jv_streq(jpath(r.obj, "preferredVersion.version"), "v1beta2"), "%s",
	          r.obj->json);
	tl_res_clear(&r);

	/* and the client's own discovery maps the kind to the resource */
	resolved rv = {0};
	cr_assert_eq(sf_kube_resolve(K.client, SF_AW_API_VERSION, SF_AW_KIND, on_resolved, &rv), 0);
	tl_run_until_fn(&K.loop, resolved_done, &rv, 30000);
	cr_assert(rv.done, "discovery did not answer");
	cr_assert_eq(rv.err, 0);
	cr_assert_str_eq(rv.resource, "appwrappers");
	cr_assert(rv.namespaced);
}

/* ---- printer columns ---- */

/* sf_kube_req has no Accept header, so the Table rendering
 * (application/json;as=Table;v=v1;g=meta.k8s.io) cannot be asked for: the
 * columns are checked on the CRD as the server stored it. */
Test(crd, printer_columns_are_served)
{
	tl_aw_install_crd(&K);
	sf_obj *crd = get_crd();
	static const struct {
		const char *name, *type, *path;
	} want[] = {
	    {"Status", "string", ".status.phase"},
	    {"Quota Reserved", "string", ".status.conditions[?(@.type==\"QuotaReserved\")].status"},
	    {"Resources Deployed", "string",
	     ".status.conditions[?(@.type==\"ResourcesDeployed\")].status"},
	    {"Unhealthy", "string", ".status.conditions[?(@.type==\"Unhealthy\")].status"},
	    {"Age", "date", ".metadata.creationTimestamp"},
	};
	sf_jv cols = jpath(crd, "spec.versions[0].additionalPrinterColumns");
	cr_assert_eq(sf_jv_len(cols), 5, "columns: %.*s", (int)cols.n, cols.p ? cols.p : "");
	for (size_t i = 0; i < 5; i++) {
		sf_jv c = sf_jv_at(cols, i);
		cr_expect(sf_jv_streq(sf_jv_get(c, "name"), want[i].name), "column %zu: %.*s", i,
		          (int)c.n, c.p);
		cr_expect(sf_jv_streq(sf_jv_get(c, "type"), want[i].type), "column %zu: %.*s", i,
		          (int)c.n, c.p);
		cr_expect(sf_jv_streq(sf_jv_get(c, "jsonPath"), want[i].path), "column %zu: %.*s",
		          i, (int)c.n, c.p);
		int64_t prio = 0;
		sf_jv pv = sf_jv_get(c, "priority");
		cr_expect(!sf_jv_ok(pv) || (sf_jv_int64(pv, &prio) == 0 && prio == 0),
		          "column %zu is not shown by default", i);
	}
	sf_obj_unref(crd);
}

/* ---- samples ---- */

typedef struct shape {
	const char *api_version, *kind;
	const char *must_have; /* a path inside the template, or NULL */
	int seen;
} shape;

Test(crd, samples_cover_the_upstream_shapes)
{
	char **files;
	size_t n = tl_aw_list_yaml(TL_AW_SAMPLES_DIR, &files);
	shape shapes[] = {
	    {"v1", "Pod", "spec.containers", 0},
	    {"batch/v1", "Job", "spec.template.spec", 0},
	    {"apps/v1", "Deployment", "spec.template.spec", 0},
	    {"apps/v1", "StatefulSet", "spec.template.spec", 0},
	    {"jobset.x-k8s.io/v1alpha2", "JobSet", "spec.replicatedJobs[0].template.spec.template",
	     0},
	    {"kubeflow.org/v1", "PyTorchJob", "spec.pytorchReplicaSpecs.Worker.template", 0},
	    {"leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet",
	     "spec.leaderWorkerTemplate.workerTemplate", 0},
	    {"ray.io/v1", "RayCluster", "spec.workerGroupSpecs[0].template", 0},
	    {"ray.io/v1", "RayJob", "spec.rayClusterSpec.headGroupSpec.template", 0},
	    {"v1", "Service", "spec.ports", 0},
	};
	size_t nshapes = sizeof(shapes) / sizeof(shapes[0]);
	int failing_pod = 0, failing_job = 0, podsets = 0, podsetinfos = 0, fault = 0;
	int generated = 0, job_and_pod = 0;
	cr_assert_geq(n, 11, "only %zu samples", n);
	for (size_t i = 0; i < n; i++) {
		char *json = tl_aw_yaml_json(files[i]);
		sf_jv root = sf_jv_root(json, strlen(json));
		cr_assert(sf_jv_streq(sf_jv_get(root, "apiVersion"), SF_AW_API_VERSION), "%s",
		          files[i]);
		cr_assert(sf_jv_streq(sf_jv_get(root, "kind"), "AppWrapper"), "%s", files[i]);
		char name[254];
		cr_assert_geq(sf_jv_str(sf_jv_path(root, "metadata.name"), name, sizeof(name)), 0);
		cr_expect(strncmp(name, "sample-", 7) == 0, "%s: name %s", files[i], name);
		sf_jv labels = sf_jv_path(root, "metadata.labels");
		cr_expect(
		    sf_jv_streq(sf_jv_get(labels, "kueue.x-k8s.io/queue-name"), "default-queue"),
		    "%s: no queue label", files[i]);
		sf_jv annots = sf_jv_path(root, "metadata.annotations");
		if (sf_jv_ok(sf_jv_get(annots, SF_AW_ANNOT_PREFIX "retryLimit")) &&
		    sf_jv_ok(sf_jv_get(annots, SF_AW_ANNOT_PREFIX "admissionGracePeriodDuration")))
			fault = 1;
		sf_jv comps = sf_jv_path(root, "spec.components");
		cr_assert_gt(sf_jv_len(comps), 0, "%s: no components", files[i]);
		int jobs = 0, pods = 0;
		for (size_t c = 0; c < sf_jv_len(comps); c++) {
			sf_jv comp = sf_jv_at(comps, c);
			sf_jv t = sf_jv_get(comp, "template");
			if (sf_jv_ok(sf_jv_path(t, "metadata.generateName")) &&
			    !sf_jv_ok(sf_jv_path(t, "metadata.name")))
				generated++;
			jobs += sf_jv_streq(sf_jv_get(t, "kind"), "Job");
			pods += sf_jv_streq(sf_jv_get(t, "kind"), "Pod");
			if (sf_jv_len(sf_jv_get(comp, "podSets")) > 0)
				podsets++;
			if (sf_jv_len(sf_jv_get(comp, "podSetInfos")) > 0)
				podsetinfos++;
			for (size_t s = 0; s < nshapes; s++)
				if (sf_jv_streq(sf_jv_get(t, "apiVersion"),
				                shapes[s].api_version) &&
				    sf_jv_streq(sf_jv_get(t, "kind"), shapes[s].kind) &&
				    sf_jv_ok(sf_jv_path(t, shapes[s].must_have)))
					shapes[s].seen++;
			/* a failing sample: its container exits 1 */
			const char *pod_cmd = sf_jv_streq(sf_jv_get(t, "kind"), "Pod")
			                          ? "spec.containers[0].command[2]"
			                          : "spec.template.spec.containers[0].command[2]";
			char cmd[256] = "";
			sf_jv_str(sf_jv_path(t, pod_cmd), cmd, sizeof(cmd));
			if (strstr(cmd, "exit 1") && strstr(name, "failing")) {
				if (sf_jv_streq(sf_jv_get(t, "kind"), "Pod"))
					failing_pod = 1;
				if (sf_jv_streq(sf_jv_get(t, "kind"), "Job"))
					failing_job = 1;
			}
		}
		job_and_pod |= jobs > 0 && pods > 0;
		free(json);
	}
	for (size_t s = 0; s < nshapes; s++)
		cr_expect(shapes[s].seen, "no sample wraps a %s %s", shapes[s].api_version,
		          shapes[s].kind);
	cr_expect(failing_pod, "no failing Pod sample");
	cr_expect(failing_job, "no failing Job sample");
	cr_expect_geq(podsets, 2, "declared podSets: %d components", podsets);
	cr_expect(podsetinfos, "no sample with podSetInfos");
	cr_expect(fault, "no sample with fault-tolerance annotations");
	cr_expect_geq(generated, 2, "components named by generateName: %d", generated);
	cr_expect(job_and_pod, "no sample with a Job and a bare Pod");
	tl_aw_files_free(files, n);
}

Test(crd, every_sample_is_stored_with_its_templates_unchanged)
{
	tl_aw_install_crd(&K);
	char ns[64];
	tl_namespace(&K, "it-aw-samples", ns, sizeof(ns));
	char **files;
	size_t n = tl_aw_list_yaml(TL_AW_SAMPLES_DIR, &files);
	cr_assert_gt(n, 0);
	for (size_t i = 0; i < n; i++) {
		tl_aw_applied a;
		size_t docs = tl_aw_apply_yaml(&K, ns, files[i], NULL, &a);
		cr_assert_eq(docs, 1, "%s: %zu documents", files[i], docs);
		tl_aw_doc *d = &a.docs[0];
		cr_assert_eq(d->http_status, 201, "%s: %ld %s", files[i], d->http_status,
		             d->message);
		cr_assert_str_eq(d->resource, "appwrappers");

		/* read back with GET, not just the create's answer */
		sf_obj *got = get_aw(ns, d->name, 200);
		cr_assert_str_eq(got->uid, d->obj->uid);
		sf_jv sent = sent_root(d);
		sf_jv scomps = sf_jv_path(sent, "spec.components");
		sf_jv gcomps = jpath(got, "spec.components");
		cr_assert_eq(sf_jv_len(gcomps), sf_jv_len(scomps), "%s", files[i]);
		for (size_t c = 0; c < sf_jv_len(scomps); c++) {
			char what[300];
			snprintf(what, sizeof(what), "%s: component %zu template", files[i], c);
			expect_json_equal(sf_jv_get(sf_jv_at(scomps, c), "template"),
			                  sf_jv_get(sf_jv_at(gcomps, c), "template"), what);
		}
		char what[300];
		snprintf(what, sizeof(what), "%s: spec", files[i]);
		expect_json_equal(sf_jv_get(sent, "spec"), jpath(got, "spec"), what);
		snprintf(what, sizeof(what), "%s: labels", files[i]);
		expect_json_equal(sf_jv_path(sent, "metadata.labels"),
		                  jpath(got, "metadata.labels"), what);
		sf_jv annots = sf_jv_path(sent, "metadata.annotations");
		if (sf_jv_ok(annots)) {
			snprintf(what, sizeof(what), "%s: annotations", files[i]);
			expect_json_equal(annots, jpath(got, "metadata.annotations"), what);
		}
		cr_expect_eq(sf_jv_type(jpath(got, "status")), SF_JSON_NONE,
		             "%s: a fresh AppWrapper has no status", files[i]);
		sf_obj_unref(got);
		tl_aw_applied_clear(&a);
	}
	cr_assert_eq(count_aws(ns), n, "one AppWrapper per sample file");
	tl_aw_files_free(files, n);
	tl_namespace_delete(&K, ns);
}

Test(crd, every_sample_passes_a_server_side_dry_run)
{
	tl_aw_install_crd(&K);
	char ns[64];
	tl_namespace(&K, "it-aw-dry", ns, sizeof(ns));
	char **files;
	size_t n = tl_aw_list_yaml(TL_AW_SAMPLES_DIR, &files);
	cr_assert_gt(n, 0);
	tl_aw_apply_opts dry = {.query = "dryRun=All"};
	for (size_t i = 0; i < n; i++) {
		tl_aw_applied a;
		cr_assert_eq(tl_aw_apply_yaml(&K, ns, files[i], &dry, &a), 1);
		tl_aw_doc *d = &a.docs[0];
		cr_assert_eq(d->http_status, 201, "%s: %ld %s", files[i], d->http_status,
		             d->message);
		cr_assert(d->obj, "%s: dry run answered without the object", files[i]);
		char what[300];
		snprintf(what, sizeof(what), "%s: dry-run spec", files[i]);
		expect_json_equal(sf_jv_get(sent_root(d), "spec"), jpath(d->obj, "spec"), what);
		/* nothing was stored */
		sf_obj *none = get_aw(ns, d->name, 404);
		cr_assert_null(none);
		tl_aw_applied_clear(&a);
	}
	cr_assert_eq(count_aws(ns), 0, "a dry run stored something");
	tl_aw_files_free(files, n);
	tl_namespace_delete(&K, ns);
}

/* ---- status subresource ---- */

static tl_res patch(const char *ns, const char *name, const char *sub, const char *body)
{
	tl_res r = {0};
	cr_assert_eq(sf_kube_patch(K.client, &SF_GVR_APPWRAPPERS, ns, name, sub, SF_PATCH_MERGE,
	                           body, NULL, 0, tl_res_cb, &r, NULL),
	             0);
	tl_wait(&K.loop, &r, 30000);
	return r;
}

Test(crd, status_subresource_splits_status_from_spec)
{
	tl_aw_install_crd(&K);
	char ns[64];
	tl_namespace(&K, "it-aw-status", ns, sizeof(ns));
	tl_aw_applied a;
	tl_aw_apply_yaml(&K, ns, TL_AW_SAMPLES_DIR "/pod.yaml", NULL, &a);
	const char *name = a.docs[0].name;
	int64_t gen0 = jint(a.docs[0].obj, "metadata.generation");

	/* a merge patch to /status is stored */
	char now[40], body[1024];
	sf_time_rfc3339(sf_wall_ns(), now, sizeof(now));
	snprintf(
	    body, sizeof(body),
	    "{\"status\":{\"phase\":\"Running\",\"resettingCount\":1,\"conditions\":[{\"type\":"
	    "\"QuotaReserved\",\"status\":\"True\",\"reason\":\"AdmittedByKueue\",\"message\":"
	    "\"quota reserved\",\"lastTransitionTime\":\"%s\"}]}}",
	    now);
	tl_res r = patch(ns, name, "status", body);
	cr_assert_eq(r.http_status, 200, "status patch: %ld %s", r.http_status, r.message);
	tl_res_clear(&r);
	sf_obj *o = get_aw(ns, name, 200);
	char v[64];
	jstr(o, "status.phase", v, sizeof(v));
	cr_assert_str_eq(v, "Running");
	cr_assert_eq(jint(o, "status.resettingCount"), 1);
	cr_assert_eq(tl_aw_condition(jpath(o, "status.conditions"), "QuotaReserved", v, sizeof(v)),
	             0, "%s", o->json);
	cr_assert_str_eq(v, "True");
	jstr(o, "status.conditions[0].lastTransitionTime", v, sizeof(v));
	cr_assert_str_eq(v, now);
	cr_assert_eq(jint(o, "metadata.generation"), gen0, "a status write bumped generation");

	/* a second condition type beside the first (a merge patch replaces
	 * the whole list) */
	snprintf(body, sizeof(body),
	         "{\"status\":{\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":\"True\","
	         "\"reason\":\"AdmittedByKueue\",\"message\":\"\",\"lastTransitionTime\":\"%s\"},"
	         "{\"type\":\"ResourcesDeployed\",\"status\":\"True\",\"reason\":\"Resuming\","
	         "\"message\":\"\",\"lastTransitionTime\":\"%s\"}]}}",
	         now, now);
	r = patch(ns, name, "status", body);
	cr_assert_eq(r.http_status, 200, "%s", r.message);
	cr_assert_eq(sf_jv_len(jpath(r.obj, "status.conditions")), 2);
	tl_res_clear(&r);

	/* a duplicate condition type breaks the list-map: refused */
	snprintf(body, sizeof(body),
	         "{\"status\":{\"conditions\":[{\"type\":\"Unhealthy\",\"status\":\"True\","
	         "\"reason\":\"A\",\"message\":\"\",\"lastTransitionTime\":\"%s\"},"
	         "{\"type\":\"Unhealthy\",\"status\":\"False\",\"reason\":\"B\","
	         "\"message\":\"\",\"lastTransitionTime\":\"%s\"}]}}",
	         now, now);
	r = patch(ns, name, "status", body);
	cr_assert_eq(r.http_status, 422, "duplicate condition type: %ld %s", r.http_status,
	             r.message);
	cr_assert(strstr(r.message, "status.conditions"), "%s", r.message);
	tl_res_clear(&r);

	/* an invalid condition is refused, naming the field */
	snprintf(body, sizeof(body),
	         "{\"status\":{\"conditions\":[{\"type\":\"PodsReady\",\"status\":\"Maybe\","
	         "\"reason\":\"X\",\"message\":\"\",\"lastTransitionTime\":\"%s\"}]}}",
	         now);
	r = patch(ns, name, "status", body);
	cr_assert_eq(r.http_status, 422, "bad condition status: %ld %s", r.http_status, r.message);
	cr_assert(strstr(r.message, "status.conditions[0].status"), "%s", r.message);
	tl_res_clear(&r);

	/* a PUT of the main resource stores the spec change and ignores the
	 * status change */
	sf_obj_unref(o);
	o = get_aw(ns, name, 200);
	sf_jv phase = jpath(o, "status.phase");
	char *step1 = replace_view(o->json, phase, "\"Failed\"");
	sf_jv spec = sf_jv_path(sf_jv_root(step1, strlen(step1)), "spec");
	char *put = replace_view(step1, (sf_jv){spec.p, 1}, "{\"suspend\":true,");
	free(step1);
	sf_kube_req upd = {.method = "PUT",
	                   .gvr = &SF_GVR_APPWRAPPERS,
	                   .ns = ns,
	                   .name = name,
	                   .body = put,
	                   .body_len = strlen(put)};
	tl_do(&K, &upd, &r);
	free(put);
	cr_assert_eq(r.http_status, 200, "PUT: %ld %s", r.http_status, r.message);
	tl_res_clear(&r);
	sf_obj_unref(o);
	o = get_aw(ns, name, 200);
	cr_assert_eq(sf_jv_type(jpath(o, "spec.suspend")), SF_JSON_TRUE, "spec change lost");
	jstr(o, "status.phase", v, sizeof(v));
	cr_assert_str_eq(v, "Running", "a main-resource PUT changed status");
	cr_assert_eq(jint(o, "metadata.generation"), gen0 + 1);

	/* the same for a merge patch of the main resource */
	r = patch(ns, name, NULL,
	          "{\"spec\":{\"managedBy\":\"example.com/other\"},"
	          "\"status\":{\"phase\":\"Succeeded\",\"resettingCount\":7}}");
	cr_assert_eq(r.http_status, 200, "%s", r.message);
	tl_res_clear(&r);
	sf_obj_unref(o);
	o = get_aw(ns, name, 200);
	cr_assert(sf_jv_streq(jpath(o, "spec.managedBy"), "example.com/other"));
	jstr(o, "status.phase", v, sizeof(v));
	cr_assert_str_eq(v, "Running", "a main-resource patch changed status");
	cr_assert_eq(jint(o, "status.resettingCount"), 1);

	/* and the other way round: /status ignores spec */
	r = patch(ns, name, "status",
	          "{\"spec\":{\"suspend\":false},\"status\":{\"phase\":\"Resuming\"}}");
	cr_assert_eq(r.http_status, 200, "%s", r.message);
	tl_res_clear(&r);
	sf_obj_unref(o);
	o = get_aw(ns, name, 200);
	jstr(o, "status.phase", v, sizeof(v));
	cr_assert_str_eq(v, "Resuming");
	cr_assert_eq(sf_jv_type(jpath(o, "spec.suspend")), SF_JSON_TRUE,
	             "a /status write changed spec");
	sf_obj_unref(o);
	tl_aw_applied_clear(&a);
	tl_namespace_delete(&K, ns);
}

/* ---- validation ---- */

typedef struct bad_case {
	const char *what;
	const char *spec; /* YAML, indented for the document below */
	const char *field;
	const char *why; /* a second substring of the message, or NULL */
} bad_case;

Test(crd, invalid_appwrappers_are_refused_with_422_naming_the_field)
{
	tl_aw_install_crd(&K);
	char ns[64];
	tl_namespace(&K, "it-aw-bad", ns, sizeof(ns));
	static const char tmpl[] = "      apiVersion: v1\n"
	                           "      kind: Pod\n"
	                           "      metadata: {name: p}\n"
	                           "      spec: {containers: [{name: c, image: busybox}]}\n";
	static const bad_case cases[] = {
	    {"no components", "  suspend: true\n", "spec.components", "Required value"},
	    {"component without template",
	     "  components:\n  - podSets:\n    - path: template.spec\n",
	     "spec.components[0].template", "Required value"},
	    {"non-integer replicas",
	     "  components:\n  - podSets:\n    - path: template\n      replicas: two\n"
	     "    template:\n%s",
	     "spec.components[0].podSets[0].replicas", "integer"},
	    {"fractional replicas",
	     "  components:\n  - podSets:\n    - path: template\n      replicas: 1.5\n"
	     "    template:\n%s",
	     "spec.components[0].podSets[0].replicas", "integer"},
	    {"pod set without path",
	     "  components:\n  - podSets:\n    - replicas: 1\n    template:\n%s",
	     "spec.components[0].podSets[0].path", "Required value"},
	    {"template not an object", "  components:\n  - template: a pod\n",
	     "spec.components[0].template", "object"},
	    {"embedded template without kind",
	     "  components:\n  - template:\n      apiVersion: v1\n      metadata: {name: p}\n",
	     "spec.components[0].template.kind", "Required value"},
	    {"suspend not a boolean", "  suspend: \"yes\"\n  components:\n  - template:\n%s",
	     "spec.suspend", "boolean"},
	    {"non-string component annotation",
	     "  components:\n  - annotations: {retries: 3}\n    template:\n%s",
	     "spec.components[0].annotations.retries", "string"},
	    {"podSetInfo gate without name",
	     "  components:\n  - podSetInfos:\n    - schedulingGates: [{}]\n    template:\n%s",
	     "spec.components[0].podSetInfos[0].schedulingGates[0].name", "Required value"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char spec[1024], yaml[2048];
		snprintf(spec, sizeof(spec), cases[i].spec, tmpl);
		snprintf(yaml, sizeof(yaml),
		         "apiVersion: " SF_AW_API_VERSION "\n"
		         "kind: AppWrapper\n"
		         "metadata:\n"
		         "  name: bad-%zu\n"
		         "spec:\n%s",
		         i, spec);
		tl_aw_apply_opts opts = {.allow_fail = 1};
		tl_aw_applied a;
		cr_assert_eq(tl_aw_apply_yaml(&K, ns, yaml, &opts, &a), 1);
		tl_aw_doc *d = &a.docs[0];
		cr_expect_eq(d->http_status, 422, "%s: %ld %s", cases[i].what, d->http_status,
		             d->message);
		cr_expect_str_eq(d->reason, "Invalid", "%s", cases[i].what);
		cr_expect(strstr(d->message, cases[i].field), "%s: message does not name %s: %s",
		          cases[i].what, cases[i].field, d->message);
		cr_expect(!cases[i].why || strstr(d->message, cases[i].why), "%s: message: %s",
		          cases[i].what, d->message);
		tl_aw_applied_clear(&a);
	}
	cr_assert_eq(count_aws(ns), 0, "an invalid AppWrapper was stored");
	tl_namespace_delete(&K, ns);
}

/* ---- pruning ---- */

Test(crd, unknown_fields_pruned_outside_templates_kept_inside)
{
	tl_aw_install_crd(&K);
	char ns[64];
	tl_namespace(&K, "it-aw-prune", ns, sizeof(ns));
	static const char yaml[] = "apiVersion: " SF_AW_API_VERSION "\n"
	                           "kind: AppWrapper\n"
	                           "metadata:\n"
	                           "  name: sample-prune\n"
	                           "spec:\n"
	                           "  notAField: 1\n"
	                           "  components:\n"
	                           "  - alsoNotAField: x\n"
	                           "    podSets:\n"
	                           "    - path: template\n"
	                           "      extra: y\n"
	                           "    template:\n"
	                           "      apiVersion: example.com/v1\n"
	                           "      kind: Gadget\n"
	                           "      metadata:\n"
	                           "        name: g\n"
	                           "        bogusMeta: z\n"
	                           "      spec:\n"
	                           "        anything: {goes: [1, 2.5, true, \"s\"]}\n"
	                           "      topLevel: kept\n"
	                           "status:\n"
	                           "  phase: Running\n";
	tl_aw_applied a;
	tl_aw_apply_yaml(&K, ns, yaml, NULL, &a);
	sf_obj *o = get_aw(ns, "sample-prune", 200);
	cr_expect_eq(sf_jv_type(jpath(o, "spec.notAField")), SF_JSON_NONE, "%s", o->json);
	cr_expect_eq(sf_jv_type(jpath(o, "spec.components[0].alsoNotAField")), SF_JSON_NONE);
	cr_expect_eq(sf_jv_type(jpath(o, "spec.components[0].podSets[0].extra")), SF_JSON_NONE);
	/* an embedded resource's metadata is an ObjectMeta: pruned too */
	cr_expect_eq(sf_jv_type(jpath(o, "spec.components[0].template.metadata.bogusMeta")),
	             SF_JSON_NONE);
	cr_expect(sf_jv_streq(jpath(o, "spec.components[0].template.metadata.name"), "g"));
	/* everything else in the template is kept as sent */
	sf_jv sent_t = sf_jv_path(sent_root(&a.docs[0]), "spec.components[0].template");
	sf_jv got_t = jpath(o, "spec.components[0].template");
	expect_json_equal(sf_jv_get(sent_t, "spec"), sf_jv_get(got_t, "spec"), "template.spec");
	cr_expect(sf_jv_streq(sf_jv_get(got_t, "topLevel"), "kept"));
	/* status is not set by a create when there is a status subresource */
	cr_expect_eq(sf_jv_type(jpath(o, "status")), SF_JSON_NONE, "%s", o->json);
	sf_obj_unref(o);
	tl_aw_applied_clear(&a);
	tl_namespace_delete(&K, ns);
}
