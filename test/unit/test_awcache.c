/*
 * test_awcache.c - the controller's cache transforms drop only fields it
 * never reads: every pod and component below, as the API server writes
 * them (managedFields aside), is read through the same functions the
 * controller uses, whole and as its caches keep it, and gives the same
 * answers; so is every AppWrapper below, in each phase, through the phase
 * machine and the component builder.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "steadfast/awcomp.h"
#include "steadfast/awconfig.h"
#include "steadfast/awnodes.h"
#include "steadfast/awphase.h"
#include "steadfast/cache.h"
#include "steadfast/controller.h"
#include "steadfast/jdoc.h"
#include "steadfast/json.h"

/* JSON laid out as it reads, not as clang-format would break it: */
/* clang-format off */
#define META(extra)                                                                                \
	"\"metadata\":{\"name\":\"aw-job-x7\",\"generateName\":\"aw-job-\",\"namespace\":\"team\","   \
	"\"uid\":\"u-pod\",\"resourceVersion\":\"88\",\"creationTimestamp\":\"2026-12-01T10:00:00Z\","  \
	"\"labels\":{\"workload.codeflare.dev/appwrapper\":\"aw\",\"batch.kubernetes.io/job-name\":"   \
	"\"aw-job\"},\"annotations\":{\"kueue.x-k8s.io/workload\":\"w\"},\"ownerReferences\":[{"      \
	"\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"other\",\"uid\":\"u-cm\"},{"           \
	"\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"aw-job\",\"uid\":\"u-job\","          \
	"\"controller\":true,\"blockOwnerDeletion\":true}],\"finalizers\":[\"batch.kubernetes.io/"     \
	"job-tracking\"]" extra "}"

#define SPEC                                                                                       \
	"\"spec\":{\"volumes\":[{\"name\":\"kube-api-access\",\"projected\":{\"sources\":[]}}],"        \
	"\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"command\":[\"sh\",\"-c\",\"run\"]," \
	"\"env\":[{\"name\":\"A\",\"value\":\"1\"}],\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"},"\
	"\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"1\"}},\"volumeMounts\":[]},{\"name\":"        \
	"\"side\",\"image\":\"busybox\"}],\"restartPolicy\":\"Never\",\"nodeName\":\"gpu-1\","          \
	"\"schedulerName\":\"default-scheduler\",\"tolerations\":[],\"affinity\":{\"nodeAffinity\":{}}}"

static const char *const PODS[] = {
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\"," META("") "," SPEC
    ",\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
    "\"podIP\":\"10.0.0.9\",\"containerStatuses\":[{\"name\":\"main\",\"ready\":true,\"state\":{"
    "\"running\":{\"startedAt\":\"2026-12-01T10:00:01Z\"}},\"image\":\"busybox\"}]}}",
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\"," META("") "," SPEC
    ",\"status\":{\"phase\":\"Failed\",\"containerStatuses\":[{\"name\":\"side\",\"state\":{"
    "\"terminated\":{\"exitCode\":0,\"reason\":\"Completed\"}}},{\"name\":\"main\",\"state\":{"
    "\"terminated\":{\"exitCode\":42,\"reason\":\"Error\",\"message\":\"out of cheese\","
    "\"startedAt\":\"2026-12-01T10:00:01Z\",\"finishedAt\":\"2026-12-01T10:00:02Z\","
    "\"containerID\":\"containerd://x\"}},\"lastState\":{},\"imageID\":\"sha\"}]}}",
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\"," META("") "," SPEC
    ",\"status\":{\"phase\":\"Failed\",\"reason\":\"Evicted\",\"message\":\"The node was low on "
    "resource: memory.\"}}",
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\"," META(",\"deletionTimestamp\":\"2026-12-01T10:05:00Z\"") ","
    SPEC ",\"status\":{\"phase\":\"Running\"}}",
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\"," META("") "," SPEC ",\"status\":{\"phase\":\"Pending\"}}",
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\"," META("") "," SPEC ",\"status\":{\"phase\":\"Succeeded\"}}",
};
/* clang-format on */

static sf_obj *obj(const char *json)
{
	char err[128];
	sf_obj *o = sf_obj_parse(json, strlen(json), err, sizeof(err));
	cr_assert_not_null(o, "%s: %s", err, json);
	return o;
}

/* The one label the controller reads of a pod or component (the work
 * queue's key, sf_store's label index) is kept as it was, and no other
 * label is: reading another one from the cache would read nothing. */
