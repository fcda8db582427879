/*
 * tl_kueue.c - the kueue suite's objects shared by its test files (see
 * tl_kueue.h).
 */
#include "tl_kueue.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tl_aw.h"

static const sf_gvr GVR_NODES = {"", "v1", "nodes", 0};

sf_obj *tl_kueue_get(tl_kube *k, const sf_gvr *gvr, const char *ns, const char *name)
{
	tl_res r;
	sf_kube_req q = {
	    .method = "GET", .gvr = gvr, .ns = gvr->namespaced ? ns : NULL, .name = name};
	tl_do(k, &q, &r);
	if (r.http_status == 404) {
		tl_res_clear(&r);
		return NULL;
	}
	cr_assert_eq(r.http_status, 200, "GET %s/%s: %ld %s", gvr->resource, name, r.http_status,
	             r.message);
	sf_obj *o = r.obj;
	r.obj = NULL;
	tl_res_clear(&r);
	return o;
}

void tl_kueue_delete(tl_kube *k, const sf_gvr *gvr, const char *name)
{
	tl_res r;
	sf_kube_req q = {.method = "DELETE", .gvr = gvr, .name = name};
	tl_do(k, &q, &r);
	tl_res_clear(&r);
}

void tl_kueue_pause(tl_kube *k, long ms)
{
	int never = 0;
	tl_run_until(&k->loop, &never, ms);
}

/* The node is schedulable: no taint of the node lifecycle controller's
 * (node.kubernetes.io/not-ready, set on every new node, until it is Ready). */
static int untainted(sf_jv node)
{
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(node, "spec.taints"));
	sf_jv t;
	char key[128];
	while (sf_jv_next(&it, NULL, &t))
		if (sf_jv_str(sf_jv_get(t, "key"), key, sizeof(key)) >= 0 &&
		    strncmp(key, "node.kubernetes.io/", 19) == 0)
			return 0;
	return 1;
}

void tl_kueue_create_node(tl_kube *k, const char *ns, const char *name, const char *labels,
                          const char *taints, int cpu, int gpu)
{
	char y[2048];
	snprintf(
	    y, sizeof(y),
	    "apiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n"
	    "  labels: {type: kwok, kubernetes.io/hostname: %s%s%s}\n"
	    "  annotations: {kwok.x-k8s.io/node: fake}\n"
	    "spec:\n  taints: %s\n"
	    "status:\n  capacity: {cpu: \"%d\", memory: 32Gi, pods: \"110\", "
	    "nvidia.com/gpu: \"%d\"}\n"
	    "  allocatable: {cpu: \"%d\", memory: 32Gi, pods: \"110\", nvidia.com/gpu: \"%d\"}\n",
	    name, name, labels[0] ? ", " : "", labels, taints, cpu, gpu, cpu, gpu);
	tl_aw_apply_yaml(k, ns, y, NULL, NULL);
	for (long ms = 30000;; ms -= 200) {
		sf_obj *o = tl_kueue_get(k, &GVR_NODES, NULL, name);
		cr_assert_not_null(o);
		char st[16] = "";
		tl_aw_condition(sf_jv_path(sf_obj_root(o), "status.conditions"), "Ready", st,
		                sizeof(st));
		if (strcmp(st, "True") == 0 && untainted(sf_obj_root(o))) {
			sf_obj_unref(o);
			return;
		}
		if (ms <= 0)
			cr_assert_fail("node %s not Ready and schedulable in 30 s: %s", name,
			               o->json);
		sf_obj_unref(o);
		tl_kueue_pause(k, 200);
	}
}
