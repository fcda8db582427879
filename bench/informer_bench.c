/*
 * informer_bench.c - Steadfast's side of the informer benchmark.
 *
 * Runs one informer on a custom resource, reports the time to synced, then
 * (after printing SYNCED, the driver's cue to start the update burst) waits
 * for the given number of updates carrying spec.round and reports how long
 * the burst took to observe and the peak RSS. Prints the same JSON fields
 * as bench/informer-go so tools/bench.sh can compare them line by line.
 *
 * --list-mode picks how the informer syncs, for the LIST vs WatchList
 * part: watch-list (the default: a WatchList stream), list (LIST from the
 * watch cache, resourceVersion=0) or quorum (a paged LIST without
 * resourceVersion, as a freshness wait asks for).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "steadfast/cache.h"
#include "steadfast/client.h"
#include "steadfast/config.h"
#include "steadfast/log.h"
#include "steadfast/time.h"

static long peak_rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VmHWM:", 6) == 0)
			v = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

typedef struct bench {
	uv_loop_t *loop;
	sf_informer *inf;
	int64_t start_ns;
	double sync_s;
	long expect, updates, seen;
	int64_t first_ns, last_ns;
	long rss_synced;
	int synced, done, failed;
} bench;

static void on_synced(void *ud)
{
	bench *b = ud;
	if (b->synced)
		return;
	b->synced = 1;
	b->sync_s = (double)(sf_mono_ns() - b->start_ns) / 1e9;
	size_t n = sf_store_len(sf_informer_store(b->inf));
	if (b->expect > 0 && (long)n != b->expect) {
		fprintf(stderr, "synced %zu objects, expected %ld\n", n, b->expect);
		b->failed = 1;
		uv_stop(b->loop);
		return;
	}
	b->rss_synced = peak_rss_kib();
	printf("SYNCED\n");
	fflush(stdout);
	if (b->updates == 0) {
		b->done = 1;
		uv_stop(b->loop);
	}
}

static void on_update(void *ud, sf_obj *old, sf_obj *obj)
{
	(void)old;
	bench *b = ud;
	if (!b->synced || !sf_jv_ok(sf_jv_path(sf_obj_root(obj), "spec.round")))
		return;
	int64_t now = sf_mono_ns();
	if (!b->first_ns)
		b->first_ns = now;
	b->last_ns = now;
	if (++b->seen == b->updates) {
		b->done = 1;
		uv_stop(b->loop);
	}
}

static void on_timeout(uv_timer_t *t)
{
	bench *b = t->data;
	fprintf(stderr, "timed out: synced=%d, saw %ld of %ld updates\n", b->synced, b->seen,
	        b->updates);
	b->failed = 1;
	uv_stop(b->loop);
}

int main(int argc, char **argv)
{
	const char *kubeconfig = NULL, *group = "", *version = "v1", *resource = NULL, *ns = NULL;
	long expect = 0, updates = 0, timeout_s = 600;
	int strip = 0;
	const char *mode = NULL;
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];
		if (!strcmp(k, "--strip-managed-fields"))
			strip = !strcmp(v, "true");
		else if (!strcmp(k, "--kubeconfig"))
			kubeconfig = v;
		else if (!strcmp(k, "--group"))
			group = v;
		else if (!strcmp(k, "--version"))
			version = v;
		else if (!strcmp(k, "--resource"))
			resource = v;
		else if (!strcmp(k, "--namespace"))
			ns = v;
		else if (!strcmp(k, "--expect"))
			expect = atol(v);
		else if (!strcmp(k, "--updates"))
			updates = atol(v);
		else if (!strcmp(k, "--timeout"))
			timeout_s = atol(v);
		else if (!strcmp(k, "--list-mode"))
			mode = v;
		else {
			fprintf(stderr, "unknown flag %s\n", k);
			return 2;
		}
	}
	if (!resource) {
		fprintf(stderr, "--resource is required\n");
		return 2;
	}
	sf_log_set_level(SF_LOG_WARN);
	char err[512];
	sf_kube_config *cfg;
	if (sf_kube_config_load(kubeconfig, NULL, &cfg, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	uv_loop_t loop;
	uv_loop_init(&loop);
	sf_kube_client *c;
	if (sf_kube_client_new(&loop, cfg, NULL, &c)) {
		fprintf(stderr, "client failed\n");
		return 1;
	}
	sf_gvr gvr = {group, version, resource, 1};
	bench b = {.loop = &loop, .expect = expect, .updates = updates};
	int wl = !mode || !strcmp(mode, "watch-list");
	if (mode && !wl && strcmp(mode, "list") && strcmp(mode, "quorum")) {
		fprintf(stderr, "--list-mode: watch-list, list or quorum\n");
		return 2;
	}
	sf_informer_opts io = {
	    .reflector = {
	        .gvr = &gvr, .ns = ns, .strip_managed_fields = strip, .watch_list = wl ? 0 : -1}};
	if (sf_informer_new(&loop, c, &io, &b.inf)) {
		fprintf(stderr, "informer failed\n");
		return 1;
	}
	/* a freshness want before the start makes the first list a quorum read */
	if (mode && !strcmp(mode, "quorum"))
		sf_reflector_want_fresh(sf_informer_reflector(b.inf), 1);
	sf_informer_handler h = {.on_update = on_update, .on_synced = on_synced};
	sf_informer_add_handler(b.inf, &h, &b);
	uv_timer_t to;
	uv_timer_init(&loop, &to);
	to.data = &b;
	uv_timer_start(&to, on_timeout, (uint64_t)timeout_s * 1000, 0);
	b.start_ns = sf_mono_ns();
	sf_informer_start(b.inf);
	uv_run(&loop, UV_RUN_DEFAULT);
	if (b.failed)
		return 1;
	double burst_s = b.last_ns > b.first_ns ? (double)(b.last_ns - b.first_ns) / 1e9 : 0;
	sf_store_stats st;
	sf_store_stats_get(sf_informer_store(b.inf), &st);
	struct mallinfo2 mi = mallinfo2();
	fprintf(stderr, "malloc: arena %zu in use %zu free %zu mmap %zu\n", mi.arena, mi.uordblks,
	        mi.fordblks, mi.hblkhd);
	sf_reflector_stats rs;
	sf_reflector_stats_get(sf_informer_reflector(b.inf), &rs);
	printf("{\"list_mode\":\"%s\",\"watch_lists\":%lu,\"quorum_lists\":%lu,\"list_pages\":%lu,",
	       mode ? mode : "watch-list", rs.watch_lists, rs.quorum_lists, rs.list_pages);
	printf("\"impl\":\"steadfast%s\",\"objects\":%zu,\"sync_s\":%.3f,\"updates\":%ld,\"burst_"
	       "s\":%.3f,"
	       "\"peak_rss_kib_synced\":%ld,\"peak_rss_kib\":%ld,\"store_object_bytes\":%zu,"
	       "\"store_overhead_bytes\":%zu}\n",
	       strip ? "+strip" : "", st.objects, b.sync_s, b.seen, burst_s, b.rss_synced,
	       peak_rss_kib(), st.object_bytes, st.overhead_bytes);
	/* exit without tearing down: the OS reclaims, as the Go program does */
	return 0;
}
