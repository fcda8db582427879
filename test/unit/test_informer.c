/*
 * test_informer.c - the informer over a scripted server: its handlers see
 * every delta in the order they were added, a handler added late is
 * replayed the current contents, resourceVersion waits are released by the
 * first list and by later events and bookmarks (or cancelled, or ended by
 * the stop), and the store outlives the stop.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "fakeapi.h"
#include "fakesrv.h"
#include "steadfast/cache.h"
#include "steadfast/log.h"
#include "tl.h"

static char log_lines[32][1024];
static int nlog;

static void capture_log(sf_log_level level, const char *line, void *ud)
{
	(void)ud;
	if (level <= SF_LOG_WARN && nlog < 32)
		snprintf(log_lines[nlog++], sizeof(log_lines[0]), "%s", line);
}

static void set_flag(void *ud)
{
	*(int *)ud = 1;
}

typedef struct ifx {
	char log[64][64];
	int n;
	int waits_done[4];
	int waits_err[4];
	sf_informer *inf;
} ifx;

static void ilog(ifx *x, const char *who, const char *what, const sf_obj *o)
{
	cr_assert_lt(x->n, 64);
	snprintf(x->log[x->n++], sizeof(x->log[0]), "%s %s %s@%s", who, what, o->name, o->rv);
}

static void h1_add(void *ud, sf_obj *o)
{
	ilog(ud, "h1", "add", o);
}
static void h1_update(void *ud, sf_obj *old, sf_obj *o)
{
	(void)old;
	ilog(ud, "h1", "update", o);
}
static void h1_delete(void *ud, sf_obj *o)
{
	ilog(ud, "h1", "delete", o);
}
static void h2_add(void *ud, sf_obj *o)
{
	ilog(ud, "h2", "add", o);
}
static void h2_delete(void *ud, sf_obj *o)
{
	ilog(ud, "h2", "delete", o);
}
static void h3_add(void *ud, sf_obj *o)
{
	ilog(ud, "h3", "add", o);
}

typedef struct waitctx {
	ifx *x;
	int i;
} waitctx;

static void wait_done(void *ud, int err)
{
	waitctx *w = ud;
	w->x->waits_done[w->i]++;
	w->x->waits_err[w->i] = err;
	if (!err)
		cr_assert(sf_informer_synced(w->x->inf));
}

static int log_has(void *ud)
{
	ifx *x = ud;
	return x->n >= 6 && x->waits_done[1];
}

Test(informer, handlers_in_order_and_rv_waits)
{
	static const fake_resp script[] = {
	    {LIST("10", "", CM("a", "ua", "8")), 0},
	    {HDR EV("ADDED", CM("b", "ub", "11")) EV("DELETED", CM("a", "ua", "12")) BOOKMARK("20"),
	     0},
	    {NULL, 1},
	};
	uv_loop_t loop;
	nlog = 0;
	sf_log_set_sink(capture_log, NULL);
	cr_assert_eq(uv_loop_init(&loop), 0);
	fakesrv *srv = fakesrv_start(&loop, script, 3);
	sf_kube_config *cfg;
	sf_kube_client *c = tl_fakesrv_client(&loop, srv, NULL, &cfg);

	const char *labels[] = {"app", NULL};
	sf_informer_opts o = {
	    .reflector = {.gvr = &SF_GVR_CONFIGMAPS, .ns = "ns", .watch_list = -1},
	    .label_indexes = labels,
	    .controller_index = 1,
	    .namespace_index = 1};
	ifx x;
	memset(&x, 0, sizeof(x));
	cr_assert_eq(sf_informer_new(&loop, c, &o, &x.inf), 0);
	sf_informer_handler h1 = {.on_add = h1_add, .on_update = h1_update, .on_delete = h1_delete};
	sf_informer_handler h2 = {.on_add = h2_add, .on_delete = h2_delete};
	cr_assert_eq(sf_informer_add_handler(x.inf, &h1, &x), 0);
	cr_assert_eq(sf_informer_add_handler(x.inf, &h2, &x), 0);

	waitctx w[4] = {{&x, 0}, {&x, 1}, {&x, 2}, {&x, 3}};
	sf_rv_wait *cancelled = NULL;
	/* not synced yet: even an old RV waits for the first list */
	cr_assert_eq(sf_informer_wait_rv(x.inf, "5", wait_done, &w[0], NULL), 0);
	cr_assert_eq(sf_informer_wait_rv(x.inf, "15", wait_done, &w[1], NULL), 0);
	cr_assert_eq(sf_informer_wait_rv(x.inf, "1000", wait_done, &w[2], NULL), 0);
	cr_assert_eq(sf_informer_wait_rv(x.inf, "12", wait_done, &w[3], &cancelled), 0);
	sf_informer_wait_cancel(cancelled);

	cr_assert_eq(sf_informer_start(x.inf), 0);
	cr_assert_eq(tl_run_until_fn(&loop, log_has, &x, 5000), 0, "only %d events", x.n);
	const char *want[] = {"h1 add a@8",  "h2 add a@8",    "h1 add b@11",
	                      "h2 add b@11", "h1 delete a@8", "h2 delete a@8"};
	for (int i = 0; i < 6; i++)
		cr_assert_str_eq(x.log[i], want[i], "event %d", i);
	cr_assert_eq(x.waits_done[0], 1);
	cr_assert_eq(x.waits_err[0], 0);
	cr_assert_eq(x.waits_done[1], 1, "released by the bookmark at 20");
	cr_assert_eq(x.waits_done[2], 0);
	cr_assert_eq(x.waits_done[3], 0, "a cancelled wait never fires");
	cr_assert_str_eq(sf_informer_last_rv(x.inf), "20");
	cr_assert_eq(sf_informer_wait_rv(x.inf, "19", wait_done, &w[3], NULL), 1);

	/* a late handler is replayed the current contents */
	sf_informer_handler h3 = {.on_add = h3_add};
	cr_assert_eq(sf_informer_add_handler(x.inf, &h3, &x), 0);
	cr_assert_eq(x.n, 7);
	cr_assert_str_eq(x.log[6], "h3 add b@11");

	sf_store *st = sf_informer_store(x.inf);
	cr_assert_eq(sf_store_index_count(st, SF_INDEX_NAMESPACE, "ns"), 1);

	int stopped = 0;
	sf_informer_stop(x.inf, set_flag, &stopped);
	cr_assert_eq(tl_run_until(&loop, &stopped, 5000), 0);
	cr_assert_eq(x.waits_done[2], 1);
	cr_assert_eq(x.waits_err[2], -ECANCELED);
	cr_assert_eq(sf_informer_wait_rv(x.inf, "1", wait_done, &w[3], NULL), -ESHUTDOWN);
	/* the store outlives the stop */
	cr_assert_not_null(sf_store_get(st, "ns/b"));
	sf_informer_free(x.inf);

	int closed = 0;
	sf_kube_client_close(c, set_flag, &closed);
	fakesrv_stop(srv);
	cr_assert_eq(tl_run_until(&loop, &closed, 5000), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	sf_kube_config_free(cfg);
	cr_assert_eq(uv_loop_close(&loop), 0);
	cr_assert_eq(nlog, 0, "unexpected warning: %s", log_lines[0]);
	sf_log_set_sink(NULL, NULL);
}
