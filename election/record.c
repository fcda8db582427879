/*
 * record.c - the Lease record and the election's decisions, without I/O.
 *
 * Decoding accepts whatever the API (or a misbehaving writer) stored:
 * missing spec, missing or mistyped fields and unparsable times are flagged
 * in the record's `bad` bits and the rest is still usable, so the elector
 * can log the problem and recover instead of failing. Encoding writes the
 * five fields exactly as client-go's LeaderElectionRecordToLeaseSpec does.
 * The decisions (expiry, may-acquire, fence, watchdog) are pure functions
 * of the observed record and monotonic instants, so they are unit-tested
 * without a clock or a server.
 */
#include "steadfast/election.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "steadfast/time.h"

void sf_elect_record_clear(sf_elect_record *r)
{
	if (!r)
		return;
	free(r->holder);
	memset(r, 0, sizeof(*r));
}

static void decode_time(sf_jv v, char *text, int64_t *ns, unsigned *bad, unsigned bit)
{
	text[0] = '\0';
	*ns = 0;
	sf_json_type t = sf_jv_type(v);
	if (t == SF_JSON_NONE || t == SF_JSON_NULL)
		return;
	int len = sf_jv_str(v, text, SF_ELECT_TIME_LEN);
	if (len < 0) {
		/* keep something comparable for change detection */
		snprintf(text, SF_ELECT_TIME_LEN, "%.*s", (int)(v.n < 40 ? v.n : 40), v.p);
		*bad |= bit;
		return;
	}
	if (sf_time_parse_rfc3339(text, (size_t)len, ns) != 0) {
		*ns = 0;
		*bad |= bit;
	}
}

int sf_elect_record_decode(sf_jv lease, sf_elect_record *out)
{
	memset(out, 0, sizeof(*out));
	if (sf_jv_type(lease) != SF_JSON_OBJECT)
		return -EINVAL;
	sf_jv spec = sf_jv_get(lease, "spec");
	if (!sf_jv_ok(spec) && !sf_jv_ok(sf_jv_get(lease, "metadata")) &&
	    (sf_jv_ok(sf_jv_get(lease, "holderIdentity")) ||
	     sf_jv_ok(sf_jv_get(lease, "leaseDurationSeconds"))))
		spec = lease;
	if (sf_jv_type(spec) != SF_JSON_OBJECT) {
		out->bad |= SF_ELECT_BAD_SPEC | SF_ELECT_BAD_DURATION;
		spec = SF_JV_NONE;
	}

	sf_jv h = sf_jv_get(spec, "holderIdentity");
	sf_json_type ht = sf_jv_type(h);
	if (ht == SF_JSON_STRING) {
		out->holder = sf_jv_strdup(h);
	} else {
		if (ht != SF_JSON_NONE && ht != SF_JSON_NULL)
			out->bad |= SF_ELECT_BAD_HOLDER;
		out->holder = strdup("");
	}
	if (!out->holder)
		return -ENOMEM;

	int64_t v;
	if (sf_jv_int64(sf_jv_get(spec, "leaseDurationSeconds"), &v) == 0 && v > 0 &&
	    v <= INT32_MAX)
		out->duration_s = v;
	else
		out->bad |= SF_ELECT_BAD_DURATION;

	sf_jv tr = sf_jv_get(spec, "leaseTransitions");
	sf_json_type tt = sf_jv_type(tr);
	if (tt != SF_JSON_NONE && tt != SF_JSON_NULL) {
		if (sf_jv_int64(tr, &v) == 0 && v >= 0 && v <= INT32_MAX)
			out->transitions = v;
		else
			out->bad |= SF_ELECT_BAD_TRANSITIONS;
	}
	decode_time(sf_jv_get(spec, "acquireTime"), out->acquire_time, &out->acquire_ns, &out->bad,
	            SF_ELECT_BAD_ACQUIRE);
	decode_time(sf_jv_get(spec, "renewTime"), out->renew_time, &out->renew_ns, &out->bad,
	            SF_ELECT_BAD_RENEW);
	/* an empty lease (no holder) needs no duration to be taken */
	if (!out->holder[0] && !sf_jv_ok(sf_jv_get(spec, "leaseDurationSeconds")))
		out->bad &= ~(unsigned)SF_ELECT_BAD_DURATION;
	return 0;
}

