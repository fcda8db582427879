/*
 * test_queue.c - work queue semantics on a real libuv loop: de-duplication,
 * no double hand-out, dirty re-queue, FIFO order, max_in_flight, add_after
 * ordering and deadlines, the rate limiter (backoff growth, forget, bucket),
 * shutdown/reopen and metrics. Timing checks assert lower bounds only.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "steadfast/queue.h"
#include "steadfast/time.h"

#define MAX_REC 256

/* Records what the dispatcher hands out. */
typedef struct rec {
	sf_queue *q;
	char keys[MAX_REC][32];
	uint64_t at_ns[MAX_REC];
	size_t n;
	int finish_now;  /* call sf_queue_done inside process */
	int readd_once;  /* add the key again while processing it, once */
	int shutdown_on; /* shut the queue down on the first hand-out */
	int close_on;    /* close the queue on the first hand-out */
	int closed;
} rec;

static void on_closed(void *ud);

static void record(void *ud, const char *key)
{
	rec *r = ud;
	cr_assert_lt(r->n, MAX_REC);
	snprintf(r->keys[r->n], sizeof(r->keys[0]), "%s", key);
	r->at_ns[r->n] = uv_hrtime();
	r->n++;
	if (r->shutdown_on)
		sf_queue_shutdown(r->q, NULL, NULL);
	if (r->close_on) {
		sf_queue_close(r->q, on_closed, &r->closed);
		return;
	}
	if (r->readd_once) {
		r->readd_once = 0;
		cr_assert_eq(sf_queue_add(r->q, key), 0);
	}
	if (r->finish_now)
		cr_assert_eq(sf_queue_done(r->q, key), 0);
}

static sf_queue *new_queue(uv_loop_t *loop, rec *r, unsigned max_in_flight)
{
	sf_queue_opts o = {0};
	o.name = "test";
	o.max_in_flight = max_in_flight;
	if (r) {
		o.process = record;
		o.ud = r;
	}
	sf_queue *q = NULL;
	cr_assert_eq(sf_queue_new(loop, &o, &q), 0);
	cr_assert_not_null(q);
	if (r)
		r->q = q;
	return q;
}

static void on_closed(void *ud)
{
	(*(int *)ud)++;
}

static void close_queue(uv_loop_t *loop, sf_queue *q)
{
	int closed = 0;
	sf_queue_close(q, on_closed, &closed);
	uv_run(loop, UV_RUN_DEFAULT);
	cr_assert_eq(closed, 1);
	cr_assert_eq(uv_loop_close(loop), 0);
}

static void get_expect(sf_queue *q, const char *want)
{
	const char *key = NULL;
	cr_assert_eq(sf_queue_get(q, &key), 0, "expected %s", want);
	cr_assert_str_eq(key, want);
}

Test(queue, dedup)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	sf_queue *q = new_queue(&loop, NULL, 10);

	for (int i = 0; i < 5; i++)
		cr_assert_eq(sf_queue_add(q, "default/a"), 0);
	cr_assert_eq(sf_queue_add(q, "default/b"), 0);
	cr_assert_eq(sf_queue_add(q, "default/a"), 0);
	cr_assert_eq(sf_queue_len(q), 2);

	get_expect(q, "default/a");
	get_expect(q, "default/b");
	const char *key;
	cr_assert_eq(sf_queue_get(q, &key), -EAGAIN);

	sf_queue_metrics st;
	sf_queue_stats(q, &st);
	cr_assert_eq(st.adds, 2);
	cr_assert_eq(st.depth, 0);
	cr_assert_eq(st.in_flight, 2);
	cr_assert_eq(sf_queue_done(q, "default/a"), 0);
	cr_assert_eq(sf_queue_done(q, "default/b"), 0);
	close_queue(&loop, q);
}

Test(queue, bad_args)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	sf_queue *q = new_queue(&loop, NULL, 0);
	cr_assert_eq(sf_queue_add(q, ""), -EINVAL);
	cr_assert_eq(sf_queue_add_after(q, "", 10), -EINVAL);
	cr_assert_eq(sf_queue_done(q, "never/added"), -ENOENT);
	cr_assert_eq(sf_queue_add(q, "a/x"), 0);
	cr_assert_eq(sf_queue_done(q, "a/x"), -ENOENT, "queued but not handed out");
	close_queue(&loop, q);
}

