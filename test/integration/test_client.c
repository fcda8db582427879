/*
 * test_client.c - the REST client against a real kube-apiserver.
 *
 * CRUD on core, named-group and custom resources, optimistic concurrency,
 * every patch type, delete options, paging, discovery, TLS and
 * authorization failures, and in-cluster config with a rotating token.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "steadfast/client.h"
#include "steadfast/http.h"
#include "steadfast/time.h"
#include "tl.h"

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

TestSuite(client, .init = setup, .fini = teardown, .timeout = 240);

static void get_str(const sf_obj *o, const char *path, char *buf, size_t n)
{
	cr_assert(o, "no object");
	int rc = sf_jv_str(sf_jv_path(sf_obj_root(o), path), buf, n);
	cr_assert(rc >= 0, "%s missing in %s", path, o->json);
}

Test(client, server_version)
{
	tl_res r = {0};
	sf_kube_req req = {.method = "GET", .path = "/version"};
	tl_do(&K, &req, &r);
	cr_assert_eq(r.http_status, 200, "%s", r.errmsg);
	char v[64];
	get_str(r.obj, "gitVersion", v, sizeof(v));
	cr_expect(strncmp(v, "v1.", 3) == 0, "gitVersion %s", v);
	tl_res_clear(&r);
	/* Debian's libcurl has nghttp2: the API server is then spoken to in
	 * HTTP/2, so watches and writes share one connection. */
	sf_kube_client_stats st;
	sf_kube_client_stats_get(K.client, &st);
	cr_assert(sf_http_has_http2(), "this libcurl has no HTTP/2");
	cr_assert_eq(st.http2_responses, 1, "the response did not come over HTTP/2");
}

