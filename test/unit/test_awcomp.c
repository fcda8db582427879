/*
 * test_awcomp.c - pod-set inference and component building (awcomp.h):
 * every kind upstream infers, declared and status pod sets, the expected
 * pod count, and the object createComponent would send - namespace,
 * labels, podSetInfo injection and its conflicts, scheduler name, owner
 * reference - plus controller-owner detection.
 *
 * JSON is written with single quotes and turned into double quotes before
 * parsing, to keep the fixtures readable.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "steadfast/awapi.h"
#include "steadfast/awcomp.h"
#include "steadfast/buf.h"
#include "steadfast/jdoc.h"
#include "steadfast/json.h"

#define POOL 64
static sf_buf pool[POOL];
static int npool;

static void fini(void)
{
	for (int i = 0; i < npool; i++)
		sf_buf_free(&pool[i]);
	npool = 0;
}

TestSuite(awcomp, .fini = fini);

static sf_buf *pool_buf(void)
{
	cr_assert_lt(npool, POOL);
	sf_buf *b = &pool[npool++];
	sf_buf_init(b, 0);
	return b;
}

/* Minified view of text with ' as ". Lives until the end of the test. */
static sf_jv J(const char *text)
{
	char *t = strdup(text);
	cr_assert_not_null(t);
	for (char *p = t; *p; p++)
		if (*p == '\'')
			*p = '"';
	sf_buf *b = pool_buf();
	char err[256];
	int rc = sf_json_minify(t, strlen(t), b, err, sizeof(err));
	free(t);
	cr_assert_eq(rc, 0, "fixture is not JSON: %s", err);
	return sf_jv_root(b->data, b->len);
}

/* Minified text of a fixture, to compare built values with. */
static const char *M(const char *text)
{
	sf_jv v = J(text);
	return v.p; /* NUL-terminated: the buffer holds exactly this value */
}

static int jv_is(sf_jv v, const char *minified)
{
	return v.p && v.n == strlen(minified) && memcmp(v.p, minified, v.n) == 0;
}

static int jv_str_is(sf_jv v, const char *s)
{
	return sf_jv_streq(v, s);
}

#define AW_HEAD                                                                                    \
	"{'apiVersion':'" SF_AW_API_VERSION "','kind':'AppWrapper',"                               \
	"'metadata':{'name':'aw1','namespace':'ns1','uid':'uid-1'},'spec':{'components':["
#define AW(comps) J(AW_HEAD comps "]}}")
#define AW_STATUS(comps, status) J(AW_HEAD comps "]},'status':" status "}")

#define POD(extra)                                                                                 \
	"{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p1'" extra                            \
	"},'spec':{'containers':[{'name':'c','image':'busybox'}]}}"
#define PODSPEC "{'containers':[{'name':'c','image':'busybox'}]}"
#define JOB(spec)                                                                                  \
	"{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j1'},'spec':{" spec             \
	"'template':{'spec':" PODSPEC "}}}"

static size_t infer(const char *tmpl, sf_awc_podset *ps, size_t cap)
{
	size_t n = 99;
	char err[256] = "";
	int rc = sf_awc_infer_podsets(J(tmpl), ps, cap, &n, err, sizeof(err));
	cr_assert_eq(rc, 0, "infer: %d %s", rc, err);
	return n;
}

static int infer_err(const char *tmpl, char *err, size_t errlen)
{
	sf_awc_podset ps[4];
	size_t n;
	return sf_awc_infer_podsets(J(tmpl), ps, 4, &n, err, errlen);
}

static const char *annot(const sf_awc_podset *ps, const char *key)
{
	for (size_t i = 0; i < ps->nannots; i++)
		if (strcmp(ps->annots[i].key, key) == 0)
			return ps->annots[i].value;
	return NULL;
}

/* Builds component idx and returns the result as a view. */
static sf_jv build_ok(sf_jv aw, size_t idx, const char *sched)
{
	sf_jd *out = (sf_jd *)1;
	int fatal = -1;
	char err[512] = "";
	sf_awc_build_opts bo = {.scheduler_name = sched};
	int rc = sf_awc_build(aw, idx, &bo, &out, &fatal, err, sizeof(err));
	cr_assert_eq(rc, 0, "build: %d %s", rc, err);
	cr_assert_eq(fatal, 0);
	cr_assert_not_null(out);
	char *text = sf_jd_dump(out);
	sf_jd_free(out);
	cr_assert_not_null(text);
	sf_buf *b = pool_buf();
	cr_assert_eq(sf_buf_puts(b, text), 0);
	free(text);
	return sf_jv_root(b->data, b->len);
}

/* Builds component idx expecting a fatal -EINVAL; returns the message. */
static const char *build_fatal(sf_jv aw, size_t idx, const char *sched)
{
	static char err[512];
	sf_jd *out = (sf_jd *)1;
	int fatal = -1;
	err[0] = '\0';
	sf_awc_build_opts bo = {.scheduler_name = sched};
	int rc = sf_awc_build(aw, idx, &bo, &out, &fatal, err, sizeof(err));
	cr_assert_eq(rc, -EINVAL, "build rc %d (%s)", rc, err);
	cr_assert_eq(fatal, 1);
	cr_assert_null(out);
	return err;
}

/* ---- inference ---- */

Test(awcomp, infer_pod)
{
	sf_awc_podset ps[2];
	cr_assert_eq(infer(POD(""), ps, 2), 1);
	cr_assert_str_eq(ps[0].path, "template");
	cr_assert_eq(ps[0].replicas, 1);
	cr_assert_eq(ps[0].nannots, 0);
	cr_assert_not(sf_jv_ok(ps[0].annotations));
}

Test(awcomp, infer_pod_without_spec_is_an_error)
{
	char err[256];
	int rc =
	    infer_err("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'}}", err, sizeof(err));
	cr_assert_eq(rc, -EINVAL);
	cr_assert(strstr(err, "template does not refer to a v1.PodSpecTemplate"), "%s", err);
	cr_assert(strstr(err, "does not contain a spec"), "%s", err);
}

Test(awcomp, infer_job_defaults_and_limits)
{
	sf_awc_podset ps[2];
	cr_assert_eq(infer(JOB(""), ps, 2), 1);
	cr_assert_str_eq(ps[0].path, "template.spec.template");
	cr_assert_eq(ps[0].replicas, 1);
	cr_assert_str_eq(annot(&ps[0], SF_AW_TAS_POD_INDEX_LABEL),
	                 "batch.kubernetes.io/job-completion-index");

	infer(JOB("'parallelism':3,"), ps, 2);
	cr_assert_eq(ps[0].replicas, 3);
	infer(JOB("'parallelism':4,'completions':2,"), ps, 2);
	cr_assert_eq(ps[0].replicas, 2);
	infer(JOB("'parallelism':2,'completions':5,"), ps, 2);
	cr_assert_eq(ps[0].replicas, 2);
	infer(JOB("'completions':0,"), ps, 2);
	cr_assert_eq(ps[0].replicas, 0);
	/* not an int: ignored, as upstream's GetReplicas error */
	infer(JOB("'parallelism':'3',"), ps, 2);
	cr_assert_eq(ps[0].replicas, 1);
	infer(JOB("'parallelism':null,"), ps, 2);
	cr_assert_eq(ps[0].replicas, 1);
	infer(JOB("'parallelism':2.0,"), ps, 2);
	cr_assert_eq(ps[0].replicas, 1);
}

