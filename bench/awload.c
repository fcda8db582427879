/*
 * awload.c - the API server's raw ceiling for the writes of AppWrapper
 * lifecycles, with no controller running (tools/bench_appwrapper.py).
 *
 *   awload NS COUNT STATUS META INFLIGHT[,INFLIGHT...]
 *
 * For each in-flight level L in turn: creates COUNT AppWrappers aw-L-i in
 * NS (untimed; each wraps the same one-pod Job as the controller runs),
 * then sends, timed, the mix of writes one lifecycle costs the controller,
 * per AppWrapper, one request after the other (each status patch carries
 * the resourceVersion the previous answer gave, as the controller's do):
 *
 *   META-1 metadata patches (finalizer added), STATUS/3 status patches,
 *   the Job's create (controlled by the AppWrapper, as the controller
 *   makes it), STATUS/3 status patches, the Job's delete (UID
 *   precondition, propagationPolicy Background), one metadata patch
 *   (finalizer removed), the remaining status patches.
 *
 * L AppWrappers are worked on at once, so L requests are in flight; there
 * is no client-side rate limit. Prints one JSON line per level: requests,
 * failures, the rate over the whole level and between the 10th and 90th
 * percentile of completions (sustained), mean latency per kind.
 *
 * Why C: a driver in Python with threads is itself CPU bound at a few
 * hundred requests/s on this 2-core machine; this uses the controller's
 * own client (HTTP/2, one connection), so the ceiling is the server's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "steadfast/awapi.h"
#include "steadfast/client.h"
#include "steadfast/config.h"
#include "steadfast/time.h"

#define FINALIZER "workload.codeflare.dev/finalizer"
#define SETUP_INFLIGHT 64

enum { OP_STATUS, OP_META, OP_CREATE, OP_DELETE, OP_KINDS };
static const char *const OP_NAMES[OP_KINDS] = {"patch_status", "patch_meta", "create_job",
                                               "delete_job"};

typedef struct obj {
	char name[64];
	char uid[64];
	char rv[32];
	char job_uid[64];
	int has_fin;
	int step; /* next op index */
} obj;

typedef struct run {
	uv_loop_t loop;
	sf_kube_client *c;
	const char *ns;
	obj *objs;
	long count, next; /* objects; the next to start */
	int *ops;         /* the mix, in order */
	int nops;
	int pending;
	long ok, failed;
	char last_err[256];
	/* timing of the timed part */
	double *done_at; /* completion times (s since start), one per request */
	long ndone;
	int64_t t0;
	double lat_sum[OP_KINDS];
	long lat_n[OP_KINDS];
} run;

typedef struct call {
	run *x;
	obj *o;
	int kind;
	int64_t sent;
} call;

static void fail(run *x, const sf_kube_result *r)
{
	x->failed++;
	sf_kube_result_str(r, x->last_err, sizeof(x->last_err));
}

static void copy_str(sf_jv root, const char *path, char *buf, size_t cap)
{
	if (sf_jv_str(sf_jv_path(root, path), buf, cap) < 0)
		buf[0] = '\0';
}

static int has_finalizer(sf_jv root)
{
	sf_jv f = sf_jv_path(root, "metadata.finalizers");
	for (size_t i = 0; i < sf_jv_len(f); i++)
		if (sf_jv_streq(sf_jv_at(f, i), FINALIZER))
			return 1;
	return 0;
}

/* ----------------------------------------------------------------- setup */

static const char JOB_SPEC[] =
    "{\"completions\":1,\"parallelism\":1,\"backoffLimit\":0,\"template\":{\"spec\":{"
    "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\",\"image\":\"busybox:1.36\","
    "\"command\":[\"sh\",\"-c\",\"sleep 600\"],\"resources\":{\"requests\":{\"cpu\":\"10m\"}}}]"
    "}}}";