Test(client, configmap_crud_conflict_patches_delete)
{
	char ns[64];
	tl_namespace(&K, "it-cm", ns, sizeof(ns));
	tl_res r = {0};
	const char *body = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
	                   "\"cm1\",\"labels\":{\"app\":\"x\"}},\"data\":{\"a\":\"1\"}}";
	sf_kube_req create = {.method = "POST",
	                      .gvr = &SF_GVR_CONFIGMAPS,
	                      .ns = ns,
	                      .body = body,
	                      .body_len = strlen(body)};
	tl_do(&K, &create, &r);
	cr_assert_eq(r.http_status, 201, "create: %ld %s", r.http_status, r.message);
	char rv1[32], uid[64];
	snprintf(rv1, sizeof(rv1), "%s", r.obj->rv);
	snprintf(uid, sizeof(uid), "%s", r.obj->uid);
	cr_assert_str_eq(r.obj->name, "cm1");
	cr_assert_str_eq(r.obj->ns, ns);
	tl_res_clear(&r);

	/* creating it again: AlreadyExists */
	tl_do(&K, &create, &r);
	cr_assert_eq(r.http_status, 409);
	cr_assert_str_eq(r.reason, "AlreadyExists");
	tl_res_clear(&r);

	/* update with the current resourceVersion */
	char upd[512];
	snprintf(upd, sizeof(upd),
	         "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm1\","
	         "\"resourceVersion\":\"%s\"},\"data\":{\"a\":\"2\"}}",
	         rv1);
	sf_kube_req update = {.method = "PUT",
	                      .gvr = &SF_GVR_CONFIGMAPS,
	                      .ns = ns,
	                      .name = "cm1",
	                      .body = upd,
	                      .body_len = strlen(upd)};
	tl_do(&K, &update, &r);
	cr_assert_eq(r.http_status, 200, "update: %s", r.message);
	cr_assert_str_neq(r.obj->rv, rv1);
	tl_res_clear(&r);

	/* the same update again carries a stale resourceVersion: 409 Conflict */
	tl_do(&K, &update, &r);
	cr_assert_eq(r.http_status, 409);
	cr_assert_str_eq(r.reason, "Conflict");
	cr_assert(strstr(r.message, "modified"), "message: %s", r.message);
	tl_res_clear(&r);

	/* merge patch */
	memset(&r, 0, sizeof(r));
	cr_assert_eq(sf_kube_patch(K.client, &SF_GVR_CONFIGMAPS, ns, "cm1", NULL, SF_PATCH_MERGE,
	                           "{\"data\":{\"b\":\"3\"}}", NULL, 0, tl_res_cb, &r, NULL),
	             0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 200, "merge: %s", r.message);
	char v[16];
	get_str(r.obj, "data.b", v, sizeof(v));
	cr_assert_str_eq(v, "3");
	tl_res_clear(&r);

	/* JSON patch with a failing test op: 422 */
	cr_assert_eq(sf_kube_patch(K.client, &SF_GVR_CONFIGMAPS, ns, "cm1", NULL, SF_PATCH_JSON,
	                           "[{\"op\":\"test\",\"path\":\"/data/a\",\"value\":\"nope\"}]",
	                           NULL, 0, tl_res_cb, &r, NULL),
	             0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert(r.http_status == 422 || r.http_status == 409 || r.http_status == 500,
	          "json test op: %ld", r.http_status);
	tl_res_clear(&r);
	cr_assert_eq(sf_kube_patch(K.client, &SF_GVR_CONFIGMAPS, ns, "cm1", NULL, SF_PATCH_JSON,
	                           "[{\"op\":\"replace\",\"path\":\"/data/a\",\"value\":\"9\"}]",
	                           NULL, 0, tl_res_cb, &r, NULL),
	             0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 200, "json patch: %s", r.message);
	get_str(r.obj, "data.a", v, sizeof(v));
	cr_assert_str_eq(v, "9");
	tl_res_clear(&r);

	/* server-side apply: a second manager conflicts unless forced */
	const char *apply = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
	                    "\"cm1\"},\"data\":{\"c\":\"owned-by-a\"}}";
	cr_assert_eq(sf_kube_patch(K.client, &SF_GVR_CONFIGMAPS, ns, "cm1", NULL, SF_PATCH_APPLY,
	                           apply, "mgr-a", 0, tl_res_cb, &r, NULL),
	             0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 200, "apply a: %s", r.message);
	tl_res_clear(&r);
	const char *apply_b = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
	                      "\"name\":\"cm1\"},\"data\":{\"c\":\"owned-by-b\"}}";
	cr_assert_eq(sf_kube_patch(K.client, &SF_GVR_CONFIGMAPS, ns, "cm1", NULL, SF_PATCH_APPLY,
	                           apply_b, "mgr-b", 0, tl_res_cb, &r, NULL),
	             0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 409, "apply b without force: %ld", r.http_status);
	tl_res_clear(&r);
	cr_assert_eq(sf_kube_patch(K.client, &SF_GVR_CONFIGMAPS, ns, "cm1", NULL, SF_PATCH_APPLY,
	                           apply_b, "mgr-b", 1, tl_res_cb, &r, NULL),
	             0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 200, "apply b forced: %s", r.message);
	char c[32];
	get_str(r.obj, "data.c", c, sizeof(c));
	cr_assert_str_eq(c, "owned-by-b");
	tl_res_clear(&r);

	/* delete with a wrong UID precondition: 409; with the right one: 200 */
	sf_kube_delete_opts d = {.precond_uid = "00000000-0000-0000-0000-000000000000",
	                         .grace_seconds = -1};
	cr_assert_eq(
	    sf_kube_delete(K.client, &SF_GVR_CONFIGMAPS, ns, "cm1", &d, tl_res_cb, &r, NULL), 0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 409, "delete wrong uid: %ld", r.http_status);
	cr_assert(strstr(r.message, "precondition"), "%s", r.message);
	tl_res_clear(&r);
	d.precond_uid = uid;
	d.propagation = "Background";
	d.grace_seconds = 0;
	cr_assert_eq(
	    sf_kube_delete(K.client, &SF_GVR_CONFIGMAPS, ns, "cm1", &d, tl_res_cb, &r, NULL), 0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 200, "delete: %s", r.message);
	tl_res_clear(&r);

	cr_assert_eq(sf_kube_get(K.client, &SF_GVR_CONFIGMAPS, ns, "cm1", tl_res_cb, &r, NULL), 0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 404);
	cr_assert_str_eq(r.reason, "NotFound");
	tl_res_clear(&r);
	tl_namespace_delete(&K, ns);
}

Test(client, lease_and_job_and_status_subresource)
{
	char ns[64];
	tl_namespace(&K, "it-lj", ns, sizeof(ns));
	tl_res r = {0};
	char now[40], body[512];
	sf_time_rfc3339micro(sf_wall_ns(), now, sizeof(now));
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"coordination.k8s.io/"
	         "v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"l1\"},\"spec\":{"
	         "\"holderIdentity\":\"a_1\",\"leaseDurationSeconds\":15,\"renewTime\":\"%s\","
	         "\"acquireTime\":\"%s\",\"leaseTransitions\":0}}",
	         now, now);
	cr_assert_eq(sf_kube_create(K.client, &SF_GVR_LEASES, ns, body, tl_res_cb, &r, NULL), 0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 201, "lease: %ld %d %s %s", r.http_status, r.err, r.message,
	             r.errmsg);
	char rt[40];
	get_str(r.obj, "spec.renewTime", rt, sizeof(rt));
	cr_assert_str_eq(rt, now, "MicroTime round trip");
	tl_res_clear(&r);

	const char *job = "{\"apiVersion\":\"batch/"
	                  "v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j1\"},\"spec\":{"
	                  "\"suspend\":true,\"template\":{\"spec\":{\"restartPolicy\":\"Never\","
	                  "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}}}";
	cr_assert_eq(sf_kube_create(K.client, &SF_GVR_JOBS, ns, job, tl_res_cb, &r, NULL), 0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 201, "job: %s", r.message);
	tl_res_clear(&r);

	sf_kube_req st = {
	    .method = "GET", .gvr = &SF_GVR_JOBS, .ns = ns, .name = "j1", .subresource = "status"};
	tl_do(&K, &st, &r);
	cr_assert_eq(r.http_status, 200);
	cr_assert_str_eq(r.obj->name, "j1");
	tl_res_clear(&r);
	/* status patch through the subresource */
	cr_assert_eq(sf_kube_patch(K.client, &SF_GVR_JOBS, ns, "j1", "status", SF_PATCH_MERGE,
	                           "{\"status\":{\"active\":0}}", NULL, 0, tl_res_cb, &r, NULL),
	             0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 200, "status patch: %s", r.message);
	tl_res_clear(&r);
	tl_namespace_delete(&K, ns);
}

