/*
 * queue.h - rate-limited work queue of object keys on a libuv loop.
 *
 * Reconcile requests are keys ("namespace/name"). The queue follows
 * client-go's util/workqueue:
 *   - a key waits in the queue at most once however often it is added;
 *   - a key being processed is never handed out again until it is done; an
 *     add meanwhile marks it dirty and it is queued again at done;
 *   - ready keys are handed out in FIFO order;
 *   - add_after delays an add (the earliest pending deadline of a key wins);
 *   - add_rate_limited delays by the larger of a per-key exponential backoff
 *     (5 ms doubling to 1000 s, reset by forget) and an overall token bucket
 *     (10 qps, burst 100), like workqueue.DefaultControllerRateLimiter.
 *
 * Keys are handed out by calling opts.process on the loop (never from inside
 * a queue call) while keys are ready and fewer than opts.max_in_flight are
 * being processed; the callee may finish synchronously or much later, and
 * ends each key with sf_queue_done. Without opts.process the caller pulls
 * with sf_queue_get instead.
 *
 * Leadership: sf_queue_shutdown drops every queued and delayed key and
 * refuses adds (-ESHUTDOWN) when leadership is lost; keys already being
 * processed still end with sf_queue_done, and the drained callback reports
 * when none is left. sf_queue_reopen accepts adds again for a new term (the
 * caller re-adds everything from its cache, as informers resync). A key
 * still in progress from the old term is not handed out twice: adding it
 * marks it dirty as usual.
 *
 * All calls must be made on the loop's thread.
 */
#ifndef STEADFAST_QUEUE_H
#define STEADFAST_QUEUE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "steadfast/prom.h"

/* --- rate limiter (usable on its own; the queue embeds one) --- */

typedef struct sf_ratelimiter sf_ratelimiter;

typedef struct sf_ratelimiter_opts {
	uint64_t base_delay_ms; /* first backoff; 0 = 5 */
	uint64_t max_delay_ms;  /* backoff cap; 0 = 1000000 (1000 s) */
	double qps;             /* token bucket rate; 0 = 10, < 0 = no bucket */
	unsigned burst;         /* bucket size; 0 = 100 */
} sf_ratelimiter_opts;

/* opts may be NULL for the defaults. 0 and *out, or -ENOMEM/-EINVAL. */
int sf_ratelimiter_new(const sf_ratelimiter_opts *opts, sf_ratelimiter **out);
void sf_ratelimiter_free(sf_ratelimiter *rl);
/* Records a failure of key at monotonic time now_ns and sets *delay_ns to how
 * long to wait before retrying it: max(base * 2^(failures before this one)
 * capped at max, the token bucket's reservation delay). 0 or -ENOMEM. */
int sf_ratelimiter_when(sf_ratelimiter *rl, const char *key, uint64_t now_ns, uint64_t *delay_ns);
/* Clears key's failure count. */
void sf_ratelimiter_forget(sf_ratelimiter *rl, const char *key);
/* Clears every key's failure count (the bucket keeps its tokens). */
void sf_ratelimiter_forget_all(sf_ratelimiter *rl);
/* Failures recorded for key since it was last forgotten. */
unsigned sf_ratelimiter_num_requeues(const sf_ratelimiter *rl, const char *key);

/* --- queue --- */

typedef struct sf_queue sf_queue;

/* Hands key over for processing. key stays valid (owned by the queue) until
 * sf_queue_done for it. The callee may call any queue function, including
 * sf_queue_done(q, key) before returning. */
typedef void (*sf_queue_process_fn)(void *ud, const char *key);

typedef struct sf_queue_opts {
	const char *name;            /* for logs ("" if NULL); copied */
	unsigned max_in_flight;      /* keys processed at once; 0 = 1 */
	sf_queue_process_fn process; /* NULL: pull mode, see sf_queue_get */
	void *ud;                    /* for process */
	sf_ratelimiter_opts limiter; /* all zero = client-go's defaults */
} sf_queue_opts;

