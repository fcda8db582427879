/*
 * test_admparams.c - the admission parameters' decisions (admparams.h):
 * what an aggregated discovery answer maps, what the config adds, and
 * what a ConfigMap as read needs written, from documents.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/admparams.h"
#include "steadfast/awconfig.h"
#include "steadfast/json.h"
#include "steadfast/strmap.h"

static sf_strmap *map(void)
{
	sf_strmap *m = NULL;
	cr_assert_eq(sf_strmap_new(0, 0, &m), 0);
	return m;
}

static sf_jv doc(const char *s)
{
	return sf_jv_root(s, strlen(s));
}

#define RES(r, k, scope, verbs)                                                                    \
	"{\"resource\":\"" r "\",\"responseKind\":{\"group\":\"\",\"version\":\"\",\"kind\":\"" k  \
	"\"},\"scope\":\"" scope "\",\"verbs\":" verbs "}"
#define CREATE "[\"create\",\"get\"]"

static const char CORE[] =
    "{\"kind\":\"APIGroupDiscoveryList\",\"apiVersion\":\"apidiscovery.k8s.io/v2\","
    "\"items\":[{\"metadata\":{},\"versions\":[{\"version\":\"v1\",\"resources\":[" RES(
        "pods", "Pod", "Namespaced",
        CREATE) "," RES("namespaces", "Namespace", "Cluster",
                        CREATE) "," RES("componentstatuses", "ComponentStatus", "Namespaced",
                                        "[\"get\",\"list\"]") "]}]}]}";

static const char GROUPS[] =
    "{\"kind\":\"APIGroupDiscoveryList\",\"apiVersion\":\"apidiscovery.k8s.io/v2\",\"items\":["
    "{\"metadata\":{\"name\":\"batch\"},\"versions\":["
    "{\"version\":\"v1\",\"resources\":[" RES(
        "jobs", "Job", "Namespaced",
        CREATE) "]},"
                "{\"version\":\"v1beta1\",\"resources\":[" RES(
                    "jobz", "Job", "Namespaced",
                    CREATE) "," RES("cronjobs", "CronJob", "Namespaced",
                                    CREATE) "]}]},"
                                            "{\"metadata\":{\"name\":\"example.com\"},\"versions\":"
                                            "["
                                            "{\"version\":\"v1\",\"freshness\":\"Stale\","
                                            "\"resources\":[" RES(
                                                "gizmoes", "Gizmo", "Namespaced",
                                                CREATE) "]}]},"
                                                        "{\"metadata\":{\"name\":\"odd.io\"},"
                                                        "\"versions\":[{\"version\":\"v1\","
                                                        "\"resources\":[" RES(
                                                            "Bad Name", "Thing", "Namespaced",
                                                            CREATE) "," RES("things", "Th/ing",
                                                                            "Namespaced",
                                                                            CREATE) "]}]}]}";

Test(admparams, discovery_maps_namespaced_creatable_kinds_preferred_version_first)
{
	sf_strmap *m = map();
	int stale = 0;
	char err[256] = "";
	cr_assert_eq(sf_admparams_discovered(doc(CORE), m, &stale, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sf_admparams_discovered(doc(GROUPS), m, &stale, err, sizeof(err)), 0, "%s",
	             err);
	cr_assert_str_eq(sf_strmap_get(m, "Pod"), "pods");
	cr_assert_str_eq(sf_strmap_get(m, "Job.batch"), "jobs", "the first version listed wins");
	cr_assert_str_eq(sf_strmap_get(m, "CronJob.batch"), "cronjobs");
	cr_assert_null(sf_strmap_get(m, "Namespace"), "cluster-scoped");
	cr_assert_null(sf_strmap_get(m, "ComponentStatus"), "no create verb");
	cr_assert_null(sf_strmap_get(m, "Gizmo.example.com"), "stale group version");
	cr_assert_null(sf_strmap_get(m, "Thing.odd.io"), "not a resource name");
	cr_assert_null(sf_strmap_get(m, "Th/ing.odd.io"), "not a ConfigMap key");
	cr_assert_eq(sf_strmap_len(m), 3);
	cr_assert_eq(stale, 1);
	sf_strmap_free(m, free);
}

Test(admparams, an_answer_that_is_not_aggregated_discovery_is_an_error)
{
	sf_strmap *m = map();
	char err[256] = "";
	cr_assert_eq(sf_admparams_discovered(doc("{\"kind\":\"APIGroupList\",\"groups\":[]}"), m,
	                                     NULL, err, sizeof(err)),
	             -EINVAL);
	cr_assert(strstr(err, "APIGroupList") && strstr(err, "APIGroupDiscoveryList"), "%s", err);
	cr_assert_eq(sf_admparams_discovered(doc("{\"kind\":\"APIGroupDiscoveryList\"}"), m, NULL,
	                                     err, sizeof(err)),
	             -EINVAL);
	cr_assert_eq(sf_admparams_discovered(doc("[1,2]"), m, NULL, err, sizeof(err)), -EINVAL);
	cr_assert_eq(sf_strmap_len(m), 0);
	sf_strmap_free(m, free);
}

Test(admparams, config_keys_come_from_the_operator_config)
{
	sf_aw_config c;
	sf_awcfg_defaults(&c);
	snprintf(c.default_queue_name, sizeof(c.default_queue_name), "team-q");
	c.manage_jobs_without_queue_name = 0;
	sf_strmap *m = map();
	cr_assert_eq(sf_admparams_config(&c, m), 0);
	cr_assert_str_eq(sf_strmap_get(m, "defaultQueueName"), "team-q");
	cr_assert_str_eq(sf_strmap_get(m, "manageJobsWithoutQueueName"), "false");
	cr_assert_str_eq(sf_strmap_get(m, "enableKueueIntegrations"), "true");
	c.enable_kueue_integrations = 0;
	cr_assert_eq(sf_admparams_config(&c, m), 0);
	cr_assert_str_eq(sf_strmap_get(m, "enableKueueIntegrations"), "false");
	cr_assert_eq(sf_strmap_len(m), 3);
	sf_strmap_free(m, free);
}

static void put(sf_strmap *m, const char *k, const char *v)
{
	char *d = strdup(v);
	void *old = NULL;
	cr_assert(d);
	cr_assert_geq(sf_strmap_put(m, k, d, &old), 0);
	free(old);
}

/* A ConfigMap as the API server returns it: Pod and Job.batch set by
 * kubectl, Gone.example.com and Pod owned by our apply too. */