Test(awcomp, infer_job_without_pod_template_is_an_error)
{
	char err[256];
	int rc =
	    infer_err("{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j'},'spec':{}}",
	              err, sizeof(err));
	cr_assert_eq(rc, -EINVAL);
	cr_assert(strstr(err, "template.spec.template does not refer to a v1.PodSpecTemplate"),
	          "%s", err);
	cr_assert(strstr(err, "missing field 'template'"), "%s", err);
}

Test(awcomp, infer_deployment_and_statefulset)
{
	sf_awc_podset ps[2];
	const char *d = "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'d'},"
	                "'spec':{'template':{'spec':" PODSPEC "}}}";
	cr_assert_eq(infer(d, ps, 2), 1);
	cr_assert_str_eq(ps[0].path, "template.spec.template");
	cr_assert_eq(ps[0].replicas, 1);
	cr_assert_eq(ps[0].nannots, 0);

	const char *s = "{'apiVersion':'apps/v1','kind':'StatefulSet','metadata':{'name':'s'},"
	                "'spec':{'replicas':5,'template':{'spec':" PODSPEC "}}}";
	cr_assert_eq(infer(s, ps, 2), 1);
	cr_assert_eq(ps[0].replicas, 5);

	/* no pod template: nothing inferred, no error */
	cr_assert_eq(infer("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'d'},"
	                   "'spec':{'replicas':2}}",
	                   ps, 2),
	             0);

	char err[256];
	int rc = infer_err("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'d'},"
	                   "'spec':{'replicas':'2','template':{'spec':" PODSPEC "}}}",
	                   err, sizeof(err));
	cr_assert_eq(rc, -EINVAL);
	cr_assert(strstr(err, "at path position 'template.spec.replicas' non-int value"), "%s",
	          err);
	/* an apps/v1beta1 Deployment is not a known kind */
	cr_assert_eq(infer("{'apiVersion':'apps/v1beta1','kind':'Deployment','metadata':{'name':"
	                   "'d'},'spec':{'template':{'spec':" PODSPEC "}}}",
	                   ps, 2),
	             0);
}

#define JOBSET                                                                                     \
	"{'apiVersion':'jobset.x-k8s.io/v1alpha2','kind':'JobSet','metadata':{'name':'js'},"       \
	"'spec':{'replicatedJobs':["                                                               \
	"{'name':'workers','replicas':2,'template':{'spec':{'parallelism':2,'completions':2,"      \
	"'template':{'spec':" PODSPEC "}}}},"                                                      \
	"{'name':'notemplate','replicas':9},"                                                      \
	"{'name':'driver','template':{'spec':{'parallelism':3,'completions':1,"                    \
	"'template':{'spec':" PODSPEC "}}}}]}}"

Test(awcomp, infer_jobset)
{
	sf_awc_podset ps[4];
	cr_assert_eq(infer(JOBSET, ps, 4), 2);
	cr_assert_str_eq(ps[0].path, "template.spec.replicatedJobs[0].template.spec.template");
	cr_assert_eq(ps[0].replicas, 4);
	cr_assert_eq(ps[0].nannots, 3);
	cr_assert_str_eq(annot(&ps[0], SF_AW_TAS_POD_INDEX_LABEL),
	                 "batch.kubernetes.io/job-completion-index");
	cr_assert_str_eq(annot(&ps[0], SF_AW_TAS_SUB_GROUP_INDEX_LABEL),
	                 "jobset.sigs.k8s.io/job-index");
	cr_assert_str_eq(annot(&ps[0], SF_AW_TAS_SUB_GROUP_COUNT), "2");
	/* the replicated job without a template is skipped, indexes are kept */
	cr_assert_str_eq(ps[1].path, "template.spec.replicatedJobs[2].template.spec.template");
	cr_assert_eq(ps[1].replicas, 1); /* 1 replica x min(3, 1) */
	cr_assert_str_eq(annot(&ps[1], SF_AW_TAS_SUB_GROUP_COUNT), "1");
}

Test(awcomp, infer_jobset_overflow_and_capacity)
{
	char err[256];
	int rc = infer_err("{'apiVersion':'jobset.x-k8s.io/v1alpha2','kind':'JobSet','metadata':{"
	                   "'name':'js'},'spec':{'replicatedJobs':[{'replicas':100000,'template':"
	                   "{'spec':{'parallelism':100000,'template':{'spec':" PODSPEC "}}}}]}}",
	                   err, sizeof(err));
	cr_assert_eq(rc, -EINVAL);
	cr_assert(strstr(err, "overflow"), "%s", err);

	sf_awc_podset ps[1];
	size_t n = 0;
	rc = sf_awc_infer_podsets(J(JOBSET), ps, 1, &n, err, sizeof(err));
	cr_assert_eq(rc, -ENOSPC);
	cr_assert_eq(n, 2);
}

Test(awcomp, infer_pytorchjob)
{
	sf_awc_podset ps[3];
	const char *pj = "{'apiVersion':'kubeflow.org/v1','kind':'PyTorchJob','metadata':{'name':"
	                 "'pt'},'spec':{'pytorchReplicaSpecs':{"
	                 "'Worker':{'replicas':2,'template':{'spec':" PODSPEC "}},"
	                 "'Master':{'replicas':1,'template':{'spec':" PODSPEC "}}}}}";
	cr_assert_eq(infer(pj, ps, 3), 2);
	/* Master first whatever the member order */
	cr_assert_str_eq(ps[0].path, "template.spec.pytorchReplicaSpecs.Master.template");
	cr_assert_eq(ps[0].replicas, 1);
	cr_assert_str_eq(ps[1].path, "template.spec.pytorchReplicaSpecs.Worker.template");
	cr_assert_eq(ps[1].replicas, 2);
	cr_assert_str_eq(annot(&ps[1], SF_AW_TAS_POD_INDEX_LABEL),
	                 "training.kubeflow.org/replica-index");

	const char *wo = "{'apiVersion':'kubeflow.org/v1','kind':'PyTorchJob','metadata':{'name':"
	                 "'pt'},'spec':{'pytorchReplicaSpecs':{"
	                 "'Worker':{'template':{'spec':" PODSPEC "}},'Other':{'replicas':4,"
	                 "'template':{'spec':" PODSPEC "}}}}}";
	cr_assert_eq(infer(wo, ps, 3), 1);
	cr_assert_str_eq(ps[0].path, "template.spec.pytorchReplicaSpecs.Worker.template");
	cr_assert_eq(ps[0].replicas, 1);
}

