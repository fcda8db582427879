/*
 * election.h - Lease leader election with fenced writes, instant handover
 * and step-down without exit.
 *
 * Replicas of a controller compete for one coordination.k8s.io/v1 Lease.
 * The record is read and written exactly as client-go's
 * tools/leaderelection does (holderIdentity, leaseDurationSeconds,
 * acquireTime, renewTime as MicroTime, leaseTransitions), so Steadfast and
 * client-go candidates on the same Lease exclude each other:
 *
 *   - Every write is an UPDATE carrying the resourceVersion read (a CREATE
 *     when the Lease is absent); 409 Conflict means someone else wrote
 *     first, and is answered with a fresh read.
 *   - A lease held by someone else expires on the LOCAL monotonic clock,
 *     leaseDurationSeconds (the holder's) after the record was last seen to
 *     change. The Lease's renewTime is never compared with the local clock.
 *     An empty holder can be taken at once.
 *
 * Beyond client-go:
 *
 *   - Fence. sf_elect_fence_attach installs a write gate on the owner's
 *     clients: a mutating request is sent only while this replica leads and
 *     now < (send time of the last successful renew) + renew deadline, on
 *     the monotonic clock. A timer at that deadline closes the fence,
 *     cancels writes in flight and stops leader work; so does any sign that
 *     the lease was lost (another holder seen, the Lease deleted).
 *     Followers wait a full lease duration from when they saw the last
 *     change, which is after that renew was sent: the difference between
 *     lease duration and renew deadline is the margin (client-go's 15 s /
 *     10 s leave 5 s) that covers in-flight writes and clock-rate drift.
 *   - Step down without exit. Losing the lease ends the term
 *     (on_stopped_leading) and the replica stays a candidate; it can lead
 *     again later (a new term). Before on_started_leading the owner's ready
 *     hook runs (e.g. a cache freshness barrier); leader work starts only
 *     when it completes and the term is still current.
 *   - Instant handover. Candidates watch the Lease and re-evaluate on every
 *     change: a released lease (holder "") is taken within milliseconds, an
 *     expired one at its expiry instant (a timer), and a poll every retry
 *     period covers a broken watch. sf_elect_release stops leader work and
 *     then writes holder "" with leaseDurationSeconds 1, only if the Lease
 *     is still at the resourceVersion this replica last wrote.
 *   - Health: sf_elect_healthz fails on every replica when the Lease API has
 *     not answered usefully for a bound, and on a leader that has not
 *     renewed for lease duration + a margin (a deadlock watchdog).
 *
 * The election talks to the API through its own sf_kube_client, created
 * inside sf_elect_new from the owner's config: a separate connection, no
 * client-side rate limit, no 429 retries, and a per-request timeout of
 * max(1 s, renew deadline / 2). Renewals therefore never queue behind the
 * controller's own traffic, and the controller's write gate never applies
 * to the Lease writes.
 *
 * RBAC: get, list, watch, create and update on leases.coordination.k8s.io
 * in the Lease's namespace (client-go needs only get, create, update; the
 * watch is what makes handover instant, and without list/watch the elector
 * falls back to polling).
 *
 * Cancelling a write in flight is best effort: a request already on the
 * wire may still be applied. Involuntary loss is covered by the margin
 * above; on release, the successor can only start after our Lease write,
 * which is sent after leader work was told to stop and writes cancelled.
 *
 * Everything runs on one libuv loop. Callbacks run from the loop; they may
 * call sf_elect_release and sf_elect_close. Those two cancel writes on the
 * fenced clients at once, so do not call them from inside a streaming
 * (watch event / list item) callback of a fenced client.
 */
#ifndef STEADFAST_ELECTION_H
#define STEADFAST_ELECTION_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "steadfast/buf.h"
#include "steadfast/prom.h"
#include "steadfast/client.h"
#include "steadfast/config.h"
#include "steadfast/json.h"

#define SF_ELECT_DEFAULT_LEASE_MS 15000L
#define SF_ELECT_DEFAULT_RENEW_DEADLINE_MS 10000L
#define SF_ELECT_DEFAULT_RETRY_MS 2000L
/* client-go's healthz adaptor tolerates this much past the lease duration */
#define SF_ELECT_DEFAULT_WATCHDOG_MARGIN_MS 20000L