int sf_elect_record_copy(sf_elect_record *dst, const sf_elect_record *src)
{
	char *h = strdup(src->holder ? src->holder : "");
	if (!h)
		return -ENOMEM;
	*dst = *src;
	dst->holder = h;
	return 0;
}

int sf_elect_record_equal(const sf_elect_record *a, const sf_elect_record *b)
{
	return strcmp(a->holder ? a->holder : "", b->holder ? b->holder : "") == 0 &&
	       a->duration_s == b->duration_s && a->transitions == b->transitions &&
	       strcmp(a->acquire_time, b->acquire_time) == 0 &&
	       strcmp(a->renew_time, b->renew_time) == 0;
}

int sf_elect_record_encode(const sf_elect_record *r, sf_buf *out)
{
	char at[40], rt[40];
	sf_time_rfc3339micro(r->acquire_ns, at, sizeof(at));
	sf_time_rfc3339micro(r->renew_ns, rt, sizeof(rt));
	const char *h = r->holder ? r->holder : "";
	int rc = sf_buf_puts(out, "{\"holderIdentity\":");
	if (!rc)
		rc = sf_buf_put_json_str(out, h, strlen(h));
	if (!rc)
		rc = sf_buf_printf(out,
		                   ",\"leaseDurationSeconds\":%lld,\"acquireTime\":\"%s\","
		                   "\"renewTime\":\"%s\",\"leaseTransitions\":%lld}",
		                   (long long)r->duration_s, at, rt, (long long)r->transitions);
	return rc;
}

static void set_time(char *text, int64_t *ns, int64_t wall)
{
	*ns = wall;
	sf_time_rfc3339micro(wall, text, SF_ELECT_TIME_LEN);
}

int sf_elect_record_next(const sf_elect_record *cur, const char *self, int64_t lease_s,
                         int64_t wall_now_ns, sf_elect_record *out)
{
	memset(out, 0, sizeof(*out));
	/* MicroTime has microsecond precision: keep the value what it reads back as */
	wall_now_ns -= wall_now_ns % 1000;
	out->holder = strdup(self);
	if (!out->holder)
		return -ENOMEM;
	out->duration_s = lease_s;
	set_time(out->renew_time, &out->renew_ns, wall_now_ns);
	if (cur && cur->holder && strcmp(cur->holder, self) == 0) {
		out->transitions = cur->transitions;
		if (cur->acquire_ns && !(cur->bad & SF_ELECT_BAD_ACQUIRE))
			set_time(out->acquire_time, &out->acquire_ns, cur->acquire_ns);
		else
			set_time(out->acquire_time, &out->acquire_ns, wall_now_ns);
	} else {
		out->transitions = cur ? cur->transitions + 1 : 0;
		if (out->transitions > INT32_MAX)
			out->transitions = 0;
		set_time(out->acquire_time, &out->acquire_ns, wall_now_ns);
	}
	return 0;
}

int sf_elect_record_release(const sf_elect_record *cur, int64_t wall_now_ns, sf_elect_record *out)
{
	memset(out, 0, sizeof(*out));
	wall_now_ns -= wall_now_ns % 1000;
	out->holder = strdup("");
	if (!out->holder)
		return -ENOMEM;
	out->duration_s = 1; /* 0 is rejected by the API's validation */
	out->transitions = cur ? cur->transitions : 0;
	set_time(out->renew_time, &out->renew_ns, wall_now_ns);
	set_time(out->acquire_time, &out->acquire_ns, wall_now_ns);
	return 0;
}

int sf_elect_lease_body(const sf_obj *cur, const char *ns, const char *name,
                        const sf_elect_record *r, sf_buf *out)
{
	int rc = sf_buf_puts(out, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
	                          "\"metadata\":");
	sf_jv meta = cur ? sf_jv_get(sf_obj_root(cur), "metadata") : SF_JV_NONE;
	if (rc)
		return rc;
	if (sf_jv_type(meta) == SF_JSON_OBJECT) {
		rc = sf_buf_append(out, meta.p, meta.n);
	} else {
		rc = sf_buf_puts(out, "{\"name\":");
		if (!rc)
			rc = sf_buf_put_json_str(out, name, strlen(name));
		if (!rc)
			rc = sf_buf_puts(out, ",\"namespace\":");
		if (!rc)
			rc = sf_buf_put_json_str(out, ns, strlen(ns));
		if (!rc)
			rc = sf_buf_putc(out, '}');
	}
	if (!rc)
		rc = sf_buf_puts(out, ",\"spec\":");
	if (!rc)
		rc = sf_elect_record_encode(r, out);
	if (!rc)
		rc = sf_buf_putc(out, '}');
	return rc;
}