static void created_cb(void *ud, const sf_kube_result *r)
{
	call *k = ud;
	run *x = k->x;
	x->pending--;
	if (sf_kube_ok(r) && r->obj) {
		sf_jv root = sf_obj_root(r->obj);
		copy_str(root, "metadata.uid", k->o->uid, sizeof(k->o->uid));
		copy_str(root, "metadata.resourceVersion", k->o->rv, sizeof(k->o->rv));
		k->o->has_fin = has_finalizer(root);
		x->ok++;
	} else {
		fail(x, r);
	}
	free(k);
}

static void drain(run *x, int upto)
{
	while (x->pending > upto)
		uv_run(&x->loop, UV_RUN_ONCE);
}

static int create_all(run *x, int level)
{
	char body[2048];
	for (long i = 0; i < x->count; i++) {
		obj *o = &x->objs[i];
		memset(o, 0, sizeof(*o));
		snprintf(o->name, sizeof(o->name), "aw-%d-%05ld", level, i);
		snprintf(
		    body, sizeof(body),
		    "{\"apiVersion\":\"workload.codeflare.dev/v1beta2\",\"kind\":\"AppWrapper\","
		    "\"metadata\":{\"name\":\"%s\",\"annotations\":{\"workload.codeflare.dev."
		    "appwrapper/warmupGracePeriodDuration\":\"2h\"}},\"spec\":{\"suspend\":true,"
		    "\"components\":[{\"template\":{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\","
		    "\"metadata\":{\"name\":\"%s\"},\"spec\":%s}}]}}",
		    o->name, o->name, JOB_SPEC);
		call *k = calloc(1, sizeof(*k));
		if (!k)
			return -ENOMEM;
		*k = (call){.x = x, .o = o};
		int rc =
		    sf_kube_create(x->c, &SF_GVR_APPWRAPPERS, x->ns, body, created_cb, k, NULL);
		if (rc) {
			free(k);
			return rc;
		}
		x->pending++;
		drain(x, SETUP_INFLIGHT - 1);
	}
	drain(x, 0);
	return x->failed ? -EIO : 0;
}

/* ------------------------------------------------------------ timed mix */

static int start_next(run *x, obj *o);

static void step_cb(void *ud, const sf_kube_result *r)
{
	call *k = ud;
	run *x = k->x;
	obj *o = k->o;
	int64_t now = sf_mono_ns();
	x->pending--;
	x->done_at[x->ndone++] = (double)(now - x->t0) / 1e9;
	x->lat_sum[k->kind] += (double)(now - k->sent) / 1e6;
	x->lat_n[k->kind]++;
	int ok = sf_kube_ok(r);
	if (ok) {
		x->ok++;
		if (r->obj) {
			sf_jv root = sf_obj_root(r->obj);
			if (k->kind == OP_CREATE)
				copy_str(root, "metadata.uid", o->job_uid, sizeof(o->job_uid));
			else if (k->kind == OP_STATUS || k->kind == OP_META) {
				copy_str(root, "metadata.resourceVersion", o->rv, sizeof(o->rv));
				o->has_fin = has_finalizer(root);
			}
		}
	} else {
		fail(x, r);
	}
	free(k);
	/* a failed step ends this AppWrapper's chain: its next writes would
	 * carry a stale resourceVersion */
	if (ok && o->step < x->nops) {
		if (start_next(x, o) == 0)
			return;
	}
	/* this chain is done: start the next AppWrapper's */
	while (x->next < x->count) {
		obj *n = &x->objs[x->next++];
		if (start_next(x, n) == 0)
			return;
	}
}

