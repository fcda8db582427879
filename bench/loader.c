/*
 * loader.c - creates and updates custom objects for the informer benchmark.
 *
 *   loader setup  NS COUNT [BYTES]   install the bench CRD, wait until it is
 *                            served, create the namespace and COUNT objects
 *                            with a filler of BYTES (default 700: ~1 KiB each)
 *   loader update NS COUNT ROUND   merge-patch spec.round=ROUND into each
 *
 * Requests run 32 at a time without client-side rate limiting, so the
 * server, not the loader, sets the pace.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "steadfast/client.h"
#include "steadfast/config.h"
#include "steadfast/time.h"

#define GROUP "bench.steadfast.dev"
#define INFLIGHT 32

static sf_gvr widgets = {GROUP, "v1", "widgets", 1};

typedef struct run {
	uv_loop_t loop;
	sf_kube_client *c;
	int pending;
	long ok, failed;
	int last_status;
	char last_msg[256];
} run;

static void done_cb(void *ud, const sf_kube_result *r)
{
	run *x = ud;
	x->pending--;
	if (sf_kube_ok(r) || sf_kube_is_already_exists(r)) {
		x->ok++;
	} else {
		x->failed++;
		x->last_status = (int)r->http_status;
		snprintf(x->last_msg, sizeof(x->last_msg), "%s", r->errmsg);
	}
}

static void drain(run *x, int upto)
{
	while (x->pending > upto)
		uv_run(&x->loop, UV_RUN_ONCE);
}

static int one(run *x, const sf_kube_req *req)
{
	int rc = sf_kube_do(x->c, req, done_cb, x, NULL);
	if (rc)
		return rc;
	x->pending++;
	drain(x, INFLIGHT - 1);
	return 0;
}

static void pad(char *out, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++)
		out[i] = (char)('a' + i % 26);
	out[n - 1] = '\0';
}

static int setup(run *x, const char *ns, long count, size_t filler_bytes)
{
	const char *crd =
	    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
	    "\"metadata\":{\"name\":\"widgets." GROUP "\"},\"spec\":{\"group\":\"" GROUP
	    "\",\"scope\":\"Namespaced\","
	    "\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\",\"kind\":\"Widget\","
	    "\"listKind\":\"WidgetList\"},"
	    "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
	    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-"
	    "fields\":true}}}]}}";
	sf_kube_req r1 = {
	    .method = "POST", .gvr = &SF_GVR_CRDS, .body = crd, .body_len = strlen(crd)};
	one(x, &r1);
	char nsb[256];
	snprintf(nsb, sizeof(nsb),
	         "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}",
	         ns);
	sf_kube_req r2 = {
	    .method = "POST", .gvr = &SF_GVR_NAMESPACES, .body = nsb, .body_len = strlen(nsb)};
	one(x, &r2);
	drain(x, 0);
	/* wait until the CRD is served: list until 200 (bounded) */
	for (int i = 0; i < 300; i++) {
		long before = x->ok;
		sf_kube_req g = {.method = "GET", .gvr = &widgets, .ns = ns, .query = "limit=1"};
		one(x, &g);
		drain(x, 0);
		if (x->ok > before)
			break;
		uv_sleep(100);
	}
	x->failed = 0;
	size_t cap = filler_bytes + 512;
	char *filler = malloc(filler_bytes + 1), *body = malloc(cap);
	if (!filler || !body)
		return 1;
	pad(filler, filler_bytes + 1);
	long ok0 = x->ok;
	for (long i = 0; i < count; i++) {
		snprintf(body, cap,
		         "{\"apiVersion\":\"" GROUP
		         "/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w-%06ld\","
		         "\"labels\":{\"app\":\"bench\",\"shard\":\"s%ld\"}},\"spec\":{\"size\":%"
		         "ld,\"owner\":\"team-%ld\","
		         "\"filler\":\"%s\"}}",
		         i, i % 16, i, i % 7, filler);
		sf_kube_req r = {.method = "POST",
		                 .gvr = &widgets,
		                 .ns = ns,
		                 .body = body,
		                 .body_len = strlen(body)};
		if (one(x, &r))
			return 1;
	}
	drain(x, 0);
	free(filler);
	free(body);
	fprintf(stderr, "loader: created %ld objects (%ld failed)\n", x->ok - ok0, x->failed);
	return x->failed ? 1 : 0;
}

static int update(run *x, const char *ns, long count, const char *round)
{
	char body[128];
	snprintf(body, sizeof(body), "{\"spec\":{\"round\":\"%s\"}}", round);
	for (long i = 0; i < count; i++) {
		char name[32];
		snprintf(name, sizeof(name), "w-%06ld", i);
		sf_kube_req r = {.method = "PATCH",
		                 .gvr = &widgets,
		                 .ns = ns,
		                 .name = name,
		                 .body = body,
		                 .body_len = strlen(body),
		                 .content_type = "application/merge-patch+json"};
		if (one(x, &r))
			return 1;
	}
	drain(x, 0);
	if (x->failed)
		fprintf(stderr, "loader: %ld updates failed (last %d %s)\n", x->failed,
		        x->last_status, x->last_msg);
	return x->failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr,
		        "usage: loader setup NS COUNT [BYTES] | loader update NS COUNT ROUND\n");
		return 2;
	}
	char err[512];
	sf_kube_config *cfg;
	if (sf_kube_config_load(NULL, NULL, &cfg, err, sizeof(err))) {
		fprintf(stderr, "loader: %s\n", err);
		return 1;
	}
	run x = {0};
	uv_loop_init(&x.loop);
	sf_kube_client_opts o = {.qps = -1, .timeout_ms = 120000};
	if (sf_kube_client_new(&x.loop, cfg, &o, &x.c))
		return 1;
	long count = atol(argv[3]);
	if (!strcmp(argv[1], "setup"))
		return setup(&x, argv[2], count, argc >= 5 ? (size_t)atol(argv[4]) : 700);
	if (!strcmp(argv[1], "update") && argc >= 5)
		return update(&x, argv[2], count, argv[4]);
	fprintf(stderr, "loader: unknown command %s\n", argv[1]);
	return 2;
}