/* ---- the Lease record (pure functions, no I/O) ---- */

/* Bits of sf_elect_record.bad: a field present but unusable. */
enum {
	SF_ELECT_BAD_SPEC = 1 << 0,        /* spec missing or not an object */
	SF_ELECT_BAD_HOLDER = 1 << 1,      /* holderIdentity not a string */
	SF_ELECT_BAD_DURATION = 1 << 2,    /* leaseDurationSeconds missing, <= 0 or not an int */
	SF_ELECT_BAD_ACQUIRE = 1 << 3,     /* acquireTime not an RFC3339 time */
	SF_ELECT_BAD_RENEW = 1 << 4,       /* renewTime not an RFC3339 time */
	SF_ELECT_BAD_TRANSITIONS = 1 << 5, /* leaseTransitions negative or not an int */
};

#define SF_ELECT_TIME_LEN 48

/* spec of a Lease as leader election sees it. */
typedef struct sf_elect_record {
	char *holder;        /* holderIdentity; "" when absent or null (malloc'd) */
	int64_t duration_s;  /* leaseDurationSeconds; 0 when absent or bad */
	int64_t transitions; /* leaseTransitions; 0 when absent or bad */
	/* MicroTime text as stored ("" when absent) and its value (ns since
	 * the epoch, 0 when absent or bad) */
	char acquire_time[SF_ELECT_TIME_LEN];
	char renew_time[SF_ELECT_TIME_LEN];
	int64_t acquire_ns, renew_ns;
	unsigned bad; /* SF_ELECT_BAD_* */
} sf_elect_record;

/* Decodes a Lease object (or its spec: a view with no "spec" member but a
 * holderIdentity/leaseDurationSeconds is taken as the spec). Garbage fields
 * are flagged in out->bad, never an error. 0, -EINVAL (not an object), or
 * -ENOMEM. out must be cleared with sf_elect_record_clear. */
int sf_elect_record_decode(sf_jv lease, sf_elect_record *out);
void sf_elect_record_clear(sf_elect_record *r);
int sf_elect_record_copy(sf_elect_record *dst, const sf_elect_record *src);
/* 1 if the election fields are equal (what client-go's observedRawRecord
 * comparison tells: has the record changed since it was last seen?). */
int sf_elect_record_equal(const sf_elect_record *a, const sf_elect_record *b);
/* Appends the spec as client-go writes it: all five fields, times as
 * MicroTime with exactly six fractional digits in UTC. */
int sf_elect_record_encode(const sf_elect_record *r, sf_buf *out);

/* The record to write to take or renew the lease, given the current one
 * (NULL when the Lease does not exist), as client-go builds it: renewing
 * (cur's holder is self) keeps acquireTime and leaseTransitions; taking
 * over sets acquireTime = now and leaseTransitions + 1; creating starts at
 * 0. -ENOMEM. */
int sf_elect_record_next(const sf_elect_record *cur, const char *self, int64_t lease_s,
                         int64_t wall_now_ns, sf_elect_record *out);
/* The release record: holder "", leaseDurationSeconds 1, acquire and
 * renew time now, leaseTransitions kept. */
int sf_elect_record_release(const sf_elect_record *cur, int64_t wall_now_ns, sf_elect_record *out);

/* A whole Lease body for PUT (cur's metadata kept verbatim, so the
 * resourceVersion read is the precondition and labels, annotations and
 * owner references survive) or for POST (cur NULL: fresh metadata). */
int sf_elect_lease_body(const sf_obj *cur, const char *ns, const char *name,
                        const sf_elect_record *r, sf_buf *out);

/* ---- decisions (pure functions of what was observed and when) ---- */

/* client-go's rule, plus what the Lease can express: all positive, lease
 * a whole number of seconds, lease > renew deadline > 1.2 x retry period.
 * 0, or -EINVAL with a message naming the values. */
int sf_elect_check_timing(long lease_ms, long renew_deadline_ms, long retry_ms, char *err,
                          size_t errlen);