/* The list result and the items seen: tl_res first, so the same pointer
 * serves tl_res_cb and the item callback. */
typedef struct page_ctx {
	tl_res r;
	unsigned long n;
	int dup;
	char seen[1200];
} page_ctx;

static int count_item(void *ud, sf_obj *o)
{
	page_ctx *p = ud;
	int idx = atoi(o->name + 3);
	if (idx >= 0 && idx < (int)sizeof(p->seen)) {
		if (p->seen[idx])
			p->dup = 1;
		p->seen[idx] = 1;
	}
	p->n++;
	sf_obj_unref(o);
	return 0;
}

typedef struct bulk {
	int pending, failed, created;
} bulk;

static void bulk_cb(void *ud, const sf_kube_result *r)
{
	bulk *b = ud;
	b->pending--;
	if (r->http_status == 201)
		b->created++;
	else
		b->failed++;
}

static int bulk_done(void *ud)
{
	return ((bulk *)ud)->pending == 0;
}

Test(client, list_paging_over_1100_objects, .timeout = 600)
{
	sf_kube_client_opts fast = {.qps = -1};
	tl_kube k2;
	tl_kube_open(&k2, NULL, &fast);
	char ns[64];
	tl_namespace(&k2, "it-page", ns, sizeof(ns));
	bulk b = {0};
	const int N = 1100;
	for (int i = 0; i < N; i++) {
		char body[256];
		snprintf(body, sizeof(body),
		         "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
		         "\"cm-%d\",\"labels\":{\"page\":\"yes\"}}}",
		         i);
		cr_assert_eq(
		    sf_kube_create(k2.client, &SF_GVR_CONFIGMAPS, ns, body, bulk_cb, &b, NULL), 0);
		b.pending++;
		if (b.pending >= 64)
			cr_assert_eq(tl_run_until_fn(&k2.loop, bulk_done, &b, 120000), 0);
	}
	cr_assert_eq(tl_run_until_fn(&k2.loop, bulk_done, &b, 120000), 0);
	cr_assert_eq(b.created, N, "created %d failed %d", b.created, b.failed);

	page_ctx p = {0};
	char cont[1024] = "";
	int pages = 0;
	do {
		memset(&p.r, 0, sizeof(p.r));
		sf_kube_list_opts lo = {
		    .limit = 250, .continue_token = cont, .label_selector = "page=yes"};
		cr_assert_eq(sf_kube_list(k2.client, &SF_GVR_CONFIGMAPS, ns, &lo, count_item,
		                          tl_res_cb, &p, NULL),
		             0);
		tl_wait(&k2.loop, &p.r, 60000);
		cr_assert_eq(p.r.http_status, 200, "list page %d: %s %s", pages, p.r.message,
		             p.r.errmsg);
		cr_assert(p.r.items <= 250, "page had %lu items", p.r.items);
		cr_assert(p.r.list_rv[0], "list without resourceVersion");
		snprintf(cont, sizeof(cont), "%s", p.r.list_continue);
		pages++;
		tl_res_clear(&p.r);
	} while (cont[0]);
	cr_assert_eq(p.n, (unsigned long)N, "listed %lu of %d", p.n, N);
	cr_assert_eq(p.dup, 0, "an item appeared twice");
	cr_assert_eq(pages, 5);
	tl_namespace_delete(&k2, ns);
	tl_kube_close(&k2);
}