Test(queue, no_double_handout_and_dirty_requeue)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	sf_queue *q = new_queue(&loop, NULL, 10);

	cr_assert_eq(sf_queue_add(q, "ns/a"), 0);
	const char *key = NULL;
	cr_assert_eq(sf_queue_get(q, &key), 0);
	cr_assert_str_eq(key, "ns/a");

	/* Added while processing: marked dirty, not handed out again. */
	cr_assert_eq(sf_queue_add(q, "ns/a"), 0);
	cr_assert_eq(sf_queue_add(q, "ns/a"), 0);
	cr_assert_eq(sf_queue_len(q), 0);
	const char *k2;
	cr_assert_eq(sf_queue_get(q, &k2), -EAGAIN);

	/* done with the handed-out pointer itself re-queues it once. */
	cr_assert_eq(sf_queue_done(q, key), 0);
	cr_assert_eq(sf_queue_len(q), 1);
	get_expect(q, "ns/a");
	cr_assert_eq(sf_queue_done(q, "ns/a"), 0);
	cr_assert_eq(sf_queue_len(q), 0);
	cr_assert_eq(sf_queue_done(q, "ns/a"), -ENOENT);

	sf_queue_metrics st;
	sf_queue_stats(q, &st);
	cr_assert_eq(st.adds, 2);
	cr_assert_eq(st.in_flight, 0);
	close_queue(&loop, q);
}

Test(queue, fifo)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	sf_queue *q = new_queue(&loop, NULL, 1000);
	char k[32];
	for (int i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "ns/k%02d", i);
		cr_assert_eq(sf_queue_add(q, k), 0);
	}
	/* Re-adding early keys does not move them. */
	cr_assert_eq(sf_queue_add(q, "ns/k00"), 0);
	cr_assert_eq(sf_queue_add(q, "ns/k50"), 0);
	cr_assert_eq(sf_queue_len(q), 100);
	for (int i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "ns/k%02d", i);
		get_expect(q, k);
	}
	for (int i = 99; i >= 0; i--) {
		snprintf(k, sizeof(k), "ns/k%02d", i);
		cr_assert_eq(sf_queue_done(q, k), 0);
	}
	close_queue(&loop, q);
}

Test(queue, dispatch_fifo_sync_done)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	rec r = {0};
	r.finish_now = 1;
	sf_queue *q = new_queue(&loop, &r, 1);
	char k[32];
	for (int i = 0; i < 20; i++) {
		snprintf(k, sizeof(k), "ns/k%02d", i);
		cr_assert_eq(sf_queue_add(q, k), 0);
	}
	cr_assert_eq(r.n, 0, "keys are handed out from the loop, not from add");
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(r.n, 20);
	for (int i = 0; i < 20; i++) {
		snprintf(k, sizeof(k), "ns/k%02d", i);
		cr_assert_str_eq(r.keys[i], k);
	}
	close_queue(&loop, q);
}

Test(queue, dispatch_readd_while_processing)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	rec r = {0};
	r.finish_now = 1;
	r.readd_once = 1;
	sf_queue *q = new_queue(&loop, &r, 4);
	cr_assert_eq(sf_queue_add(q, "ns/a"), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(r.n, 2, "the dirty key is processed once more");
	cr_assert_str_eq(r.keys[0], "ns/a");
	cr_assert_str_eq(r.keys[1], "ns/a");
	close_queue(&loop, q);
}

