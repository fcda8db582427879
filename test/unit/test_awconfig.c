/*
 * test_awconfig.c - operator config and per-AppWrapper fault tolerance:
 * defaults, each validation rule, YAML loading (upstream's files, every
 * key, errors that name the key path, the struct left alone on error),
 * annotation resolution with upstream's clamping and fallback rules, and the doubling
 * retry pause.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "steadfast/awapi.h"
#include "steadfast/awconfig.h"

#define NS INT64_C(1)
#define US (1000 * NS)
#define MS (1000 * US)
#define SEC (1000 * MS)
#define MIN (60 * SEC)

/* ---- defaults and validation ---- */

Test(awconfig, defaults)
{
	sf_aw_config c;
	memset(&c, 0x5a, sizeof(c));
	sf_awcfg_defaults(&c);
	cr_expect_eq(c.ft.admission_grace_ms, 60 * 1000);
	cr_expect_eq(c.ft.warmup_grace_ms, 5 * 60 * 1000);
	cr_expect_eq(c.ft.failure_grace_ms, 60 * 1000);
	cr_expect_eq(c.ft.retry_pause_ms, 90 * 1000);
	cr_expect_eq(c.ft.retry_limit, 3);
	cr_expect_eq(c.ft.deletion_grace_ms, 10 * 60 * 1000);
	cr_expect_eq(c.ft.grace_ceiling_ms, INT64_C(24) * 3600 * 1000);
	cr_expect_eq(c.ft.success_ttl_ms, INT64_C(7) * 24 * 3600 * 1000);
	cr_expect_eq(c.ft.missing_grace_ms, 5 * 1000);
	cr_expect_eq(c.ft.retry_pause_ceiling_ms, 3600 * 1000);
	cr_expect_str_eq(c.scheduler_name, "");
	cr_expect_str_eq(c.default_queue_name, "");
	cr_expect_eq(c.enable_kueue_integrations, 1);
	cr_expect_eq(c.manage_jobs_without_queue_name, 0);
	cr_expect_str_eq(c.metrics_bind, ":8080");
	cr_expect_str_eq(c.health_bind, ":8081");
	cr_expect_eq(c.leader_election, 0);
	char err[256] = "";
	cr_expect_eq(sf_awcfg_validate(&c, err, sizeof(err)), 0, "%s", err);
}

static void expect_invalid(const sf_aw_config *c, const char *needle)
{
	char err[256] = "";
	cr_expect_eq(sf_awcfg_validate(c, err, sizeof(err)), -EINVAL, "want error %s", needle);
	cr_expect(strstr(err, needle) != NULL, "error \"%s\" lacks \"%s\"", err, needle);
}

Test(awconfig, validation_rules)
{
	sf_aw_config c;
	const int64_t day = INT64_C(24) * 3600 * 1000;

	/* each grace period above the 24h ceiling */
	sf_awcfg_defaults(&c);
	c.ft.deletion_grace_ms = day + 1;
	expect_invalid(&c, "deletionGracePeriod 24h0m0.001s exceeds gracePeriodCeiling 24h0m0s");
	sf_awcfg_defaults(&c);
	c.ft.retry_pause_ms = day + 1000;
	c.ft.retry_pause_ceiling_ms = day;
	expect_invalid(&c, "resetPause 24h0m1s exceeds gracePeriodCeiling");
	sf_awcfg_defaults(&c);
	c.ft.failure_grace_ms = 2 * day;
	expect_invalid(&c, "failureGracePeriod 48h0m0s exceeds gracePeriodCeiling");
	sf_awcfg_defaults(&c);
	c.ft.admission_grace_ms = 2 * day;
	c.ft.warmup_grace_ms = 2 * day;
	expect_invalid(&c, "admissionGracePeriod 48h0m0s exceeds gracePeriodCeiling");
	sf_awcfg_defaults(&c);
	c.ft.warmup_grace_ms = 2 * day;
	expect_invalid(&c, "warmupGracePeriod 48h0m0s exceeds gracePeriodCeiling");
	sf_awcfg_defaults(&c);
	c.ft.missing_grace_ms = 2 * day;
	expect_invalid(&c, "missingComponentGracePeriod 48h0m0s exceeds gracePeriodCeiling");

	/* a lower ceiling catches the defaults */
	sf_awcfg_defaults(&c);
	c.ft.grace_ceiling_ms = 5 * 60 * 1000;
	expect_invalid(&c, "deletionGracePeriod 10m0s exceeds gracePeriodCeiling 5m0s");

	/* admission <= warmup */
	sf_awcfg_defaults(&c);
	c.ft.admission_grace_ms = c.ft.warmup_grace_ms + 1;
	expect_invalid(&c, "admissionGracePeriod 5m0.001s exceeds warmupGracePeriod 5m0s");

	/* successTTL > 0 */
	sf_awcfg_defaults(&c);
	c.ft.success_ttl_ms = 0;
	expect_invalid(&c, "successTTLCeiling 0s is not a positive duration");
	c.ft.success_ttl_ms = -1000;
	expect_invalid(&c, "successTTLCeiling -1s is not a positive duration");

	/* retryLimit >= 0 */
	sf_awcfg_defaults(&c);
	c.ft.retry_limit = -1;
	expect_invalid(&c, "retryLimit -1 is negative");

	/* resetPause <= resetPauseCeiling <= gracePeriodCeiling */
	sf_awcfg_defaults(&c);
	c.ft.retry_pause_ceiling_ms = 60 * 1000;
	expect_invalid(&c, "resetPause 1m30s exceeds resetPauseCeiling 1m0s");
	sf_awcfg_defaults(&c);
	c.ft.retry_pause_ceiling_ms = 2 * day;
	expect_invalid(&c, "resetPauseCeiling 48h0m0s exceeds gracePeriodCeiling 24h0m0s");

	/* boundaries are allowed */
	sf_awcfg_defaults(&c);
	c.ft.admission_grace_ms = c.ft.warmup_grace_ms;
	c.ft.retry_pause_ceiling_ms = day;
	c.ft.retry_pause_ms = day;
	c.ft.deletion_grace_ms = day;
	c.ft.retry_limit = 0;
	c.ft.success_ttl_ms = 1;
	char err[256] = "";
	cr_expect_eq(sf_awcfg_validate(&c, err, sizeof(err)), 0, "%s", err);
	/* huge values still produce a message */
	c.ft.warmup_grace_ms = INT64_MAX;
	expect_invalid(&c, "warmupGracePeriod 9223372036854775807ms exceeds");
}

/* ---- YAML loading ---- */

static int load(sf_aw_config *c, const char *yaml, char *err, size_t errlen)
{
	return sf_awcfg_load_yaml(c, yaml, strlen(yaml), err, errlen);
}