Test(awcomp, infer_raycluster_and_rayjob)
{
	sf_awc_podset ps[4];
	const char *rc = "{'apiVersion':'ray.io/v1','kind':'RayCluster','metadata':{'name':'r'},"
	                 "'spec':{'headGroupSpec':{'template':{'spec':" PODSPEC "}},"
	                 "'workerGroupSpecs':[{'replicas':3,'template':{'spec':" PODSPEC "}},"
	                 "{'groupName':'x'},{'template':{'spec':" PODSPEC "}}]}}";
	cr_assert_eq(infer(rc, ps, 4), 3);
	cr_assert_str_eq(ps[0].path, "template.spec.headGroupSpec.template");
	cr_assert_eq(ps[0].replicas, 1);
	cr_assert_str_eq(ps[1].path, "template.spec.workerGroupSpecs[0].template");
	cr_assert_eq(ps[1].replicas, 3);
	cr_assert_str_eq(ps[2].path, "template.spec.workerGroupSpecs[2].template");
	cr_assert_eq(ps[2].replicas, 1);

	const char *rj =
	    "{'apiVersion':'ray.io/v1','kind':'RayJob','metadata':{'name':'r'},"
	    "'spec':{'rayClusterSpec':{'headGroupSpec':{'template':{'spec':" PODSPEC
	    "}},'workerGroupSpecs':[{'replicas':2,'template':{'spec':" PODSPEC "}}]}}}";
	cr_assert_eq(infer(rj, ps, 4), 2);
	cr_assert_str_eq(ps[0].path, "template.spec.rayClusterSpec.headGroupSpec.template");
	cr_assert_str_eq(ps[1].path, "template.spec.rayClusterSpec.workerGroupSpecs[0].template");
	cr_assert_eq(ps[1].replicas, 2);

	/* the head pod set is always there, so a cluster without one fails */
	char err[256];
	int r = infer_err("{'apiVersion':'ray.io/v1','kind':'RayCluster','metadata':{'name':'r'},"
	                  "'spec':{}}",
	                  err, sizeof(err));
	cr_assert_eq(r, -EINVAL);
	cr_assert(strstr(err, "template.spec.headGroupSpec.template does not refer"), "%s", err);
}

Test(awcomp, infer_unknown_kinds_and_leaderworkerset_give_nothing)
{
	sf_awc_podset ps[2];
	cr_assert_eq(infer("{'apiVersion':'leaderworkerset.x-k8s.io/v1','kind':'LeaderWorkerSet',"
	                   "'metadata':{'name':'l'},'spec':{'replicas':2,'leaderWorkerTemplate':{"
	                   "'size':3,'workerTemplate':{'spec':" PODSPEC "}}}}",
	                   ps, 2),
	             0);
	cr_assert_eq(infer("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c'}}", ps, 2),
	             0);
	cr_assert_eq(infer("{'kind':'Pod','spec':{}}", ps, 2), 0); /* no apiVersion */

	char err[256];
	cr_assert_eq(infer_err("[1]", err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "not an object"), "%s", err);
}

