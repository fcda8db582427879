/*
 * test_slackcq.c - the slack ClusterQueue's lendingLimits on a real Kueue
 * with kwok nodes (the kueue suite's control plane, test_kueue.c).
 *
 * A ClusterQueue named in appwrapper.slackQueueName has nominal quota for
 * cpu and nvidia.com/gpu; two kwok nodes of 8 cpus and 4 GPUs each. The
 * controller, with Autopilot's default node rules, must follow their
 * health in that queue's lendingLimits, as Kueue stores them:
 *   - started before the ClusterQueue exists, it says so once and goes on;
 *   - a cordoned node takes all its capacity out: each limit becomes
 *     nominal minus that node's capacity;
 *   - the other node labelled autopilot.ibm.com/gpuhealth=TESTING takes
 *     its GPUs out too: the GPU limit drops to 0 (more unusable than
 *     quota), the cpu limit stays;
 *   - a limit edited by hand is put back by the next pass;
 *   - uncordoned and unlabelled, the limits are removed;
 *   - its metrics count the passes that wrote.
 * Every state is awaited by polling the ClusterQueue with a deadline.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "steadfast/buf.h"
#include "steadfast/client.h"
#include "steadfast/json.h"
#include "kueue_suite.h"
#include "tl.h"
#include "tl_aw.h"
#include "tl_ctl.h"
#include "tl_kueue.h"

static const sf_gvr GVR_CQS = {"kueue.x-k8s.io", "v1beta2", "clusterqueues", 0};
static const sf_gvr GVR_NODES = {"", "v1", "nodes", 0};

/* The lendingLimit of resource in the first flavor of cq, "" when it has
 * none (into buf). */
static const char *lending_limit(sf_jv cq, const char *resource, char *buf, size_t n)
{
	buf[0] = 0;
	sf_jv_iter it =
	    sf_jv_iter_init(sf_jv_path(cq, "spec.resourceGroups[0].flavors[0].resources"));
	sf_jv r;
	while (sf_jv_next(&it, NULL, &r))
		if (sf_jv_streq(sf_jv_get(r, "name"), resource) &&
		    sf_jv_str(sf_jv_get(r, "lendingLimit"), buf, n) < 0)
			buf[0] = 0;
	return buf;
}

/* Waits (timeout_ms) until ClusterQueue name's cpu and GPU lendingLimits
 * are cpu and gpu ("" = none), as the API server answers. */
static void wait_limits(const char *name, const char *cpu, const char *gpu, long timeout_ms)
{
	tl_kube *k = kueue_suite_kube();
	char c[32], g[32];
	for (long ms = timeout_ms;; ms -= 200) {
		sf_obj *o = tl_kueue_get(k, &GVR_CQS, NULL, name);
		cr_assert_not_null(o, "ClusterQueue %s absent", name);
		lending_limit(sf_obj_root(o), "cpu", c, sizeof(c));
		lending_limit(sf_obj_root(o), "nvidia.com/gpu", g, sizeof(g));
		if (strcmp(c, cpu) == 0 && strcmp(g, gpu) == 0) {
			sf_obj_unref(o);
			return;
		}
		if (ms <= 0)
			cr_assert_fail(
			    "ClusterQueue %s: lendingLimits cpu \"%s\" gpu \"%s\" after %ld "
			    "ms, want \"%s\" and \"%s\": %s",
			    name, c, g, timeout_ms, cpu, gpu, o->json);
		sf_obj_unref(o);
		tl_kueue_pause(k, 200);
	}
}

static void patch(const sf_gvr *gvr, const char *name, const char *type, const char *body)
{
	tl_res r;
	sf_kube_req q = {.method = "PATCH",
	                 .gvr = gvr,
	                 .name = name,
	                 .body = body,
	                 .body_len = strlen(body),
	                 .content_type = type};
	tl_do(kueue_suite_kube(), &q, &r);
	cr_assert_eq(r.http_status, 200, "PATCH %s %s: %ld %s", gvr->resource, name, r.http_status,
	             r.message);
	tl_res_clear(&r);
}

#define MERGE "application/merge-patch+json"