typedef struct sf_queue_metrics {
	size_t depth;             /* ready keys waiting (workqueue_depth) */
	size_t delayed;           /* keys waiting for an add_after deadline */
	size_t in_flight;         /* keys being processed */
	uint64_t adds;            /* adds that queued a key (workqueue_adds_total) */
	uint64_t retries;         /* add_after/add_rate_limited calls (workqueue_retries_total) */
	double longest_running_s; /* age of the oldest key in processing
	                           * (workqueue_longest_running_processor_seconds) */
	double unfinished_work_s; /* summed ages (workqueue_unfinished_work_seconds) */
	/* workqueue_queue_duration_seconds: from the add that made a key
	 * ready to its hand-out. As in client-go, a delayed add
	 * (add_after, add_rate_limited) counts from when its delay ran out,
	 * and an add while the key is processed counts from that add, so it
	 * includes the wait for the running reconcile to end. */
	sf_prom_hist queue_duration;
	/* workqueue_work_duration_seconds: hand-out to done */
	sf_prom_hist work_duration;
} sf_queue_metrics;

/* client-go's workqueue buckets (ExponentialBuckets(10e-9, 10, 12)). */
extern const double SF_QUEUE_DURATION_BUCKETS[12];

/* opts may be NULL (pull mode, defaults). 0 and *out, or a negative errno. */
int sf_queue_new(uv_loop_t *loop, const sf_queue_opts *opts, sf_queue **out);
/* Stops and closes the queue's handles; memory is freed once libuv has
 * closed them, then cb(ud) is called (cb may be NULL). Keys handed out are
 * invalid afterwards and the queue must not be used again. */
void sf_queue_close(sf_queue *q, void (*cb)(void *ud), void *ud);

/* Queues key unless it is already waiting. 0, -ESHUTDOWN, -EINVAL (empty
 * key) or -ENOMEM. */
int sf_queue_add(sf_queue *q, const char *key);
/* Adds key once delay_ms have passed (0 = now). A key already delayed keeps
 * the earlier of its two deadlines. Same returns as sf_queue_add. */
int sf_queue_add_after(sf_queue *q, const char *key, uint64_t delay_ms);
/* Adds key after the rate limiter's delay for it (a failure is counted). */
int sf_queue_add_rate_limited(sf_queue *q, const char *key);
/* Resets key's backoff (call when it was processed successfully). */
void sf_queue_forget(sf_queue *q, const char *key);
/* Rate-limited adds of key since it was last forgotten. */
unsigned sf_queue_num_requeues(const sf_queue *q, const char *key);

/* Pull mode: takes the oldest ready key and marks it in processing; *key is
 * owned by the queue until sf_queue_done. 0, -EAGAIN when no key is ready or
 * max_in_flight keys are already in processing, -ESHUTDOWN after shutdown.
 * Works with opts.process set too (it then competes with the dispatcher). */
int sf_queue_get(sf_queue *q, const char **key);
/* Ends processing of key; if it was added meanwhile it is queued again.
 * key may be the pointer that was handed out. 0, or -ENOENT if key is not
 * being processed. */
int sf_queue_done(sf_queue *q, const char *key);

/* Ready keys waiting (client-go's Len: delayed keys are not counted). */
size_t sf_queue_len(const sf_queue *q);
/* Current metrics (client-go's workqueue metric names in comments). */
void sf_queue_stats(const sf_queue *q, sf_queue_metrics *st);

/* Drops every ready and delayed key and all backoff state; adds fail with
 * -ESHUTDOWN from now on and sf_queue_get returns -ESHUTDOWN. Keys in
 * processing end normally with sf_queue_done (they are not queued again).
 * drained (may be NULL) is called on the loop once no key is in processing
 * (on the next loop iteration if none is now). Calling it again replaces
 * the pending drained callback. */
void sf_queue_shutdown(sf_queue *q, void (*drained)(void *ud), void *ud);
int sf_queue_shutting_down(const sf_queue *q);
/* Accepts adds again after sf_queue_shutdown (a no-op otherwise); a drained
 * callback not yet called is cancelled. */
void sf_queue_reopen(sf_queue *q);

#endif