/* Monotonic instant at which the lease observed (changed) at observed_ns
 * expires: observed_ns + the holder's leaseDurationSeconds, or + fallback_ns
 * when that field is missing or bad. An empty holder has expired at
 * observed_ns. */
int64_t sf_elect_expiry_ns(const sf_elect_record *r, int64_t observed_ns, int64_t fallback_ns);
/* May this replica write the lease now? Yes when the holder is empty, is
 * self, or the lease expired (now >= expiry). */
int sf_elect_can_acquire(const sf_elect_record *r, int64_t observed_ns, int64_t now_ns,
                         const char *self, int64_t fallback_ns);
/* The fence: open only while leading and now < last_renew + renew deadline
 * (last_renew = when the last successful renew was sent). */
int sf_elect_fence_check(int leading, int64_t last_renew_ns, int64_t renew_deadline_ns,
                         int64_t now_ns);
/* The leader watchdog: 1 (unhealthy) when leading and the last renew is
 * older than lease + margin. */
int sf_elect_watchdog_tripped(int leading, int64_t last_renew_ns, int64_t lease_ns,
                              int64_t margin_ns, int64_t now_ns);

/* "<$POD_NAME or hostname>_<random UUID>". 0, -ERANGE, or -errno. */
int sf_elect_default_identity(char *buf, size_t n);

/* ---- the elector ---- */

typedef struct sf_elect sf_elect;

typedef struct sf_elect_callbacks {
	/* Optional. Runs when the lease was taken, before leader work starts,
	 * with the term and the resourceVersion of the Lease write (a cache
	 * can wait until it has seen that version). The owner answers with
	 * sf_elect_ready_done(e, term, err), at once or later; an answer for
	 * a term that has ended is ignored. Without a hook, leader work starts
	 * at once. */
	void (*ready)(void *ud, sf_elect *e, uint64_t term, const char *lease_rv);
	/* Leader work may start: the fence is open. */
	void (*on_started_leading)(void *ud, uint64_t term);
	/* Leader work must stop: the fence has closed and writes in flight
	 * were cancelled. Paired with each on_started_leading. */
	void (*on_stopped_leading)(void *ud, uint64_t term, const char *reason);
	/* The observed holder changed ("" = nobody holds the lease). */
	void (*on_new_leader)(void *ud, const char *identity);
	void *ud;
} sf_elect_callbacks;

typedef struct sf_elect_opts {
	const char *ns;         /* Lease namespace (required) */
	const char *name;       /* Lease name (required) */
	const char *identity;   /* NULL = sf_elect_default_identity() */
	long lease_duration_ms; /* 0 = 15000; a whole number of seconds */
	long renew_deadline_ms; /* 0 = 10000 */
	long retry_period_ms;   /* 0 = 2000 */
	/* sf_elect_healthz fails when the Lease API has not answered usefully
	 * (any response but 401, 403, 429 and 5xx) for this long; 0 = lease
	 * duration + 20 s */
	long api_unreachable_ms;
	long watchdog_margin_ms; /* 0 = 20000 */
	const char *user_agent;  /* of the election's client; NULL = the default */
	sf_elect_callbacks cb;
} sf_elect_opts;

/* Validates opts (a bad combination of durations is -EINVAL with the
 * reason in err) and creates the elector and its client from cfg (borrowed,
 * must outlive the elector). Nothing is sent before sf_elect_start. */
int sf_elect_new(uv_loop_t *loop, sf_kube_config *cfg, const sf_elect_opts *opts, sf_elect **out,
                 char *err, size_t errlen);
/* Starts campaigning: watch the Lease, poll it, take it when free. */
int sf_elect_start(sf_elect *e);

/* Installs the fence as c's write gate (c stays the owner's). Up to 8
 * clients. 0, -ENOSPC, -EEXIST. */
int sf_elect_fence_attach(sf_elect *e, sf_kube_client *c);
/* Removes the gate from c (c then sends writes unchecked). */
void sf_elect_fence_detach(sf_elect *e, sf_kube_client *c);
/* 1 if a write may be sent now (the gate's own test). */
int sf_elect_fence_open(const sf_elect *e);

