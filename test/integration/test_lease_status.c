/*
 * test_lease_status.c - `steadfast lease status` against real Leases: the
 * text and JSON views, and the exit codes scripts rely on.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/client.h"
#include "steadfast/time.h"
#include "tl.h"

static tl_kube K;

static void setup(void)
{
	tl_kube_open(&K, NULL, NULL);
}

static void teardown(void)
{
	tl_kube_close(&K);
}

TestSuite(lease_status, .init = setup, .fini = teardown, .timeout = 120);

/* Runs the command; returns its exit code and its stdout in out. */
static int run(const char *ns, const char *name, const char *extra, char *out, size_t n)
{
	char cmd[1024];
	const char *bin = getenv("STEADFAST_BIN") ? getenv("STEADFAST_BIN") : "build/steadfast";
	snprintf(cmd, sizeof(cmd), "%s lease status --kubeconfig '%s' -n %s --name %s %s", bin,
	         tl_env("KUBECONFIG"), ns, name, extra);
	sf_buf b;
	sf_buf_init(&b, 0);
	int st = tl_sh(&b, "%s", cmd);
	cr_assert(st >= 0, "%s did not exit", cmd);
	snprintf(out, n, "%s", b.data);
	sf_buf_free(&b);
	return st;
}

static void create(const char *ns, const char *body)
{
	tl_res r = {0};
	cr_assert_eq(sf_kube_create(K.client, &SF_GVR_LEASES, ns, body, tl_res_cb, &r, NULL), 0);
	tl_wait(&K.loop, &r, 30000);
	cr_assert_eq(r.http_status, 201, "%s", r.message);
	tl_res_clear(&r);
}

/* A Lease renewed age_s seconds ago. */
static void lease_aged(const char *ns, const char *name, const char *holder, int age_s)
{
	char now[40], body[768];
	sf_time_rfc3339micro(sf_wall_ns() - (int64_t)age_s * 1000000000, now, sizeof(now));
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"coordination.k8s.io/"
	         "v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"%s\"},"
	         "\"spec\":{\"holderIdentity\":\"%s\",\"leaseDurationSeconds\":15,\"acquireTime\":"
	         "\"%s\","
	         "\"renewTime\":\"%s\",\"leaseTransitions\":3}}",
	         name, holder, now, now);
	create(ns, body);
}

static void lease(const char *ns, const char *name, const char *holder)
{
	lease_aged(ns, name, holder, 0);
}

Test(lease_status, held_released_and_absent)
{
	char ns[64], out[4096];
	tl_namespace(&K, "it-ls", ns, sizeof(ns));
	lease(ns, "held", "pod-a_1234");
	cr_assert_eq(run(ns, "held", "", out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "pod-a_1234"), "holder missing: %s", out);
	cr_assert_eq(run(ns, "held", "-o json", out, sizeof(out)), 0, "%s", out);
	sf_obj *o = sf_obj_parse(out, strlen(out), NULL, 0);
	cr_assert_not_null(o, "-o json is not JSON: %s", out);
	char h[64];
	cr_assert_gt(sf_jv_str(sf_jv_get(sf_obj_root(o), "holderIdentity"), h, sizeof(h)), 0, "%s",
	             out);
	cr_assert_str_eq(h, "pod-a_1234");
	int healthy = 0;
	cr_assert_eq(sf_jv_bool(sf_jv_get(sf_obj_root(o), "healthy"), &healthy), 0);
	cr_assert_eq(healthy, 1);
	sf_obj_unref(o);

	lease(ns, "released", "");
	cr_assert_eq(run(ns, "released", "", out, sizeof(out)), 2, "%s", out);
	cr_assert_eq(run(ns, "absent", "", out, sizeof(out)), 3, "%s", out);
	tl_namespace_delete(&K, ns);
}

/* The other verdicts, and the code of a usage error, which no verdict
 * shares. */
Test(lease_status, expired_invalid_unreadable_and_usage)
{
	char ns[64], out[4096];
	tl_namespace(&K, "it-ls", ns, sizeof(ns));
	lease_aged(ns, "expired", "pod-b_5678", 600);
	cr_assert_eq(run(ns, "expired", "", out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "expired"), "%s", out);
	cr_assert_eq(run(ns, "expired", "-o json", out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "\"status\":\"expired\""), "%s", out);
	/* held, but no renewTime and no duration */
	char body[512];
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
	         "\"metadata\":{\"name\":\"invalid\"},\"spec\":{\"holderIdentity\":\"x\"}}");
	create(ns, body);
	cr_assert_eq(run(ns, "invalid", "", out, sizeof(out)), 4, "%s", out);
	cr_assert(strstr(out, "invalid"), "%s", out);

	/* no credentials: unreadable (5), not a usage error */
	sf_buf b;
	sf_buf_init(&b, 0);
	const char *bin = getenv("STEADFAST_BIN") ? getenv("STEADFAST_BIN") : "build/steadfast";
	cr_assert_eq(
	    tl_sh(&b, "%s lease status --kubeconfig /nonexistent/kc -n %s 2>/dev/null", bin, ns),
	    5);
	/* usage errors: 64, whatever else is on the line */
	cr_assert_eq(run(ns, "expired", "-o yaml 2>/dev/null", out, sizeof(out)), 64, "%s", out);
	cr_assert_eq(run(ns, "expired", "--bogus 2>/dev/null", out, sizeof(out)), 64, "%s", out);
	cr_assert_eq(run(ns, "expired", "--name 2>/dev/null", out, sizeof(out)), 64, "%s", out);
	sf_buf_free(&b);
	tl_namespace_delete(&K, ns);
}