/* The config.yaml of upstream's v1.2.1 operator-config ConfigMap. */
static const char upstream_sample[] = "controllerManager:\n"
                                      "  health:\n"
                                      "    bindAddress: \":8081\"\n"
                                      "  metrics:\n"
                                      "    bindAddress: \":8443\"\n"
                                      "  leaderElection: true\n";

Test(awconfig, yaml_upstream_sample)
{
	sf_aw_config c, want;
	char err[256] = "";
	sf_awcfg_defaults(&c);
	cr_assert_eq(load(&c, upstream_sample, err, sizeof(err)), 0, "%s", err);
	sf_awcfg_defaults(&want);
	snprintf(want.metrics_bind, sizeof(want.metrics_bind), ":8443");
	want.leader_election = 1;
	cr_expect_eq(memcmp(&c, &want, sizeof(c)), 0);
	cr_expect_eq(sf_awcfg_validate(&c, err, sizeof(err)), 0, "%s", err);
}

/* What upstream writes when it creates the ConfigMap itself (yaml.Marshal
 * of its defaults): durations as integer nanoseconds, and every section
 * Steadfast ignores. */
static const char upstream_generated[] = "appwrapper:\n"
                                         "  autopilot:\n"
                                         "    injectAntiAffinities: true\n"
                                         "    monitorNodes: true\n"
                                         "    resourceTaints:\n"
                                         "      nvidia.com/gpu:\n"
                                         "      - effect: NoSchedule\n"
                                         "        key: autopilot.ibm.com/gpuhealth\n"
                                         "        value: ERR\n"
                                         "  enableKueueIntegrations: true\n"
                                         "  faultTolerance:\n"
                                         "    admissionGracePeriod: 60000000000\n"
                                         "    deletionGracePeriod: 600000000000\n"
                                         "    failureGracePeriod: 60000000000\n"
                                         "    gracePeriodCeiling: 86400000000000\n"
                                         "    resetPause: 90000000000\n"
                                         "    retryLimit: 3\n"
                                         "    successTTLCeiling: 604800000000000\n"
                                         "    warmupGracePeriod: 300000000000\n"
                                         "  kueueJobReconciller:\n"
                                         "    labelKeysToCopy: []\n"
                                         "    manageJobsNamespaceSelector:\n"
                                         "      matchExpressions:\n"
                                         "      - key: kubernetes.io/metadata.name\n"
                                         "        operator: NotIn\n"
                                         "        values:\n"
                                         "        - kube-system\n"
                                         "        - kueue-system\n"
                                         "        - appwrapper-system\n"
                                         "    manageJobsWithoutQueueName: true\n"
                                         "    waitForPodsReady:\n"
                                         "      enable: true\n"
                                         "  userRBACAdmissionCheck: true\n"
                                         "certManagement:\n"
                                         "  certificateDir: /tmp/k8s-webhook-server/serving-certs\n"
                                         "  certificateName: appwrapper-ca\n"
                                         "  namespace: appwrapper-system\n"
                                         "controllerManager:\n"
                                         "  enableHTTP2: false\n"
                                         "  health:\n"
                                         "    bindAddress: \":8081\"\n"
                                         "  leaderElection: false\n"
                                         "  metrics:\n"
                                         "    bindAddress: \":8080\"\n"
                                         "    secureServing: false\n"
                                         "webhooksEnabled: true\n";

Test(awconfig, yaml_upstream_generated)
{
	sf_aw_config c, want;
	char err[256] = "";
	sf_awcfg_defaults(&c);
	cr_assert_eq(load(&c, upstream_generated, err, sizeof(err)), 0, "%s", err);
	sf_awcfg_defaults(&want);
	want.cert_management = 1;                /* present in the file */
	want.metrics_secure = 0;                 /* secureServing: false */
	want.manage_jobs_without_queue_name = 1; /* an older release's true */
	/* its resourceTaints replace the GPU's three defaults with one */
	memset(want.autopilot.taints, 0, sizeof(want.autopilot.taints));
	want.autopilot.ntaints = 1;
	snprintf(want.autopilot.taints[0].resource, sizeof(want.autopilot.taints[0].resource),
	         "nvidia.com/gpu");
	snprintf(want.autopilot.taints[0].key, sizeof(want.autopilot.taints[0].key),
	         "autopilot.ibm.com/gpuhealth");
	snprintf(want.autopilot.taints[0].value, sizeof(want.autopilot.taints[0].value), "ERR");
	want.autopilot.taints[0].effect = SF_TAINT_NO_SCHEDULE;
	/* the sections with nothing to do here are named for the warning */
	cr_expect_str_eq(c.ignored,
	                 "appwrapper.kueueJobReconciller.labelKeysToCopy, "
	                 "appwrapper.kueueJobReconciller.manageJobsNamespaceSelector, "
	                 "appwrapper.kueueJobReconciller.waitForPodsReady, "
	                 "certManagement.certificateDir, certManagement.certificateName, "
	                 "certManagement.namespace, controllerManager.enableHTTP2");
	snprintf(want.ignored, sizeof(want.ignored), "%s", c.ignored);
	cr_expect_eq(memcmp(&c, &want, sizeof(c)), 0);
}

static const char full_file[] = "# every key Steadfast reads\n"
                                "appwrapper:\n"
                                "  enableKueueIntegrations: false\n"
                                "  schedulerName: scheduler-plugins-scheduler\n"
                                "  defaultQueueName: default-queue\n"
                                "  slackQueueName: slack\n"
                                "  kueueJobReconciller:\n"
                                "    manageJobsWithoutQueueName: false\n"
                                "  faultTolerance:\n"
                                "    admissionGracePeriod: 2m\n"
                                "    warmupGracePeriod: 10m\n"
                                "    failureGracePeriod: 30s\n"
                                "    resetPause: 45s\n"
                                "    retryLimit: 7\n"
                                "    deletionGracePeriod: 1h30m\n"
                                "    gracePeriodCeiling: 48h\n"
                                "    successTTLCeiling: 72h\n"
                                "    missingComponentGracePeriod: 1500ms\n"
                                "    resetPauseCeiling: 2h\n"
                                "controllerManager:\n"
                                "  metrics:\n"
                                "    bindAddress: \"127.0.0.1:9090\"\n"
                                "  health:\n"
                                "    bindAddress: \"0.0.0.0:9091\"\n"
                                "  leaderElection: true\n";

/* The admission keys are read (the controller checks the cluster against
 * them at start), with upstream's defaults: both checks on, no
 * certManagement. */