Test(queue, max_in_flight)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	rec r = {0};
	sf_queue *q = new_queue(&loop, &r, 2);
	const char *keys[] = {"ns/a", "ns/b", "ns/c", "ns/d", "ns/e"};
	for (int i = 0; i < 5; i++)
		cr_assert_eq(sf_queue_add(q, keys[i]), 0);

	/* The loop goes idle once two keys are out. */
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(r.n, 2);
	cr_assert_str_eq(r.keys[0], "ns/a");
	cr_assert_str_eq(r.keys[1], "ns/b");
	cr_assert_eq(sf_queue_len(q), 3);
	const char *k;
	cr_assert_eq(sf_queue_get(q, &k), -EAGAIN, "pull respects the limit too");

	/* Adding a key being processed does not hand it out a second time. */
	cr_assert_eq(sf_queue_add(q, "ns/a"), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(r.n, 2);

	cr_assert_eq(sf_queue_done(q, "ns/b"), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(r.n, 3);
	cr_assert_str_eq(r.keys[2], "ns/c");

	cr_assert_eq(sf_queue_done(q, "ns/a"), 0); /* dirty: queued behind d, e */
	cr_assert_eq(sf_queue_done(q, "ns/c"), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(r.n, 5);
	cr_assert_str_eq(r.keys[3], "ns/d");
	cr_assert_str_eq(r.keys[4], "ns/e");
	cr_assert_eq(sf_queue_done(q, "ns/d"), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(r.n, 6);
	cr_assert_str_eq(r.keys[5], "ns/a");

	sf_queue_metrics st;
	sf_queue_stats(q, &st);
	cr_assert_eq(st.in_flight, 2);
	cr_assert_eq(st.depth, 0);
	cr_assert_eq(st.adds, 6);
	cr_assert_geq(st.longest_running_s, 0);
	cr_assert_geq(st.unfinished_work_s, st.longest_running_s);
	close_queue(&loop, q);
}

Test(queue, add_after_order_and_deadlines)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	rec r = {0};
	r.finish_now = 1;
	sf_queue *q = new_queue(&loop, &r, 4);

	uint64_t t0 = uv_hrtime();
	cr_assert_eq(sf_queue_add_after(q, "ns/c", 60), 0);
	cr_assert_eq(sf_queue_add_after(q, "ns/a", 20), 0);
	cr_assert_eq(sf_queue_add_after(q, "ns/b", 40), 0);
	cr_assert_eq(sf_queue_add_after(q, "ns/now", 0), 0);
	cr_assert_eq(sf_queue_len(q), 1, "only the zero delay is ready");

	sf_queue_metrics st;
	sf_queue_stats(q, &st);
	cr_assert_eq(st.delayed, 3);
	cr_assert_eq(st.retries, 4);

	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(r.n, 4);
	cr_assert_str_eq(r.keys[0], "ns/now");
	cr_assert_str_eq(r.keys[1], "ns/a");
	cr_assert_str_eq(r.keys[2], "ns/b");
	cr_assert_str_eq(r.keys[3], "ns/c");
	cr_assert_geq(r.at_ns[1] - t0, 20 * SF_NSEC_PER_MSEC);
	cr_assert_geq(r.at_ns[2] - t0, 40 * SF_NSEC_PER_MSEC);
	cr_assert_geq(r.at_ns[3] - t0, 60 * SF_NSEC_PER_MSEC);
	sf_queue_stats(q, &st);
	cr_assert_eq(st.delayed, 0);
	close_queue(&loop, q);
}

Test(queue, add_after_earliest_wins)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	rec r = {0};
	r.finish_now = 1;
	sf_queue *q = new_queue(&loop, &r, 1);

	uint64_t t0 = uv_hrtime();
	/* Later deadline first, then an earlier one: the earlier wins. */
	cr_assert_eq(sf_queue_add_after(q, "ns/x", 60), 0);
	cr_assert_eq(sf_queue_add_after(q, "ns/x", 20), 0);
	/* Earlier deadline first, then a much later one: the later is dropped
	 * (the loop would otherwise keep running for 100 s). */
	cr_assert_eq(sf_queue_add_after(q, "ns/y", 30), 0);
	cr_assert_eq(sf_queue_add_after(q, "ns/y", 100000), 0);

	sf_queue_metrics st;
	sf_queue_stats(q, &st);
	cr_assert_eq(st.delayed, 2);

	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(r.n, 2, "each key handed out once");
	cr_assert_str_eq(r.keys[0], "ns/x");
	cr_assert_str_eq(r.keys[1], "ns/y");
	cr_assert_geq(r.at_ns[0] - t0, 20 * SF_NSEC_PER_MSEC);
	cr_assert_geq(r.at_ns[1] - t0, 30 * SF_NSEC_PER_MSEC);
	sf_queue_stats(q, &st);
	cr_assert_eq(st.delayed, 0);
	close_queue(&loop, q);
}

Test(queue, add_after_key_already_queued)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	sf_queue *q = new_queue(&loop, NULL, 1);
	cr_assert_eq(sf_queue_add(q, "ns/a"), 0);
	cr_assert_eq(sf_queue_add_after(q, "ns/a", 20), 0);
	cr_assert_eq(sf_queue_len(q), 1);
	/* Still queued when the deadline passes: de-duplicated. */
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(sf_queue_len(q), 1);
	get_expect(q, "ns/a");
	cr_assert_eq(sf_queue_done(q, "ns/a"), 0);
	cr_assert_eq(sf_queue_len(q), 0);
	close_queue(&loop, q);
}