Test(kueue, k_slack_queue_lending_limits_follow_node_health)
{
	tl_kube *k = kueue_suite_kube();
	const char *ns = kueue_suite_ns();
	/* the suite's controller has no slack queue: this test runs its own */
	tl_ctl_stop_all(&k->loop);

	char a[96], b[96], cq[96], cfg[128], y[2048];
	snprintf(a, sizeof(a), "%s-slack-a", ns);
	snprintf(b, sizeof(b), "%s-slack-b", ns);
	snprintf(cq, sizeof(cq), "%s-cq", ns);
	kueue_suite_delete_node_at_end(a);
	kueue_suite_delete_node_at_end(b);
	tl_kueue_create_node(k, ns, a, "", "[]", 8, 4);
	tl_kueue_create_node(k, ns, b, "", "[]", 8, 4);

	snprintf(cfg, sizeof(cfg), "/tmp/steadfast-slackcq-%d.yaml", (int)getpid());
	FILE *f = fopen(cfg, "w");
	cr_assert_not_null(f);
	fprintf(f, "appwrapper:\n  slackQueueName: %s\n", cq);
	fclose(f);
	tl_ctl_opts co = {.ns = ns, .lease = "steadfast-slack", .id = "slack", .config = cfg};
	tl_ctl *ctl = tl_ctl_start(&k->loop, &co);
	/* no ClusterQueue yet: nothing to do, said once */
	if (tl_ctl_wait_log(&k->loop, ctl, "slack ClusterQueue not found", 0, 30000) < 0) {
		tl_ctl_dump(ctl, 40);
		unlink(cfg);
		cr_assert_fail("no pass over the slack ClusterQueue in 30 s");
	}
	unlink(cfg);

	/* lendingLimit needs a cohort */
	snprintf(y, sizeof(y),
	         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n"
	         "  name: %s-rf\nspec: {}\n"
	         "---\n"
	         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: %s\n"
	         "spec:\n  cohortName: %s-cohort\n  namespaceSelector: {}\n  resourceGroups:\n"
	         "  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n"
	         "    - name: %s-rf\n      resources:\n"
	         "      - {name: cpu, nominalQuota: \"20\"}\n"
	         "      - {name: nvidia.com/gpu, nominalQuota: \"6\"}\n",
	         ns, cq, ns, ns);
	tl_aw_apply_yaml(k, ns, y, NULL, NULL);
	/* the next pass (30 s apart) finds every node healthy: no limit to
	 * write */
	cr_assert_geq(
	    tl_ctl_wait_log(&k->loop, ctl, "slack ClusterQueue lendingLimits agree", 0, 40000), 0,
	    "the ClusterQueue created was not looked at");
	cr_assert_eq(tl_ctl_count(ctl, "slack ClusterQueue not found", 0), 1,
	             "absent said more than once");
	wait_limits(cq, "", "", 1000);

	/* cordoned: all of a is out, 20-8 cpus and 6-4 GPUs lent at most */
	size_t from = tl_ctl_nlines(ctl);
	patch(&GVR_NODES, a, MERGE, "{\"spec\":{\"unschedulable\":true}}");
	wait_limits(cq, "12", "2", 15000);
	cr_assert_geq(tl_ctl_wait_log(&k->loop, ctl, "nvidia.com/gpu none->2", from, 5000), 0,
	              "the write was not logged with the old and new limits");

	/* b's GPUs under test too: 8 GPUs out of a quota of 6 lends none */
	patch(&GVR_NODES, b, MERGE,
	      "{\"metadata\":{\"labels\":{\"autopilot.ibm.com/gpuhealth\":\"TESTING\"}}}");
	wait_limits(cq, "12", "0", 15000);

	/* edited by hand: the next pass (30 s apart) puts it back */
	patch(&GVR_CQS, cq, "application/json-patch+json",
	      "[{\"op\":\"test\",\"path\":\"/spec/resourceGroups/0/flavors/0/resources/1/name\","
	      "\"value\":\"nvidia.com/gpu\"},{\"op\":\"replace\",\"path\":"
	      "\"/spec/resourceGroups/0/flavors/0/resources/1/lendingLimit\",\"value\":\"5\"}]");
	wait_limits(cq, "12", "5", 1000);
	wait_limits(cq, "12", "0", 45000);

	/* healthy again: no limits */
	patch(&GVR_NODES, a, MERGE, "{\"spec\":{\"unschedulable\":null}}");
	patch(&GVR_NODES, b, MERGE,
	      "{\"metadata\":{\"labels\":{\"autopilot.ibm.com/gpuhealth\":null}}}");
	wait_limits(cq, "", "", 15000);

	/* at least four writes (set, lowered, put back, removed: more if the
	 * last two node changes came to two passes), one pass found none */
	sf_buf m;
	sf_buf_init(&m, 0);
	cr_assert_eq(tl_ctl_http_get(tl_ctl_port(&k->loop, ctl, "metrics"), "/metrics", &m), 200);
	sf_buf_putc(&m, 0);
	const char *u = strstr(m.data, "steadfast_slack_queue_syncs_total{result=\"updated\"} ");
	cr_assert_not_null(u, "%s", m.data);
	cr_assert_geq(atol(u + strlen("steadfast_slack_queue_syncs_total{result=\"updated\"} ")), 4,
	              "%s", m.data);
	cr_assert(strstr(m.data, "steadfast_slack_queue_syncs_total{result=\"absent\"} 1\n"), "%s",
	          m.data);
	cr_assert(strstr(m.data, "steadfast_slack_queue_syncs_total{result=\"error\"} 0\n"), "%s",
	          m.data);
	sf_buf_free(&m);

	tl_kueue_delete(k, &GVR_NODES, a);
	tl_kueue_delete(k, &GVR_NODES, b);
}