static const char CM[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"steadfast-admission\","
    "\"namespace\":\"steadfast-system\",\"resourceVersion\":\"42\",\"managedFields\":["
    "{\"manager\":\"kubectl-client-side-apply\",\"operation\":\"Update\",\"fieldsType\":"
    "\"FieldsV1\",\"fieldsV1\":{\"f:data\":{\".\":{},\"f:Pod\":{},\"f:Job.batch\":{}}}},"
    "{\"manager\":\"steadfast\",\"operation\":\"Apply\",\"fieldsType\":\"FieldsV1\","
    "\"fieldsV1\":{\"f:data\":{\"f:Pod\":{},\"f:Gone.example.com\":{}}}},"
    "{\"manager\":\"steadfast\",\"operation\":\"Update\",\"fieldsV1\":{\"f:data\":{"
    "\"f:Job.batch\":{}}}}]},"
    "\"data\":{\"Pod\":\"pods\",\"Job.batch\":\"jobz\",\"Gone.example.com\":\"gones\"}}";

Test(admparams, plan_adds_corrects_and_removes_only_what_it_owns)
{
	sf_strmap *want = map();
	put(want, "Pod", "pods");
	put(want, "Job.batch", "jobs");
	put(want, "CronJob.batch", "cronjobs");
	sf_admparams_plan p;
	sf_admparams_plan_init(&p);
	cr_assert_eq(sf_admparams_plan_make(&p, want, doc(CM), "steadfast", 0), 1);
	cr_assert_eq(p.added, 1);
	cr_assert_eq(p.changed, 1);
	cr_assert_eq(p.removed, 1, "Gone.example.com is ours alone and no longer served");
	cr_assert_str_eq(p.first, "CronJob.batch");
	cr_assert_eq(sf_buf_putc(&p.body, 0), 0);
	cr_assert_str_eq(p.body.data,
	                 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
	                 "\"steadfast-admission\",\"namespace\":\"steadfast-system\","
	                 "\"resourceVersion\":\"42\"},\"data\":{\"CronJob.batch\":\"cronjobs\","
	                 "\"Job.batch\":\"jobs\",\"Pod\":\"pods\"}}");
	/* partial discovery: what it owns is sent again, nothing removed */
	cr_assert_eq(sf_admparams_plan_make(&p, want, doc(CM), "steadfast", 1), 1);
	cr_assert_eq(p.removed, 0);
	cr_assert_eq(sf_buf_putc(&p.body, 0), 0);
	cr_assert(strstr(p.body.data, "\"Gone.example.com\":\"gones\""), "%s", p.body.data);
	/* an Update entry of the same manager owns nothing for apply */
	sf_strmap *only = map();
	put(only, "Pod", "pods");
	put(only, "Gone.example.com", "gones");
	cr_assert_eq(sf_admparams_plan_make(&p, only, doc(CM), "steadfast", 0), 0,
	             "Job.batch is not ours by apply: kept, nothing to write");
	cr_assert_eq(p.added + p.changed + p.removed, 0);
	sf_strmap_free(only, free);
	sf_admparams_plan_free(&p);
	sf_strmap_free(want, free);
}

Test(admparams, plan_needs_a_name_and_resource_version)
{
	sf_strmap *want = map();
	put(want, "Pod", "pods");
	sf_admparams_plan p;
	sf_admparams_plan_init(&p);
	cr_assert_eq(sf_admparams_plan_make(&p, want, doc("{\"metadata\":{\"name\":\"x\"}}"),
	                                    "steadfast", 0),
	             -EINVAL);
	cr_assert_eq(sf_admparams_plan_make(&p, want,
	                                    doc("{\"metadata\":{\"resourceVersion\":\"1\"}}"),
	                                    "steadfast", 0),
	             -EINVAL);
	/* no data at all: everything is added; values are JSON-escaped */
	put(want, "defaultQueueName", "q\"1");
	cr_assert_eq(sf_admparams_plan_make(
	                 &p, want, doc("{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"7\"}}"),
	                 "steadfast", 0),
	             1);
	cr_assert_eq(p.added, 2);
	cr_assert_eq(sf_buf_putc(&p.body, 0), 0);
	cr_assert(strstr(p.body.data, "\"defaultQueueName\":\"q\\\"1\""), "%s", p.body.data);
	cr_assert_null(strstr(p.body.data, "namespace"), "%s", p.body.data);
	sf_admparams_plan_free(&p);
	sf_strmap_free(want, free);
}

/* The exposition as /metrics writes it, byte for byte. */
Test(admparams, metrics_of_none_are_zeros)
{
	sf_prom *p = sf_prom_new();
	cr_assert_not_null(p);
	cr_assert_eq(sf_admparams_metrics_write(NULL, p), 0);
	sf_buf out;
	sf_buf_init(&out, 0);
	cr_assert_eq(sf_prom_render(p, &out), 0);
	cr_assert_eq(sf_buf_putc(&out, 0), 0);
	cr_assert_str_eq(out.data,
	                 "# HELP steadfast_admission_params_syncs_total Passes over the admission "
	                 "parameters ConfigMap by outcome: unchanged, updated (one apply), absent "
	                 "(not installed), error\n"
	                 "# TYPE steadfast_admission_params_syncs_total counter\n"
	                 "steadfast_admission_params_syncs_total{result=\"unchanged\"} 0\n"
	                 "steadfast_admission_params_syncs_total{result=\"updated\"} 0\n"
	                 "steadfast_admission_params_syncs_total{result=\"absent\"} 0\n"
	                 "steadfast_admission_params_syncs_total{result=\"error\"} 0\n");
	sf_buf_free(&out);
	sf_prom_free(p);
}
