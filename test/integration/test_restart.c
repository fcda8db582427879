/*
 * test_restart.c - the client across a kube-apiserver restart: requests
 * fail as transport errors while it is down, work again once it is back
 * (curl reconnects), and the client still closes cleanly afterwards.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "steadfast/client.h"
#include "tl.h"

static void apiserver(const char *what)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "test/cluster/restart-apiserver.sh '%s' %s >/dev/null",
	         tl_env("STEADFAST_CLUSTER_DIR"), what);
	cr_assert_eq(system(cmd), 0, "%s failed", cmd);
}

static long version_status(tl_kube *k, int *err)
{
	tl_res r = {0};
	sf_kube_req req = {.method = "GET", .path = "/version", .timeout_ms = 5000};
	tl_do(k, &req, &r);
	*err = r.err;
	long st = r.http_status;
	tl_res_clear(&r);
	return st;
}

Test(restart, client_recovers_and_closes_after_apiserver_restart, .timeout = 120)
{
	tl_kube k;
	tl_kube_open(&k, NULL, NULL);
	int err;
	cr_assert_eq(version_status(&k, &err), 200);
	apiserver("stop");
	cr_assert_eq(version_status(&k, &err), 0);
	cr_assert_lt(err, 0, "a transport error while the API server is down");
	apiserver("start");
	cr_assert_eq(version_status(&k, &err), 200, "err %d", err);
	tl_kube_close(&k);
}
