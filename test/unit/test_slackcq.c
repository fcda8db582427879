/*
 * test_slackcq.c - the slack ClusterQueue's lendingLimits (slackcq.h):
 * unusable capacity summed over nodes, and the JSON Patch that sets,
 * lowers or removes each limit of the first flavor of the first resource
 * group, or nothing when the limits already agree, or an error naming
 * the field when the ClusterQueue is malformed. Against the scripted
 * server, one pass: v1beta2 not served falls back to v1beta1, a patch
 * whose `test` failed reads again, the write is a JSON Patch. The real
 * Kueue's answers are test/integration/test_slackcq.c's.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fakesrv.h"
#include "steadfast/awconfig.h"
#include "steadfast/awnodes.h"
#include "steadfast/json.h"
#include "steadfast/cache.h"
#include "steadfast/client.h"
#include "steadfast/config.h"
#include "steadfast/slackcq.h"
#include "tl.h"

static sf_jv J(const char *s)
{
	return sf_jv_root(s, strlen(s));
}

#define NODE(labels, spec)                                                                         \
	"{\"metadata\":{\"name\":\"n1\",\"labels\":{" labels "}},\"spec\":{" spec "},"             \
	"\"status\":{\"capacity\":{\"cpu\":\"8\",\"memory\":\"32Gi\",\"pods\":\"110\","            \
	"\"nvidia.com/gpu\":\"4\"}}}"

static void add_node(sf_slackcq_unusable *u, const char *node)
{
	sf_aw_config c;
	sf_awcfg_defaults(&c);
	sf_awn_health h;
	cr_assert_eq(sf_awn_classify(J(node), &c.autopilot, &h), 0);
	cr_assert_eq(sf_slackcq_unusable_add(u, &h), 0);
}

/* A ClusterQueue with one flavor of resources (each "{...}" entry). */
#define CQ(resources)                                                                              \
	"{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"ClusterQueue\","                    \
	"\"metadata\":{\"name\":\"slack\",\"resourceVersion\":\"77\"},"                            \
	"\"spec\":{\"resourceGroups\":[{\"coveredResources\":[\"cpu\",\"nvidia.com/gpu\"],"        \
	"\"flavors\":[{\"name\":\"default\",\"resources\":[" resources "]},"                       \
	"{\"name\":\"other\",\"resources\":[{\"name\":\"cpu\",\"nominalQuota\":\"1\"}]}]},"        \
	"{\"coveredResources\":[\"memory\"],\"flavors\":[{\"name\":\"m\",\"resources\":"           \
	"[{\"name\":\"memory\",\"nominalQuota\":\"1Gi\"}]}]}]}}"

#define CPU(q) "{\"name\":\"cpu\",\"nominalQuota\":\"" q "\"}"
#define CPU_LL(q, ll) "{\"name\":\"cpu\",\"nominalQuota\":\"" q "\",\"lendingLimit\":\"" ll "\"}"
#define GPU(q) "{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"" q "\"}"
#define GPU_LL(q, ll)                                                                              \
	"{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"" q "\",\"lendingLimit\":\"" ll "\"}"

#define RV_TEST "{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"77\"}"
#define R "/spec/resourceGroups/0/flavors/0/resources/"

static int plan(sf_slackcq_plan *p, const char *cq, const sf_slackcq_unusable *u, char *err)
{
	sf_slackcq_plan_init(p);
	return sf_slackcq_plan_make(p, J(cq), u, err, 256);
}

static const char *body(sf_slackcq_plan *p)
{
	sf_buf_putc(&p->body, 0);
	p->body.len--;
	return p->body.data;
}

Test(slackcq, healthy_nodes_and_no_limits_need_nothing)
{
	sf_slackcq_unusable u;
	sf_slackcq_unusable_init(&u);
	add_node(&u, NODE("\"autopilot.ibm.com/gpuhealth\":\"PASS\"", ""));
	cr_assert_eq(u.n, 0);
	sf_slackcq_plan p;
	char err[256] = "";
	cr_assert_eq(plan(&p, CQ(CPU("16") "," GPU("8")), &u, err), 0, "%s", err);
	cr_assert_eq(p.nch, 0);
	cr_assert_eq(p.body.len, 0);
	sf_slackcq_plan_free(&p);
}

