/*
 * queue.c - rate-limited work queue on a libuv loop (see queue.h).
 *
 * Every key the queue knows has one item, found through a strmap that
 * borrows the item's own copy of the key. An item carries flags instead of
 * living in client-go's separate dirty and processing sets:
 *   DIRTY       added and not yet handed out (it is in the ready FIFO unless
 *               it is also PROCESSING, in which case done re-queues it);
 *   PROCESSING  handed out, not yet done (it is on the running list, oldest
 *               first, which gives the longest-running metric in O(1)).
 * An item may also sit in the delay heap (ordered by deadline, then by
 * insertion), which drives one uv timer armed for the earliest deadline. An
 * item with no flag and no heap slot is freed.
 *
 * Deadlines use uv_hrtime rather than the loop's cached time, so a delay is
 * never cut short by a stale loop clock: if the timer fires before the
 * deadline (it was armed relative to the cached time) it is simply re-armed.
 *
 * Keys are handed to opts.process from a uv_idle callback, never from inside
 * a queue call, so the caller's code is not re-entered. The idle handle runs
 * only while there is something to hand out or a drained callback to make;
 * each run hands out at most the keys that were ready when it started, so a
 * processor that re-adds and finishes synchronously cannot starve the loop.
 */
#include "steadfast/queue.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/log.h"
#include "steadfast/strmap.h"
#include "steadfast/time.h"

/* --- rate limiter ---------------------------------------------------------- */

#define DEFAULT_BASE_MS 5
#define DEFAULT_MAX_MS 1000000
#define DEFAULT_QPS 10.0
#define DEFAULT_BURST 100

struct sf_ratelimiter {
	sf_strmap *failures; /* key -> failure count stored as uintptr_t */
	uint64_t base_ns;
	uint64_t max_ns;
	double qps; /* <= 0: no bucket */
	double burst;
	double tokens;
	uint64_t last_ns;
	int started;
};

static uint64_t ms_to_ns(uint64_t ms)
{
	return ms > UINT64_MAX / SF_NSEC_PER_MSEC ? UINT64_MAX : ms * SF_NSEC_PER_MSEC;
}

int sf_ratelimiter_new(const sf_ratelimiter_opts *opts, sf_ratelimiter **out)
{
	sf_ratelimiter_opts o = {0};
	if (opts)
		o = *opts;
	if (isnan(o.qps))
		return -EINVAL;
	sf_ratelimiter *rl = calloc(1, sizeof(*rl));
	if (!rl)
		return -ENOMEM;
	int rc = sf_strmap_new(0, 0, &rl->failures);
	if (rc) {
		free(rl);
		return rc;
	}
	rl->base_ns = ms_to_ns(o.base_delay_ms ? o.base_delay_ms : DEFAULT_BASE_MS);
	rl->max_ns = ms_to_ns(o.max_delay_ms ? o.max_delay_ms : DEFAULT_MAX_MS);
	rl->qps = o.qps == 0 ? DEFAULT_QPS : o.qps;
	rl->burst = o.burst ? (double)o.burst : DEFAULT_BURST;
	rl->tokens = rl->burst;
	*out = rl;
	return 0;
}

void sf_ratelimiter_free(sf_ratelimiter *rl)
{
	if (!rl)
		return;
	sf_strmap_free(rl->failures, NULL);
	free(rl);
}

/* base * 2^exp, or max if that is larger or does not fit. */
static uint64_t exp_backoff(uint64_t base, uint64_t max, uintptr_t exp)
{
	if (exp >= 64 || base > (max >> exp))
		return max;
	return base << exp;
}

/* Takes one token at now (the balance may go negative, like a reservation
 * with golang.org/x/time/rate) and returns the wait until it is covered. */
static uint64_t bucket_reserve(sf_ratelimiter *rl, uint64_t now_ns)
{
	if (rl->qps <= 0)
		return 0;
	if (!rl->started) {
		rl->started = 1;
		rl->last_ns = now_ns;
	}
	if (now_ns > rl->last_ns) {
		rl->tokens += (double)(now_ns - rl->last_ns) / (double)SF_NSEC_PER_SEC * rl->qps;
		if (rl->tokens > rl->burst)
			rl->tokens = rl->burst;
		rl->last_ns = now_ns;
	}
	rl->tokens -= 1;
	if (rl->tokens >= 0)
		return 0;
	return (uint64_t)ceil(-rl->tokens / rl->qps * (double)SF_NSEC_PER_SEC);
}