static int start_next(run *x, obj *o)
{
	int kind = x->ops[o->step++];
	char body[1024];
	call *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	*k = (call){.x = x, .o = o, .kind = kind, .sent = sf_mono_ns()};
	int rc = -EINVAL;
	switch (kind) {
	case OP_STATUS: {
		char ts[40];
		sf_time_rfc3339(sf_wall_ns(), ts, sizeof(ts));
		snprintf(body, sizeof(body),
		         "{\"metadata\":{\"resourceVersion\":\"%s\"},\"status\":{\"phase\":\"%s\","
		         "\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":\"%s\","
		         "\"reason\":\"Step%d\",\"message\":\"step %d of the lifecycle\","
		         "\"lastTransitionTime\":\"%s\"}]}}",
		         o->rv, o->step % 2 ? "Running" : "Suspended",
		         o->step % 2 ? "True" : "False", o->step, o->step, ts);
		rc = sf_kube_patch(x->c, &SF_GVR_APPWRAPPERS, x->ns, o->name, "status",
		                   SF_PATCH_MERGE, body, NULL, 0, step_cb, k, NULL);
		break;
	}
	case OP_META:
		snprintf(body, sizeof(body),
		         "{\"metadata\":{\"resourceVersion\":\"%s\",\"finalizers\":%s}}", o->rv,
		         o->has_fin ? "null" : "[\"" FINALIZER "\"]");
		rc = sf_kube_patch(x->c, &SF_GVR_APPWRAPPERS, x->ns, o->name, NULL, SF_PATCH_MERGE,
		                   body, NULL, 0, step_cb, k, NULL);
		break;
	case OP_CREATE:
		snprintf(
		    body, sizeof(body),
		    "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"%s\","
		    "\"namespace\":\"%s\",\"labels\":{\"workload.codeflare.dev/"
		    "appwrapper\":\"%s\"},"
		    "\"ownerReferences\":[{\"apiVersion\":\"workload.codeflare.dev/v1beta2\","
		    "\"kind\":\"AppWrapper\",\"name\":\"%s\",\"uid\":\"%s\",\"controller\":true,"
		    "\"blockOwnerDeletion\":true}]},\"spec\":%s}",
		    o->name, x->ns, o->name, o->name, o->uid, JOB_SPEC);
		rc = sf_kube_create(x->c, &SF_GVR_JOBS, x->ns, body, step_cb, k, NULL);
		break;
	case OP_DELETE: {
		sf_kube_delete_opts d = {
		    .propagation = "Background", .precond_uid = o->job_uid, .grace_seconds = -1};
		rc = sf_kube_delete(x->c, &SF_GVR_JOBS, x->ns, o->name, &d, step_cb, k, NULL);
		break;
	}
	}
	if (rc) {
		free(k);
		snprintf(x->last_err, sizeof(x->last_err), "%s: cannot send: %s", OP_NAMES[kind],
		         strerror(-rc));
		x->failed++;
		return rc;
	}
	x->pending++;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int run_level(run *x, int level)
{
	x->ok = x->failed = 0;
	int rc = create_all(x, level);
	if (rc) {
		fprintf(stderr, "awload: creating AppWrappers: %s\n", x->last_err);
		return 1;
	}
	long total = x->count * x->nops;
	free(x->done_at);
	x->done_at = calloc((size_t)(total + x->count) + 1, sizeof(double));
	if (!x->done_at)
		return 1;
	x->ndone = 0;
	x->ok = x->failed = 0;
	memset(x->lat_sum, 0, sizeof(x->lat_sum));
	memset(x->lat_n, 0, sizeof(x->lat_n));
	x->next = 0;
	x->t0 = sf_mono_ns();
	while (x->next < x->count && x->next < level) {
		obj *o = &x->objs[x->next++];
		start_next(x, o);
	}
	drain(x, 0);
	double elapsed = (double)(sf_mono_ns() - x->t0) / 1e9;
	qsort(x->done_at, (size_t)x->ndone, sizeof(double), cmp_double);
	double sustained = 0;
	if (x->ndone >= 10) {
		long a = x->ndone / 10, b = x->ndone * 9 / 10;
		double span = x->done_at[b] - x->done_at[a];
		if (span > 0)
			sustained = (double)(b - a) / span;
	}
	long requests = x->ndone, ok = x->ok, failed = x->failed;
	/* AppWrappers still holding a finalizer (a chain cut short) would keep
	 * the namespace from going: remove it, untimed */
	for (long i = 0; i < x->count; i++) {
		obj *o = &x->objs[i];
		if (!o->has_fin)
			continue;
		o->step = 0;
		int meta = OP_META, *ops = x->ops, nops = x->nops;
		x->ops = &meta;
		x->nops = 1;
		x->next = x->count;
		start_next(x, o);
		drain(x, 0);
		x->ops = ops;
		x->nops = nops;
	}
	printf("{\"inflight\":%d,\"objects\":%ld,\"requests\":%ld,\"ok\":%ld,\"failed\":%ld,"
	       "\"elapsed_s\":%.3f,\"rps\":%.1f,\"rps_sustained\":%.1f,\"mean_ms\":{",
	       level < x->count ? level : (int)x->count, x->count, requests, ok, failed, elapsed,
	       elapsed > 0 ? (double)requests / elapsed : 0, sustained);
	for (int i = 0; i < OP_KINDS; i++)
		printf("%s\"%s\":%.2f", i ? "," : "", OP_NAMES[i],
		       x->lat_n[i] ? x->lat_sum[i] / (double)x->lat_n[i] : 0.0);
	printf("}");
	if (failed) {
		char esc[256];
		size_t j = 0;
		for (const char *p = x->last_err; *p && j + 2 < sizeof(esc); p++)
			if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
				esc[j++] = *p;
		esc[j] = '\0';
		printf(",\"last_error\":\"%s\"", esc);
	}
	printf("}\n");
	fflush(stdout);
	return 0;
}

/* The mix in the order of a lifecycle (see the top of the file). */
static int build_mix(run *x, int status, int meta)
{
	x->ops = calloc((size_t)(status + meta + 2), sizeof(int));
	if (!x->ops)
		return -ENOMEM;
	int n = 0, a = status / 3, b = status / 3;
	for (int i = 0; i < meta - 1; i++)
		x->ops[n++] = OP_META;
	for (int i = 0; i < a; i++)
		x->ops[n++] = OP_STATUS;
	x->ops[n++] = OP_CREATE;
	for (int i = 0; i < b; i++)
		x->ops[n++] = OP_STATUS;
	x->ops[n++] = OP_DELETE;
	if (meta > 0)
		x->ops[n++] = OP_META;
	for (int i = 0; i < status - a - b; i++)
		x->ops[n++] = OP_STATUS;
	x->nops = n;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: awload NS COUNT STATUS META INFLIGHT[,INFLIGHT...]\n");
		return 2;
	}
	run x = {.ns = argv[1], .count = atol(argv[2])};
	int status = atoi(argv[3]), meta = atoi(argv[4]);
	if (x.count <= 0 || status < 0 || meta < 0 || status > 64 || meta > 8) {
		fprintf(stderr, "awload: bad COUNT, STATUS or META\n");
		return 2;
	}
	char err[512];
	sf_kube_config *cfg;
	if (sf_kube_config_load(NULL, NULL, &cfg, err, sizeof(err))) {
		fprintf(stderr, "awload: %s\n", err);
		return 1;
	}
	uv_loop_init(&x.loop);
	sf_kube_client_opts o = {.qps = -1, .timeout_ms = 120000, .user_agent = "bench-awload/1"};
	if (sf_kube_client_new(&x.loop, cfg, &o, &x.c))
		return 1;
	x.objs = calloc((size_t)x.count, sizeof(obj));
	if (!x.objs || build_mix(&x, status, meta))
		return 1;
	int rc = 0;
	char *levels = strdup(argv[5]), *save = NULL;
	for (char *t = strtok_r(levels, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
		int level = atoi(t);
		if (level <= 0) {
			fprintf(stderr, "awload: bad in-flight level %s\n", t);
			rc = 2;
			break;
		}
		rc = run_level(&x, level);
	}
	free(levels);
	free(x.done_at);
	free(x.ops);
	free(x.objs);
	return rc;
}