Test(awconfig, admission_keys_are_read)
{
	sf_aw_config c;
	char err[256] = "";
	sf_awcfg_defaults(&c);
	cr_expect_eq(c.user_rbac_admission_check, 1);
	cr_expect_eq(c.webhooks_enabled, 1);
	cr_expect_eq(c.cert_management, 0);
	cr_assert_eq(load(&c,
	                  "appwrapper:\n  userRBACAdmissionCheck: false\n"
	                  "webhooksEnabled: false\n"
	                  "certManagement:\n  namespace: appwrapper-system\n"
	                  "  certificateDir: /tmp/certs\n  certificateName: ca\n"
	                  "  certificateOrganization: org\n  certificateDNSName: svc\n"
	                  "  mutatingWebhookConfigName: m\n  validatingWebhookConfigName: v\n"
	                  "  webhookServiceName: s\n  webhookSecretName: x\n",
	                  err, sizeof(err)),
	             0, "%s", err);
	cr_expect_eq(c.user_rbac_admission_check, 0);
	cr_expect_eq(c.webhooks_enabled, 0);
	cr_expect_eq(c.cert_management, 1);
	/* and back: a later document may turn them on again */
	cr_assert_eq(load(&c,
	                  "appwrapper:\n  userRBACAdmissionCheck: true\nwebhooksEnabled: true\n",
	                  err, sizeof(err)),
	             0, "%s", err);
	cr_expect_eq(c.user_rbac_admission_check, 1);
	cr_expect_eq(c.webhooks_enabled, 1);
}