static int same_labels(const sf_obj *whole, const sf_obj *kept)
{
	sf_jv wl = sf_jv_path(sf_obj_root(whole), "metadata.labels");
	sf_jv kl = sf_jv_path(sf_obj_root(kept), "metadata.labels");
	sf_jv w = sf_jv_get(wl, SF_AW_LABEL), k = sf_jv_get(kl, SF_AW_LABEL);
	if (!w.n || w.n != k.n || memcmp(w.p, k.p, w.n) != 0 || sf_jv_len(kl) != 1)
		return 0;
	/* the label index sees the same value */
	int same = 1;
	sf_store *st[2] = {sf_store_new(), sf_store_new()};
	const sf_obj *o[2] = {whole, kept};
	for (int i = 0; i < 2; i++)
		cr_assert(st[i] && sf_store_add_label_index(st[i], SF_AW_LABEL) == 0 &&
		          sf_store_upsert(st[i], (sf_obj *)o[i]) == 0);
	char value[64];
	cr_assert_gt(sf_jv_str(w, value, sizeof(value)), 0);
	for (int i = 0; i < 2; i++)
		same &= sf_store_index_count(st[i], SF_AW_LABEL, value) == 1;
	sf_store_free(st[0]);
	sf_store_free(st[1]);
	return same;
}

/* Ownership reads the same whole and as cached (sf_awc_owned_by for the
 * controller's uid, and not for another owner's); of the owner references
 * only uid and controller are kept - and, for a pod (named), the owner's
 * apiVersion, kind and name, which say which component it is
 * (sf_awp_pod_component); a component's owner's kind and name are read
 * live, never from the cache. */
static void same_ownership(const sf_obj *whole, const sf_obj *kept, const char *owner,
                           const char *other, int named)
{
	cr_assert(sf_awc_owned_by(sf_obj_root(whole), owner));
	cr_assert(sf_awc_owned_by(sf_obj_root(kept), owner), "%s", kept->json);
	cr_assert_not(sf_awc_owned_by(sf_obj_root(whole), other));
	cr_assert_not(sf_awc_owned_by(sf_obj_root(kept), other), "%s", kept->json);
	sf_jv refs = sf_jv_path(sf_obj_root(kept), "metadata.ownerReferences");
	cr_assert_eq(sf_jv_len(refs),
	             sf_jv_len(sf_jv_path(sf_obj_root(whole), "metadata.ownerReferences")));
	for (size_t i = 0; i < sf_jv_len(refs); i++) {
		sf_jv_iter it = sf_jv_iter_init(sf_jv_at(refs, i));
		sf_jv k, v;
		while (sf_jv_next(&it, &k, &v))
			cr_assert(sf_jv_streq(k, "uid") || sf_jv_streq(k, "controller") ||
			              (named && (sf_jv_streq(k, "apiVersion") ||
			                         sf_jv_streq(k, "kind") || sf_jv_streq(k, "name"))),
			          "owner reference field %.*s kept: %s", (int)k.n, k.p, kept->json);
	}
}

Test(awcache, a_pod_as_cached_reads_the_same_as_the_whole_pod)
{
	sf_aw_config c;
	sf_awcfg_defaults(&c);
	sf_aw_settings s;
	sf_aw_settings_resolve(&c, SF_JV_NONE, &s);
	const char *node =
	    "{\"metadata\":{\"name\":\"gpu-1\",\"labels\":{\"autopilot.ibm.com/gpuhealth\":"
	    "\"EVICT\"}},\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"8\"}}}";
	sf_awn_health h;
	cr_assert_eq(sf_awn_classify(sf_jv_root(node, strlen(node)), &c.autopilot, &h), 0);
	for (size_t i = 0; i < sizeof(PODS) / sizeof(PODS[0]); i++) {
		sf_obj *whole = obj(PODS[i]);
		sf_obj *kept = sf_obj_project(sf_obj_ref(whole), SF_AWCTL_POD_FIELDS);
		cr_assert_lt(kept->len, whole->len, "pod %zu: %u of %u bytes kept", i, kept->len,
		             whole->len);
		cr_assert_str_eq(kept->ns, whole->ns);
		cr_assert_str_eq(kept->name, whole->name);
		cr_assert_str_eq(kept->uid, whole->uid);
		cr_assert_str_eq(kept->rv, whole->rv);
		sf_awp_pods a = {0}, b = {0};
		sf_awp_pods_add(&a, sf_obj_root(whole), &s);
		sf_awp_pods_add(&b, sf_obj_root(kept), &s);
		cr_assert_eq(memcmp(&a, &b, sizeof(a)), 0, "pod %zu summarised differently: %s", i,
		             kept->json);
		cr_assert_eq(sf_awn_pod_affected(sf_obj_root(whole), &h),
		             sf_awn_pod_affected(sf_obj_root(kept), &h), "pod %zu", i);
		cr_assert(same_labels(whole, kept), "pod %zu: %s", i, kept->json);
		same_ownership(whole, kept, "u-job", "u-cm", 1);
		/* which component it is reads the same: by its own name (a Pod
		 * component), by its controller's (the Job) */
		static const char *const css[] = {
		    "[{\"name\":\"aw-job-x7\",\"kind\":\"Pod\",\"apiVersion\":\"v1\"}]",
		    "[{\"name\":\"aw-job\",\"kind\":\"Job\",\"apiVersion\":\"batch/v1\"}]",
		};
		for (size_t k = 0; k < 2; k++) {
			sf_jv comps = sf_jv_root(css[k], strlen(css[k]));
			cr_assert_eq(sf_awp_pod_component(sf_obj_root(whole), comps), 0, "pod %zu",
			             i);
			cr_assert_eq(sf_awp_pod_component(sf_obj_root(kept), comps), 0,
			             "pod %zu: %s", i, kept->json);
		}
		const char *same[] = {"spec.nodeName", "metadata.deletionTimestamp"};
		for (size_t j = 0; j < sizeof(same) / sizeof(same[0]); j++) {
			sf_jv x = sf_jv_path(sf_obj_root(whole), same[j]);
			sf_jv y = sf_jv_path(sf_obj_root(kept), same[j]);
			cr_assert(x.n == y.n && (!x.n || memcmp(x.p, y.p, x.n) == 0), "pod %zu: %s",
			          i, same[j]);
		}
		sf_obj_unref(whole);
		sf_obj_unref(kept);
	}
}