/* ---- decisions ---- */

int sf_elect_check_timing(long lease_ms, long renew_ms, long retry_ms, char *err, size_t errlen)
{
	if (lease_ms <= 0 || renew_ms <= 0 || retry_ms <= 0) {
		snprintf(err, errlen,
		         "leader election durations must be positive (lease duration %ld ms, "
		         "renew deadline %ld ms, retry period %ld ms)",
		         lease_ms, renew_ms, retry_ms);
		return -EINVAL;
	}
	if (lease_ms % 1000) {
		snprintf(err, errlen,
		         "lease duration must be a whole number of seconds (the Lease stores "
		         "leaseDurationSeconds); got %ld ms",
		         lease_ms);
		return -EINVAL;
	}
	if (lease_ms > (long)INT32_MAX) {
		snprintf(err, errlen, "lease duration %ld ms is too long", lease_ms);
		return -EINVAL;
	}
	if (lease_ms <= renew_ms) {
		snprintf(err, errlen,
		         "lease duration (%ld ms) must be greater than the renew deadline (%ld ms)",
		         lease_ms, renew_ms);
		return -EINVAL;
	}
	/* renew > 1.2 * retry, in integers */
	if ((long long)renew_ms * 5 <= (long long)retry_ms * 6) {
		snprintf(err, errlen,
		         "renew deadline (%ld ms) must be greater than 1.2 x the retry period "
		         "(%ld ms x 1.2 = %lld ms)",
		         renew_ms, retry_ms, (long long)retry_ms * 6 / 5);
		return -EINVAL;
	}
	return 0;
}

int64_t sf_elect_expiry_ns(const sf_elect_record *r, int64_t observed_ns, int64_t fallback_ns)
{
	if (!r->holder || !r->holder[0])
		return observed_ns;
	int64_t d = r->duration_s > 0 ? r->duration_s * SF_NSEC_PER_SEC : fallback_ns;
	return observed_ns + d;
}

int sf_elect_can_acquire(const sf_elect_record *r, int64_t observed_ns, int64_t now_ns,
                         const char *self, int64_t fallback_ns)
{
	if (!r->holder || !r->holder[0])
		return 1;
	if (self && strcmp(r->holder, self) == 0)
		return 1;
	return now_ns >= sf_elect_expiry_ns(r, observed_ns, fallback_ns);
}

int sf_elect_fence_check(int leading, int64_t last_renew_ns, int64_t renew_deadline_ns,
                         int64_t now_ns)
{
	return leading && now_ns < last_renew_ns + renew_deadline_ns;
}

int sf_elect_watchdog_tripped(int leading, int64_t last_renew_ns, int64_t lease_ns,
                              int64_t margin_ns, int64_t now_ns)
{
	return leading && now_ns - last_renew_ns > lease_ns + margin_ns;
}

int sf_elect_default_identity(char *buf, size_t n)
{
	char host[256];
	const char *pod = getenv("POD_NAME");
	if (pod && *pod) {
		snprintf(host, sizeof(host), "%s", pod);
	} else if (gethostname(host, sizeof(host)) != 0) {
		return -errno;
	}
	host[sizeof(host) - 1] = '\0';
	unsigned char u[16];
	size_t got = 0;
	while (got < sizeof(u)) {
		ssize_t r = getrandom(u + got, sizeof(u) - got, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)r;
	}
	u[6] = (unsigned char)((u[6] & 0x0f) | 0x40); /* version 4 */
	u[8] = (unsigned char)((u[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	int w = snprintf(buf, n,
	                 "%s_%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	                 host, u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10],
	                 u[11], u[12], u[13], u[14], u[15]);
	return w < 0 || (size_t)w >= n ? -ERANGE : 0;
}