Test(slackcq, unusable_capacity_is_summed_over_nodes)
{
	sf_slackcq_unusable u;
	sf_slackcq_unusable_init(&u);
	add_node(&u, NODE("", "\"unschedulable\":true"));
	add_node(&u, NODE("\"autopilot.ibm.com/gpuhealth\":\"TESTING\"", ""));
	add_node(&u, NODE("\"autopilot.ibm.com/gpuhealth\":\"EVICT\"", ""));
	cr_assert_eq(sf_slackcq_unusable_get(&u, "nvidia.com/gpu"), 12000);
	cr_assert_eq(sf_slackcq_unusable_get(&u, "cpu"), 8000);
	cr_assert_eq(sf_slackcq_unusable_get(&u, "memory"), 32LL * 1024 * 1024 * 1024 * 1000);
	cr_assert_eq(sf_slackcq_unusable_get(&u, "pods"), 0);
	cr_assert_eq(u.skipped, 0);
}

Test(slackcq, a_node_capacity_that_is_no_quantity_is_skipped_and_counted)
{
	sf_awn_health h;
	memset(&h, 0, sizeof(h));
	h.nnosched = 3;
	snprintf(h.nosched[0].resource, sizeof(h.nosched[0].resource), "cpu");
	snprintf(h.nosched[0].quantity, sizeof(h.nosched[0].quantity), "lots");
	snprintf(h.nosched[1].resource, sizeof(h.nosched[1].resource), "nvidia.com/gpu");
	snprintf(h.nosched[1].quantity, sizeof(h.nosched[1].quantity), "2");
	snprintf(h.nosched[2].resource, sizeof(h.nosched[2].resource), "memory");
	snprintf(h.nosched[2].quantity, sizeof(h.nosched[2].quantity), "0");
	sf_slackcq_unusable u;
	sf_slackcq_unusable_init(&u);
	cr_assert_eq(sf_slackcq_unusable_add(&u, &h), 1);
	cr_assert_eq(u.skipped, 1);
	cr_assert_eq(u.n, 1, "a zero adds no entry");
	cr_assert_eq(sf_slackcq_unusable_get(&u, "nvidia.com/gpu"), 2000);
}

Test(slackcq, a_cordoned_node_sets_limits_guarded_by_tests)
{
	sf_slackcq_unusable u;
	sf_slackcq_unusable_init(&u);
	add_node(&u, NODE("", "\"unschedulable\":true"));
	sf_slackcq_plan p;
	char err[256] = "";
	cr_assert_eq(plan(&p, CQ(CPU("16") "," GPU("8")), &u, err), 1, "%s", err);
	cr_assert_str_eq(body(&p),
	                 "[" RV_TEST ",{\"op\":\"test\",\"path\":\"" R "0/name\",\"value\":\"cpu\"}"
	                 ",{\"op\":\"add\",\"path\":\"" R "0/lendingLimit\",\"value\":\"8\"}"
	                 ",{\"op\":\"test\",\"path\":\"" R "1/name\",\"value\":\"nvidia.com/gpu\"}"
	                 ",{\"op\":\"add\",\"path\":\"" R "1/lendingLimit\",\"value\":\"4\"}]");
	cr_assert_str_eq(p.flavor, "default");
	char s[256];
	cr_assert_str_eq(sf_slackcq_plan_str(&p, s, sizeof(s)),
	                 "cpu none->8, nvidia.com/gpu none->4");
	/* the body is JSON */
	sf_buf m;
	sf_buf_init(&m, 0);
	cr_assert_eq(sf_json_minify(p.body.data, p.body.len, &m, err, sizeof(err)), 0, "%s", err);
	sf_buf_free(&m);
	sf_slackcq_plan_free(&p);
}

Test(slackcq, more_unusable_than_quota_lends_nothing)
{
	sf_slackcq_unusable u;
	sf_slackcq_unusable_init(&u);
	add_node(&u, NODE("\"autopilot.ibm.com/gpuhealth\":\"TESTING\"", ""));
	add_node(&u, NODE("\"autopilot.ibm.com/gpuhealth\":\"EVICT\"", ""));
	sf_slackcq_plan p;
	char err[256] = "";
	cr_assert_eq(plan(&p, CQ(CPU("16") "," GPU_LL("6", "2")), &u, err), 1, "%s", err);
	cr_assert_str_eq(body(&p),
	                 "[" RV_TEST ",{\"op\":\"test\",\"path\":\"" R
	                 "1/name\",\"value\":\"nvidia.com/gpu\"}"
	                 ",{\"op\":\"add\",\"path\":\"" R "1/lendingLimit\",\"value\":\"0\"}]");
	cr_assert_eq(p.nch, 1);
	cr_assert_eq(p.ch[0].old_milli, 2000);
	cr_assert_eq(p.ch[0].new_milli, 0);
	sf_slackcq_plan_free(&p);
}

