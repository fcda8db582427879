/*
 * awload.c - the API server's raw ceiling for the writes of AppWrapper
 * lifecycles, with no controller running (tools/bench_appwrapper.py).
 *
 *   awload [--user] [--watch AW,JOBS,PODS] NS COUNT STATUS META INFLIGHT[,...]
 *
 * For each in-flight level L in turn: creates COUNT AppWrappers aw-L-i in
 * NS (untimed; each wraps the same one-pod Job as the controller runs),
 * then sends, timed, the mix of writes one lifecycle costs the controller,
 * per AppWrapper, one request after the other (each status patch carries
 * the resourceVersion the previous answer gave and a whole status of the
 * controller's shape, as the controller's do):
 *
 *   META-1 metadata patches (finalizer added), STATUS/3 status patches,
 *   the Job's create (controlled by the AppWrapper, as the controller
 *   makes it), STATUS/3 status patches, the Job's delete (UID
 *   precondition, propagationPolicy Background), one metadata patch
 *   (finalizer removed), the remaining status patches.
 *
 * With --user the user's three requests of a lifecycle are part of each
 * chain, in the order the controller runs see them, and the AppWrapper is
 * not created beforehand: its create (timed), one status patch
 * (Suspended), the admit (merge patch spec.suspend=false, no
 * resourceVersion, as Kueue's), two status patches, the Job's create, one
 * status patch (Running), the AppWrapper's delete, one status patch
 * (Terminating), the Job's delete, the remaining status patches, the
 * finalizer's removal (the AppWrapper goes). That is the whole lifecycle
 * as the API server takes it, so a controller run's lifecycles/s can be
 * set against the same mix's.
 *
 * --watch AW,JOBS,PODS keeps that many watches of NS's AppWrappers, Jobs
 * and pods open for the whole run, reading and dropping their events: the
 * fan-out the controller runs' watchers (two replicas and the driver)
 * cost the API server.
 *
 * L AppWrappers are worked on at once, so L requests are in flight; there
 * is no client-side rate limit. Prints one JSON line per level: requests,
 * failures, the rate over the whole level and between the 10th and 90th
 * percentile of completions (sustained) with that window's wall-clock
 * bounds (to read other clients' writes in it from the audit log), mean
 * latency per kind.
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

enum { OP_STATUS, OP_META, OP_CREATE, OP_DELETE, OP_AW_CREATE, OP_ADMIT, OP_AW_DELETE, OP_KINDS };
static const char *const OP_NAMES[OP_KINDS] = {
    "patch_status", "patch_meta", "create_job", "delete_job", "create_aw", "admit_aw", "delete_aw"};

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
	int user; /* the user's create, admit and delete are in the chain */
	int stopping;
	struct watcher *watchers;
	int nwatchers;
	long watch_restarts;
	long ok, failed;
	char last_err[256];
	/* timing of the timed part */
	double *done_at; /* completion times (s since start), one per request */
	long ndone;
	int64_t t0;
	int64_t wall0; /* sf_wall_ns() at t0 */
	long events0;  /* watch events before the level */
	long restarts0;
	double lat_sum[OP_KINDS];
	long lat_n[OP_KINDS];
} run;

typedef struct watcher {
	struct run *x;
	const sf_gvr *gvr;
	sf_kube_call *call;
	long events;
} watcher;

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

/* The AppWrapper of o, as the controller runs create theirs. */
static void aw_body(const obj *o, char *body, size_t cap)
{
	snprintf(body, cap,
	         "{\"apiVersion\":\"workload.codeflare.dev/v1beta2\",\"kind\":\"AppWrapper\","
	         "\"metadata\":{\"name\":\"%s\",\"annotations\":{\"workload.codeflare.dev."
	         "appwrapper/warmupGracePeriodDuration\":\"2h\"}},\"spec\":{\"suspend\":true,"
	         "\"components\":[{\"template\":{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\","
	         "\"metadata\":{\"name\":\"%s\"},\"spec\":%s}}]}}",
	         o->name, o->name, JOB_SPEC);
}

static void name_all(run *x, int level)
{
	for (long i = 0; i < x->count; i++) {
		obj *o = &x->objs[i];
		memset(o, 0, sizeof(*o));
		snprintf(o->name, sizeof(o->name), "aw-%d-%05ld", level, i);
	}
}