Test(awcache, a_component_as_cached_keeps_ownership_deletion_and_conditions)
{
	static const char job[] =
	    "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"aw-job\","
	    "\"namespace\":\"team\",\"uid\":\"u-job\",\"resourceVersion\":\"70\",\"generation\":1,"
	    "\"labels\":{\"workload.codeflare.dev/"
	    "appwrapper\":\"aw\",\"app\":\"x\"},\"annotations\":{"
	    "\"a\":\"b\"},"
	    "\"deletionTimestamp\":\"2026-12-01T10:05:00Z\",\"ownerReferences\":[{\"apiVersion\":"
	    "\"workload.codeflare.dev/v1beta2\",\"kind\":\"AppWrapper\",\"name\":\"aw\",\"uid\":"
	    "\"u-aw\",\"controller\":true,\"blockOwnerDeletion\":true}]},\"spec\":{\"completions\":"
	    "4,"
	    "\"parallelism\":2,\"template\":{\"spec\":{\"containers\":[{\"name\":\"main\","
	    "\"image\":"
	    "\"busybox\"}]}}},\"status\":{\"succeeded\":4,\"startTime\":\"2026-12-01T10:00:00Z\","
	    "\"conditions\":[{\"type\":\"SuccessCriteriaMet\",\"status\":\"True\"},{\"type\":"
	    "\"Complete\",\"status\":\"True\"}]}}";
	sf_obj *whole = obj(job);
	sf_obj *kept = sf_obj_project(sf_obj_ref(whole), SF_AWCTL_COMPONENT_FIELDS);
	cr_assert_lt(kept->len, whole->len, "%s", kept->json);
	cr_assert_null(strstr(kept->json, "\"spec\""), "%s", kept->json);
	same_ownership(whole, kept, "u-aw", "u-other", 0);
	cr_assert_str_eq(kept->uid, "u-job");
	cr_assert(same_labels(whole, kept), "%s", kept->json);
	const char *same[] = {"status.conditions", "metadata.deletionTimestamp"};
	for (size_t j = 0; j < sizeof(same) / sizeof(same[0]); j++) {
		sf_jv x = sf_jv_path(sf_obj_root(whole), same[j]);
		sf_jv y = sf_jv_path(sf_obj_root(kept), same[j]);
		cr_assert(x.n && x.n == y.n && memcmp(x.p, y.p, x.n) == 0, "%s", same[j]);
	}
	sf_obj_unref(whole);
	sf_obj_unref(kept);
}

/* The pod and component caches do not strip managedFields before they
 * project (it would copy every object once more): the projections must
 * drop it themselves. */