Test(queue, ratelimiter_backoff_and_forget)
{
	sf_ratelimiter_opts o = {.qps = -1}; /* backoff alone */
	sf_ratelimiter *rl = NULL;
	cr_assert_eq(sf_ratelimiter_new(&o, &rl), 0);
	uint64_t d, now = 1000 * SF_NSEC_PER_SEC;
	uint64_t want = 5 * SF_NSEC_PER_MSEC;
	for (unsigned i = 0; i < 10; i++) {
		cr_assert_eq(sf_ratelimiter_when(rl, "ns/a", now, &d), 0);
		cr_assert_eq(d, want, "failure %u: %llu ns", i, (unsigned long long)d);
		cr_assert_eq(sf_ratelimiter_num_requeues(rl, "ns/a"), i + 1);
		want *= 2;
	}
	/* Per key: another key starts at the base. */
	cr_assert_eq(sf_ratelimiter_when(rl, "ns/b", now, &d), 0);
	cr_assert_eq(d, 5 * SF_NSEC_PER_MSEC);

	sf_ratelimiter_forget(rl, "ns/a");
	cr_assert_eq(sf_ratelimiter_num_requeues(rl, "ns/a"), 0);
	cr_assert_eq(sf_ratelimiter_when(rl, "ns/a", now, &d), 0);
	cr_assert_eq(d, 5 * SF_NSEC_PER_MSEC);
	cr_assert_eq(sf_ratelimiter_num_requeues(rl, "ns/b"), 1);

	/* Capped at 1000 s, however many failures. */
	for (int i = 0; i < 100; i++)
		cr_assert_eq(sf_ratelimiter_when(rl, "ns/c", now, &d), 0);
	cr_assert_eq(d, 1000 * SF_NSEC_PER_SEC);
	cr_assert_eq(sf_ratelimiter_num_requeues(rl, "ns/c"), 100);

	sf_ratelimiter_forget_all(rl);
	cr_assert_eq(sf_ratelimiter_num_requeues(rl, "ns/b"), 0);
	cr_assert_eq(sf_ratelimiter_num_requeues(rl, "ns/c"), 0);
	sf_ratelimiter_free(rl);
}

Test(queue, ratelimiter_custom_backoff)
{
	sf_ratelimiter_opts o = {.base_delay_ms = 100, .max_delay_ms = 300, .qps = -1};
	sf_ratelimiter *rl = NULL;
	cr_assert_eq(sf_ratelimiter_new(&o, &rl), 0);
	uint64_t d, want[] = {100, 200, 300, 300};
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(sf_ratelimiter_when(rl, "k", 0, &d), 0);
		cr_assert_eq(d, want[i] * SF_NSEC_PER_MSEC);
	}
	sf_ratelimiter_free(rl);
}

Test(queue, ratelimiter_bucket)
{
	sf_ratelimiter *rl = NULL;
	cr_assert_eq(sf_ratelimiter_new(NULL, &rl), 0); /* 10 qps, burst 100 */
	uint64_t d, now = 5 * SF_NSEC_PER_SEC;
	char k[32];
	/* The burst covers 100 first failures: only the 5 ms backoff. */
	for (int i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "ns/k%d", i);
		cr_assert_eq(sf_ratelimiter_when(rl, k, now, &d), 0);
		cr_assert_eq(d, 5 * SF_NSEC_PER_MSEC, "failure %d", i);
	}
	/* Then one token per 100 ms, reserved in turn. */
	cr_assert_eq(sf_ratelimiter_when(rl, "ns/x1", now, &d), 0);
	cr_assert_eq(d, 100 * SF_NSEC_PER_MSEC);
	cr_assert_eq(sf_ratelimiter_when(rl, "ns/x2", now, &d), 0);
	cr_assert_eq(d, 200 * SF_NSEC_PER_MSEC);
	/* One second later ten tokens came back, eight of them already owed. */
	now += SF_NSEC_PER_SEC;
	cr_assert_eq(sf_ratelimiter_when(rl, "ns/x3", now, &d), 0);
	cr_assert_eq(d, 5 * SF_NSEC_PER_MSEC);
	/* The larger of both: a key with a long backoff keeps it. */
	for (int i = 0; i < 12; i++)
		cr_assert_eq(sf_ratelimiter_when(rl, "ns/slow", now, &d), 0);
	cr_assert_eq(d, 5 * SF_NSEC_PER_MSEC << 11);
	sf_ratelimiter_free(rl);
}

