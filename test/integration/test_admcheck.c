/*
 * test_admcheck.c - the controller's start-up check of the installed
 * admission against webhooksEnabled and userRBACAdmissionCheck
 * (admcheck.h, docs/admission.md), on the real control plane.
 *
 * The check reads manifests/admission's bindings by their fixed names, so
 * this suite creates bindings of those names (cluster-wide) that refer to
 * no policy and match no namespace: they change no admission anywhere but
 * are what the controller looks for. Each test starts a controller with a
 * config, awaits its summary line, and counts its verdict lines; then
 * changes the cluster and shows the other answer.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "steadfast/admcheck.h"
#include "tl.h"
#include "tl_aw.h"
#include "tl_ctl.h"

#define SUMMARY "\"disagreements\":" /* only the summary line has it */
#define AGREES "admission agrees with the config"
#define DISAGREES "admission disagrees with the config"
#define MISSING "admission missing that the config asks for"
#define EXTRA "admission installed that the config turns off"

static const sf_gvr VAPBS = {"admissionregistration.k8s.io", "v1",
                             "validatingadmissionpolicybindings", 0};
static const sf_gvr MAPBS = {"admissionregistration.k8s.io", "v1",
                             "mutatingadmissionpolicybindings", 0};

static tl_kube K;
static char NS[64];
static char CFG[64];

#define VAPB(name)                                                                                 \
	"apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n"    \
	"metadata: {name: " name "}\nspec:\n  policyName: steadfast-admcheck-no-such-policy\n"     \
	"  validationActions: [Deny]\n  matchResources:\n    namespaceSelector:\n"                 \
	"      matchLabels: {steadfast-admcheck: nowhere}\n"
#define MAPB(name)                                                                                 \
	"apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicyBinding\n"      \
	"metadata: {name: " name "}\nspec:\n  policyName: steadfast-admcheck-no-such-policy\n"     \
	"  matchResources:\n    namespaceSelector:\n"                                              \
	"      matchLabels: {steadfast-admcheck: nowhere}\n"

static void delete_binding(const sf_gvr *gvr, const char *name)
{
	tl_res r;
	sf_kube_req q = {.method = "DELETE", .gvr = gvr, .name = name};
	tl_do(&K, &q, &r);
	cr_assert(r.http_status == 200 || r.http_status == 404, "DELETE %s: %ld %s", name,
	          r.http_status, r.message);
	tl_res_clear(&r);
}

static void delete_all(void)
{
	delete_binding(&VAPBS, SF_ADM_BINDING);
	delete_binding(&MAPBS, SF_ADM_BINDING);
	delete_binding(&VAPBS, SF_ADM_RBAC_BINDING);
}

static void install(const char *yaml)
{
	tl_aw_apply_yaml(&K, NULL, yaml, NULL, NULL);
}

static void setup(void)
{
	tl_kube_open(&K, NULL, NULL);
	tl_aw_install_crd(&K);
	tl_namespace(&K, "admcheck", NS, sizeof(NS));
	delete_all();
	snprintf(CFG, sizeof(CFG), "/tmp/steadfast-admcheck-XXXXXX");
	int fd = mkstemp(CFG);
	cr_assert(fd >= 0);
	close(fd);
}

static void teardown(void)
{
	tl_ctl_stop_all(&K.loop);
	delete_all();
	unlink(CFG);
	tl_namespace_delete(&K, NS);
	tl_kube_close(&K);
}

TestSuite(admcheck, .init = setup, .fini = teardown, .timeout = 120);

/* Starts a controller with config text, waits for its summary line and
 * returns the controller (its lines stay readable). */
static tl_ctl *run(const char *config, const char *id)
{
	FILE *f = fopen(CFG, "w");
	cr_assert(f);
	fputs(config, f);
	fclose(f);
	tl_ctl_opts o = {.ns = NS, .lease = "steadfast-admcheck", .id = id, .config = CFG};
	tl_ctl *c = tl_ctl_start(&K.loop, &o);
	long at = tl_ctl_wait_log(&K.loop, c, SUMMARY, 0, 30000);
	if (at < 0)
		tl_ctl_dump(c, 40);
	cr_assert_geq(at, 0, "no admission summary line");
	return c;
}