Test(awcache, projections_drop_managed_fields)
{
	static const char pod[] =
	    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":"
	    "\"team\",\"uid\":\"u-p\",\"resourceVersion\":\"9\",\"labels\":{"
	    "\"workload.codeflare.dev/appwrapper\":\"aw\"},\"managedFields\":[{\"manager\":"
	    "\"kube-controller-manager\",\"operation\":\"Update\",\"fieldsType\":\"FieldsV1\","
	    "\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{}}}}]},\"status\":{\"phase\":"
	    "\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\"}]}}";
	const char *const *fields[] = {SF_AWCTL_POD_FIELDS, SF_AWCTL_COMPONENT_FIELDS};
	for (size_t i = 0; i < 2; i++) {
		sf_obj *kept = sf_obj_project(obj(pod), fields[i]);
		cr_assert_null(strstr(kept->json, "managedFields"), "%s", kept->json);
		cr_assert_null(strstr(kept->json, "fieldsV1"), "%s", kept->json);
		cr_assert_str_eq(kept->uid, "u-p");
		sf_obj_unref(kept);
	}
}

/* ---- AppWrappers ---- */

#define AW_META(extra)                                                                             \
	"{\"apiVersion\":\"workload.codeflare.dev/"                                                \
	"v1beta2\",\"kind\":\"AppWrapper\",\"metadata\":{"                                         \
	"\"name\":\"aw\",\"namespace\":\"team\",\"uid\":\"u-aw\",\"resourceVersion\":\"41\","      \
	"\"generation\":3,\"creationTimestamp\":\"2026-12-01T09:59:00Z\",\"labels\":{"             \
	"\"workload.codeflare.dev/user\":\"alice\",\"kueue.x-k8s.io/queue-name\":\"q\"},"          \
	"\"annotations\":{\"workload.codeflare.dev.appwrapper/"                                    \
	"warmupGracePeriodDuration\":\"2h\"},"                                                     \
	"\"managedFields\":[{\"manager\":\"kubectl\",\"operation\":\"Update\",\"fieldsType\":"     \
	"\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{}}}]" extra "}"

#define AW_SPEC(suspend)                                                                           \
	",\"spec\":{\"suspend\":" suspend ",\"components\":[{\"template\":{\"apiVersion\":"        \
	"\"batch/"                                                                                 \
	"v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"aw-job\"},\"spec\":{\"template\":{"        \
	"\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\",\"image\":"      \
	"\"busybox\",\"resources\":{\"requests\":{\"cpu\":\"10m\"}}}]}}}}}]}"

#define AW_COND(type, status, reason)                                                              \
	"{\"type\":\"" type "\",\"status\":\"" status "\",\"reason\":\"" reason "\",\"message\":"  \
	"\"Suspend is false\",\"lastTransitionTime\":\"2026-12-01T10:00:00Z\"}"

#define AW_STATUS(phase, conds, comp_conds)                                                        \
	",\"status\":{\"phase\":\"" phase "\",\"conditions\":[" conds "],\"componentStatus\":[{"   \
	"\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"aw-job\",\"podSets\":[{"          \
	"\"path\":\"template.spec.template\",\"replicas\":1}],\"conditions\":[" comp_conds "]}]}}"

#define FIN_META ",\"finalizers\":[\"workload.codeflare.dev/finalizer\"]"
#define ADMITTED                                                                                   \
	AW_COND("QuotaReserved", "True", "Resuming")                                               \
	"," AW_COND("ResourcesDeployed", "True", "Resuming")

/* One AppWrapper in each phase the controller steps it through: new (no
 * finalizer), finalized without status, Suspended and admitted, Resuming
 * (its component not created yet), Running, and being deleted. */
static const char *const AWS[] = {
    AW_META("") AW_SPEC("true") "}",
    AW_META(FIN_META) AW_SPEC("true") "}",
    AW_META(FIN_META) AW_SPEC("false") AW_STATUS("Suspended", "", ""),
    AW_META(FIN_META) AW_SPEC("false") AW_STATUS("Resuming", ADMITTED, ""),
    AW_META(FIN_META) AW_SPEC("false") AW_STATUS(
        "Running", ADMITTED, AW_COND("ResourcesDeployed", "True", "ComponentCreatedSuccessfully")),
    AW_META(FIN_META ",\"deletionTimestamp\":\"2026-12-01T10:10:00Z\"") AW_SPEC("false") AW_STATUS(
        "Running", ADMITTED, AW_COND("ResourcesDeployed", "True", "ComponentCreatedSuccessfully")),
};