Test(awconfig, yaml_full_file)
{
	sf_aw_config c;
	char err[256] = "";
	sf_awcfg_defaults(&c);
	cr_assert_eq(load(&c, full_file, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(c.enable_kueue_integrations, 0);
	cr_expect_str_eq(c.scheduler_name, "scheduler-plugins-scheduler");
	cr_expect_str_eq(c.default_queue_name, "default-queue");
	cr_expect_eq(c.manage_jobs_without_queue_name, 0);
	cr_expect_eq(c.ft.admission_grace_ms, 2 * 60 * 1000);
	cr_expect_eq(c.ft.warmup_grace_ms, 10 * 60 * 1000);
	cr_expect_eq(c.ft.failure_grace_ms, 30 * 1000);
	cr_expect_eq(c.ft.retry_pause_ms, 45 * 1000);
	cr_expect_eq(c.ft.retry_limit, 7);
	cr_expect_eq(c.ft.deletion_grace_ms, 90 * 60 * 1000);
	cr_expect_eq(c.ft.grace_ceiling_ms, INT64_C(48) * 3600 * 1000);
	cr_expect_eq(c.ft.success_ttl_ms, INT64_C(72) * 3600 * 1000);
	cr_expect_eq(c.ft.missing_grace_ms, 1500);
	cr_expect_eq(c.ft.retry_pause_ceiling_ms, 2 * 3600 * 1000);
	cr_expect_str_eq(c.metrics_bind, "127.0.0.1:9090");
	cr_expect_str_eq(c.health_bind, "0.0.0.0:9091");
	cr_expect_eq(c.leader_election, 1);
	cr_expect_eq(sf_awcfg_validate(&c, err, sizeof(err)), 0, "%s", err);
}

Test(awconfig, yaml_partial_keeps_other_values)
{
	sf_aw_config c, want;
	char err[256] = "";
	sf_awcfg_defaults(&c);
	c.ft.retry_limit = 9;
	snprintf(c.scheduler_name, sizeof(c.scheduler_name), "from-flag");
	cr_assert_eq(
	    load(&c, "appwrapper:\n  faultTolerance:\n    resetPause: 1m\n", err, sizeof(err)), 0,
	    "%s", err);
	sf_awcfg_defaults(&want);
	want.ft.retry_limit = 9;
	snprintf(want.scheduler_name, sizeof(want.scheduler_name), "from-flag");
	want.ft.retry_pause_ms = 60 * 1000;
	cr_expect_eq(memcmp(&c, &want, sizeof(c)), 0);
}

Test(awconfig, yaml_empty_and_null)
{
	sf_aw_config c, want;
	char err[256] = "";
	sf_awcfg_defaults(&c);
	sf_awcfg_defaults(&want);
	cr_expect_eq(load(&c, "", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(load(&c, "# only a comment\n", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(load(&c, "~\n", err, sizeof(err)), 0, "%s", err);
	/* empty values are null: the setting stays */
	cr_expect_eq(load(&c,
	                  "appwrapper:\n  faultTolerance:\n    resetPause:\n"
	                  "  schedulerName: ~\ncontrollerManager:\n",
	                  err, sizeof(err)),
	             0, "%s", err);
	cr_expect_eq(memcmp(&c, &want, sizeof(c)), 0);
}

Test(awconfig, yaml_integer_nanoseconds)
{
	sf_aw_config c;
	char err[256] = "";
	sf_awcfg_defaults(&c);
	cr_assert_eq(load(&c,
	                  "appwrapper:\n  faultTolerance:\n"
	                  "    admissionGracePeriod: 30000000000\n"
	                  "    failureGracePeriod: 1500000\n" /* 1.5ms -> 1ms */
	                  "    resetPause: 999999\n"          /* under 1ms -> 0 */
	                  "    warmupGracePeriod: \"300000000000ns\"\n"
	                  "    deletionGracePeriod: -5000000000\n"
	                  "    gracePeriodCeiling: 9223372036854775807\n",
	                  err, sizeof(err)),
	             0, "%s", err);
	cr_expect_eq(c.ft.admission_grace_ms, 30 * 1000);
	cr_expect_eq(c.ft.failure_grace_ms, 1);
	cr_expect_eq(c.ft.retry_pause_ms, 0);
	cr_expect_eq(c.ft.warmup_grace_ms, 300 * 1000);
	cr_expect_eq(c.ft.deletion_grace_ms, -5000);
	cr_expect_eq(c.ft.grace_ceiling_ms, INT64_MAX / 1000000);
}

/* Each bad document fails with a message naming the key, and leaves the
 * struct exactly as it was. */
Test(awconfig, yaml_errors_leave_config_unchanged)
{
	static const struct {
		const char *yaml;
		const char *needle;
	} bad[] = {
	    {"appwrapper:\n  faultTolerance:\n    resetPause: 5m\n    bogus: 1\n",
	     "appwrapper.faultTolerance.bogus: unknown key"},
	    {"appwrapper:\n  schedulerName: x\n  kueueJobReconciller:\n    extra: true\n",
	     "appwrapper.kueueJobReconciller.extra: unknown key"},
	    {"controllerManager:\n  metrics:\n    port: 8080\n",
	     "controllerManager.metrics.port: unknown key"},
	    {"nope: 1\n", "nope: unknown key"},
	    {"appwrapper:\n  faultTolerance:\n    retryLimit: three\n",
	     "appwrapper.faultTolerance.retryLimit: expected an integer, got a string"},
	    {"appwrapper:\n  faultTolerance:\n    retryLimit: 2.5\n",
	     "appwrapper.faultTolerance.retryLimit: expected an integer, got a number"},
	    {"appwrapper:\n  faultTolerance:\n    retryLimit: 4294967296\n",
	     "appwrapper.faultTolerance.retryLimit: 4294967296 is out of range"},
	    {"appwrapper:\n  enableKueueIntegrations: \"yes please\"\n",
	     "appwrapper.enableKueueIntegrations: expected a boolean, got a string"},
	    {"appwrapper:\n  schedulerName: [a, b]\n",
	     "appwrapper.schedulerName: expected a string, got a sequence"},
	    {"appwrapper:\n  faultTolerance: 5\n",
	     "appwrapper.faultTolerance: expected a mapping, got a number"},
	    {"appwrapper:\n  faultTolerance:\n    warmupGracePeriod: 5d\n",
	     "appwrapper.faultTolerance.warmupGracePeriod: invalid duration \"5d\""},
	    {"appwrapper:\n  faultTolerance:\n    warmupGracePeriod: \"5\"\n",
	     "appwrapper.faultTolerance.warmupGracePeriod: invalid duration \"5\""},
	    {"appwrapper:\n  faultTolerance:\n    warmupGracePeriod: 3000000h\n",
	     "warmupGracePeriod: invalid duration \"3000000h\" (out of range)"},
	    {"appwrapper:\n  faultTolerance:\n    failureGracePeriod: true\n",
	     "appwrapper.faultTolerance.failureGracePeriod: expected a duration"},
	    {"appwrapper:\n  faultTolerance:\n    failureGracePeriod: 1.5\n",
	     "appwrapper.faultTolerance.failureGracePeriod: expected a duration"},
	    /* the converter may write this as a float or a long integer */
	    {"appwrapper:\n  faultTolerance:\n    failureGracePeriod: 99999999999999999999\n",
	     "appwrapper.faultTolerance.failureGracePeriod: "},
	    {"webhooksEnabled: maybe\n", "webhooksEnabled: expected a boolean, got a string"},
	    {"certManagement: []\n", "certManagement: expected a mapping, got a sequence"},
	    {"certManagement:\n  namespace: 3\n",
	     "certManagement.namespace: expected a string, got a number"},
	    {"certManagement:\n  rotate: true\n", "certManagement.rotate: unknown key"},
	    {"appwrapper:\n  userRBACAdmissionCheck: \"no\"\n",
	     "appwrapper.userRBACAdmissionCheck: expected a boolean, got a string"},
	    {"appwrapper:\n  kueueJobReconciller:\n    labelKeysToCopy: a\n",
	     "appwrapper.kueueJobReconciller.labelKeysToCopy: expected a sequence"},
	    {"- a\n- b\n", "top level: expected a mapping, got a sequence"},
	    {"just text\n", "top level: expected a mapping, got a string"},
	    {"appwrapper: [\n", ""}, /* malformed YAML: the converter's message */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sf_aw_config c, before;
		char err[256] = "";
		sf_awcfg_defaults(&c);
		c.ft.retry_limit = 11;
		before = c;
		int rc = load(&c, bad[i].yaml, err, sizeof(err));
		cr_expect_eq(rc, -EINVAL, "%s: rc %d", bad[i].yaml, rc);
		cr_expect(strstr(err, bad[i].needle) != NULL, "error \"%s\" lacks \"%s\"", err,
		          bad[i].needle);
		cr_expect(err[0] != '\0', "%s: no message", bad[i].yaml);
		cr_expect_eq(memcmp(&c, &before, sizeof(c)), 0, "%s: config changed", bad[i].yaml);
	}
}

Test(awconfig, yaml_string_too_long)
{
	sf_aw_config c, before;
	char yaml[512], err[256] = "";
	sf_awcfg_defaults(&c);
	before = c;
	char name[300];
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(yaml, sizeof(yaml), "appwrapper:\n  schedulerName: %s\n", name);
	cr_expect_eq(load(&c, yaml, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "appwrapper.schedulerName: longer than 253 bytes") != NULL, "%s",
	          err);
	cr_expect_eq(memcmp(&c, &before, sizeof(c)), 0);
	/* exactly 253 fits */
	name[253] = '\0';
	snprintf(yaml, sizeof(yaml), "appwrapper:\n  schedulerName: %s\n", name);
	cr_expect_eq(load(&c, yaml, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(strlen(c.scheduler_name), 253);
}

Test(awconfig, yaml_file)
{
	char path[] = "/tmp/awconfig-test-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, full_file, strlen(full_file)), (ssize_t)strlen(full_file));
	close(fd);
	sf_aw_config c;
	char err[512] = "";
	sf_awcfg_defaults(&c);
	cr_expect_eq(sf_awcfg_load_file(&c, path, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(c.ft.retry_limit, 7);
	cr_expect_str_eq(c.default_queue_name, "default-queue");

	/* errors start with the path */
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("appwrapper:\n  foo: 1\n", f);
	fclose(f);
	cr_expect_eq(sf_awcfg_load_file(&c, path, err, sizeof(err)), -EINVAL);
	cr_expect_eq(strncmp(err, path, strlen(path)), 0, "%s", err);
	cr_expect(strstr(err, "appwrapper.foo: unknown key") != NULL, "%s", err);
	unlink(path);

	cr_expect_eq(sf_awcfg_load_file(&c, path, err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, path) != NULL, "%s", err);
}

/* ---- annotations ---- */

#define A(name) "\"" SF_AW_ANNOT_PREFIX name "\""

static void resolve(const sf_aw_config *c, const char *json, sf_aw_settings *s)
{
	sf_jv ann = json ? sf_jv_root(json, strlen(json)) : SF_JV_NONE;
	memset(s, 0x5a, sizeof(*s));
	sf_aw_settings_resolve(c, ann, s);
}

/* Resolves annotations given as name/value pairs (names without the
 * prefix; values inserted into the JSON as written), NULL-terminated. */
static void resolve_pairs(const sf_aw_config *c, sf_aw_settings *s, const char *const *kv)
{
	char json[4096];
	size_t n = 0;
	json[n++] = '{';
	for (size_t i = 0; kv[i]; i += 2)
		n += (size_t)snprintf(json + n, sizeof(json) - n, "%s" A("%s") ":\"%s\"",
		                      i ? "," : "", kv[i], kv[i + 1]);
	snprintf(json + n, sizeof(json) - n, "}");
	cr_assert_lt(n, sizeof(json) - 2);
	resolve(c, json, s);
}

Test(awconfig, annotations_absent)
{
	sf_aw_config c;
	sf_aw_settings s;
	sf_awcfg_defaults(&c);
	const char *cases[] = {NULL, "{}", "{\"other/annotation\":\"1s\"}", "null", "[]"};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		resolve(&c, cases[i], &s);
		cr_expect_eq(s.admission_grace_ms, 60 * 1000);
		cr_expect_eq(s.warmup_grace_ms, 5 * 60 * 1000);
		cr_expect_eq(s.failure_grace_ms, 60 * 1000);
		cr_expect_eq(s.retry_pause_ms, 90 * 1000);
		cr_expect_eq(s.retry_limit, 3);
		cr_expect_eq(s.forceful_deletion_grace_ms, 10 * 60 * 1000);
		cr_expect_eq(s.deletion_on_failure_grace_ms, 0);
		cr_expect_eq(s.success_ttl_ms, INT64_C(7) * 24 * 3600 * 1000);
		cr_expect_eq(s.missing_grace_ms, 5 * 1000);
		cr_expect_eq(s.n_terminal, 0);
		cr_expect_eq(s.n_retryable, 0);
		cr_expect_str_eq(s.warning, "");
	}
}

Test(awconfig, annotations_override)
{
	sf_aw_config c;
	sf_aw_settings s;
	sf_awcfg_defaults(&c);
	resolve_pairs(&c, &s,
	              (const char *const[]){
	                  "admissionGracePeriodDuration", "10s", "warmupGracePeriodDuration",
	                  "1h30m", "failureGracePeriodDuration", "0", "retryPausePeriodDuration",
	                  "2.5s", "retryLimit", "+10", "forcefulDeletionGracePeriodDuration",
	                  "1500us", "deletionOnFailureGracePeriodDuration", "3m",
	                  "successTTLDuration", "1h", "missingComponentGracePeriodDuration", "20s",
	                  NULL});
	cr_expect_eq(s.admission_grace_ms, 10 * 1000);
	cr_expect_eq(s.warmup_grace_ms, 90 * 60 * 1000);
	cr_expect_eq(s.failure_grace_ms, 0);
	cr_expect_eq(s.retry_pause_ms, 2500);
	cr_expect_eq(s.retry_limit, 10);
	cr_expect_eq(s.forceful_deletion_grace_ms, 1);
	cr_expect_eq(s.deletion_on_failure_grace_ms, 3 * 60 * 1000);
	cr_expect_eq(s.success_ttl_ms, 3600 * 1000);
	cr_expect_eq(s.missing_grace_ms, 20 * 1000);
	cr_expect_str_eq(s.warning, "");
}

Test(awconfig, annotations_malformed_fall_back)
{
	sf_aw_config c;
	sf_aw_settings s;
	sf_awcfg_defaults(&c);
	c.ft.warmup_grace_ms = 7 * 60 * 1000;
	resolve_pairs(&c, &s,
	              (const char *const[]){"warmupGracePeriodDuration", "5 minutes",
	                                    "admissionGracePeriodDuration", "",
	                                    "retryPausePeriodDuration", "1d",
	                                    "deletionOnFailureGracePeriodDuration", "soon",
	                                    "missingComponentGracePeriodDuration", "30", NULL});
	cr_expect_eq(s.warmup_grace_ms, 7 * 60 * 1000);
	cr_expect_eq(s.admission_grace_ms, 60 * 1000);
	cr_expect_eq(s.retry_pause_ms, 90 * 1000);
	cr_expect_eq(s.deletion_on_failure_grace_ms, 0);
	cr_expect_eq(s.missing_grace_ms, 5 * 1000);
	/* the first malformed one in resolution order */
	cr_expect(strstr(s.warning, "admissionGracePeriodDuration") != NULL, "%s", s.warning);
	cr_expect(strstr(s.warning, "malformed duration") != NULL, "%s", s.warning);

	resolve(&c, "{" A("failureGracePeriodDuration") ":\"9999999999h\"}", &s);
	cr_expect_eq(s.failure_grace_ms, 60 * 1000);
	cr_expect(strstr(s.warning, "failureGracePeriodDuration: duration out of range; using "
	                            "default \"9999999999h\"") != NULL,
	          "%s", s.warning);

	/* a NUL inside the value is not the end of it (Go: unknown unit) */
	resolve(&c, "{" A("failureGracePeriodDuration") ":\"5s\\u0000x\"}", &s);
	cr_expect_eq(s.failure_grace_ms, 60 * 1000);
	cr_expect_neq(s.warning[0], '\0');

	/* not a string (the API server never sends this, but still) */
	resolve(&c, "{" A("failureGracePeriodDuration") ":5}", &s);
	cr_expect_eq(s.failure_grace_ms, 60 * 1000);
	cr_expect(strstr(s.warning, "not a string") != NULL, "%s", s.warning);
}

Test(awconfig, annotations_clamped)
{
	sf_aw_config c;
	sf_aw_settings s;
	sf_awcfg_defaults(&c);
	const int64_t day = INT64_C(24) * 3600 * 1000;
	resolve_pairs(&c, &s,
	              (const char *const[]){
	                  "admissionGracePeriodDuration", "-5s", "warmupGracePeriodDuration", "48h",
	                  "failureGracePeriodDuration", "-1ns", "retryPausePeriodDuration",
	                  "9223372036854775807ns", "forcefulDeletionGracePeriodDuration",
	                  "24h0m0.001s", "deletionOnFailureGracePeriodDuration", "-2562047h",
	                  "missingComponentGracePeriodDuration", "25h", NULL});
	cr_expect_eq(s.admission_grace_ms, 0);
	cr_expect_eq(s.warmup_grace_ms, day);
	cr_expect_eq(s.failure_grace_ms, 0);
	cr_expect_eq(s.retry_pause_ms, day);
	cr_expect_eq(s.forceful_deletion_grace_ms, day);
	cr_expect_eq(s.deletion_on_failure_grace_ms, 0);
	cr_expect_eq(s.missing_grace_ms, day);
	cr_expect_str_eq(s.warning, "");

	/* config values pass through the same clamp */
	c.ft.failure_grace_ms = -10;
	c.ft.deletion_grace_ms = 2 * day;
	resolve(&c, "{}", &s);
	cr_expect_eq(s.failure_grace_ms, 0);
	cr_expect_eq(s.forceful_deletion_grace_ms, day);
	/* a negative ceiling never yields a negative period */
	c.ft.grace_ceiling_ms = -1;
	resolve(&c, "{" A("warmupGracePeriodDuration") ":\"1s\"}", &s);
	cr_expect_eq(s.warmup_grace_ms, 0);
}

Test(awconfig, annotations_success_ttl)
{
	sf_aw_config c;
	sf_aw_settings s;
	sf_awcfg_defaults(&c);
	const int64_t week = INT64_C(7) * 24 * 3600 * 1000;
	static const struct {
		const char *val;
		int64_t want;
	} cases[] = {
	    {"\"1h\"", 3600 * 1000}, {"\"1ms\"", 1}, {"\"167h59m59.999s\"", week - 1},
	    {"\"168h\"", week},    /* not below the ceiling: the config's */
	    {"\"1000h\"", week},   /* above: the config's, not clamped */
	    {"\"0s\"", week},      /* not positive */
	    {"\"-1h\"", week},     /* not positive */
	    {"\"1ns\"", 0},        /* positive, truncated to ms */
	    {"\"forever\"", week}, /* malformed */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char json[256];
		snprintf(json, sizeof(json), "{" A("successTTLDuration") ":%s}", cases[i].val);
		resolve(&c, json, &s);
		cr_expect_eq(s.success_ttl_ms, cases[i].want, "%s: %lld", cases[i].val,
		             (long long)s.success_ttl_ms);
	}
	resolve(&c, "{" A("successTTLDuration") ":\"forever\"}", &s);
	cr_expect(strstr(s.warning, "successTTLDuration") != NULL, "%s", s.warning);
	resolve(&c, "{" A("successTTLDuration") ":\"1000h\"}", &s);
	cr_expect_str_eq(s.warning, "");
	/* the ceiling is the config's successTTLCeiling, not gracePeriodCeiling */
	c.ft.success_ttl_ms = INT64_C(30) * 24 * 3600 * 1000;
	resolve(&c, "{" A("successTTLDuration") ":\"300h\"}", &s);
	cr_expect_eq(s.success_ttl_ms, INT64_C(300) * 3600 * 1000);
}

Test(awconfig, annotations_retry_limit)
{
	sf_aw_config c;
	sf_aw_settings s;
	sf_awcfg_defaults(&c);
	static const struct {
		const char *val;
		int want;
		int warn;
	} cases[] = {
	    {"0", 0, 0},
	    {"5", 5, 0},
	    {"+5", 5, 0},
	    {"-1", -1, 0},
	    {"007", 7, 0},
	    {"2147483647", 2147483647, 0},
	    {"2147483648", INT32_MIN, 0}, /* Go's int32(int) wraps */
	    {"4294967296", 0, 0},
	    {"4294967301", 5, 0},
	    {"9223372036854775807", -1, 0},
	    {"9223372036854775808", 3, 1}, /* Atoi range error */
	    {"", 3, 1},
	    {"+", 3, 1},
	    {" 5", 3, 1},
	    {"5 ", 3, 1},
	    {"five", 3, 1},
	    {"5.0", 3, 1},
	    {"1_000", 3, 1},
	    {"0x10", 3, 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char json[256];
		snprintf(json, sizeof(json), "{" A("retryLimit") ":\"%s\"}", cases[i].val);
		resolve(&c, json, &s);
		cr_expect_eq(s.retry_limit, cases[i].want, "\"%s\": %d", cases[i].val,
		             s.retry_limit);
		cr_expect_eq(s.warning[0] != '\0', cases[i].warn, "\"%s\": warning \"%s\"",
		             cases[i].val, s.warning);
	}
	resolve(&c, "{" A("retryLimit") ":\"x\"}", &s);
	cr_expect(strstr(s.warning, "retryLimit: malformed integer; using default \"x\"") != NULL,
	          "%s", s.warning);
}

Test(awconfig, annotations_exit_codes)
{
	sf_aw_config c;
	sf_aw_settings s;
	sf_awcfg_defaults(&c);
	resolve(&c,
	        "{" A("terminalExitCodes") ":\"1,2,,x, 3,4 ,+5,-6,99999999999,0\"," A(
	            "retryableExitCodes") ":\"137\"}",
	        &s);
	int want_t[] = {1, 2, 5, -6, 0};
	cr_assert_eq(s.n_terminal, 5);
	for (int i = 0; i < 5; i++)
		cr_expect_eq(s.terminal_codes[i], want_t[i]);
	cr_assert_eq(s.n_retryable, 1);
	cr_expect_eq(s.retryable_codes[0], 137);
	/* the junk is reported once (the first skipped entry) */
	cr_expect(strstr(s.warning, "terminalExitCodes: entry ignored: \"\"") != NULL, "%s",
	          s.warning);

	/* a clean list leaves no warning; empty annotation gives nothing */
	resolve(&c, "{" A("retryableExitCodes") ":\"1,2,3\"," A("terminalExitCodes") ":\"\"}", &s);
	cr_expect_eq(s.n_retryable, 3);
	cr_expect_eq(s.n_terminal, 0);

	/* more than SF_AW_MAX_EXIT_CODES: the first ones are kept */
	char json[1024];
	int n = snprintf(json, sizeof(json), "{" A("retryableExitCodes") ":\"");
	for (int i = 0; i < SF_AW_MAX_EXIT_CODES + 8; i++)
		n += snprintf(json + n, sizeof(json) - (size_t)n, "%s%d", i ? "," : "", 100 + i);
	snprintf(json + n, sizeof(json) - (size_t)n, "\"}");
	resolve(&c, json, &s);
	cr_assert_eq(s.n_retryable, SF_AW_MAX_EXIT_CODES);
	for (int i = 0; i < SF_AW_MAX_EXIT_CODES; i++)
		cr_expect_eq(s.retryable_codes[i], 100 + i);
	cr_expect(strstr(s.warning, "more than 32 exit codes") != NULL, "%s", s.warning);
	cr_expect_eq(s.n_terminal, 0);
}

Test(awconfig, annotations_long_values)
{
	/* values longer than any internal buffer are read in full */
	sf_aw_config c;
	sf_aw_settings s;
	sf_awcfg_defaults(&c);
	char json[2048];
	int n = snprintf(json, sizeof(json), "{" A("failureGracePeriodDuration") ":\"");
	for (int i = 0; i < 500; i++)
		json[n++] = '0';
	n += snprintf(json + n, sizeof(json) - (size_t)n, "42s\"," A("terminalExitCodes") ":\"");
	for (int i = 0; i < 100; i++)
		n += snprintf(json + n, sizeof(json) - (size_t)n, "%s%d", i ? "," : "", i);
	snprintf(json + n, sizeof(json) - (size_t)n, "\"}");
	resolve(&c, json, &s);
	cr_expect_eq(s.failure_grace_ms, 42 * 1000);
	cr_expect_eq(s.n_terminal, SF_AW_MAX_EXIT_CODES);
}

/* ---- retry pause ---- */

Test(awconfig, retry_pause_doubling)
{
	sf_aw_config c;
	sf_aw_settings s;
	sf_awcfg_defaults(&c); /* 90s base, 1h ceiling */
	resolve(&c, "{}", &s);
	static const int64_t want[] = {90000, 180000, 360000, 720000, 1440000, 2880000, 3600000};
	for (int i = 0; i < 7; i++)
		cr_expect_eq(sf_aw_retry_pause_ms(&s, &c, i), want[i], "resets %d", i);
	cr_expect_eq(sf_aw_retry_pause_ms(&s, &c, 62), 3600000);
	cr_expect_eq(sf_aw_retry_pause_ms(&s, &c, 63), 3600000);
	cr_expect_eq(sf_aw_retry_pause_ms(&s, &c, 1000000), 3600000);
	cr_expect_eq(sf_aw_retry_pause_ms(&s, &c, -3), 90000);

	/* overflow-safe with a huge ceiling */
	c.ft.retry_pause_ceiling_ms = INT64_MAX;
	cr_expect_eq(sf_aw_retry_pause_ms(&s, &c, 40), INT64_C(90000) << 40);
	cr_expect_eq(sf_aw_retry_pause_ms(&s, &c, 100), INT64_MAX);
	cr_expect_eq(sf_aw_retry_pause_ms(&s, &c, 1000000), INT64_MAX);

	/* a base of 0 stays 0 */
	sf_awcfg_defaults(&c);
	s.retry_pause_ms = 0;
	cr_expect_eq(sf_aw_retry_pause_ms(&s, &c, 0), 0);
	cr_expect_eq(sf_aw_retry_pause_ms(&s, &c, 10), 0);
	s.retry_pause_ms = -5;
	cr_expect_eq(sf_aw_retry_pause_ms(&s, &c, 3), 0);

	/* ceiling 0: no doubling */
	s.retry_pause_ms = 1000;
	c.ft.retry_pause_ceiling_ms = 0;
	cr_expect_eq(sf_aw_retry_pause_ms(&s, &c, 5), 1000);
	/* an annotation above the ceiling is not shortened, and not doubled */
	sf_awcfg_defaults(&c);
	resolve(&c, "{" A("retryPausePeriodDuration") ":\"2h\"}", &s);
	cr_expect_eq(s.retry_pause_ms, 2 * 3600 * 1000);
	cr_expect_eq(sf_aw_retry_pause_ms(&s, &c, 0), 2 * 3600 * 1000);
	cr_expect_eq(sf_aw_retry_pause_ms(&s, &c, 3), 2 * 3600 * 1000);
	/* doubling that lands exactly on the ceiling */
	s.retry_pause_ms = 15 * 60 * 1000;
	cr_expect_eq(sf_aw_retry_pause_ms(&s, &c, 2), 3600 * 1000);
	cr_expect_eq(sf_aw_retry_pause_ms(&s, &c, 1), 30 * 60 * 1000);
}

Test(awconfig, autopilot_defaults_are_upstreams)
{
	sf_aw_config c;
	sf_awcfg_defaults(&c);
	const sf_aw_autopilot *ap = &c.autopilot;
	cr_assert(ap->inject_anti_affinities && ap->monitor_nodes);
	cr_assert_eq(ap->prefer_weight, 50);
	cr_assert_eq(ap->ntaints, 3);
	static const char *const values[] = {"WARN", "TESTING", "EVICT"};
	static const sf_taint_effect effects[] = {SF_TAINT_PREFER_NO_SCHEDULE, SF_TAINT_NO_SCHEDULE,
	                                          SF_TAINT_NO_EXECUTE};
	for (size_t i = 0; i < 3; i++) {
		cr_assert_str_eq(ap->taints[i].resource, "nvidia.com/gpu");
		cr_assert_str_eq(ap->taints[i].key, "autopilot.ibm.com/gpuhealth");
		cr_assert_str_eq(ap->taints[i].value, values[i]);
		cr_assert_eq(ap->taints[i].effect, effects[i]);
	}
	cr_assert_str_empty(c.slack_queue_name);
}

Test(awconfig, autopilot_keys_are_read)
{
	sf_aw_config c;
	char err[256] = "";
	sf_awcfg_defaults(&c);
	static const char yaml[] =
	    "appwrapper:\n"
	    "  slackQueueName: slack-cq\n"
	    "  autopilot:\n"
	    "    injectAntiAffinities: false\n"
	    "    monitorNodes: false\n"
	    "    preferNoScheduleWeight: 7\n"
	    "    resourceTaints:\n"
	    "      example.com/fpga:\n"
	    "      - {key: health.example.com/fpga, value: BAD, effect: NoExecute,"
	    " timeAdded: null}\n";
	cr_assert_eq(load(&c, yaml, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sf_awcfg_validate(&c, err, sizeof(err)), 0, "%s", err);
	const sf_aw_autopilot *ap = &c.autopilot;
	cr_assert_not(ap->inject_anti_affinities || ap->monitor_nodes);
	cr_assert_eq(ap->prefer_weight, 7);
	cr_assert_str_eq(c.slack_queue_name, "slack-cq");
	/* a resource of its own: the GPU defaults stay, the new one follows */
	cr_assert_eq(ap->ntaints, 4);
	cr_assert_str_eq(ap->taints[0].resource, "nvidia.com/gpu");
	cr_assert_str_eq(ap->taints[3].resource, "example.com/fpga");
	cr_assert_str_eq(ap->taints[3].key, "health.example.com/fpga");
	cr_assert_str_eq(ap->taints[3].value, "BAD");
	cr_assert_eq(ap->taints[3].effect, SF_TAINT_NO_EXECUTE);
	/* naming the GPU replaces its three; an empty list removes them */
	cr_assert_eq(load(&c,
	                  "appwrapper:\n  autopilot:\n    resourceTaints:\n"
	                  "      nvidia.com/gpu: []\n",
	                  err, sizeof(err)),
	             0, "%s", err);
	cr_assert_eq(ap->ntaints, 1);
	cr_assert_str_eq(ap->taints[0].resource, "example.com/fpga");
}

Test(awconfig, autopilot_errors_name_the_key)
{
	static const struct {
		const char *yaml, *err;
	} bad[] = {
	    {"appwrapper:\n  autopilot:\n    monitorNodes: 3\n",
	     "appwrapper.autopilot.monitorNodes: expected a boolean"},
	    {"appwrapper:\n  autopilot:\n    evictNodes: true\n",
	     "appwrapper.autopilot.evictNodes: unknown key"},
	    {"appwrapper:\n  autopilot:\n    resourceTaints: [a]\n",
	     "appwrapper.autopilot.resourceTaints: expected a mapping of resource names"},
	    {"appwrapper:\n  autopilot:\n    resourceTaints:\n      nvidia.com/gpu: {key: a}\n",
	     "appwrapper.autopilot.resourceTaints.nvidia.com/gpu: expected a sequence of taints"},
	    {"appwrapper:\n  autopilot:\n    resourceTaints:\n      nvidia.com/gpu:\n"
	     "      - {key: a, value: b, effect: Evict}\n",
	     "appwrapper.autopilot.resourceTaints.nvidia.com/gpu[0].effect: want PreferNoSchedule,"
	     " NoSchedule or NoExecute"},
	    {"appwrapper:\n  autopilot:\n    resourceTaints:\n      nvidia.com/gpu:\n"
	     "      - {value: b, effect: NoExecute}\n",
	     "appwrapper.autopilot.resourceTaints.nvidia.com/gpu[0]: needs a key and an effect"},
	    {"appwrapper:\n  autopilot:\n    resourceTaints:\n      nvidia.com/gpu:\n"
	     "      - {key: 'bad key', value: b, effect: NoExecute}\n",
	     "appwrapper.autopilot.resourceTaints.nvidia.com/gpu[0].key: not a node label key"},
	    {"appwrapper:\n  autopilot:\n    resourceTaints:\n      nvidia.com/gpu:\n"
	     "      - {key: a, value: 'not ok!', effect: NoExecute}\n",
	     "appwrapper.autopilot.resourceTaints.nvidia.com/gpu[0].value: not a label value"},
	    {"appwrapper:\n  autopilot:\n    resourceTaints:\n      nvidia.com/gpu:\n"
	     "      - {key: a, value: b, effect: NoExecute, color: red}\n",
	     "appwrapper.autopilot.resourceTaints.nvidia.com/gpu[0].color: unknown key"},
	    {"appwrapper:\n  slackQueueName: 5\n", "appwrapper.slackQueueName: expected a string"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sf_aw_config c, before;
		char err[256] = "";
		sf_awcfg_defaults(&c);
		before = c;
		cr_assert_eq(load(&c, bad[i].yaml, err, sizeof(err)), -EINVAL, "%s", bad[i].yaml);
		cr_assert(strstr(err, bad[i].err), "%s: got \"%s\", want \"%s\"", bad[i].yaml, err,
		          bad[i].err);
		cr_assert_eq(memcmp(&c, &before, sizeof(c)), 0, "changed on error: %s",
		             bad[i].yaml);
	}
	/* more than 16 taints in all */
	sf_buf b;
	sf_buf_init(&b, 0);
	sf_buf_puts(&b, "appwrapper:\n  autopilot:\n    resourceTaints:\n      x.io/r:\n");
	for (int i = 0; i < 17; i++)
		sf_buf_printf(&b, "      - {key: k%d, value: v, effect: NoSchedule}\n", i);
	sf_aw_config c;
	char err[256] = "";
	sf_awcfg_defaults(&c);
	cr_assert_eq(load(&c, b.data, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "more than 16 taints"), "%s", err);
	sf_buf_free(&b);
	/* the weight is a preferred term's: 1-100 */
	sf_awcfg_defaults(&c);
	cr_assert_eq(load(&c, "appwrapper:\n  autopilot:\n    preferNoScheduleWeight: 0\n", err,
	                  sizeof(err)),
	             0, "%s", err);
	cr_assert_eq(sf_awcfg_validate(&c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "autopilot.preferNoScheduleWeight 0 is outside 1-100"), "%s", err);
}

/* Every key upstream v1.2.1 and v1.2.2 accept (pkg/config: the two are the
 * same), with their defaults: accepted, and those with nothing to do here
 * named in the warning the controller logs at start. */
static const char upstream_v121_every_key[] =
    "appwrapper:\n"
    "  autopilot:\n"
    "    injectAntiAffinities: true\n"
    "    monitorNodes: true\n"
    "    preferNoScheduleWeight: 50\n"
    "    resourceTaints:\n"
    "      nvidia.com/gpu:\n"
    "      - {key: autopilot.ibm.com/gpuhealth, value: WARN, effect: PreferNoSchedule}\n"
    "      - {key: autopilot.ibm.com/gpuhealth, value: TESTING, effect: NoSchedule}\n"
    "      - {key: autopilot.ibm.com/gpuhealth, value: EVICT, effect: NoExecute}\n"
    "  userRBACAdmissionCheck: true\n"
    "  faultTolerance:\n"
    "    admissionGracePeriod: 1m\n"
    "    warmupGracePeriod: 5m\n"
    "    failureGracePeriod: 1m\n"
    "    resetPause: 90s\n"
    "    retryLimit: 3\n"
    "    deletionGracePeriod: 10m\n"
    "    gracePeriodCeiling: 24h\n"
    "    successTTLCeiling: 168h\n"
    "  schedulerName: \"\"\n"
    "  defaultQueueName: \"\"\n"
    "certManagement:\n"
    "  namespace: appwrapper-system\n"
    "  certificateDir: /tmp/k8s-webhook-server/serving-certs\n"
    "  certificateName: appwrapper-ca\n"
    "  certificateOrg: appwrapper\n"
    "  mutatingWebhookConfigName: appwrapper-mutating-webhook-configuration\n"
    "  validatingWebhookConfigName: appwrapper-validating-webhook-configuration\n"
    "  webhookServiceName: appwrapper-webhook-service\n"
    "  webhookSecretName: appwrapper-webhook-server-cert\n"
    "controllerManager:\n"
    "  metrics:\n"
    "    bindAddress: \":8443\"\n"
    "    secureServing: true\n"
    "  health:\n"
    "    bindAddress: \":8081\"\n"
    "  leaderElection: true\n"
    "  enableHTTP2: false\n"
    "webhooksEnabled: true\n";

Test(awconfig, every_upstream_v1_2_key_is_accepted_and_the_unused_named)
{
	sf_aw_config c;
	char err[256] = "";
	sf_awcfg_defaults(&c);
	cr_assert_eq(load(&c, upstream_v121_every_key, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sf_awcfg_validate(&c, err, sizeof(err)), 0, "%s", err);
	cr_assert(strstr(c.ignored, "certManagement.certificateOrg"), "%s", c.ignored);
	cr_assert(strstr(c.ignored, "controllerManager.enableHTTP2"), "%s", c.ignored);
	cr_assert_null(strstr(c.ignored, "faultTolerance"), "%s", c.ignored);
	/* and a key no version has is still an error */
	sf_awcfg_defaults(&c);
	cr_assert_neq(load(&c, "certManagement:\n  certificateOrgs: x\n", err, sizeof(err)), 0);
	cr_assert(strstr(err, "certManagement.certificateOrgs: unknown key"), "%s", err);
}