int sf_ratelimiter_when(sf_ratelimiter *rl, const char *key, uint64_t now_ns, uint64_t *delay_ns)
{
	uintptr_t n = (uintptr_t)sf_strmap_get(rl->failures, key);
	uintptr_t next = n < UINT_MAX ? n + 1 : n;
	int rc = sf_strmap_put(rl->failures, key, (void *)next, NULL);
	if (rc < 0)
		return rc;
	uint64_t backoff = exp_backoff(rl->base_ns, rl->max_ns, n);
	uint64_t bucket = bucket_reserve(rl, now_ns);
	*delay_ns = backoff > bucket ? backoff : bucket;
	return 0;
}

void sf_ratelimiter_forget(sf_ratelimiter *rl, const char *key)
{
	sf_strmap_remove(rl->failures, key, NULL);
}

void sf_ratelimiter_forget_all(sf_ratelimiter *rl)
{
	sf_strmap_clear(rl->failures, NULL);
}

unsigned sf_ratelimiter_num_requeues(const sf_ratelimiter *rl, const char *key)
{
	return (unsigned)(uintptr_t)sf_strmap_get(rl->failures, key);
}

/* --- queue ----------------------------------------------------------------- */

enum {
	IT_DIRTY = 1,
	IT_PROCESSING = 2,
};

#define NO_HEAP UINT32_MAX

typedef struct qitem {
	struct qitem *next;     /* ready FIFO */
	struct qitem *run_prev; /* running list, oldest first */
	struct qitem *run_next;
	uint64_t start_ns; /* when handed out */
	uint64_t ready_ns; /* when DIRTY was last set (queue duration) */
	uint64_t due_ns;   /* delay deadline while in the heap */
	uint64_t seq;      /* heap tie-break: earlier add_after first */
	uint32_t heap_idx; /* NO_HEAP when not delayed */
	unsigned flags;    /* (one item per AppWrapper: kept to 64 bytes and its key) */
	char key[];
} qitem;

struct sf_queue {
	uv_loop_t *loop;
	uv_timer_t timer;
	uv_idle_t idle;
	char *name;
	sf_strmap *items; /* key -> qitem, keys borrowed from the items */
	sf_ratelimiter *rl;

	qitem *head, *tail; /* ready FIFO */
	size_t depth;
	qitem *run_head, *run_tail;
	size_t in_flight;
	unsigned max_in_flight;

	qitem **heap;
	size_t heap_len, heap_cap;
	uint64_t seq;

	sf_queue_process_fn process;
	void *ud;

	int shutdown;
	int drain_pending;
	void (*drained)(void *ud);
	void *drained_ud;

	int closing;
	int handles_open;
	void (*close_cb)(void *ud);
	void *close_ud;

	uint64_t adds;
	uint64_t retries;
	sf_prom_hist queue_duration, work_duration;
};

const double SF_QUEUE_DURATION_BUCKETS[12] = {1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3,
                                              1e-2, 1e-1, 1,    10,   100,  1000};

static double ns_to_s(uint64_t from, uint64_t to)
{
	return to > from ? (double)(to - from) / (double)SF_NSEC_PER_SEC : 0;
}

static void idle_cb(uv_idle_t *h);
static void timer_cb(uv_timer_t *h);

static const char *item_key(const void *it)
{
	return ((const qitem *)it)->key;
}

static qitem *item_lookup(const sf_queue *q, const char *key)
{
	return sf_strmap_get(q->items, key);
}

static int item_get(sf_queue *q, const char *key, qitem **out)
{
	qitem *it = item_lookup(q, key);
	if (it) {
		*out = it;
		return 0;
	}
	size_t len = strlen(key);
	it = calloc(1, sizeof(*it) + len + 1);
	if (!it)
		return -ENOMEM;
	memcpy(it->key, key, len + 1);
	it->heap_idx = NO_HEAP;
	int rc = sf_strmap_put(q->items, it->key, it, NULL);
	if (rc < 0) {
		free(it);
		return rc;
	}
	*out = it;
	return 0;
}

/* Frees it once nothing refers to it any more. */
static void item_release(sf_queue *q, qitem *it)
{
	if (it->flags || it->heap_idx != NO_HEAP)
		return;
	sf_strmap_remove(q->items, it->key, NULL);
	free(it);
}

static int want_idle(const sf_queue *q)
{
	if (q->drain_pending && q->in_flight == 0)
		return 1;
	return q->process && q->head && !q->shutdown && q->in_flight < q->max_in_flight;
}