Test(awcomp, declared_podsets_win)
{
	sf_awc_podset ps[4];
	size_t n = 0;
	char err[256];
	sf_jv comp = J("{'podSets':[{'path':'template.spec.template','replicas':7,"
	               "'annotations':{'k':'v'}},{'path':'template.x'}],'template':" JOB(
	                   "'parallelism':3,") "}");
	cr_assert_eq(sf_awc_podsets(comp, ps, 4, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 2);
	cr_assert_eq(ps[0].replicas, 7);
	cr_assert(jv_is(ps[0].annotations, "{\"k\":\"v\"}"));
	cr_assert_eq(ps[0].nannots, 0);
	cr_assert_str_eq(ps[1].path, "template.x");
	cr_assert_eq(ps[1].replicas, 1);

	/* an empty list is "not declared": inferred */
	comp = J("{'podSets':[],'template':" JOB("'parallelism':3,") "}");
	cr_assert_eq(sf_awc_podsets(comp, ps, 4, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 1);
	cr_assert_eq(ps[0].replicas, 3);

	comp = J("{'podSets':[{'replicas':2}],'template':" JOB("") "}");
	cr_assert_eq(sf_awc_podsets(comp, ps, 4, &n, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "podSets[0] has no path"), "%s", err);
}

Test(awcomp, expected_pods)
{
	int64_t n = -1;
	char err[256];
	sf_jv aw;
	aw = AW("{'template':" JOB("'parallelism':3,") "},{'template':" POD(
	    "") "},"
	        "{'template':{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'d'},"
	        "'spec':{'replicas':2,'template':{'spec':" PODSPEC "}}}},"
	        "{'template':{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c'}}},"
	        "{'podSets':[{'path':'template','replicas':5},{'path':'template.spec'}],"
	        "'template':{'apiVersion':'x/v1','kind':'X','metadata':{'name':'x'}}}");
	cr_assert_eq(sf_awc_expected_pods(aw, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 3 + 1 + 2 + 0 + 6);

	/* once the status has one entry per component, its pod sets count */
	aw = AW_STATUS("{'template':" JOB("'parallelism':3,") "},{'template':" POD("") "}",
	               "{'componentStatus':[{'podSets':[{'path':'template.spec.template',"
	               "'replicas':10}]},{'podSets':[{'path':'template'}]}]}");
	cr_assert_eq(sf_awc_expected_pods(aw, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 11);
	/* ... and not while it is partial */
	aw = AW_STATUS("{'template':" JOB("'parallelism':3,") "},{'template':" POD("") "}",
	               "{'componentStatus':[{'podSets':[{'path':'template','replicas':10}]}]}");
	cr_assert_eq(sf_awc_expected_pods(aw, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 4);

	/* one component's alone */
	static const int64_t each[] = {3, 1, 2, 0, 6};
	aw = AW("{'template':" JOB("'parallelism':3,") "},{'template':" POD(
	    "") "},"
	        "{'template':{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'d'},"
	        "'spec':{'replicas':2,'template':{'spec':" PODSPEC "}}}},"
	        "{'template':{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c'}}},"
	        "{'podSets':[{'path':'template','replicas':5},{'path':'template.spec'}],"
	        "'template':{'apiVersion':'x/v1','kind':'X','metadata':{'name':'x'}}}");
	for (size_t i = 0; i < 5; i++) {
		cr_assert_eq(sf_awc_component_expected_pods(aw, i, &n, err, sizeof(err)), 0, "%s",
		             err);
		cr_assert_eq(n, each[i], "component %zu", i);
	}
	cr_assert_eq(sf_awc_component_expected_pods(aw, 5, &n, err, sizeof(err)), -EINVAL);

	aw = AW("{'template':{'apiVersion':'v1','kind':'Pod','metadata':{'name':'bad'}}}");
	cr_assert_eq(sf_awc_expected_pods(aw, &n, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "component 0 (Pod bad)"), "%s", err);
}

/* Kinds whose pods run until the object is deleted, by group and kind
 * (any version); the rest may complete, or say nothing. */
Test(awcomp, kinds_that_never_complete)
{
	static const char *never[][2] = {
	    {"apps/v1", "Deployment"},       {"apps/v1", "StatefulSet"},
	    {"apps/v1", "ReplicaSet"},       {"apps/v1", "DaemonSet"},
	    {"v1", "ReplicationController"}, {"leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"},
	    {"ray.io/v1", "RayCluster"},     {"ray.io/v1alpha1", "RayCluster"},
	};
	static const char *may[][2] = {
	    {"batch/v1", "Job"},
	    {"v1", "Pod"},
	    {"jobset.x-k8s.io/v1alpha2", "JobSet"},
	    {"kubeflow.org/v1", "PyTorchJob"},
	    {"ray.io/v1", "RayJob"},
	    {"v1", "ConfigMap"},
	    {"example.com/v1", "Deployment"},
	    {"apps/v1", "Pod"},
	    {"v1", "Deployment"},
	};
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		cr_assert(sf_awc_kind_never_completes(never[i][0], never[i][1]), "%s %s",
		          never[i][0], never[i][1]);
	for (size_t i = 0; i < sizeof(may) / sizeof(may[0]); i++)
		cr_assert_not(sf_awc_kind_never_completes(may[i][0], may[i][1]), "%s %s", may[i][0],
		              may[i][1]);
	cr_assert_not(sf_awc_kind_never_completes(NULL, "Deployment"));
}

Test(awcomp, component_podsets_prefers_status)
{
	sf_awc_podset ps[2];
	size_t n = 0;
	char err[256];
	sf_jv aw = AW_STATUS("{'template':" JOB("'parallelism':3,") "}",
	                     "{'componentStatus':[{'podSets':[{'path':'template.spec.template',"
	                     "'replicas':2,'annotations':{'a':'b'}}]}]}");
	cr_assert_eq(sf_awc_component_podsets(aw, 0, ps, 2, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 1);
	cr_assert_eq(ps[0].replicas, 2);
	cr_assert(jv_is(ps[0].annotations, "{\"a\":\"b\"}"));
	cr_assert_eq(sf_awc_component_podsets(aw, 1, ps, 2, &n, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "no such component"), "%s", err);
}

Test(awcomp, podset_to_jd)
{
	sf_awc_podset ps[4];
	infer(JOBSET, ps, 4);
	sf_jd *d = sf_awc_podset_to_jd(&ps[0]);
	cr_assert_not_null(d);
	char *t = sf_jd_dump(d);
	sf_jd_free(d);
	cr_assert_str_eq(t, M("{'replicas':4,'path':'template.spec.replicatedJobs[0].template.spec."
	                      "template','annotations':{"
	                      "'" SF_AW_TAS_POD_INDEX_LABEL "':"
	                      "'batch.kubernetes.io/job-completion-index',"
	                      "'" SF_AW_TAS_SUB_GROUP_INDEX_LABEL "':"
	                      "'jobset.sigs.k8s.io/job-index',"
	                      "'" SF_AW_TAS_SUB_GROUP_COUNT "':'2'}}"));
	free(t);

	sf_jv comp =
	    J("{'podSets':[{'path':'template','annotations':{'x':'y'}}],'template':" POD("") "}");
	size_t n;
	char err[128];
	cr_assert_eq(sf_awc_podsets(comp, ps, 4, &n, err, sizeof(err)), 0);
	d = sf_awc_podset_to_jd(&ps[0]);
	t = sf_jd_dump(d);
	sf_jd_free(d);
	cr_assert_str_eq(t, M("{'replicas':1,'path':'template','annotations':{'x':'y'}}"));
	free(t);
}

/* ---- building ---- */

static const char *OWNER_REF = "[{\"apiVersion\":\"" SF_AW_API_VERSION "\","
                               "\"kind\":\"AppWrapper\",\"name\":\"aw1\",\"uid\":\"uid-1\","
                               "\"controller\":true,\"blockOwnerDeletion\":true}]";

Test(awcomp, build_minimal_pod)
{
	sf_jv o = build_ok(AW("{'template':" POD("") "}"), 0, NULL);
	cr_assert(jv_str_is(sf_jv_get(o, "apiVersion"), "v1"));
	cr_assert(jv_str_is(sf_jv_get(o, "kind"), "Pod"));
	cr_assert(jv_str_is(sf_jv_path(o, "metadata.name"), "p1"));
	cr_assert(jv_str_is(sf_jv_path(o, "metadata.namespace"), "ns1"));
	cr_assert(jv_is(sf_jv_path(o, "metadata.labels"), "{\"" SF_AW_LABEL "\":\"aw1\"}"));
	cr_assert(jv_is(sf_jv_path(o, "metadata.ownerReferences"), OWNER_REF));
	cr_assert(jv_is(sf_jv_get(o, "spec"), M(PODSPEC)), "%.*s", (int)o.n, o.p);
	cr_assert_not(sf_jv_ok(sf_jv_path(o, "spec.schedulerName")));
	cr_assert_not(sf_jv_ok(sf_jv_path(o, "metadata.annotations")));
}

Test(awcomp, build_complex_pod)
{
	sf_jv aw =
	    AW("{'podSetInfos':[{'labels':{'kueue.x-k8s.io/podset':'main'},'annotations':{"
	       "'ann2':'v2','a':'b'},'nodeSelector':{'pool':'p1','zone':'z1'},"
	       "'tolerations':[{'key':'k2','operator':'Exists','effect':'NoSchedule'}],"
	       "'schedulingGates':[{'name':'g1'},{'name':'kueue.x-k8s.io/topology'},"
	       "{'name':'kueue.x-k8s.io/topology'}]}],"
	       "'template':{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p1',"
	       "'labels':{'app':'x'},'annotations':{'a':'b'}},'spec':{'containers':[{'name':'c',"
	       "'image':'busybox'}],'nodeSelector':{'zone':'z1'},'tolerations':[{'key':'k1',"
	       "'operator':'Equal','value':'v','effect':'NoExecute'}],'schedulingGates':[{'name':"
	       "'g1'}],'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution'"
	       ":{'nodeSelectorTerms':[{'matchExpressions':[{'key':'gpu','operator':'Exists'}]}]}}}"
	       "}}}");
	sf_jv o = build_ok(aw, 0, NULL);
	sf_jv md = sf_jv_get(o, "metadata"), spec = sf_jv_get(o, "spec");
	cr_assert(jv_is(sf_jv_get(md, "labels"), M("{'app':'x','" SF_AW_LABEL "':'aw1',"
	                                           "'kueue.x-k8s.io/podset':'main'}")),
	          "%.*s", (int)o.n, o.p);
	cr_assert(jv_is(sf_jv_get(md, "annotations"), M("{'a':'b','ann2':'v2'}")));
	cr_assert(jv_is(sf_jv_get(spec, "nodeSelector"), M("{'zone':'z1','pool':'p1'}")));
	cr_assert(jv_is(sf_jv_get(spec, "tolerations"),
	                M("[{'key':'k1','operator':'Equal','value':'v','effect':'NoExecute'},"
	                  "{'key':'k2','operator':'Exists','effect':'NoSchedule'}]")));
	cr_assert(jv_is(sf_jv_get(spec, "schedulingGates"),
	                M("[{'name':'g1'},{'name':'kueue.x-k8s.io/topology'}]")));
	cr_assert(jv_is(sf_jv_get(spec, "affinity"),
	                M("{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{"
	                  "'nodeSelectorTerms':[{'matchExpressions':[{'key':'gpu','operator':"
	                  "'Exists'}]}]}}}")));
	cr_assert(jv_is(sf_jv_get(spec, "containers"), M("[{'name':'c','image':'busybox'}]")));
	cr_assert(jv_is(sf_jv_get(md, "ownerReferences"), OWNER_REF));
}

Test(awcomp, build_job_injects_into_pod_template)
{
	sf_jv aw = AW("{'podSetInfos':[{'nodeSelector':{'pool':'a'},'tolerations':[{'key':'t'}]}],"
	              "'template':" JOB("'parallelism':2,") "}");
	sf_jv o = build_ok(aw, 0, "");
	/* the object itself: label, namespace, owner; no pod fields at its top */
	cr_assert(jv_is(sf_jv_path(o, "metadata.labels"), "{\"" SF_AW_LABEL "\":\"aw1\"}"));
	cr_assert(jv_str_is(sf_jv_path(o, "metadata.namespace"), "ns1"));
	cr_assert(jv_is(sf_jv_path(o, "metadata.ownerReferences"), OWNER_REF));
	cr_assert_not(sf_jv_ok(sf_jv_path(o, "spec.nodeSelector")));
	/* the pod template: metadata created with the label, info injected */
	sf_jv pt = sf_jv_path(o, "spec.template");
	cr_assert(jv_is(sf_jv_path(pt, "metadata.labels"), "{\"" SF_AW_LABEL "\":\"aw1\"}"));
	cr_assert(jv_is(sf_jv_path(pt, "spec.nodeSelector"), "{\"pool\":\"a\"}"));
	cr_assert(jv_is(sf_jv_path(pt, "spec.tolerations"), "[{\"key\":\"t\"}]"));
	cr_assert_not(sf_jv_ok(sf_jv_path(pt, "spec.schedulerName")));
	cr_assert(jv_is(sf_jv_path(o, "spec.parallelism"), "2"));
}

Test(awcomp, build_jobset_injects_per_replicated_job)
{
	sf_jv aw = AW("{'podSetInfos':[{'labels':{'l':'0'}},{'labels':{'l':'1'},"
	              "'nodeSelector':{'n':'1'}}],'template':" JOBSET "}");
	sf_jv o = build_ok(aw, 0, "sched");
	sf_jv p0 = sf_jv_path(o, "spec.replicatedJobs[0].template.spec.template");
	sf_jv p2 = sf_jv_path(o, "spec.replicatedJobs[2].template.spec.template");
	cr_assert(jv_is(sf_jv_path(p0, "metadata.labels"), M("{'l':'0','" SF_AW_LABEL "':'aw1'}")),
	          "%.*s", (int)o.n, o.p);
	cr_assert(jv_is(sf_jv_path(p2, "metadata.labels"), M("{'l':'1','" SF_AW_LABEL "':'aw1'}")));
	cr_assert(jv_is(sf_jv_path(p2, "spec.nodeSelector"), "{\"n\":\"1\"}"));
	cr_assert_not(sf_jv_ok(sf_jv_path(p0, "spec.nodeSelector")));
	cr_assert(jv_str_is(sf_jv_path(p0, "spec.schedulerName"), "sched"));
	cr_assert(jv_str_is(sf_jv_path(p2, "spec.schedulerName"), "sched"));
	/* the replicated job without a template is left alone */
	cr_assert(jv_is(sf_jv_path(o, "spec.replicatedJobs[1]"),
	                M("{'name':'notemplate','replicas':9}")));
}

Test(awcomp, build_namespace)
{
	sf_jv o = build_ok(AW("{'template':" POD(",'namespace':'ns1'") "}"), 0, NULL);
	cr_assert(jv_str_is(sf_jv_path(o, "metadata.namespace"), "ns1"));
	o = build_ok(AW("{'template':" POD(",'namespace':''") "}"), 0, NULL);
	cr_assert(jv_str_is(sf_jv_path(o, "metadata.namespace"), "ns1"));

	const char *e = build_fatal(AW("{'template':" POD(",'namespace':'other'") "}"), 0, NULL);
	cr_assert(strstr(e, "component 0 (Pod p1): component namespace \"other\" is different "
	                    "from appwrapper namespace \"ns1\""),
	          "%s", e);
}

Test(awcomp, build_conflicts_are_fatal_and_name_the_key)
{
	const char *e = build_fatal(AW("{'podSetInfos':[{'labels':{'team':'b'}}],'template':" POD(
	                                ",'labels':{'team':'a'}") "}"),
	                            0, NULL);
	cr_assert(strstr(e, "component 0 (Pod p1): pod set 0: invalid admission check "
	                    "PodSetUpdate: conflict for labels: conflict for key=team, value1=a, "
	                    "value2=b"),
	          "%s", e);

	/* the conflict is checked against the pod template's labels, not the Job's */
	sf_jv o =
	    build_ok(AW("{'podSetInfos':[{'labels':{'team':'b'}}],'template':{'apiVersion':"
	                "'batch/v1','kind':'Job','metadata':{'name':'j1','labels':{'team':'a'}},"
	                "'spec':{'template':{'spec':" PODSPEC "}}}}"),
	             0, NULL);
	cr_assert(
	    jv_is(sf_jv_path(o, "metadata.labels"), M("{'team':'a','" SF_AW_LABEL "':'aw1'}")));
	cr_assert(jv_is(sf_jv_path(o, "spec.template.metadata.labels"),
	                M("{'team':'b','" SF_AW_LABEL "':'aw1'}")));
}

Test(awcomp, build_nodeselector_and_annotation_conflicts)
{
	sf_jv aw = AW("{'podSetInfos':[{'nodeSelector':{'zone':'z2'}}],"
	              "'template':{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p1'},"
	              "'spec':{'nodeSelector':{'zone':'z1'},'containers':[]}}}");
	const char *e = build_fatal(aw, 0, NULL);
	cr_assert(strstr(e, "conflict for nodeSelector: conflict for key=zone, value1=z1, "
	                    "value2=z2"),
	          "%s", e);

	aw = AW("{'podSetInfos':[{'annotations':{'x/y':'2'}}],'template':" POD(
	    ",'annotations':{'x/y':'1'}") "}");
	e = build_fatal(aw, 0, NULL);
	cr_assert(strstr(e, "conflict for annotations: conflict for key=x/y"), "%s", e);

	/* the same value is no conflict */
	aw = AW("{'podSetInfos':[{'annotations':{'x/y':'1'}}],'template':" POD(
	    ",'annotations':{'x/y':'1'}") "}");
	sf_jv o = build_ok(aw, 0, NULL);
	cr_assert(jv_is(sf_jv_path(o, "metadata.annotations"), "{\"x/y\":\"1\"}"));
}

Test(awcomp, build_pod_template_labelled_for_another_appwrapper_conflicts)
{
	/* a Job's pod template that names another AppWrapper */
	sf_jv aw = AW("{'template':{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j1'},"
	              "'spec':{'template':{'metadata':{'labels':{"
	              "'" SF_AW_LABEL "':'aw2'}},'spec':" PODSPEC "}}}}");
	const char *e = build_fatal(aw, 0, NULL);
	cr_assert(strstr(e, "key=" SF_AW_LABEL ", value1=aw2, value2=aw1"), "%s", e);

	/* on a component without pod sets the existing value is kept (MergeKeepFirst) */
	aw = AW("{'template':{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c',"
	        "'labels':{'" SF_AW_LABEL "':'aw2','x':'y'}}}}");
	sf_jv o = build_ok(aw, 0, NULL);
	cr_assert(jv_is(sf_jv_path(o, "metadata.labels"), M("{'" SF_AW_LABEL "':'aw2','x':'y'}")));
	cr_assert(jv_is(sf_jv_path(o, "metadata.ownerReferences"), OWNER_REF));
}

Test(awcomp, build_path_pointing_nowhere_is_fatal)
{
	sf_jv aw = AW("{'podSets':[{'path':'template.spec.nothere','replicas':1}],"
	              "'template':" JOB("") "}");
	const char *e = build_fatal(aw, 0, NULL);
	cr_assert(strstr(e, "component 0 (Job j1): pod set 0: path 'template.spec.nothere': at "
	                    "path position 'template.spec.' missing field 'nothere'"),
	          "%s", e);

	aw = AW("{'podSets':[{'path':'template.spec.template.spec.containers[3]'}],"
	        "'template':" JOB("") "}");
	e = build_fatal(aw, 0, NULL);
	cr_assert(strstr(e, "out of bounds index '3'"), "%s", e);

	aw = AW("{'podSets':[{'path':'spec.template'}],'template':" JOB("") "}");
	e = build_fatal(aw, 0, NULL);
	cr_assert(strstr(e, "first element of the path must be 'template'"), "%s", e);

	aw = AW("{'podSets':[{'path':'template.spec.parallelism'}],"
	        "'template':" JOB("'parallelism':1,") "}");
	e = build_fatal(aw, 0, NULL);
	cr_assert(strstr(e, "at path position 'template.spec.parallelism' non-map value"), "%s", e);

	/* a map without a spec is not a pod template */
	aw = AW("{'podSets':[{'path':'template.metadata'}],'template':" JOB("") "}");
	e = build_fatal(aw, 0, NULL);
	cr_assert(strstr(e, "content at template.metadata does not contain a spec"), "%s", e);
}

Test(awcomp, build_scheduler_name_only_when_empty)
{
	sf_jv o = build_ok(AW("{'template':" POD("") "}"), 0, "custom");
	cr_assert(jv_str_is(sf_jv_path(o, "spec.schedulerName"), "custom"));

	sf_jv aw = AW("{'template':{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p1'},"
	              "'spec':{'schedulerName':'mine','containers':[]}}}");
	o = build_ok(aw, 0, "custom");
	cr_assert(jv_str_is(sf_jv_path(o, "spec.schedulerName"), "mine"));

	aw = AW("{'template':{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p1'},"
	        "'spec':{'schedulerName':'','containers':[]}}}");
	o = build_ok(aw, 0, "custom");
	cr_assert(jv_str_is(sf_jv_path(o, "spec.schedulerName"), "custom"));

	o = build_ok(aw, 0, "");
	cr_assert(jv_str_is(sf_jv_path(o, "spec.schedulerName"), ""));
}

Test(awcomp, build_invalid_templates_are_fatal)
{
	const char *e = build_fatal(AW("{'template':'x'}"), 0, NULL);
	cr_assert(strstr(e, "component 0 (? ?): template is not an object"), "%s", e);

	e = build_fatal(AW("{'template':{'kind':'Pod','metadata':{'name':'p'},'spec':{}}}"), 0,
	                NULL);
	cr_assert(strstr(e, "component 0 (Pod p): template has no apiVersion"), "%s", e);

	e = build_fatal(AW("{'template':{'apiVersion':'v1','metadata':{'name':'p'}}}"), 0, NULL);
	cr_assert(strstr(e, "template has no kind"), "%s", e);

	e = build_fatal(AW("{'template':" POD("") "},{'template':{'apiVersion':'v1','kind':'Pod',"
	                                          "'metadata':{'labels':{}},'spec':{}}}"),
	                1, NULL);
	cr_assert(strstr(e, "component 1 (Pod ?): template has no metadata.name or "
	                    "metadata.generateName"),
	          "%s", e);

	e = build_fatal(AW("{'template':" POD("") "}"), 1, NULL);
	cr_assert(strstr(e, "no such component"), "%s", e);

	/* a pod template whose tolerations are not a list (upstream panics) */
	e = build_fatal(AW("{'podSetInfos':[{'tolerations':[{'key':'k'}]}],'template':{"
	                   "'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'spec':{"
	                   "'tolerations':'x'}}}"),
	                0, NULL);
	cr_assert(strstr(e, "spec.tolerations at template is not a list"), "%s", e);

	/* inference failing at build time is fatal too */
	e = build_fatal(AW("{'template':{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'}}}"),
	                0, NULL);
	cr_assert(strstr(e, "component 0 (Pod p): template does not refer to a "
	                    "v1.PodSpecTemplate"),
	          "%s", e);
}

Test(awcomp, build_uses_status_podsets)
{
	/* status says the pod set is at template: the Pod's own labels get the info */
	sf_jv aw = AW_STATUS("{'podSetInfos':[{'labels':{'q':'1'}}],'template':" POD("") "}",
	                     "{'componentStatus':[{'podSets':[{'path':'template'}]}]}");
	sf_jv o = build_ok(aw, 0, NULL);
	cr_assert(jv_is(sf_jv_path(o, "metadata.labels"), M("{'" SF_AW_LABEL "':'aw1','q':'1'}")));

	/* status with no pod sets for the component: nothing injected */
	aw = AW_STATUS("{'podSetInfos':[{'labels':{'q':'1'}}],'template':" POD("") "}",
	               "{'componentStatus':[{'name':'p1'}]}");
	o = build_ok(aw, 0, NULL);
	cr_assert(jv_is(sf_jv_path(o, "metadata.labels"), M("{'" SF_AW_LABEL "':'aw1'}")));
}

Test(awcomp, build_owner_references)
{
	/* a non-controller owner is kept and ours appended */
	sf_jv aw =
	    AW("{'template':{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c',"
	       "'ownerReferences':[{'apiVersion':'v1','kind':'Secret','name':'s','uid':'u9'}]"
	       "}}}");
	sf_jv o = build_ok(aw, 0, NULL);
	cr_assert(jv_is(sf_jv_path(o, "metadata.ownerReferences"),
	                M("[{'apiVersion':'v1','kind':'Secret','name':'s','uid':'u9'},"
	                  "{'apiVersion':'" SF_AW_API_VERSION "','kind':'AppWrapper',"
	                  "'name':'aw1','uid':'uid-1','controller':true,"
	                  "'blockOwnerDeletion':true}]")));

	/* a reference to this AppWrapper (any version) is replaced, not duplicated */
	aw = AW("{'template':{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c',"
	        "'ownerReferences':[{'apiVersion':'" SF_AW_GROUP "/v1beta1','kind':"
	        "'AppWrapper','name':'aw1','uid':'old'},{'apiVersion':'v1','kind':'Secret',"
	        "'name':'s','uid':'u9'}]}}}");
	o = build_ok(aw, 0, NULL);
	cr_assert(jv_is(sf_jv_path(o, "metadata.ownerReferences"),
	                M("[{'apiVersion':'" SF_AW_API_VERSION "','kind':'AppWrapper',"
	                  "'name':'aw1','uid':'uid-1','controller':true,"
	                  "'blockOwnerDeletion':true},"
	                  "{'apiVersion':'v1','kind':'Secret','name':'s','uid':'u9'}]")));

	/* only the first controller counts, as metav1.GetControllerOf */
	aw = AW("{'template':{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c',"
	        "'ownerReferences':[{'apiVersion':'" SF_AW_API_VERSION "','kind':"
	        "'AppWrapper','name':'aw1','uid':'old','controller':true},{'apiVersion':'apps/v1',"
	        "'kind':'ReplicaSet','name':'rs','uid':'u8','controller':true}]}}}");
	o = build_ok(aw, 0, NULL);
	cr_assert(jv_str_is(sf_jv_path(o, "metadata.ownerReferences[0].uid"), "uid-1"));
	cr_assert(jv_str_is(sf_jv_path(o, "metadata.ownerReferences[1].name"), "rs"));
	cr_assert_eq(sf_jv_len(sf_jv_path(o, "metadata.ownerReferences")), 2);

	/* another controller is fatal */
	aw = AW("{'template':{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'c',"
	        "'ownerReferences':[{'apiVersion':'apps/v1','kind':'ReplicaSet','name':'rs',"
	        "'uid':'u8','controller':true}]}}}");
	const char *e = build_fatal(aw, 0, NULL);
	cr_assert(strstr(e, "Object ns1/c is already owned by another ReplicaSet controller rs"),
	          "%s", e);
}

/* ---- ownership ---- */

Test(awcomp, controller_owner_and_owned_by)
{
	sf_jv mine = J("{'metadata':{'name':'x','ownerReferences':[{'apiVersion':'v1','kind':"
	               "'Secret','name':'s','uid':'u0'},{'apiVersion':"
	               "'" SF_AW_API_VERSION "','kind':'AppWrapper','name':'aw1','uid':"
	               "'uid-1','controller':true}]}}");
	sf_jv ref = SF_JV_NONE;
	cr_assert_eq(sf_awc_controller_owner(mine, &ref), 1);
	cr_assert(jv_str_is(sf_jv_get(ref, "name"), "aw1"));
	cr_assert_eq(sf_awc_owned_by(mine, "uid-1"), 1);
	cr_assert_eq(sf_awc_owned_by(mine, "u0"), 0); /* an owner, not the controller */
	cr_assert_eq(sf_awc_owned_by(mine, ""), 0);
	cr_assert_eq(sf_awc_owned_by(mine, NULL), 0);

	sf_jv foreign = J("{'metadata':{'ownerReferences':[{'apiVersion':'apps/v1','kind':"
	                  "'ReplicaSet','name':'rs','uid':'u8','controller':true}]}}");
	cr_assert_eq(sf_awc_controller_owner(foreign, &ref), 1);
	cr_assert(jv_str_is(sf_jv_get(ref, "kind"), "ReplicaSet"));
	cr_assert_eq(sf_awc_owned_by(foreign, "uid-1"), 0);

	sf_jv none = J("{'metadata':{'ownerReferences':[{'apiVersion':'v1','kind':'Secret',"
	               "'name':'s','uid':'uid-1','controller':false}]}}");
	cr_assert_eq(sf_awc_controller_owner(none, NULL), 0);
	cr_assert_eq(sf_awc_owned_by(none, "uid-1"), 0);
	cr_assert_eq(sf_awc_controller_owner(J("{'metadata':{'name':'x'}}"), &ref), 0);
	cr_assert_eq(sf_awc_controller_owner(J("[]"), &ref), 0);

	/* what build produces is owned by the AppWrapper's UID */
	sf_jv o = build_ok(AW("{'template':" POD("") "}"), 0, NULL);
	cr_assert_eq(sf_awc_owned_by(o, "uid-1"), 1);
}

/* ---- Autopilot anti-affinities (upstream's injectAntiAffinities) ---- */

static sf_jv build_ap(sf_jv aw, size_t idx, const sf_aw_autopilot *ap, const char **fatal_msg)
{
	static char err[512];
	sf_jd *out = NULL;
	int fatal = -1;
	err[0] = '\0';
	sf_awc_build_opts bo = {.autopilot = ap};
	int rc = sf_awc_build(aw, idx, &bo, &out, &fatal, err, sizeof(err));
	if (fatal_msg) {
		cr_assert_eq(rc, -EINVAL, "build rc %d (%s)", rc, err);
		*fatal_msg = err;
		return SF_JV_NONE;
	}
	cr_assert_eq(rc, 0, "build: %d %s", rc, err);
	char *text = sf_jd_dump(out);
	sf_jd_free(out);
	sf_buf *b = pool_buf();
	cr_assert_eq(sf_buf_puts(b, text), 0);
	free(text);
	return sf_jv_root(b->data, b->len);
}

#define GPU_CONTAINER(res) "{'name':'c','image':'busybox','resources':{" res "}}"
#define GPU_JOB(podspec)                                                                           \
	"{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'j1'},'spec':{'template':"       \
	"{'spec':" podspec "}}}"

Test(awcomp, autopilot_gpu_request_gets_upstreams_anti_affinities)
{
	sf_aw_config cfg;
	sf_awcfg_defaults(&cfg);
	sf_jv out = build_ap(AW("{'template':" GPU_JOB("{'containers':[" GPU_CONTAINER(
	                         "'limits':{'nvidia.com/gpu':1}") "]}") "}"),
	                     0, &cfg.autopilot, NULL);
	sf_jv na = sf_jv_path(out, "spec.template.spec.affinity.nodeAffinity");
	cr_assert(jv_is(sf_jv_get(na, "requiredDuringSchedulingIgnoredDuringExecution"),
	                M("{'nodeSelectorTerms':[{'matchExpressions':[{'key':"
	                  "'autopilot.ibm.com/gpuhealth','operator':'NotIn','values':['TESTING',"
	                  "'EVICT']}]}]}")),
	          "%.*s", (int)na.n, na.p);
	cr_assert(
	    jv_is(sf_jv_get(na, "preferredDuringSchedulingIgnoredDuringExecution"),
	          M("[{'weight':50,'preference':{'matchExpressions':[{'key':"
	            "'autopilot.ibm.com/gpuhealth','operator':'NotIn','values':['WARN']}]}}]")),
	    "%.*s", (int)na.n, na.p);
}

Test(awcomp, autopilot_anti_affinities_merge_with_the_templates_own)
{
	sf_aw_config cfg;
	sf_awcfg_defaults(&cfg);
	cfg.autopilot.prefer_weight = 7;
	/* two required terms of its own, a preferred term, a pod
	 * anti-affinity; the GPU asked for by an init container as a string */
	sf_jv out = build_ap(
	    AW("{'template':" GPU_JOB("{'initContainers':[" GPU_CONTAINER(
	        "'requests':{'nvidia.com/gpu':'2'}") "],'containers':[{'name':'m','image':'b'}],"
	                                             "'affinity':{'podAntiAffinity':{'x':1},'"
	                                             "nodeAffinity':{"
	                                             "'requiredDuringSchedulingIgnoredDuringExecuti"
	                                             "on':{'nodeSelectorTerms':["
	                                             "{'matchExpressions':[{'key':'zone','operator'"
	                                             ":'In','values':['a']}]},"
	                                             "{'matchFields':[{'key':'metadata.name','"
	                                             "operator':'In','values':['n1']}]}]},"
	                                             "'preferredDuringSchedulingIgnoredDuringExecut"
	                                             "ion':[{'weight':3,'preference':"
	                                             "{'matchExpressions':[{'key':'fast','operator'"
	                                             ":'Exists'}]}}]}}}") "}"),
	    0, &cfg.autopilot, NULL);
	sf_jv aff = sf_jv_path(out, "spec.template.spec.affinity");
	const char *want =
	    M("{'podAntiAffinity':{'x':1},'nodeAffinity':{"
	      "'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':["
	      "{'matchExpressions':[{'key':'zone','operator':'In','values':['a']},"
	      "{'key':'autopilot.ibm.com/"
	      "gpuhealth','operator':'NotIn','values':['TESTING','EVICT']}]},"
	      "{'matchFields':[{'key':'metadata.name','operator':'In','values':['n1']}],"
	      "'matchExpressions':[{'key':'autopilot.ibm.com/gpuhealth','operator':'NotIn',"
	      "'values':['TESTING','EVICT']}]}]},"
	      "'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':3,'preference':"
	      "{'matchExpressions':[{'key':'fast','operator':'Exists'}]}},{'weight':7,'preference':"
	      "{'matchExpressions':[{'key':'autopilot.ibm.com/gpuhealth','operator':'NotIn',"
	      "'values':['WARN']}]}}]}}");
	cr_assert(jv_is(aff, want), "%.*s\nwant %s", (int)aff.n, aff.p, want);
}

Test(awcomp, autopilot_leaves_pods_without_the_resource_alone)
{
	sf_aw_config cfg;
	sf_awcfg_defaults(&cfg);
	static const char *const specs[] = {
	    PODSPEC,
	    "{'containers':[" GPU_CONTAINER("'limits':{'nvidia.com/gpu':0}") "]}",
	    "{'containers':[" GPU_CONTAINER("'limits':{'nvidia.com/gpu':'0'}") "]}",
	    "{'containers':[" GPU_CONTAINER("'limits':{'nvidia.com/gpu':1.5}") "]}",
	    "{'containers':[" GPU_CONTAINER("'limits':{'cpu':'4'}") "]}",
	};
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		char aw[1024];
		snprintf(aw, sizeof(aw),
		         AW_HEAD "{'template':{'apiVersion':'batch/v1','kind':'Job','metadata':"
		                 "{'name':'j1'},'spec':{'template':{'spec':%s}}}}]}}",
		         specs[i]);
		sf_jv out = build_ap(J(aw), 0, &cfg.autopilot, NULL);
		cr_assert_not(sf_jv_ok(sf_jv_path(out, "spec.template.spec.affinity")), "%s",
		              specs[i]);
	}
	/* and nothing at all when injection is off */
	cfg.autopilot.inject_anti_affinities = 0;
	sf_jv out = build_ap(AW("{'template':" GPU_JOB("{'containers':[" GPU_CONTAINER(
	                         "'limits':{'nvidia.com/gpu':1}") "]}") "}"),
	                     0, &cfg.autopilot, NULL);
	cr_assert_not(sf_jv_ok(sf_jv_path(out, "spec.template.spec.affinity")));
}

Test(awcomp, autopilot_groups_values_per_label_key_and_other_resources)
{
	sf_aw_config cfg;
	sf_awcfg_defaults(&cfg);
	char err[256] = "";
	static const char yaml[] =
	    "appwrapper:\n  autopilot:\n    resourceTaints:\n      example.com/fpga:\n"
	    "      - {key: fpga.example.com/health, value: BAD, effect: NoExecute}\n"
	    "      - {key: autopilot.ibm.com/gpuhealth, value: EVICT, effect: NoExecute}\n";
	cr_assert_eq(sf_awcfg_load_yaml(&cfg, yaml, strlen(yaml), err, sizeof(err)), 0, "%s", err);
	sf_jv out = build_ap(AW("{'template':" GPU_JOB("{'containers':[" GPU_CONTAINER(
	                         "'limits':{'nvidia.com/gpu':1,'example.com/fpga':'1'}") "]}") "}"),
	                     0, &cfg.autopilot, NULL);
	sf_jv req = sf_jv_path(out, "spec.template.spec.affinity.nodeAffinity."
	                            "requiredDuringSchedulingIgnoredDuringExecution");
	cr_assert(jv_is(req, M("{'nodeSelectorTerms':[{'matchExpressions':["
	                       "{'key':'autopilot.ibm.com/gpuhealth','operator':'NotIn','values':"
	                       "['TESTING','EVICT']},{'key':'fpga.example.com/health','operator':"
	                       "'NotIn','values':['BAD']}]}]}")),
	          "%.*s", (int)req.n, req.p);
}

Test(awcomp, autopilot_with_an_affinity_that_is_not_an_object_is_fatal)
{
	sf_aw_config cfg;
	sf_awcfg_defaults(&cfg);
	const char *msg = NULL;
	build_ap(AW("{'template':" GPU_JOB("{'affinity':'x','containers':[" GPU_CONTAINER(
	             "'limits':{'nvidia.com/gpu':1}") "]}") "}"),
	         0, &cfg.autopilot, &msg);
	cr_assert(strstr(msg, "spec.affinity at template.spec.template is not an object"), "%s",
	          msg);
}

/* A template with generateName (upstream's samples use it): built without
 * a name, with the index annotation that finds it again (with the owner's
 * UID) when the create's answer is lost. */
Test(awcomp, build_keeps_generate_name_and_marks_the_index)
{
	sf_jv aw = AW("{'template':" POD(
	    "") "},{'template':{'apiVersion':'v1','kind':'Pod',"
	        "'metadata':{'generateName':'p-'},'spec':{'containers':[{'name':'c',"
	        "'image':'i'}]}}}");
	sf_jv o = build_ok(aw, 1, NULL);
	cr_assert(sf_jv_streq(sf_jv_path(o, "metadata.generateName"), "p-"));
	cr_assert(!sf_jv_ok(sf_jv_path(o, "metadata.name")));
	cr_assert(sf_jv_streq(
	    sf_jv_get(sf_jv_path(o, "metadata.annotations"), SF_AW_COMPONENT_INDEX), "1"));
	char uid[64];
	cr_assert_gt(sf_jv_str(sf_jv_path(aw, "metadata.uid"), uid, sizeof(uid)), 0);
	cr_assert_eq(sf_awc_generated_match(o, uid, 1), 1);
	cr_assert_eq(sf_awc_generated_match(o, uid, 0), 0, "another index");
	cr_assert_eq(sf_awc_generated_match(o, "other-uid", 1), 0, "another owner");
	/* a fixed name gets no index: AlreadyExists makes its create idempotent */
	sf_jv named = build_ok(aw, 0, NULL);
	cr_assert(
	    !sf_jv_ok(sf_jv_get(sf_jv_path(named, "metadata.annotations"), SF_AW_COMPONENT_INDEX)));
	char buf[64];
	cr_assert_eq(
	    sf_awc_template_name(sf_jv_path(aw, "spec.components[1].template"), buf, sizeof(buf)),
	    1);
	cr_assert_str_eq(buf, "p-");
}