Test(slackcq, healthy_again_removes_the_limits)
{
	sf_slackcq_unusable u;
	sf_slackcq_unusable_init(&u);
	sf_slackcq_plan p;
	char err[256] = "";
	cr_assert_eq(plan(&p, CQ(CPU_LL("16", "8") "," GPU_LL("8", "4")), &u, err), 1, "%s", err);
	cr_assert_str_eq(body(&p),
	                 "[" RV_TEST ",{\"op\":\"test\",\"path\":\"" R "0/name\",\"value\":\"cpu\"}"
	                 ",{\"op\":\"remove\",\"path\":\"" R "0/lendingLimit\"}"
	                 ",{\"op\":\"test\",\"path\":\"" R "1/name\",\"value\":\"nvidia.com/gpu\"}"
	                 ",{\"op\":\"remove\",\"path\":\"" R "1/lendingLimit\"}]");
	char s[256];
	cr_assert_str_eq(sf_slackcq_plan_str(&p, s, sizeof(s)),
	                 "cpu 8->none, nvidia.com/gpu 4->none");
	sf_slackcq_plan_free(&p);
}

Test(slackcq, limits_already_right_are_compared_as_quantities)
{
	sf_slackcq_unusable u;
	sf_slackcq_unusable_init(&u);
	add_node(&u, NODE("", "\"unschedulable\":true"));
	sf_slackcq_plan p;
	char err[256] = "";
	/* 8000m is 8, 4 is 4; a JSON number is a quantity too */
	cr_assert_eq(plan(&p,
	                  CQ(CPU_LL("16", "8000m") ",{\"name\":\"nvidia.com/gpu\","
	                                           "\"nominalQuota\":8,\"lendingLimit\":4}"),
	                  &u, err),
	             0, "%s", err);
	sf_slackcq_plan_free(&p);
}

Test(slackcq, a_hand_edited_limit_is_corrected)
{
	sf_slackcq_unusable u;
	sf_slackcq_unusable_init(&u);
	add_node(&u, NODE("", "\"unschedulable\":true"));
	sf_slackcq_plan p;
	char err[256] = "";
	cr_assert_eq(plan(&p, CQ(CPU_LL("16", "8") "," GPU_LL("8", "7")), &u, err), 1, "%s", err);
	cr_assert_eq(p.nch, 1);
	cr_assert_str_eq(p.ch[0].resource, "nvidia.com/gpu");
	cr_assert_eq(p.ch[0].index, 1);
	cr_assert(strstr(body(&p), "\"add\",\"path\":\"" R "1/lendingLimit\",\"value\":\"4\""));
	sf_slackcq_plan_free(&p);
}

Test(slackcq, only_the_first_flavor_of_the_first_group_is_touched)
{
	sf_slackcq_unusable u;
	sf_slackcq_unusable_init(&u);
	add_node(&u, NODE("", "\"unschedulable\":true"));
	sf_slackcq_plan p;
	char err[256] = "";
	/* memory (second group) and the second flavor's cpu get nothing */
	cr_assert_eq(plan(&p, CQ(GPU("8")), &u, err), 1, "%s", err);
	cr_assert_eq(p.nch, 1);
	cr_assert_str_eq(p.ch[0].resource, "nvidia.com/gpu");
	cr_assert_null(strstr(body(&p), "memory"));
	cr_assert_null(strstr(body(&p), "flavors/1"));
	cr_assert_null(strstr(body(&p), "resourceGroups/1"));
	sf_slackcq_plan_free(&p);
}

Test(slackcq, fractional_results_are_milli_units)
{
	sf_slackcq_unusable u;
	sf_slackcq_unusable_init(&u);
	add_node(&u, NODE("", "\"unschedulable\":true"));
	sf_slackcq_plan p;
	char err[256] = "";
	cr_assert_eq(plan(&p, CQ(CPU("8.5")), &u, err), 1, "%s", err);
	cr_assert(strstr(body(&p), "\"value\":\"500m\""), "%s", body(&p));
	sf_slackcq_plan_free(&p);
}

static void malformed(const char *cq, const char *want)
{
	sf_slackcq_unusable u;
	sf_slackcq_unusable_init(&u);
	add_node(&u, NODE("", "\"unschedulable\":true"));
	sf_slackcq_plan p;
	char err[256] = "";
	cr_assert_eq(plan(&p, cq, &u, err), -EINVAL, "%s", cq);
	cr_assert(strstr(err, want), "error \"%s\" does not name %s", err, want);
	cr_assert_eq(p.body.len, 0, "no write");
	sf_slackcq_plan_free(&p);
}

