/*
 * test_awnodes.c - a Node's health for Autopilot (awnodes.h), with
 * upstream's default resourceTaints: NoExecute resources, and the capacity
 * taken out of scheduling by labels, cordons and not-ready taints.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "steadfast/awconfig.h"
#include "steadfast/awnodes.h"
#include "steadfast/json.h"

static sf_jv J(const char *s)
{
	return sf_jv_root(s, strlen(s));
}

#define NODE(labels, spec)                                                                         \
	"{\"metadata\":{\"name\":\"n1\",\"labels\":{" labels "}},\"spec\":{" spec "},"             \
	"\"status\":{\"capacity\":{\"cpu\":\"8\",\"memory\":\"32Gi\",\"pods\":\"110\","            \
	"\"nvidia.com/gpu\":\"4\"}}}"

static sf_awn_health classify(const char *node)
{
	sf_aw_config c;
	sf_awcfg_defaults(&c);
	sf_awn_health h;
	cr_assert_eq(sf_awn_classify(J(node), &c.autopilot, &h), 0);
	return h;
}

Test(awnodes, healthy_node_makes_nothing_unusable)
{
	sf_awn_health h = classify(NODE("\"autopilot.ibm.com/gpuhealth\":\"PASS\"", ""));
	cr_assert_eq(h.nnoexec, 0);
	cr_assert_eq(h.nnosched, 0);
	cr_assert_not(h.unschedulable);
}

Test(awnodes, evict_label_is_noexecute_for_the_gpu)
{
	sf_awn_health h = classify(NODE("\"autopilot.ibm.com/gpuhealth\":\"EVICT\"", ""));
	cr_assert_eq(h.nnoexec, 1);
	cr_assert_str_eq(h.noexec[0], "nvidia.com/gpu");
	cr_assert(sf_awn_noexec_has(&h, "nvidia.com/gpu"));
	cr_assert_not(sf_awn_noexec_has(&h, "cpu"));
	cr_assert_eq(h.nnosched, 1);
	cr_assert_str_eq(h.nosched[0].resource, "nvidia.com/gpu");
	cr_assert_str_eq(h.nosched[0].quantity, "4");
}

Test(awnodes, testing_label_takes_gpus_out_of_scheduling_without_evacuating)
{
	sf_awn_health h = classify(NODE("\"autopilot.ibm.com/gpuhealth\":\"TESTING\"", ""));
	cr_assert_eq(h.nnoexec, 0);
	cr_assert_eq(h.nnosched, 1);
	cr_assert_str_eq(h.nosched[0].resource, "nvidia.com/gpu");
	/* WARN (PreferNoSchedule) takes nothing out */
	h = classify(NODE("\"autopilot.ibm.com/gpuhealth\":\"WARN\"", ""));
	cr_assert_eq(h.nnoexec + h.nnosched, 0);
}

Test(awnodes, cordoned_or_not_ready_takes_all_but_pods_and_never_evacuates)
{
	static const char *const specs[] = {
	    "\"unschedulable\":true",
	    "\"taints\":[{\"key\":\"node.kubernetes.io/not-ready\",\"effect\":\"NoSchedule\"}]",
	    "\"taints\":[{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoExecute\"}]",
	};
	for (size_t i = 0; i < 3; i++) {
		char node[1024];
		snprintf(node, sizeof(node), NODE("", "%s"), specs[i]);
		sf_awn_health h = classify(node);
		cr_assert(h.unschedulable, "%s", specs[i]);
		cr_assert_eq(h.nnoexec, 0, "a NotReady node is no reason to evacuate");
		cr_assert_eq(h.nnosched, 3, "%s", specs[i]);
		for (size_t j = 0; j < h.nnosched; j++)
			cr_assert_str_neq(h.nosched[j].resource, "pods");
	}
}

Test(awnodes, a_labelled_node_without_the_resource_takes_nothing_out)
{
	sf_aw_config c;
	sf_awcfg_defaults(&c);
	sf_awn_health h;
	cr_assert_eq(sf_awn_classify(J("{\"metadata\":{\"labels\":{\"autopilot.ibm.com/gpuhealth\":"
	                               "\"TESTING\"}},\"status\":{\"capacity\":{\"cpu\":\"8\","
	                               "\"nvidia.com/gpu\":\"0\"}}}"),
	                             &c.autopilot, &h),
	             0);
	cr_assert_eq(h.nnosched, 0);
	cr_assert_eq(sf_awn_classify(J("[]"), &c.autopilot, &h), -EINVAL);
}