static void resolve_cb(void *ud, int err, const char *msg, const sf_gvr *gvr)
{
	tl_res *r = ud;
	r->done = 1;
	r->err = err;
	snprintf(r->errmsg, sizeof(r->errmsg), "%s", gvr ? gvr->resource : msg);
	r->http_status = gvr ? gvr->namespaced : -1;
	snprintf(r->reason, sizeof(r->reason), "%s", gvr ? gvr->group : "");
}

Test(client, discovery_and_custom_resources)
{
	tl_res r = {0};
	cr_assert_eq(sf_kube_resolve(K.client, "batch/v1", "Job", resolve_cb, &r), 0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.err, 0, "%s", r.errmsg);
	cr_assert_str_eq(r.errmsg, "jobs");
	cr_assert_str_eq(r.reason, "batch");
	cr_assert_eq(r.http_status, 1);
	memset(&r, 0, sizeof(r));
	cr_assert_eq(sf_kube_resolve(K.client, "v1", "Namespace", resolve_cb, &r), 0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_str_eq(r.errmsg, "namespaces");
	cr_assert_eq(r.http_status, 0, "namespaces are cluster-scoped");
	memset(&r, 0, sizeof(r));
	cr_assert_eq(sf_kube_resolve(K.client, "nothere.example.com/v1", "Thing", resolve_cb, &r),
	             0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.err, -ENOENT);
	cr_assert(strstr(r.errmsg, "CRD"), "%s", r.errmsg);

	/* a CRD: install, wait until served, CRUD one object */
	char grp[64], crd[1500], name[96];
	snprintf(grp, sizeof(grp), "g%04x.steadfast.test", (unsigned)(sf_mono_ns() & 0xffff));
	snprintf(name, sizeof(name), "widgets.%s", grp);
	snprintf(
	    crd, sizeof(crd),
	    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
	    "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"group\":\"%s\",\"scope\":\"Namespaced\","
	    "\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\",\"kind\":\"Widget\","
	    "\"listKind\":\"WidgetList\"},"
	    "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"subresources\":{"
	    "\"status\":{}},"
	    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-"
	    "fields\":true}}}]}}",
	    name, grp);
	memset(&r, 0, sizeof(r));
	cr_assert_eq(sf_kube_create(K.client, &SF_GVR_CRDS, NULL, crd, tl_res_cb, &r, NULL), 0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 201, "crd: %s", r.message);
	tl_res_clear(&r);
	char av[96];
	snprintf(av, sizeof(av), "%s/v1", grp);
	sf_gvr widgets = {grp, "v1", "widgets", 1};
	/* the CRD is served once discovery lists it: poll discovery (an event
	 * we cannot watch for), bounded */
	int served = 0;
	for (int i = 0; i < 100 && !served; i++) {
		memset(&r, 0, sizeof(r));
		cr_assert_eq(sf_kube_resolve(K.client, av, "Widget", resolve_cb, &r), 0);
		tl_wait(&K.loop, &r, 30000);
		served = r.err == 0;
		if (!served)
			tl_run_until(&K.loop, &(int){0}, 100);
	}
	cr_assert(served, "CRD never became served");
	char ns[64];
	tl_namespace(&K, "it-crd", ns, sizeof(ns));
	const char *w = "{\"apiVersion\":\"%s\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w1\"},"
	                "\"spec\":{\"size\":3}}";
	char wb[256];
	snprintf(wb, sizeof(wb), w, av);
	memset(&r, 0, sizeof(r));
	cr_assert_eq(sf_kube_create(K.client, &widgets, ns, wb, tl_res_cb, &r, NULL), 0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 201, "widget: %s", r.message);
	tl_res_clear(&r);
	cr_assert_eq(sf_kube_patch(K.client, &widgets, ns, "w1", "status", SF_PATCH_MERGE,
	                           "{\"status\":{\"phase\":\"Ready\"}}", NULL, 0, tl_res_cb, &r,
	                           NULL),
	             0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 200, "widget status: %s", r.message);
	char ph[16];
	get_str(r.obj, "status.phase", ph, sizeof(ph));
	cr_assert_str_eq(ph, "Ready");
	tl_res_clear(&r);
	cr_assert_eq(sf_kube_delete(K.client, &SF_GVR_CRDS, NULL, name, NULL, tl_res_cb, &r, NULL),
	             0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 200);
	tl_res_clear(&r);
	tl_namespace_delete(&K, ns);
}

Test(client, lowpriv_identity_gets_403_with_message)
{
	tl_kube lp;
	tl_kube_open(&lp, tl_env("STEADFAST_LOWPRIV_KUBECONFIG"), NULL);
	tl_res r = {0};
	/* a LIST of pods (sf_kube_get needs a name) */
	sf_kube_req list = {.method = "GET", .gvr = &SF_GVR_PODS, .ns = "default"};
	cr_assert_eq(sf_kube_do(lp.client, &list, tl_res_cb, &r, NULL), 0);
	tl_wait(&lp.loop, &r, 30000);
	cr_assert_eq(r.http_status, 403);
	cr_assert_str_eq(r.reason, "Forbidden");
	cr_assert(strstr(r.message, "steadfast-lowpriv") && strstr(r.message, "pods"),
	          "message: %s", r.message);
	tl_res_clear(&r);
	tl_kube_close(&lp);
}

Test(client, wrong_ca_is_a_clear_tls_error)
{
	char dir[] = "/tmp/sf-ca-XXXXXX";
	cr_assert(mkdtemp(dir));
	char cmd[1024], kc[256];
	snprintf(cmd, sizeof(cmd),
	         "openssl req -x509 -newkey rsa:2048 -nodes -keyout %s/k.pem -out %s/ca.pem -days "
	         "1 -subj /CN=other-ca 2>/dev/null",
	         dir, dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(kc, sizeof(kc), "%s/config", dir);
	FILE *f = fopen(kc, "w");
	cr_assert(f);
	fprintf(f,
	        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  "
	        "cluster:\n    server: %s\n    certificate-authority: %s/ca.pem\n"
	        "users:\n- name: u\n  user:\n    client-certificate: %s\n    client-key: "
	        "%s\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n",
	        tl_env("STEADFAST_APISERVER"), dir, tl_env("STEADFAST_ADMIN_CERT"),
	        tl_env("STEADFAST_ADMIN_KEY"));
	fclose(f);
	tl_kube bad;
	tl_kube_open(&bad, kc, NULL);
	tl_res r = {0};
	sf_kube_req req = {.method = "GET", .path = "/version"};
	tl_do(&bad, &req, &r);
	cr_assert_eq(r.err, -EPROTO, "err %d: %s", r.err, r.errmsg);
	cr_assert_eq(r.http_status, 0);
	cr_assert(strstr(r.errmsg, "certificate") || strstr(r.errmsg, "SSL") ||
	              strstr(r.errmsg, "TLS"),
	          "errmsg: %s", r.errmsg);
	tl_kube_close(&bad);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Asks the server who we are (SelfSubjectReview). */
static void whoami(tl_kube *k, char *user, size_t n)
{
	const char *b =
	    "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}";
	sf_kube_req req = {.method = "POST",
	                   .path = "/apis/authentication.k8s.io/v1/selfsubjectreviews",
	                   .body = b,
	                   .body_len = strlen(b)};
	tl_res r = {0};
	tl_do(k, &req, &r);
	cr_assert_eq(r.http_status, 201, "selfsubjectreview: %ld %s %s", r.http_status, r.message,
	             r.errmsg);
	get_str(r.obj, "status.userInfo.username", user, n);
	tl_res_clear(&r);
}

static void sa_token(const char *ns, const char *sa, char *tok, size_t n)
{
	char body[256];
	snprintf(
	    body, sizeof(body),
	    "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":\"%s\"}}",
	    sa);
	sf_gvr sas = {"", "v1", "serviceaccounts", 1};
	tl_res r = {0};
	cr_assert_eq(sf_kube_create(K.client, &sas, ns, body, tl_res_cb, &r, NULL), 0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert(r.http_status == 201 || r.http_status == 409);
	tl_res_clear(&r);
	const char *tr = "{\"apiVersion\":\"authentication.k8s.io/"
	                 "v1\",\"kind\":\"TokenRequest\",\"spec\":{\"expirationSeconds\":3600}}";
	sf_kube_req req = {.method = "POST",
	                   .gvr = &sas,
	                   .ns = ns,
	                   .name = sa,
	                   .subresource = "token",
	                   .body = tr,
	                   .body_len = strlen(tr)};
	tl_do(&K, &req, &r);
	cr_assert_eq(r.http_status, 201, "token request: %s", r.message);
	get_str(r.obj, "status.token", tok, n);
	tl_res_clear(&r);
}

static void write_file(const char *path, const char *content)
{
	char tmp[600];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	cr_assert(f, "%s", tmp);
	fputs(content, f);
	fclose(f);
	cr_assert_eq(rename(tmp, path), 0); /* atomic, as kubelet swaps the projected token */
}

Test(client, in_cluster_config_follows_rotated_token)
{
	char ns[64];
	tl_namespace(&K, "it-incl", ns, sizeof(ns));
	static char tok1[4096], tok2[4096];
	sa_token(ns, "first", tok1, sizeof(tok1));
	sa_token(ns, "second", tok2, sizeof(tok2));

	char dir[] = "/tmp/sf-sa-XXXXXX";
	cr_assert(mkdtemp(dir));
	char p[512], ca[8192];
	FILE *cf = fopen(tl_env("STEADFAST_CA"), "r");
	cr_assert(cf);
	size_t cal = fread(ca, 1, sizeof(ca) - 1, cf);
	ca[cal] = '\0';
	fclose(cf);
	snprintf(p, sizeof(p), "%s/ca.crt", dir);
	write_file(p, ca);
	snprintf(p, sizeof(p), "%s/namespace", dir);
	write_file(p, ns);
	snprintf(p, sizeof(p), "%s/token", dir);
	write_file(p, tok1);

	const char *server = tl_env("STEADFAST_APISERVER"); /* https://127.0.0.1:PORT */
	const char *port = strrchr(server, ':') + 1;
	setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", port, 1);
	sf_kube_config *cfg;
	char err[512];
	int rc = sf_kube_config_in_cluster(dir, &cfg, err, sizeof(err));
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_str_eq(cfg->namespace, ns);

	tl_kube ic;
	cr_assert_eq(uv_loop_init(&ic.loop), 0);
	ic.cfg = cfg;
	cr_assert_eq(sf_kube_client_new(&ic.loop, cfg, NULL, &ic.client), 0);
	char user[256], want[256];
	whoami(&ic, user, sizeof(user));
	snprintf(want, sizeof(want), "system:serviceaccount:%s:first", ns);
	cr_assert_str_eq(user, want);

	write_file(p, tok2);
	cfg->token_checked_ns = 0; /* skip the once-a-second stat throttle */
	whoami(&ic, user, sizeof(user));
	snprintf(want, sizeof(want), "system:serviceaccount:%s:second", ns);
	cr_assert_str_eq(user, want, "the rotated token was not picked up");
	tl_kube_close(&ic);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	tl_namespace_delete(&K, ns);
}

typedef struct gate_ctx {
	int allow;
	int asked;
} gate_ctx;

static int gate_fn(void *ud, const sf_kube_req *req)
{
	gate_ctx *g = ud;
	(void)req;
	g->asked++;
	return g->allow ? 0 : 1;
}

Test(client, write_gate_refuses_writes_but_not_reads)
{
	gate_ctx g = {.allow = 0};
	sf_kube_client_set_write_gate(K.client, gate_fn, &g);
	tl_res r = {0};
	cr_assert_eq(sf_kube_create(K.client, &SF_GVR_CONFIGMAPS, "default",
	                            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
	                            "\"generateName\":\"gate-\"}}",
	                            tl_res_cb, &r, NULL),
	             0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.err, -EPERM);
	cr_assert_eq(r.http_status, 0);
	cr_assert_eq(g.asked, 1);
	tl_res_clear(&r);
	cr_assert_eq(
	    sf_kube_get(K.client, &SF_GVR_NAMESPACES, NULL, "default", tl_res_cb, &r, NULL), 0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 200);
	cr_assert_eq(g.asked, 1, "reads must not consult the gate");
	tl_res_clear(&r);
	sf_kube_client_stats s;
	sf_kube_client_stats_get(K.client, &s);
	cr_assert_eq(s.writes_refused, 1);
}