Test(queue, add_rate_limited)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	rec r = {0};
	r.finish_now = 1;
	sf_queue *q = new_queue(&loop, &r, 1);

	uint64_t delays_ms[] = {5, 10, 20, 40};
	for (int i = 0; i < 4; i++) {
		uint64_t t0 = uv_hrtime();
		cr_assert_eq(sf_queue_add_rate_limited(q, "ns/a"), 0);
		cr_assert_eq(sf_queue_len(q), 0);
		uv_run(&loop, UV_RUN_DEFAULT);
		cr_assert_eq(r.n, (size_t)i + 1);
		cr_assert_geq(r.at_ns[i] - t0, delays_ms[i] * SF_NSEC_PER_MSEC, "retry %d", i);
		cr_assert_eq(sf_queue_num_requeues(q, "ns/a"), (unsigned)i + 1);
	}
	sf_queue_forget(q, "ns/a");
	cr_assert_eq(sf_queue_num_requeues(q, "ns/a"), 0);
	uint64_t t0 = uv_hrtime();
	cr_assert_eq(sf_queue_add_rate_limited(q, "ns/a"), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(r.n, 5);
	cr_assert_geq(r.at_ns[4] - t0, 5 * SF_NSEC_PER_MSEC);

	sf_queue_metrics st;
	sf_queue_stats(q, &st);
	cr_assert_eq(st.retries, 5);
	cr_assert_eq(st.adds, 5);
	close_queue(&loop, q);
}

static void on_drained(void *ud)
{
	(*(int *)ud)++;
}

Test(queue, shutdown_drops_and_refuses)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	sf_queue *q = new_queue(&loop, NULL, 5);

	cr_assert_eq(sf_queue_add(q, "ns/a"), 0);
	cr_assert_eq(sf_queue_add(q, "ns/b"), 0);
	cr_assert_eq(sf_queue_add(q, "ns/c"), 0);
	cr_assert_eq(sf_queue_add_after(q, "ns/d", 30), 0);
	cr_assert_eq(sf_queue_add_rate_limited(q, "ns/e"), 0);
	get_expect(q, "ns/a");
	cr_assert_eq(sf_queue_add(q, "ns/a"), 0); /* dirty while processing */

	int drained = 0;
	sf_queue_shutdown(q, on_drained, &drained);
	cr_assert(sf_queue_shutting_down(q));
	cr_assert_eq(sf_queue_len(q), 0);
	cr_assert_eq(sf_queue_num_requeues(q, "ns/e"), 0, "backoff state dropped");
	sf_queue_metrics st;
	sf_queue_stats(q, &st);
	cr_assert_eq(st.delayed, 0);
	cr_assert_eq(st.in_flight, 1);

	const char *k;
	cr_assert_eq(sf_queue_add(q, "ns/f"), -ESHUTDOWN);
	cr_assert_eq(sf_queue_add_after(q, "ns/f", 10), -ESHUTDOWN);
	cr_assert_eq(sf_queue_add_rate_limited(q, "ns/f"), -ESHUTDOWN);
	cr_assert_eq(sf_queue_get(q, &k), -ESHUTDOWN);

	/* The delayed keys are gone: the loop has nothing to wait for. */
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(drained, 0, "a key is still being processed");

	cr_assert_eq(sf_queue_done(q, "ns/a"), 0);
	cr_assert_eq(drained, 0, "drained is reported from the loop");
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(drained, 1);
	cr_assert_eq(sf_queue_len(q), 0, "the dirty key was not re-queued");
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(drained, 1);
	close_queue(&loop, q);
}