static int create_all(run *x)
{
	char body[2048];
	for (long i = 0; i < x->count; i++) {
		obj *o = &x->objs[i];
		aw_body(o, body, sizeof(body));
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

/* -------------------------------------------------------------- watchers */

static void watch_start(watcher *w);

static int watch_event(void *ud, sf_watch_type type, sf_obj *ev)
{
	(void)type;
	((watcher *)ud)->events++;
	sf_obj_unref(ev);
	return 0;
}

static void watch_done(void *ud, const sf_kube_result *r)
{
	(void)r;
	watcher *w = ud;
	w->call = NULL;
	if (!w->x->stopping) {
		w->x->watch_restarts++;
		watch_start(w); /* the server ended it: again, from now */
	}
}

static void watch_start(watcher *w)
{
	sf_kube_list_opts o = {.allow_bookmarks = 1};
	if (sf_kube_watch(w->x->c, w->gvr, w->x->ns, &o, watch_event, watch_done, w, &w->call))
		fprintf(stderr, "awload: cannot start a watch\n");
}

/* "AW,JOBS,PODS" watches of each. */
static int watchers_start(run *x, const char *spec)
{
	int n[3] = {0, 0, 0};
	if (sscanf(spec, "%d,%d,%d", &n[0], &n[1], &n[2]) != 3 || n[0] < 0 || n[1] < 0 ||
	    n[2] < 0 || n[0] + n[1] + n[2] > 64)
		return -EINVAL;
	static const sf_gvr *const gvrs[3] = {&SF_GVR_APPWRAPPERS, &SF_GVR_JOBS, &SF_GVR_PODS};
	x->watchers = calloc((size_t)(n[0] + n[1] + n[2]) + 1, sizeof(watcher));
	if (!x->watchers)
		return -ENOMEM;
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < n[k]; i++) {
			watcher *w = &x->watchers[x->nwatchers++];
			*w = (watcher){.x = x, .gvr = gvrs[k]};
			watch_start(w);
		}
	return 0;
}

static long watch_events(const run *x)
{
	long n = 0;
	for (int i = 0; i < x->nwatchers; i++)
		n += x->watchers[i].events;
	return n;
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
			if (k->kind == OP_CREATE) {
				copy_str(root, "metadata.uid", o->job_uid, sizeof(o->job_uid));
			} else if (k->kind != OP_DELETE) {
				/* the AppWrapper's own answer: its create, a patch, its
				 * delete (200 with deletionTimestamp: the finalizer) */
				if (k->kind == OP_AW_CREATE)
					copy_str(root, "metadata.uid", o->uid, sizeof(o->uid));
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
	char body[2048];
	call *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	*k = (call){.x = x, .o = o, .kind = kind, .sent = sf_mono_ns()};
	int rc = -EINVAL;
	switch (kind) {
	case OP_STATUS: {
		/* the whole status, as the controller writes it (a merge patch
		 * replaces lists, so each of its writes carries every condition
		 * and the component status): the same bytes to decode, check,
		 * store and send to each watcher */
		char ts[40];
		sf_time_rfc3339(sf_wall_ns(), ts, sizeof(ts));
		const char *ph = o->step % 2 ? "Running" : "Suspended";
		const char *st = o->step % 2 ? "True" : "False";
		snprintf(body, sizeof(body),
		         "{\"metadata\":{\"resourceVersion\":\"%s\"},\"status\":{\"phase\":\"%s\","
		         "\"conditions\":["
		         "{\"type\":\"QuotaReserved\",\"status\":\"%s\",\"reason\":\"Step%d\","
		         "\"message\":\"step %d of the lifecycle\",\"lastTransitionTime\":\"%s\"},"
		         "{\"type\":\"ResourcesDeployed\",\"status\":\"%s\",\"reason\":\"Step%d\","
		         "\"message\":\"step %d of the lifecycle\",\"lastTransitionTime\":\"%s\"},"
		         "{\"type\":\"PodsReady\",\"status\":\"False\",\"reason\":\"Step%d\","
		         "\"message\":\"step %d of the lifecycle\",\"lastTransitionTime\":\"%s\"},"
		         "{\"type\":\"Unhealthy\",\"status\":\"False\",\"reason\":\"Step%d\","
		         "\"message\":\"step %d of the lifecycle\",\"lastTransitionTime\":\"%s\"}],"
		         "\"componentStatus\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\","
		         "\"name\":\"%s\",\"conditions\":[{\"type\":\"ResourcesDeployed\","
		         "\"status\":\"%s\",\"reason\":\"Step%d\",\"message\":\"\","
		         "\"lastTransitionTime\":\"%s\"}],\"podSets\":[{\"annotations\":{"
		         "\"workload.codeflare.dev.appwrapper/tas-pod-index-label\":"
		         "\"batch.kubernetes.io/job-completion-index\"},\"path\":"
		         "\"template.spec.template\",\"replicas\":1}]}]}}",
		         o->rv, ph, st, o->step, o->step, ts, st, o->step, o->step, ts, o->step,
		         o->step, ts, o->step, o->step, ts, o->name, st, o->step, ts);
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
	case OP_AW_CREATE:
		aw_body(o, body, sizeof(body));
		rc = sf_kube_create(x->c, &SF_GVR_APPWRAPPERS, x->ns, body, step_cb, k, NULL);
		break;
	case OP_ADMIT:
		rc = sf_kube_patch(x->c, &SF_GVR_APPWRAPPERS, x->ns, o->name, NULL, SF_PATCH_MERGE,
		                   "{\"spec\":{\"suspend\":false}}", NULL, 0, step_cb, k, NULL);
		break;
	case OP_AW_DELETE: {
		sf_kube_delete_opts d = {.grace_seconds = -1};
		rc =
		    sf_kube_delete(x->c, &SF_GVR_APPWRAPPERS, x->ns, o->name, &d, step_cb, k, NULL);
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
	name_all(x, level);
	int rc = x->user ? 0 : create_all(x);
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
	x->wall0 = sf_wall_ns();
	x->events0 = watch_events(x);
	x->restarts0 = x->watch_restarts;
	while (x->next < x->count && x->next < level) {
		obj *o = &x->objs[x->next++];
		start_next(x, o);
	}
	drain(x, 0);
	double elapsed = (double)(sf_mono_ns() - x->t0) / 1e9;
	qsort(x->done_at, (size_t)x->ndone, sizeof(double), cmp_double);
	double sustained = 0, w10 = 0, w90 = 0;
	if (x->ndone >= 10) {
		long a = x->ndone / 10, b = x->ndone * 9 / 10;
		double span = x->done_at[b] - x->done_at[a];
		if (span > 0)
			sustained = (double)(b - a) / span;
		w10 = (double)x->wall0 / 1e9 + x->done_at[a];
		w90 = (double)x->wall0 / 1e9 + x->done_at[b];
	}
	long requests = x->ndone, ok = x->ok, failed = x->failed;
	long events = watch_events(x) - x->events0;
	long restarts = x->watch_restarts - x->restarts0;
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
	printf("{\"inflight\":%d,\"objects\":%ld,\"user\":%s,\"requests_per_lifecycle\":%d,"
	       "\"requests\":%ld,\"ok\":%ld,\"failed\":%ld,\"elapsed_s\":%.3f,\"rps\":%.1f,"
	       "\"rps_sustained\":%.1f,\"sustained_from_unix\":%.3f,\"sustained_to_unix\":%.3f,"
	       "\"watches\":%d,\"watch_events\":%ld,\"watch_restarts\":%ld,\"mean_ms\":{",
	       level < x->count ? level : (int)x->count, x->count, x->user ? "true" : "false",
	       x->nops, requests, ok, failed, elapsed, elapsed > 0 ? (double)requests / elapsed : 0,
	       sustained, w10, w90, x->nwatchers, events, restarts);
	for (int i = 0, first = 1; i < OP_KINDS; i++) {
		if (!x->lat_n[i])
			continue;
		printf("%s\"%s\":%.2f", first ? "" : ",", OP_NAMES[i],
		       x->lat_sum[i] / (double)x->lat_n[i]);
		first = 0;
	}
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

/* STATUS status patches, but at most *left of them. */
static int put_status(int *ops, int n, int want, int *left)
{
	for (; want > 0 && *left > 0; want--, (*left)--)
		ops[n++] = OP_STATUS;
	return n;
}

/* The mix in the order of a lifecycle (see the top of the file). */
static int build_mix(run *x, int status, int meta)
{
	x->ops = calloc((size_t)(status + meta + 5), sizeof(int));
	if (!x->ops)
		return -ENOMEM;
	int n = 0, a = status / 3, b = status / 3;
	if (x->user) {
		int left = status;
		x->ops[n++] = OP_AW_CREATE;
		for (int i = 0; i < meta - 1; i++)
			x->ops[n++] = OP_META;
		n = put_status(x->ops, n, 1, &left);
		x->ops[n++] = OP_ADMIT;
		n = put_status(x->ops, n, 2, &left);
		x->ops[n++] = OP_CREATE;
		n = put_status(x->ops, n, 1, &left);
		x->ops[n++] = OP_AW_DELETE;
		n = put_status(x->ops, n, 1, &left);
		x->ops[n++] = OP_DELETE;
		n = put_status(x->ops, n, left, &left);
		if (meta > 0)
			x->ops[n++] = OP_META;
		x->nops = n;
		return 0;
	}
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
	int user = 0;
	const char *watch = NULL;
	for (;;) {
		if (argc > 1 && strcmp(argv[1], "--user") == 0) {
			user = 1;
			argv++;
			argc--;
		} else if (argc > 2 && strcmp(argv[1], "--watch") == 0) {
			watch = argv[2];
			argv += 2;
			argc -= 2;
		} else {
			break;
		}
	}
	if (argc != 6) {
		fprintf(stderr,
		        "usage: awload [--user] [--watch AW,JOBS,PODS] NS COUNT STATUS META "
		        "INFLIGHT[,INFLIGHT...]\n");
		return 2;
	}
	run x = {.ns = argv[1], .count = atol(argv[2]), .user = user};
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
	if (watch && watchers_start(&x, watch)) {
		fprintf(stderr, "awload: bad --watch %s (AW,JOBS,PODS counts)\n", watch);
		return 2;
	}
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
	/* the watches end with the process (the loop is not run again) */
	x.stopping = 1;
	for (int i = 0; i < x.nwatchers; i++)
		if (x.watchers[i].call)
			sf_kube_call_cancel(x.watchers[i].call);
	free(x.watchers);
	free(x.done_at);
	free(x.ops);
	free(x.objs);
	return rc;
}