Test(admcheck, user_rbac_binding_absent_while_the_check_is_on_is_an_error)
{
	install(VAPB(SF_ADM_BINDING) "---\n" MAPB(SF_ADM_BINDING));
	/* upstream's default: userRBACAdmissionCheck true */
	tl_ctl *c = run("appwrapper:\n  userRBACAdmissionCheck: true\n", "admcheck-rbac-off");
	cr_expect_eq(tl_ctl_count(c, DISAGREES, 0), 1);
	cr_expect_eq(tl_ctl_count(c, MISSING, 0), 1, "one binding is missing");
	cr_expect_eq(tl_ctl_count(c,
	                          "\"config\":\"appwrapper.userRBACAdmissionCheck=true\","
	                          "\"kind\":\"ValidatingAdmissionPolicyBinding\","
	                          "\"name\":\"" SF_ADM_RBAC_BINDING "\",\"state\":\"absent\"",
	                          0),
	             1);
	cr_expect_eq(tl_ctl_count(c, "\"level\":\"error\"", 0), 1, "errors other than the one");
	cr_expect_eq(tl_ctl_count(c, "may not create directly", 0), 1,
	             "the error says what a user can then do");
	tl_ctl_stop_all(&K.loop);

	/* installed: the same config agrees */
	install(VAPB(SF_ADM_RBAC_BINDING));
	c = run("appwrapper:\n  userRBACAdmissionCheck: true\n", "admcheck-rbac-on");
	cr_expect_eq(tl_ctl_count(c, AGREES, 0), 1);
	cr_expect_eq(tl_ctl_count(c, "\"level\":\"error\"", 0), 0);
	tl_ctl_stop_all(&K.loop);

	/* and the check turned off with the binding still there */
	c = run("appwrapper:\n  userRBACAdmissionCheck: false\n", "admcheck-rbac-extra");
	cr_expect_eq(tl_ctl_count(c, EXTRA, 0), 1);
	cr_expect_eq(tl_ctl_count(c,
	                          "\"config\":\"appwrapper.userRBACAdmissionCheck=false\","
	                          "\"kind\":\"ValidatingAdmissionPolicyBinding\","
	                          "\"name\":\"" SF_ADM_RBAC_BINDING "\",\"state\":\"installed\"",
	                          0),
	             1);
}

Test(admcheck, policies_installed_while_webhooks_are_disabled_is_an_error)
{
	install(
	    VAPB(SF_ADM_BINDING) "---\n" MAPB(SF_ADM_BINDING) "---\n" VAPB(SF_ADM_RBAC_BINDING));
	tl_ctl *c = run("webhooksEnabled: false\ncertManagement:\n  namespace: x\n",
	                "admcheck-webhooks-off");
	cr_expect_eq(tl_ctl_count(c, DISAGREES, 0), 1);
	cr_expect_eq(tl_ctl_count(c, EXTRA, 0), 3, "every binding is reported");
	cr_expect_eq(tl_ctl_count(c, "\"config\":\"webhooksEnabled=false\"", 0), 3);
	cr_expect_eq(
	    tl_ctl_count(c,
	                 "\"kind\":\"MutatingAdmissionPolicyBinding\",\"name\":\"" SF_ADM_BINDING
	                 "\",\"state\":\"installed\"",
	                 0),
	    1);
	cr_expect_eq(tl_ctl_count(c, "certManagement: nothing to manage", 0), 1);
	tl_ctl_stop_all(&K.loop);

	/* removed: the same config agrees */
	delete_all();
	c = run("webhooksEnabled: false\n", "admcheck-webhooks-none");
	cr_expect_eq(tl_ctl_count(c, AGREES, 0), 1);
	cr_expect_eq(tl_ctl_count(c, "\"level\":\"error\"", 0), 0);
	cr_expect_eq(tl_ctl_count(c, "certManagement", 0), 0);
	tl_ctl_stop_all(&K.loop);

	/* and webhooks on with nothing installed: each one is missing */
	c = run("webhooksEnabled: true\n", "admcheck-webhooks-missing");
	cr_expect_eq(tl_ctl_count(c, MISSING, 0), 3);
	cr_expect_eq(tl_ctl_count(c, "\"config\":\"webhooksEnabled=true\"", 0), 2);
}