Test(queue, shutdown_idle_reports_drained_on_loop)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	rec r = {0};
	sf_queue *q = new_queue(&loop, &r, 1);
	cr_assert_eq(sf_queue_add(q, "ns/a"), 0);
	int drained = 0;
	sf_queue_shutdown(q, on_drained, &drained);
	cr_assert_eq(drained, 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(drained, 1);
	cr_assert_eq(r.n, 0, "dropped keys are never handed out");
	close_queue(&loop, q);
}

Test(queue, reopen_after_shutdown)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	rec r = {0};
	sf_queue *q = new_queue(&loop, &r, 4);

	cr_assert_eq(sf_queue_add(q, "ns/a"), 0);
	cr_assert_eq(sf_queue_add(q, "ns/b"), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(r.n, 2);
	cr_assert_eq(sf_queue_add(q, "ns/c"), 0);
	cr_assert_eq(r.n, 2);

	/* Leadership lost while a and b are in progress. */
	int drained = 0;
	sf_queue_shutdown(q, on_drained, &drained);
	cr_assert_eq(sf_queue_done(q, "ns/b"), 0);

	/* Re-acquired before a finished: the drained report is cancelled, adds
	 * work again, and a (still in progress) is not handed out twice. */
	sf_queue_reopen(q);
	cr_assert(!sf_queue_shutting_down(q));
	cr_assert_eq(sf_queue_add(q, "ns/a"), 0);
	cr_assert_eq(sf_queue_add(q, "ns/b"), 0);
	cr_assert_eq(sf_queue_add(q, "ns/c"), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(drained, 0);
	cr_assert_eq(r.n, 4);
	cr_assert_str_eq(r.keys[2], "ns/b");
	cr_assert_str_eq(r.keys[3], "ns/c");

	cr_assert_eq(sf_queue_done(q, "ns/a"), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(r.n, 5);
	cr_assert_str_eq(r.keys[4], "ns/a");
	cr_assert_eq(sf_queue_done(q, "ns/a"), 0);
	cr_assert_eq(sf_queue_done(q, "ns/b"), 0);
	cr_assert_eq(sf_queue_done(q, "ns/c"), 0);
	sf_queue_reopen(q); /* not shut down: no-op */
	cr_assert(!sf_queue_shutting_down(q));
	close_queue(&loop, q);
}

Test(queue, shutdown_from_process_stops_dispatch)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	rec r = {0};
	r.shutdown_on = 1;
	r.finish_now = 1;
	sf_queue *q = new_queue(&loop, &r, 10);
	for (int i = 0; i < 5; i++) {
		char k[16];
		snprintf(k, sizeof(k), "ns/%d", i);
		cr_assert_eq(sf_queue_add(q, k), 0);
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(r.n, 1);
	close_queue(&loop, q);
}

Test(queue, close_from_process)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	rec r = {0};
	r.close_on = 1;
	sf_queue *q = new_queue(&loop, &r, 10);
	cr_assert_eq(sf_queue_add(q, "ns/a"), 0);
	cr_assert_eq(sf_queue_add(q, "ns/b"), 0);
	cr_assert_eq(sf_queue_add_after(q, "ns/c", 100000), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(r.n, 1, "nothing is handed out after close");
	cr_assert_eq(r.closed, 1);
	cr_assert_eq(uv_loop_close(&loop), 0);
}

Test(queue, close_with_pending_work)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	rec r = {0};
	sf_queue *q = new_queue(&loop, &r, 1);
	cr_assert_eq(sf_queue_add(q, "ns/a"), 0);
	cr_assert_eq(sf_queue_add(q, "ns/b"), 0);
	cr_assert_eq(sf_queue_add_after(q, "ns/c", 100000), 0);
	cr_assert_eq(sf_queue_add_rate_limited(q, "ns/d"), 0);
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(r.n, 1);
	/* a in progress, b queued, c and d delayed: close frees them all and
	 * the loop ends without waiting for the timers. */
	close_queue(&loop, q);
}

Test(queue, longest_running)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	sf_queue *q = new_queue(&loop, NULL, 2);
	cr_assert_eq(sf_queue_add(q, "ns/old"), 0);
	get_expect(q, "ns/old");
	uint64_t t0 = uv_hrtime();
	while (uv_hrtime() - t0 < 20 * SF_NSEC_PER_MSEC)
		uv_sleep(5);
	cr_assert_eq(sf_queue_add(q, "ns/new"), 0);
	uint64_t t1 = uv_hrtime();
	get_expect(q, "ns/new");
	sf_queue_metrics st;
	sf_queue_stats(q, &st);
	cr_assert_geq(st.longest_running_s, 0.020);
	cr_assert_geq(st.unfinished_work_s, st.longest_running_s);
	cr_assert_eq(sf_queue_done(q, "ns/old"), 0);
	sf_queue_stats(q, &st);
	/* Now the oldest is the key started after t1. */
	cr_assert_leq(st.longest_running_s, (double)(uv_hrtime() - t1) / 1e9);
	cr_assert_eq(sf_queue_done(q, "ns/new"), 0);
	sf_queue_stats(q, &st);
	cr_assert_eq(st.longest_running_s, 0);
	cr_assert_eq(st.in_flight, 0);
	close_queue(&loop, q);
}