#define POD(phase, extra, resources)                                                               \
	"{\"metadata\":{\"name\":\"p\"" extra "},\"spec\":{\"nodeName\":\"n1\",\"containers\":["   \
	"{\"name\":\"a\"},{\"name\":\"b\",\"resources\":" resources                                \
	"}]},\"status\":{\"phase\":\"" phase "\"}}"

Test(awnodes, only_running_pods_using_the_noexec_resource_are_affected)
{
	sf_awn_health evict = classify(NODE("\"autopilot.ibm.com/gpuhealth\":\"EVICT\"", ""));
	sf_awn_health healthy = classify(NODE("", ""));

	cr_assert(sf_awn_pod_affected(
	    J(POD("Running", "", "{\"limits\":{\"nvidia.com/gpu\":\"1\"}}")), &evict));
	cr_assert(sf_awn_pod_affected(
	    J(POD("Running", "", "{\"requests\":{\"nvidia.com/gpu\":\"2\"}}")), &evict));
	cr_assert_not(sf_awn_pod_affected(
	    J(POD("Running", "", "{\"limits\":{\"nvidia.com/gpu\":\"1\"}}")), &healthy));
	cr_assert_not(
	    sf_awn_pod_affected(J(POD("Running", "", "{\"limits\":{\"cpu\":\"1\"}}")), &evict),
	    "a pod without GPUs stays");
	cr_assert_not(sf_awn_pod_affected(
	                  J(POD("Running", "", "{\"limits\":{\"nvidia.com/gpu\":\"0\"}}")), &evict),
	              "zero GPUs is not using them");
	cr_assert_not(sf_awn_pod_affected(
	                  J(POD("Pending", "", "{\"limits\":{\"nvidia.com/gpu\":\"1\"}}")), &evict),
	              "only Running pods, as upstream");
	cr_assert_not(
	    sf_awn_pod_affected(J(POD("Running", ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"",
	                              "{\"limits\":{\"nvidia.com/gpu\":\"1\"}}")),
	                        &evict),
	    "a pod being deleted is leaving already");
}

/* The node cache's transform drops fields: the classification of a full
 * node (cordoned or not, labelled or not) and of what the cache keeps of
 * it must be the same, so no dropped field is ever read. */
Test(awnodes, the_node_cache_drops_only_fields_the_classification_never_reads)
{
	static const char *const variants[][2] = {
	    {"\"autopilot.ibm.com/gpuhealth\":\"EVICT\"", ""},
	    {"\"autopilot.ibm.com/gpuhealth\":\"TESTING\"", ""},
	    {"", "\"unschedulable\":true"},
	    {"",
	     "\"taints\":[{\"key\":\"node.kubernetes.io/not-ready\",\"effect\":\"NoSchedule\"}]"},
	};
	sf_aw_config c;
	sf_awcfg_defaults(&c);
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		char full[4096];
		snprintf(
		    full, sizeof(full),
		    "{\"metadata\":{\"name\":\"n1\",\"labels\":{%s},\"annotations\":{\"a\":"
		    "\"b\"}},\"spec\":{\"podCIDR\":\"10.0.0.0/24\",\"providerID\":\"x\"%s%s},"
		    "\"status\":{\"capacity\":{\"cpu\":\"8\",\"nvidia.com/gpu\":\"4\","
		    "\"pods\":\"110\"},\"allocatable\":{\"cpu\":\"7\"},\"conditions\":[{\"type\":"
		    "\"Ready\",\"status\":\"False\"}],\"images\":[{\"names\":[\"i\"]}],"
		    "\"nodeInfo\":{\"kubeletVersion\":\"v1\"},\"addresses\":[]}}",
		    variants[i][0], variants[i][1][0] ? "," : "", variants[i][1]);
		sf_obj *o = sf_obj_new(full, strlen(full));
		cr_assert_not_null(o);
		sf_awn_health a, b;
		cr_assert_eq(sf_awn_classify(sf_obj_root(o), &c.autopilot, &a), 0);
		o = sf_obj_project(o, SF_AWN_FIELDS);
		cr_assert_null(strstr(o->json, "images"), "%s", o->json);
		cr_assert_null(strstr(o->json, "allocatable"), "%s", o->json);
		cr_assert_eq(sf_awn_classify(sf_obj_root(o), &c.autopilot, &b), 0);
		cr_assert_eq(memcmp(&a, &b, sizeof(a)), 0, "variant %zu: %s", i, o->json);
		sf_obj_unref(o);
	}
}