Test(slackcq, a_malformed_clusterqueue_is_an_error_naming_the_field)
{
	malformed("[]", "not an object");
	malformed("{\"metadata\":{\"name\":\"slack\"},\"spec\":{}}", "metadata.resourceVersion");
	malformed("{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{}}",
	          "spec.resourceGroups[0]");
	malformed("{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"resourceGroups\":[]}}",
	          "spec.resourceGroups[0]");
	malformed("{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"resourceGroups\":"
	          "[{\"flavors\":[]}]}}",
	          "spec.resourceGroups[0].flavors[0]");
	malformed("{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"resourceGroups\":"
	          "[{\"flavors\":[{\"name\":\"f\"}]}]}}",
	          "flavors[0].resources");
	malformed(CQ(CPU("16") ",{\"nominalQuota\":\"1\"}"), "resources[1].name");
	malformed(CQ(CPU("lots")), "resources[0].nominalQuota (cpu): not a quantity");
	malformed(CQ("{\"name\":\"cpu\"}"), "resources[0].nominalQuota");
	malformed(CQ(CPU("8Ei")), "resources[0].nominalQuota (cpu): out of range");
	malformed(CQ(GPU_LL("8", "x")), "resources[0].lendingLimit (nvidia.com/gpu)");
}

Test(slackcq, a_node_change_matters_when_its_unusable_capacity_changes)
{
	sf_aw_config c;
	sf_awcfg_defaults(&c);
	const char *healthy = NODE("\"autopilot.ibm.com/gpuhealth\":\"PASS\"", "");
	const char *warn = NODE("\"autopilot.ibm.com/gpuhealth\":\"WARN\"", "");
	const char *testing = NODE("\"autopilot.ibm.com/gpuhealth\":\"TESTING\"", "");
	const char *evict = NODE("\"autopilot.ibm.com/gpuhealth\":\"EVICT\"", "");
	const char *cordoned = NODE("", "\"unschedulable\":true");
	sf_obj *h = sf_obj_parse(healthy, strlen(healthy), NULL, 0);
	sf_obj *w = sf_obj_parse(warn, strlen(warn), NULL, 0);
	sf_obj *t = sf_obj_parse(testing, strlen(testing), NULL, 0);
	sf_obj *e = sf_obj_parse(evict, strlen(evict), NULL, 0);
	sf_obj *k = sf_obj_parse(cordoned, strlen(cordoned), NULL, 0);
	cr_assert(h && w && t && e && k);
	cr_assert_not(sf_slackcq_node_changed(h, w, &c.autopilot),
	              "PreferNoSchedule takes nothing");
	cr_assert_not(sf_slackcq_node_changed(h, h, &c.autopilot));
	cr_assert_not(sf_slackcq_node_changed(t, e, &c.autopilot), "the same GPUs out either way");
	cr_assert(sf_slackcq_node_changed(h, t, &c.autopilot));
	cr_assert(sf_slackcq_node_changed(t, k, &c.autopilot));
	cr_assert(sf_slackcq_node_changed(k, h, &c.autopilot));
	cr_assert_not(sf_slackcq_node_changed(NULL, h, &c.autopilot), "a healthy node added");
	cr_assert(sf_slackcq_node_changed(NULL, k, &c.autopilot));
	cr_assert(sf_slackcq_node_changed(t, NULL, &c.autopilot), "an unhealthy node deleted");
	sf_obj_unref(h);
	sf_obj_unref(w);
	sf_obj_unref(t);
	sf_obj_unref(e);
	sf_obj_unref(k);
}

/* ---- a pass against the scripted server ---- */

/* A scripted response (malloc'd). */
static char *resp(const char *status, const char *type, const char *body)
{
	char *r = NULL;
	cr_assert_geq(asprintf(&r,
	                       "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n%s",
	                       status, type, strlen(body), body),
	              0);
	return r;
}

#define CQ_RV(rv)                                                                                  \
	"{\"apiVersion\":\"kueue.x-k8s.io/v1beta1\",\"kind\":\"ClusterQueue\","                    \
	"\"metadata\":{\"name\":\"slack\",\"resourceVersion\":\"" rv "\"},"                        \
	"\"spec\":{\"resourceGroups\":[{\"flavors\":[{\"name\":\"f\",\"resources\":"               \
	"[" GPU("8") "]}]}]}}"

static int updated(void *ud)
{
	sf_slackcq_stats st;
	sf_slackcq_stats_get(ud, &st);
	return st.updated + st.errors > 0;
}

static void set_flag(void *ud)
{
	*(int *)ud = 1;
}