static void kick(sf_queue *q)
{
	if (!q->closing && want_idle(q))
		uv_idle_start(&q->idle, idle_cb);
}

static void fifo_push(sf_queue *q, qitem *it)
{
	it->next = NULL;
	if (q->tail)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
	q->depth++;
}

static qitem *fifo_pop(sf_queue *q)
{
	qitem *it = q->head;
	q->head = it->next;
	if (!q->head)
		q->tail = NULL;
	it->next = NULL;
	q->depth--;
	return it;
}

static void running_remove(sf_queue *q, qitem *it)
{
	if (it->run_prev)
		it->run_prev->run_next = it->run_next;
	else
		q->run_head = it->run_next;
	if (it->run_next)
		it->run_next->run_prev = it->run_prev;
	else
		q->run_tail = it->run_prev;
	it->run_prev = it->run_next = NULL;
	q->in_flight--;
}

/* client-go's Add once the key has an item. */
static void add_item(sf_queue *q, qitem *it)
{
	if (it->flags & IT_DIRTY)
		return;
	it->flags |= IT_DIRTY;
	it->ready_ns = uv_hrtime();
	q->adds++;
	if (it->flags & IT_PROCESSING)
		return;
	fifo_push(q, it);
	kick(q);
}

/* Moves the oldest ready key into processing. */
static qitem *take(sf_queue *q)
{
	qitem *it = fifo_pop(q);
	it->flags &= ~(unsigned)IT_DIRTY;
	it->flags |= IT_PROCESSING;
	it->start_ns = uv_hrtime();
	sf_prom_hist_observe(&q->queue_duration, ns_to_s(it->ready_ns, it->start_ns));
	it->run_next = NULL;
	it->run_prev = q->run_tail;
	if (q->run_tail)
		q->run_tail->run_next = it;
	else
		q->run_head = it;
	q->run_tail = it;
	q->in_flight++;
	return it;
}

/* --- delay heap --- */

static int heap_less(const qitem *a, const qitem *b)
{
	return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->seq < b->seq);
}

static void heap_set(sf_queue *q, size_t i, qitem *it)
{
	q->heap[i] = it;
	it->heap_idx = (uint32_t)i; /* heap_push keeps i below NO_HEAP */
}

static void heap_up(sf_queue *q, size_t i)
{
	qitem *it = q->heap[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!heap_less(it, q->heap[parent]))
			break;
		heap_set(q, i, q->heap[parent]);
		i = parent;
	}
	heap_set(q, i, it);
}

static void heap_down(sf_queue *q, size_t i)
{
	qitem *it = q->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= q->heap_len)
			break;
		if (c + 1 < q->heap_len && heap_less(q->heap[c + 1], q->heap[c]))
			c++;
		if (!heap_less(q->heap[c], it))
			break;
		heap_set(q, i, q->heap[c]);
		i = c;
	}
	heap_set(q, i, it);
}

