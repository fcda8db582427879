/*
 * test_review.c - the metrics reviewer's bound on reviews in flight
 * (review.h), against the scripted server: reviews that never get an
 * answer fill the bound, the next unknown token is answered 429 at once
 * without a request, and closing the client ends the waiting ones as 500.
 * That the reviews decide right is proven on the real control plane
 * (test/integration/test_metrics_auth.c).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "fakesrv.h"
#include "steadfast/client.h"
#include "steadfast/config.h"
#include "steadfast/review.h"
#include "tl.h"

typedef struct verdict {
	int done, v;
} verdict;

static void on_verdict(void *ud, int v)
{
	verdict *o = ud;
	o->done = 1;
	o->v = v;
}

static void set_flag(void *ud)
{
	*(int *)ud = 1;
}

static int two_requests(void *ud)
{
	return fakesrv_requests(ud) >= 2;
}

Test(review, unknown_tokens_beyond_the_bound_are_shed_without_a_request, .init = tl_log_quiet)
{
	static const fake_resp script[] = {{NULL, 1}, {NULL, 1}, {NULL, 1}};
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	fakesrv *srv = fakesrv_start(&loop, script, 3);
	sf_kube_config *cfg = NULL;
	sf_kube_client_opts co = {.http1_only = 1}; /* one connection per request */
	sf_kube_client *c = tl_fakesrv_client(&loop, srv, &co, &cfg);
	sf_review *rv = NULL;
	sf_review_opts o = {.max_in_flight = 2, .timeout_ms = -1};
	cr_assert_eq(sf_review_new(&loop, c, &o, &rv), 0);

	verdict a = {0}, b = {0}, d = {0}, none = {0};
	sf_review_check(rv, "token-a", 7, on_verdict, &a);
	sf_review_check(rv, "token-b", 7, on_verdict, &b);
	cr_assert_eq(tl_run_until_fn(&loop, two_requests, srv, 5000), 0, "two reviews not sent");
	/* the bound is reached: answered at once, nothing sent */
	sf_review_check(rv, "token-d", 7, on_verdict, &d);
	cr_assert(d.done, "a shed check answers before returning");
	cr_assert_eq(d.v, 429);
	sf_review_check(rv, NULL, 0, on_verdict, &none);
	cr_assert(none.done && none.v == 401, "no token needs no review: %d", none.v);
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(fakesrv_requests(srv), 2);
	cr_assert_not(a.done || b.done);
	sf_review_stats st;
	sf_review_stats_get(rv, &st);
	cr_assert_eq(st.shed, 1);

	/* the waiting ones end with the client, as errors */
	int closed = 0;
	sf_kube_client_close(c, set_flag, &closed);
	fakesrv_stop(srv);
	cr_assert_eq(tl_run_until(&loop, &closed, 5000), 0);
	cr_assert(a.done && b.done);
	cr_assert_eq(a.v, 500);
	cr_assert_eq(b.v, 500);
	sf_review_stats_get(rv, &st);
	cr_assert_eq(st.errors, 2);
	sf_review_free(rv);
	uv_run(&loop, UV_RUN_DEFAULT);
	sf_kube_config_free(cfg);
	cr_assert_eq(uv_loop_close(&loop), 0);
}