Test(slackcq, a_pass_falls_back_to_v1beta1_and_reads_again_after_a_failed_test,
     .init = tl_log_quiet)
{
	const char *notfound = "404 page not found\n";
	const char *failed = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
	                     "\"message\":\"testing value /metadata/resourceVersion failed: test "
	                     "failed\",\"reason\":\"Invalid\",\"code\":422}";
	char *r[5] = {
	    resp("404 Not Found", "text/plain", notfound),
	    resp("200 OK", "application/json", CQ_RV("77")),
	    resp("422 Unprocessable Entity", "application/json", failed),
	    resp("200 OK", "application/json", CQ_RV("78")),
	    resp("200 OK", "application/json", CQ_RV("79")),
	};
	fake_resp script[5];
	for (int i = 0; i < 5; i++)
		script[i] = (fake_resp){r[i], 0};

	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	fakesrv *srv = fakesrv_start(&loop, script, 5);
	sf_kube_config *cfg = NULL;
	sf_kube_client_opts co = {.http1_only = 1};
	sf_kube_client *c = tl_fakesrv_client(&loop, srv, &co, &cfg);

	sf_aw_config ac;
	sf_awcfg_defaults(&ac);
	sf_store *nodes = sf_store_new();
	cr_assert_not_null(nodes);
	const char *n = NODE("", "\"unschedulable\":true");
	sf_obj *o = sf_obj_parse(n, strlen(n), NULL, 0);
	cr_assert_eq(sf_store_upsert(nodes, o), 0);
	sf_obj_unref(o);

	sf_slackcq *s = NULL;
	sf_slackcq_opts so = {.name = "slack", .autopilot = &ac.autopilot, .nodes = nodes};
	cr_assert_eq(sf_slackcq_new(&loop, c, &so, &s), 0);
	sf_slackcq_run(s);
	cr_assert_eq(tl_run_until_fn(&loop, updated, s, 5000), 0, "no pass ended");
	sf_slackcq_stats st;
	sf_slackcq_stats_get(s, &st);
	cr_assert_eq(st.updated, 1);
	cr_assert_eq(st.errors, 0);
	cr_assert_eq(fakesrv_requests(srv), 5);
	const char *want[] = {
	    "GET /apis/kueue.x-k8s.io/v1beta2/clusterqueues/slack ",
	    "GET /apis/kueue.x-k8s.io/v1beta1/clusterqueues/slack ",
	    "PATCH /apis/kueue.x-k8s.io/v1beta1/clusterqueues/slack ",
	    "GET /apis/kueue.x-k8s.io/v1beta1/clusterqueues/slack ",
	    "PATCH /apis/kueue.x-k8s.io/v1beta1/clusterqueues/slack ",
	};
	for (int i = 0; i < 5; i++)
		cr_assert_eq(strncmp(fakesrv_request(srv, i), want[i], strlen(want[i])), 0,
		             "request %d: %s", i, fakesrv_request(srv, i));
	cr_assert(strcasestr(fakesrv_request(srv, 4), "content-type: application/json-patch+json"),
	          "%s", fakesrv_request(srv, 4));
	/* the exposition as /metrics writes it, byte for byte */
	sf_prom *p = sf_prom_new();
	cr_assert_not_null(p);
	cr_assert_eq(sf_slackcq_metrics_write(s, p), 0);
	sf_buf out;
	sf_buf_init(&out, 0);
	cr_assert_eq(sf_prom_render(p, &out), 0);
	cr_assert_eq(sf_buf_putc(&out, 0), 0);
	cr_assert_str_eq(out.data,
	                 "# HELP steadfast_slack_queue_syncs_total Passes over the slack "
	                 "ClusterQueue's lendingLimits by outcome: unchanged, updated (one patch), "
	                 "absent (no such ClusterQueue), error\n"
	                 "# TYPE steadfast_slack_queue_syncs_total counter\n"
	                 "steadfast_slack_queue_syncs_total{result=\"unchanged\"} 0\n"
	                 "steadfast_slack_queue_syncs_total{result=\"updated\"} 1\n"
	                 "steadfast_slack_queue_syncs_total{result=\"absent\"} 0\n"
	                 "steadfast_slack_queue_syncs_total{result=\"error\"} 0\n");
	sf_buf_free(&out);
	sf_prom_free(p);

	int closed = 0, cl = 0;
	sf_slackcq_close(s, set_flag, &closed);
	cr_assert_eq(tl_run_until(&loop, &closed, 5000), 0);
	sf_kube_client_close(c, set_flag, &cl);
	fakesrv_stop(srv);
	cr_assert_eq(tl_run_until(&loop, &cl, 5000), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	sf_kube_config_free(cfg);
	sf_store_free(nodes);
	cr_assert_eq(uv_loop_close(&loop), 0);
	for (int i = 0; i < 5; i++)
		free(r[i]);
}