/* The owner's answer to the ready hook. err != 0: not ready; the hook is
 * asked again after a retry period while the term lasts. */
void sf_elect_ready_done(sf_elect *e, uint64_t term, int err);

/* Graceful hand-over (SIGTERM): stops leader work (on_stopped_leading),
 * stops campaigning, then writes holder "" / leaseDurationSeconds 1 only
 * if the Lease is still at the resourceVersion this replica last wrote.
 * cb(ud, err) runs once from the loop: 0 (released, or nothing to
 * release), -ESTALE (the Lease changed since our last write: left alone),
 * or the request's error. Returns 0, or -EALREADY. */
int sf_elect_release(sf_elect *e, void (*cb)(void *ud, int err), void *ud);

/* Stops everything (on_stopped_leading if leading, no release), closes
 * the fence for good on attached clients (they refuse writes from then
 * on), closes the client and the timers; cb when freed. */
void sf_elect_close(sf_elect *e, void (*cb)(void *ud), void *ud);

int sf_elect_is_leader(const sf_elect *e); /* holds the lease (fence may be open) */
uint64_t sf_elect_term(const sf_elect *e); /* current or last term, 0 = never led */
const char *sf_elect_identity(const sf_elect *e);
const char *sf_elect_leader(const sf_elect *e); /* last observed holder, "" if none */

/* 0 when healthy; else -EIO with the reason in msg. */
int sf_elect_healthz(const sf_elect *e, char *msg, size_t n);
/* The leader watchdog alone (for a liveness probe): an API outage is not a
 * reason to restart the process, a leader stuck without renewing is. */
int sf_elect_livez(const sf_elect *e, char *msg, size_t n);

typedef struct sf_elect_stats {
	int is_leader;     /* leader_election_master_status */
	int leader_active; /* leader work started (ready hook done) */
	uint64_t term;
	unsigned long acquisitions;   /* times this replica took the lease */
	unsigned long losses;         /* terms ended other than by release/close */
	unsigned long leader_changes; /* observed holder changes */
	int64_t lease_transitions;    /* leaseTransitions of the observed record */
	double seconds_since_renew;   /* -1 if never renewed */
	int64_t last_renew_mono_ns;   /* 0 if never */
	unsigned long renews_ok, renews_failed, conflicts;
	unsigned long fence_closures;
	unsigned long writes_refused;   /* by the fence, on attached clients */
	unsigned long writes_cancelled; /* on attached clients, all causes */
	/* latency of successful Lease writes, buckets 1 ms to 10 s */
	sf_prom_hist renew_latency;
} sf_elect_stats;

void sf_elect_stats_get(const sf_elect *e, sf_elect_stats *out);
/* Adds the stats to a /metrics exposition (leader_election_master_status
 * and steadfast_leader_election_*), labelled name="<lease name>". */
int sf_elect_metrics_write(const sf_elect *e, sf_prom *p);

/* ---- lease status for operators (`steadfast lease status`) ---- */

typedef enum {
	SF_ELECT_STATUS_HEALTHY = 0, /* held, renewed within its lease duration */
	SF_ELECT_STATUS_EXPIRED = 1, /* held, but not renewed within its duration */
	SF_ELECT_STATUS_UNHELD = 2,  /* holder empty (released) */
	SF_ELECT_STATUS_ABSENT = 3,  /* no such Lease */
	SF_ELECT_STATUS_INVALID = 4, /* fields missing or unusable */
} sf_elect_status;

/* Describes a Lease (NULL = it does not exist) for an operator: holder,
 * acquired at, renewed N s ago, expires in, transitions, and a verdict.
 * json != 0 writes one JSON object (for -o json) instead of text. A one-shot
 * reader has no observation history, so ages compare the Lease's times
 * with wall_now_ns (this machine's clock): the text says so, and clock
 * skew shifts them. Returns the verdict, usable as the exit code (non-zero
 * when expired, held by nobody, absent or invalid), or -ENOMEM. */
int sf_elect_status_format(const char *ns, const char *name, const sf_obj *lease,
                           int64_t wall_now_ns, int json, sf_buf *out);
const char *sf_elect_status_name(sf_elect_status s);

#endif