static void same_plan(const sf_awp_plan *a, const sf_awp_plan *b, size_t i)
{
	cr_assert_eq(a->from, b->from, "AppWrapper %zu", i);
	cr_assert_eq(a->to, b->to, "AppWrapper %zu", i);
	cr_assert(sf_jd_equal(a->status, b->status), "AppWrapper %zu: another status", i);
	cr_assert(sf_jd_equal(a->meta_patch, b->meta_patch), "AppWrapper %zu: another patch", i);
	cr_assert_eq(a->nacts, b->nacts, "AppWrapper %zu", i);
	if (a->nacts)
		cr_assert_eq(memcmp(a->acts, b->acts, a->nacts * sizeof(*a->acts)), 0, "%zu", i);
	cr_assert_eq(a->nevents, b->nevents, "AppWrapper %zu", i);
	cr_assert_eq(memcmp(a->events, b->events, a->nevents * sizeof(a->events[0])), 0, "%zu", i);
	cr_assert_eq(a->requeue_ms, b->requeue_ms, "AppWrapper %zu", i);
	cr_assert_str_eq(a->why ? a->why : "", b->why ? b->why : "", "AppWrapper %zu", i);
}

static void step(const sf_obj *aw, const sf_aw_config *c, sf_awp_plan *plan)
{
	sf_aw_settings s;
	sf_aw_settings_resolve(c, sf_jv_path(sf_obj_root(aw), "metadata.annotations"), &s);
	sf_awp_comp comp[1];
	memset(comp, 0, sizeof(comp));
	sf_awp_pods pods = {0};
	sf_awp_input in = {
	    .aw = sf_obj_root(aw),
	    .cfg = c,
	    .s = &s,
	    .now_ms = 1800000000000LL,
	    .comp = comp,
	    .ncomp = 1,
	    .pods = &pods,
	    .expected_pods = 1,
	};
	char err[256];
	memset(plan, 0, sizeof(*plan));
	cr_assert_eq(sf_awp_step(&in, plan, err, sizeof(err)), 0, "%s", err);
}

Test(awcache, an_appwrapper_as_cached_steps_and_builds_as_the_whole_one)
{
	sf_aw_config c;
	sf_awcfg_defaults(&c);
	for (size_t i = 0; i < sizeof(AWS) / sizeof(AWS[0]); i++) {
		sf_obj *whole = obj(AWS[i]);
		sf_obj *kept = sf_obj_omit(sf_obj_ref(whole), SF_AWCTL_AW_OMIT);
		cr_assert_lt(kept->len, whole->len, "AppWrapper %zu: %s", i, kept->json);
		for (const char *const *f = SF_AWCTL_AW_OMIT; *f; f++)
			cr_assert_not(sf_jv_ok(sf_jv_path(sf_obj_root(kept), *f)), "%s kept: %s",
			              *f, kept->json);
		cr_assert_str_eq(sf_obj_key(kept), sf_obj_key(whole));
		cr_assert_str_eq(kept->uid, whole->uid);
		cr_assert_str_eq(kept->rv, whole->rv);
		/* what is kept is kept as it was */
		const char *same[] = {"spec",
		                      "status",
		                      "metadata.labels",
		                      "metadata.annotations",
		                      "metadata.finalizers",
		                      "metadata.deletionTimestamp"};
		for (size_t j = 0; j < sizeof(same) / sizeof(same[0]); j++) {
			sf_jv x = sf_jv_path(sf_obj_root(whole), same[j]);
			sf_jv y = sf_jv_path(sf_obj_root(kept), same[j]);
			cr_assert(x.n == y.n && (!x.n || memcmp(x.p, y.p, x.n) == 0),
			          "AppWrapper %zu: %s", i, same[j]);
		}
		sf_awp_plan a, b;
		step(whole, &c, &a);
		step(kept, &c, &b);
		same_plan(&a, &b, i);
		sf_awp_plan_free(&a);
		sf_awp_plan_free(&b);

		sf_awc_build_opts bo = {.scheduler_name = "sched", .autopilot = &c.autopilot};
		sf_jd *x = NULL, *y = NULL;
		int fx = 0, fy = 0;
		char err[256];
		cr_assert_eq(sf_awc_build(sf_obj_root(whole), 0, &bo, &x, &fx, err, sizeof(err)), 0,
		             "%s", err);
		cr_assert_eq(sf_awc_build(sf_obj_root(kept), 0, &bo, &y, &fy, err, sizeof(err)), 0,
		             "%s", err);
		cr_assert(sf_jd_equal(x, y), "AppWrapper %zu: another component", i);
		sf_jd_free(x);
		sf_jd_free(y);
		int64_t px = 0, py = 0;
		cr_assert_eq(sf_awc_expected_pods(sf_obj_root(whole), &px, err, sizeof(err)), 0);
		cr_assert_eq(sf_awc_expected_pods(sf_obj_root(kept), &py, err, sizeof(err)), 0);
		cr_assert_eq(px, py);
		sf_obj_unref(whole);
		sf_obj_unref(kept);
	}
}