static void wait_ms(unsigned ms)
{
	uint64_t t0 = uv_hrtime();
	while (uv_hrtime() - t0 < ms * SF_NSEC_PER_MSEC)
		uv_sleep(2);
}

/* workqueue_queue_duration_seconds runs from the add that made a key ready
 * (a delayed add: when its delay ran out, as client-go's delaying queue
 * adds it then) to its hand-out; workqueue_work_duration_seconds from the
 * hand-out to done. */
Test(queue, queue_and_work_duration)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	sf_queue *q = new_queue(&loop, NULL, 4);
	sf_queue_metrics st;
	sf_queue_stats(q, &st);
	cr_assert_eq(st.queue_duration.count, 0);
	cr_assert_eq(st.work_duration.count, 0);
	cr_assert_eq(st.queue_duration.n, 12, "client-go's buckets: 1e-8 s x10 up to 1000 s");
	cr_assert_float_eq(st.queue_duration.bounds[0], 1e-8, 1e-12);
	cr_assert_float_eq(st.queue_duration.bounds[11], 1e3, 1e-9);

	cr_assert_eq(sf_queue_add(q, "ns/a"), 0);
	wait_ms(20);
	cr_assert_eq(sf_queue_add(q, "ns/a"), 0, "a second add does not restart the wait");
	uint64_t t_get = uv_hrtime();
	get_expect(q, "ns/a");
	sf_queue_stats(q, &st);
	cr_assert_eq(st.queue_duration.count, 1);
	cr_assert_geq(st.queue_duration.sum, 0.020);
	cr_assert_eq(st.work_duration.count, 0, "not done yet");
	wait_ms(30);
	cr_assert_eq(sf_queue_done(q, "ns/a"), 0);
	double worked = (double)(uv_hrtime() - t_get) / 1e9;
	sf_queue_stats(q, &st);
	cr_assert_eq(st.work_duration.count, 1);
	cr_assert_geq(st.work_duration.sum, 0.030);
	cr_assert_leq(st.work_duration.sum, worked);

	/* a delay is not queue time */
	double before = st.queue_duration.sum;
	cr_assert_eq(sf_queue_add_after(q, "ns/d", 60), 0);
	uv_run(&loop, UV_RUN_DEFAULT); /* until the delay timer has fired */
	uint64_t t_ready = uv_hrtime();
	get_expect(q, "ns/d");
	sf_queue_stats(q, &st);
	cr_assert_eq(st.queue_duration.count, 2);
	cr_assert_leq(st.queue_duration.sum - before, (double)(uv_hrtime() - t_ready) / 1e9 + 0.010,
	              "counted from when the delay ran out, not from add_after");
	cr_assert_eq(sf_queue_done(q, "ns/d"), 0);

	/* added while processing: waits from that add until handed out again */
	cr_assert_eq(sf_queue_add(q, "ns/b"), 0);
	get_expect(q, "ns/b");
	cr_assert_eq(sf_queue_add(q, "ns/b"), 0);
	sf_queue_stats(q, &st);
	before = st.queue_duration.sum;
	wait_ms(20);
	cr_assert_eq(sf_queue_done(q, "ns/b"), 0);
	get_expect(q, "ns/b");
	sf_queue_stats(q, &st);
	cr_assert_eq(st.queue_duration.count, 4);
	cr_assert_geq(st.queue_duration.sum - before, 0.020);
	cr_assert_eq(sf_queue_done(q, "ns/b"), 0);
	sf_queue_stats(q, &st);
	cr_assert_eq(st.work_duration.count, 4);
	close_queue(&loop, q);
}