static int heap_push(sf_queue *q, qitem *it)
{
	if (q->heap_len >= NO_HEAP)
		return -ENOMEM;
	if (q->heap_len == q->heap_cap) {
		size_t cap = q->heap_cap ? q->heap_cap * 2 : 16;
		qitem **h = realloc(q->heap, cap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		q->heap = h;
		q->heap_cap = cap;
	}
	heap_set(q, q->heap_len++, it);
	heap_up(q, it->heap_idx);
	return 0;
}

static qitem *heap_pop(sf_queue *q)
{
	qitem *top = q->heap[0];
	q->heap_len--;
	if (q->heap_len) {
		heap_set(q, 0, q->heap[q->heap_len]);
		heap_down(q, 0);
	}
	top->heap_idx = NO_HEAP;
	return top;
}

/* Arms the timer for the earliest deadline (or stops it). */
static void arm_timer(sf_queue *q)
{
	if (q->closing)
		return;
	if (!q->heap_len) {
		uv_timer_stop(&q->timer);
		return;
	}
	uint64_t now = uv_hrtime();
	uint64_t due = q->heap[0]->due_ns;
	uint64_t ms = 0;
	if (due > now)
		ms = (due - now + SF_NSEC_PER_MSEC - 1) / SF_NSEC_PER_MSEC;
	uv_timer_start(&q->timer, timer_cb, ms, 0);
}

static void timer_cb(uv_timer_t *h)
{
	sf_queue *q = h->data;
	uint64_t now = uv_hrtime();
	while (q->heap_len && q->heap[0]->due_ns <= now) {
		qitem *it = heap_pop(q);
		add_item(q, it);
		item_release(q, it);
	}
	arm_timer(q);
}

/* --- dispatch --- */

static void idle_cb(uv_idle_t *h)
{
	sf_queue *q = h->data;
	size_t budget = q->depth;
	while (budget-- && q->process && q->head && !q->closing && !q->shutdown &&
	       q->in_flight < q->max_in_flight) {
		qitem *it = take(q);
		q->process(q->ud, it->key);
	}
	if (!q->closing && q->drain_pending && q->in_flight == 0) {
		void (*cb)(void *) = q->drained;
		void *ud = q->drained_ud;
		q->drain_pending = 0;
		q->drained = NULL;
		q->drained_ud = NULL;
		if (cb)
			cb(ud);
	}
	if (!q->closing && !want_idle(q))
		uv_idle_stop(&q->idle);
}

/* --- lifecycle --- */

static void queue_free(sf_queue *q)
{
	sf_strmap_free(q->items, free);
	sf_ratelimiter_free(q->rl);
	free(q->heap);
	free(q->name);
	free(q);
}

static void on_handle_closed(uv_handle_t *h)
{
	sf_queue *q = h->data;
	if (--q->handles_open > 0)
		return;
	void (*cb)(void *) = q->close_cb;
	void *ud = q->close_ud;
	queue_free(q);
	if (cb)
		cb(ud);
}

int sf_queue_new(uv_loop_t *loop, const sf_queue_opts *opts, sf_queue **out)
{
	sf_queue_opts o = {0};
	if (opts)
		o = *opts;
	int rc = -ENOMEM;
	sf_queue *q = calloc(1, sizeof(*q));
	if (!q)
		goto out;
	q->loop = loop;
	q->name = strdup(o.name ? o.name : "");
	if (!q->name)
		goto out;
	rc = sf_strmap_new_keyed(item_key, 0, &q->items);
	if (rc)
		goto out;
	rc = sf_ratelimiter_new(&o.limiter, &q->rl);
	if (rc)
		goto out;
	q->max_in_flight = o.max_in_flight ? o.max_in_flight : 1;
	sf_prom_hist_init(&q->queue_duration, SF_QUEUE_DURATION_BUCKETS, 12);
	sf_prom_hist_init(&q->work_duration, SF_QUEUE_DURATION_BUCKETS, 12);
	q->process = o.process;
	q->ud = o.ud;
	rc = uv_timer_init(loop, &q->timer);
	if (rc)
		goto out;
	q->timer.data = q;
	q->handles_open = 1;
	rc = uv_idle_init(loop, &q->idle);
	if (rc) {
		/* The timer is live: let its close callback free the queue. */
		q->closing = 1;
		uv_close((uv_handle_t *)&q->timer, on_handle_closed);
		return rc;
	}
	q->idle.data = q;
	q->handles_open = 2;
	*out = q;
	q = NULL;
	rc = 0;
out:
	if (q)
		queue_free(q);
	return rc;
}

void sf_queue_close(sf_queue *q, void (*cb)(void *ud), void *ud)
{
	if (q->closing)
		return;
	q->closing = 1;
	q->close_cb = cb;
	q->close_ud = ud;
	uv_timer_stop(&q->timer);
	uv_idle_stop(&q->idle);
	uv_close((uv_handle_t *)&q->timer, on_handle_closed);
	uv_close((uv_handle_t *)&q->idle, on_handle_closed);
}

/* --- adding --- */

static int check_add(const sf_queue *q, const char *key)
{
	if (q->shutdown || q->closing)
		return -ESHUTDOWN;
	if (!key || !*key)
		return -EINVAL;
	return 0;
}

int sf_queue_add(sf_queue *q, const char *key)
{
	int rc = check_add(q, key);
	if (rc)
		return rc;
	qitem *it;
	rc = item_get(q, key, &it);
	if (rc)
		return rc;
	add_item(q, it);
	return 0;
}

static int add_after_ns(sf_queue *q, const char *key, uint64_t delay_ns)
{
	q->retries++;
	if (delay_ns == 0)
		return sf_queue_add(q, key);
	qitem *it;
	int rc = item_get(q, key, &it);
	if (rc)
		return rc;
	uint64_t now = uv_hrtime();
	uint64_t due = delay_ns > UINT64_MAX - now ? UINT64_MAX : now + delay_ns;
	if (it->heap_idx != NO_HEAP) {
		if (due >= it->due_ns)
			return 0;
		it->due_ns = due;
		heap_up(q, it->heap_idx);
	} else {
		it->due_ns = due;
		it->seq = q->seq++;
		rc = heap_push(q, it);
		if (rc) {
			item_release(q, it);
			return rc;
		}
	}
	if (it->heap_idx == 0)
		arm_timer(q);
	return 0;
}

int sf_queue_add_after(sf_queue *q, const char *key, uint64_t delay_ms)
{
	int rc = check_add(q, key);
	if (rc)
		return rc;
	return add_after_ns(q, key, ms_to_ns(delay_ms));
}

int sf_queue_add_rate_limited(sf_queue *q, const char *key)
{
	int rc = check_add(q, key);
	if (rc)
		return rc;
	uint64_t delay;
	rc = sf_ratelimiter_when(q->rl, key, uv_hrtime(), &delay);
	if (rc)
		return rc;
	return add_after_ns(q, key, delay);
}

void sf_queue_forget(sf_queue *q, const char *key)
{
	sf_ratelimiter_forget(q->rl, key);
}

unsigned sf_queue_num_requeues(const sf_queue *q, const char *key)
{
	return sf_ratelimiter_num_requeues(q->rl, key);
}

/* --- processing --- */

int sf_queue_get(sf_queue *q, const char **key)
{
	if (q->shutdown || q->closing)
		return -ESHUTDOWN;
	if (!q->head || q->in_flight >= q->max_in_flight)
		return -EAGAIN;
	*key = take(q)->key;
	return 0;
}

int sf_queue_done(sf_queue *q, const char *key)
{
	qitem *it = item_lookup(q, key);
	if (!it || !(it->flags & IT_PROCESSING))
		return -ENOENT;
	/* key may be it->key: not used after this point. */
	sf_prom_hist_observe(&q->work_duration, ns_to_s(it->start_ns, uv_hrtime()));
	running_remove(q, it);
	it->flags &= ~(unsigned)IT_PROCESSING;
	if (it->flags & IT_DIRTY)
		fifo_push(q, it);
	item_release(q, it);
	kick(q);
	return 0;
}

/* --- state --- */

size_t sf_queue_len(const sf_queue *q)
{
	return q->depth;
}

void sf_queue_stats(const sf_queue *q, sf_queue_metrics *st)
{
	memset(st, 0, sizeof(*st));
	st->depth = q->depth;
	st->delayed = q->heap_len;
	st->in_flight = q->in_flight;
	st->adds = q->adds;
	st->retries = q->retries;
	st->queue_duration = q->queue_duration;
	st->work_duration = q->work_duration;
	uint64_t now = uv_hrtime();
	for (const qitem *it = q->run_head; it; it = it->run_next) {
		double age =
		    now > it->start_ns ? (double)(now - it->start_ns) / SF_NSEC_PER_SEC : 0;
		if (it == q->run_head)
			st->longest_running_s = age;
		st->unfinished_work_s += age;
	}
}

void sf_queue_shutdown(sf_queue *q, void (*drained)(void *ud), void *ud)
{
	size_t dropped = 0;
	if (!q->shutdown) {
		q->shutdown = 1;
		for (size_t i = 0; i < q->heap_len; i++)
			q->heap[i]->heap_idx = NO_HEAP;
		q->heap_len = 0;
		if (!q->closing)
			uv_timer_stop(&q->timer);
		q->head = q->tail = NULL;
		q->depth = 0;
		sf_strmap_iter iter = SF_STRMAP_ITER_INIT;
		void *v;
		while (sf_strmap_next(q->items, &iter, NULL, &v)) {
			qitem *it = v;
			it->next = NULL;
			it->flags &= ~(unsigned)IT_DIRTY;
			if (!(it->flags & IT_PROCESSING))
				dropped++;
			item_release(q, it);
		}
		sf_ratelimiter_forget_all(q->rl);
		char b1[24], b2[24];
		sf_log_debug("queue", "queue shut down", "name", q->name, "dropped",
		             sf_log_int(b1, (long long)dropped), "in_flight",
		             sf_log_int(b2, (long long)q->in_flight), NULL);
	}
	q->drained = drained;
	q->drained_ud = ud;
	q->drain_pending = drained != NULL;
	kick(q);
}

int sf_queue_shutting_down(const sf_queue *q)
{
	return q->shutdown;
}

void sf_queue_reopen(sf_queue *q)
{
	if (!q->shutdown)
		return;
	q->shutdown = 0;
	q->drain_pending = 0;
	q->drained = NULL;
	q->drained_ud = NULL;
	sf_log_debug("queue", "queue reopened", "name", q->name, NULL);
	kick(q);
}
