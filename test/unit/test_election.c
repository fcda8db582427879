/*
 * test_election.c - the election's pure parts: the Lease record as
 * client-go reads and writes it (MicroTime with six digits, round trips,
 * garbage fields), the timing rule, the expiry and fence decisions as
 * functions of (observed record, observed time, now), identities, and the
 * elector's life cycle against an unreachable server (no network needed).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/election.h"
#include "steadfast/time.h"
#include "tl.h"

#define S SF_NSEC_PER_SEC

static sf_elect_record decode(const char *json)
{
	char err[128];
	sf_obj *o = sf_obj_parse(json, strlen(json), err, sizeof(err));
	cr_assert(o, "bad test JSON %s: %s", json, err);
	sf_elect_record r;
	cr_assert_eq(sf_elect_record_decode(sf_obj_root(o), &r), 0);
	sf_obj_unref(o);
	return r;
}

/* ---- timing rule ---- */

Test(election_timing, defaults_and_client_go_rule)
{
	char err[256] = "";
	cr_assert_eq(sf_elect_check_timing(15000, 10000, 2000, err, sizeof(err)), 0);
	cr_assert_eq(sf_elect_check_timing(3000, 2000, 500, err, sizeof(err)), 0);
	/* lease must exceed the renew deadline */
	cr_assert_eq(sf_elect_check_timing(10000, 10000, 2000, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "lease duration (10000 ms) must be greater than the renew deadline"),
	          "%s", err);
	cr_assert_eq(sf_elect_check_timing(5000, 10000, 2000, err, sizeof(err)), -EINVAL);
	/* renew deadline must exceed 1.2 x retry period */
	cr_assert_eq(sf_elect_check_timing(15000, 2400, 2000, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "1.2 x the retry period"), "%s", err);
	cr_assert(strstr(err, "2400"), "%s", err);
	cr_assert_eq(sf_elect_check_timing(15000, 2401, 2000, err, sizeof(err)), 0);
	cr_assert_eq(sf_elect_check_timing(15000, 10000, 8334, err, sizeof(err)), -EINVAL);
	cr_assert_eq(sf_elect_check_timing(15000, 10000, 8333, err, sizeof(err)), 0);
	/* positive, whole seconds for the lease */
	cr_assert_eq(sf_elect_check_timing(0, 10000, 2000, err, sizeof(err)), -EINVAL);
	cr_assert_eq(sf_elect_check_timing(15000, -1, 2000, err, sizeof(err)), -EINVAL);
	cr_assert_eq(sf_elect_check_timing(15000, 10000, 0, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "positive"), "%s", err);
	cr_assert_eq(sf_elect_check_timing(15500, 10000, 2000, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "whole number of seconds"), "%s", err);
}

/* ---- record ---- */

Test(election_record, decodes_what_client_go_writes)
{
	sf_elect_record r =
	    decode("{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":"
	           "{\"name\":\"l\",\"namespace\":\"n\",\"resourceVersion\":\"42\"},\"spec\":{"
	           "\"holderIdentity\":\"host-a_0f1e\",\"leaseDurationSeconds\":15,"
	           "\"acquireTime\":\"2026-11-29T15:04:05.123456Z\","
	           "\"renewTime\":\"2026-11-29T15:04:07.000001Z\",\"leaseTransitions\":7}}");
	cr_assert_str_eq(r.holder, "host-a_0f1e");
	cr_assert_eq(r.duration_s, 15);
	cr_assert_eq(r.transitions, 7);
	cr_assert_str_eq(r.acquire_time, "2026-11-29T15:04:05.123456Z");
	cr_assert_str_eq(r.renew_time, "2026-11-29T15:04:07.000001Z");
	int64_t want;
	cr_assert_eq(sf_time_parse_rfc3339("2026-11-29T15:04:05Z", 20, &want), 0);
	cr_assert_eq(r.acquire_ns, want + 123456000);
	cr_assert_eq(r.renew_ns, want + 2 * S + 1000);
	cr_assert_eq(r.bad, 0);
	sf_elect_record_clear(&r);
	cr_assert_null(r.holder);
	sf_elect_record_clear(NULL);
}

Test(election_record, encode_is_exactly_client_go_and_round_trips)
{
	sf_elect_record r = {0};
	r.holder = strdup("pod-1_\"q\"");
	r.duration_s = 15;
	r.transitions = 3;
	int64_t t;
	cr_assert_eq(sf_time_parse_rfc3339("2026-01-02T03:04:05.000007Z", 27, &t), 0);
	r.acquire_ns = t;
	r.renew_ns = t + 5 * S + 120000000; /* .120007 */
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_assert_eq(sf_elect_record_encode(&r, &b), 0);
	cr_assert_str_eq(b.data,
	                 "{\"holderIdentity\":\"pod-1_\\\"q\\\"\",\"leaseDurationSeconds\":15,"
	                 "\"acquireTime\":\"2026-01-02T03:04:05.000007Z\","
	                 "\"renewTime\":\"2026-01-02T03:04:10.120007Z\","
	                 "\"leaseTransitions\":3}");
	sf_elect_record back = decode(b.data);
	cr_assert_str_eq(back.holder, "pod-1_\"q\"");
	cr_assert_eq(back.acquire_ns, r.acquire_ns);
	cr_assert_eq(back.renew_ns, r.renew_ns);
	cr_assert_eq(back.bad, 0);
	/* decoded from a spec alone: equal to a re-decode of its encoding */
	sf_buf_reset(&b);
	cr_assert_eq(sf_elect_record_encode(&back, &b), 0);
	sf_elect_record again = decode(b.data);
	cr_assert(sf_elect_record_equal(&back, &again));
	sf_elect_record_clear(&again);
	sf_elect_record_clear(&back);
	sf_elect_record_clear(&r);
	sf_buf_free(&b);
}

Test(election_record, microtime_has_six_digits_always)
{
	sf_elect_record r;
	/* whole seconds still get six zeros; nanoseconds are truncated */
	cr_assert_eq(sf_elect_record_next(NULL, "me", 15, 1700000000LL * S + 999999999, &r), 0);
	cr_assert_str_eq(r.renew_time, "2023-11-14T22:13:20.999999Z");
	cr_assert_eq(r.renew_ns, 1700000000LL * S + 999999000);
	sf_elect_record_clear(&r);
	cr_assert_eq(sf_elect_record_next(NULL, "me", 15, 1700000000LL * S, &r), 0);
	cr_assert_str_eq(r.acquire_time, "2023-11-14T22:13:20.000000Z");
	sf_buf b;
	sf_buf_init(&b, 0);
	sf_elect_record_encode(&r, &b);
	cr_assert(strstr(b.data, "\"renewTime\":\"2023-11-14T22:13:20.000000Z\""), "%s", b.data);
	sf_buf_free(&b);
	sf_elect_record_clear(&r);
}

Test(election_record, garbage_fields_are_flagged_never_fatal)
{
	struct {
		const char *json;
		unsigned bad;
		const char *holder;
	} cases[] = {
	    {"{\"metadata\":{\"name\":\"l\"}}", SF_ELECT_BAD_SPEC, ""},
	    {"{\"metadata\":{},\"spec\":[]}", SF_ELECT_BAD_SPEC, ""},
	    {"{\"metadata\":{},\"spec\":null}", SF_ELECT_BAD_SPEC, ""},
	    {"{\"spec\":{}}", 0, ""},
	    {"{\"spec\":{\"holderIdentity\":null,\"leaseDurationSeconds\":1}}", 0, ""},
	    {"{\"spec\":{\"holderIdentity\":12,\"leaseDurationSeconds\":15}}", SF_ELECT_BAD_HOLDER,
	     ""},
	    {"{\"spec\":{\"holderIdentity\":\"x\"}}", SF_ELECT_BAD_DURATION, "x"},
	    {"{\"spec\":{\"holderIdentity\":\"x\",\"leaseDurationSeconds\":\"15\"}}",
	     SF_ELECT_BAD_DURATION, "x"},
	    {"{\"spec\":{\"holderIdentity\":\"x\",\"leaseDurationSeconds\":0}}",
	     SF_ELECT_BAD_DURATION, "x"},
	    {"{\"spec\":{\"holderIdentity\":\"x\",\"leaseDurationSeconds\":-3}}",
	     SF_ELECT_BAD_DURATION, "x"},
	    {"{\"spec\":{\"holderIdentity\":\"x\",\"leaseDurationSeconds\":1.5}}",
	     SF_ELECT_BAD_DURATION, "x"},
	    {"{\"spec\":{\"holderIdentity\":\"x\",\"leaseDurationSeconds\":99999999999999999999}}",
	     SF_ELECT_BAD_DURATION, "x"},
	    {"{\"spec\":{\"holderIdentity\":\"x\",\"leaseDurationSeconds\":5,"
	     "\"renewTime\":\"yesterday\"}}",
	     SF_ELECT_BAD_RENEW, "x"},
	    {"{\"spec\":{\"holderIdentity\":\"x\",\"leaseDurationSeconds\":5,"
	     "\"acquireTime\":12345,\"renewTime\":\"2026-13-01T00:00:00.000000Z\"}}",
	     SF_ELECT_BAD_ACQUIRE | SF_ELECT_BAD_RENEW, "x"},
	    {"{\"spec\":{\"holderIdentity\":\"x\",\"leaseDurationSeconds\":5,"
	     "\"acquireTime\":\"2026-01-01T00:00:00.000000Z-this-is-a-very-long-trailing-garbage\"}"
	     "}",
	     SF_ELECT_BAD_ACQUIRE, "x"},
	    {"{\"spec\":{\"holderIdentity\":\"x\",\"leaseDurationSeconds\":5,"
	     "\"leaseTransitions\":-1}}",
	     SF_ELECT_BAD_TRANSITIONS, "x"},
	    {"{\"spec\":{\"holderIdentity\":\"x\",\"leaseDurationSeconds\":5,"
	     "\"leaseTransitions\":\"two\"}}",
	     SF_ELECT_BAD_TRANSITIONS, "x"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sf_elect_record r = decode(cases[i].json);
		cr_expect_eq(r.bad, cases[i].bad, "case %zu %s: bad %#x, want %#x", i,
		             cases[i].json, r.bad, cases[i].bad);
		cr_expect_str_eq(r.holder, cases[i].holder, "case %zu", i);
		if (r.bad & SF_ELECT_BAD_DURATION)
			cr_expect_eq(r.duration_s, 0, "case %zu", i);
		if (r.bad & SF_ELECT_BAD_RENEW)
			cr_expect_eq(r.renew_ns, 0, "case %zu", i);
		sf_elect_record_clear(&r);
	}
	/* not an object at all */
	sf_elect_record r;
	cr_assert_eq(sf_elect_record_decode(sf_jv_root("[1]", 3), &r), -EINVAL);
	cr_assert_eq(sf_elect_record_decode(SF_JV_NONE, &r), -EINVAL);
}

Test(election_record, equality_sees_every_field)
{
	const char *base = "{\"spec\":{\"holderIdentity\":\"a\",\"leaseDurationSeconds\":15,"
	                   "\"acquireTime\":\"2026-01-01T00:00:00.000000Z\","
	                   "\"renewTime\":\"2026-01-01T00:00:01.000000Z\",\"leaseTransitions\":1}}";
	const char *variants[] = {
	    "{\"spec\":{\"holderIdentity\":\"b\",\"leaseDurationSeconds\":15,"
	    "\"acquireTime\":\"2026-01-01T00:00:00.000000Z\","
	    "\"renewTime\":\"2026-01-01T00:00:01.000000Z\",\"leaseTransitions\":1}}",
	    "{\"spec\":{\"holderIdentity\":\"a\",\"leaseDurationSeconds\":16,"
	    "\"acquireTime\":\"2026-01-01T00:00:00.000000Z\","
	    "\"renewTime\":\"2026-01-01T00:00:01.000000Z\",\"leaseTransitions\":1}}",
	    "{\"spec\":{\"holderIdentity\":\"a\",\"leaseDurationSeconds\":15,"
	    "\"acquireTime\":\"2026-01-01T00:00:00.000001Z\","
	    "\"renewTime\":\"2026-01-01T00:00:01.000000Z\",\"leaseTransitions\":1}}",
	    "{\"spec\":{\"holderIdentity\":\"a\",\"leaseDurationSeconds\":15,"
	    "\"acquireTime\":\"2026-01-01T00:00:00.000000Z\","
	    "\"renewTime\":\"2026-01-01T00:00:01.000001Z\",\"leaseTransitions\":1}}",
	    "{\"spec\":{\"holderIdentity\":\"a\",\"leaseDurationSeconds\":15,"
	    "\"acquireTime\":\"2026-01-01T00:00:00.000000Z\","
	    "\"renewTime\":\"2026-01-01T00:00:01.000000Z\",\"leaseTransitions\":2}}",
	};
	sf_elect_record a = decode(base), a2 = decode(base);
	cr_assert(sf_elect_record_equal(&a, &a2));
	/* metadata (resourceVersion, labels) is not part of the record */
	sf_elect_record m =
	    decode("{\"metadata\":{\"resourceVersion\":\"9\",\"labels\":{\"x\":\"y\"}},\"spec\":{"
	           "\"holderIdentity\":\"a\",\"leaseDurationSeconds\":15,"
	           "\"acquireTime\":\"2026-01-01T00:00:00.000000Z\","
	           "\"renewTime\":\"2026-01-01T00:00:01.000000Z\",\"leaseTransitions\":1}}");
	cr_assert(sf_elect_record_equal(&a, &m));
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		sf_elect_record v = decode(variants[i]);
		cr_expect(!sf_elect_record_equal(&a, &v), "variant %zu compares equal", i);
		sf_elect_record_clear(&v);
	}
	sf_elect_record c;
	cr_assert_eq(sf_elect_record_copy(&c, &a), 0);
	cr_assert(sf_elect_record_equal(&a, &c));
	cr_assert_neq(c.holder, a.holder);
	sf_elect_record_clear(&c);
	sf_elect_record_clear(&m);
	sf_elect_record_clear(&a);
	sf_elect_record_clear(&a2);
}

Test(election_record, next_record_follows_client_go)
{
	int64_t t0 = 1800000000LL * S, t1 = t0 + 7 * S;
	sf_elect_record created;
	cr_assert_eq(sf_elect_record_next(NULL, "me", 15, t0, &created), 0);
	cr_assert_str_eq(created.holder, "me");
	cr_assert_eq(created.duration_s, 15);
	cr_assert_eq(created.transitions, 0);
	cr_assert_eq(created.acquire_ns, t0);
	cr_assert_eq(created.renew_ns, t0);

	/* renewing our own lease keeps acquireTime and leaseTransitions */
	sf_elect_record mine = created;
	mine.transitions = 4;
	sf_elect_record renewed;
	cr_assert_eq(sf_elect_record_next(&mine, "me", 15, t1, &renewed), 0);
	cr_assert_eq(renewed.acquire_ns, t0);
	cr_assert_eq(renewed.renew_ns, t1);
	cr_assert_eq(renewed.transitions, 4);

	/* taking over from someone else: transitions + 1, acquireTime now */
	sf_elect_record other = decode("{\"spec\":{\"holderIdentity\":\"them\","
	                               "\"leaseDurationSeconds\":30,\"leaseTransitions\":9,"
	                               "\"acquireTime\":\"2020-01-01T00:00:00.000000Z\","
	                               "\"renewTime\":\"2020-01-01T00:00:00.000000Z\"}}");
	sf_elect_record taken;
	cr_assert_eq(sf_elect_record_next(&other, "me", 15, t1, &taken), 0);
	cr_assert_str_eq(taken.holder, "me");
	cr_assert_eq(taken.duration_s, 15, "our duration, not the previous holder's");
	cr_assert_eq(taken.transitions, 10);
	cr_assert_eq(taken.acquire_ns, t1);

	/* taking a released lease also counts a transition */
	sf_elect_record rel;
	cr_assert_eq(sf_elect_record_release(&taken, t1 + S, &rel), 0);
	cr_assert_str_eq(rel.holder, "");
	cr_assert_eq(rel.duration_s, 1);
	cr_assert_eq(rel.transitions, 10);
	cr_assert_eq(rel.acquire_ns, t1 + S);
	cr_assert_eq(rel.renew_ns, t1 + S);
	sf_elect_record after;
	cr_assert_eq(sf_elect_record_next(&rel, "other", 15, t1 + 2 * S, &after), 0);
	cr_assert_eq(after.transitions, 11);

	sf_elect_record_clear(&after);
	sf_elect_record_clear(&rel);
	sf_elect_record_clear(&taken);
	sf_elect_record_clear(&other);
	sf_elect_record_clear(&renewed);
	sf_elect_record_clear(&created);
}

Test(election_record, lease_body_keeps_metadata_verbatim)
{
	const char *cur_json =
	    "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":"
	    "\"l\",\"namespace\":\"n\",\"resourceVersion\":\"1234\",\"labels\":{\"team\":\"a\"},"
	    "\"uid\":\"u-1\"},\"spec\":{\"holderIdentity\":\"x\",\"leaseDurationSeconds\":15}}";
	char err[128];
	sf_obj *cur = sf_obj_parse(cur_json, strlen(cur_json), err, sizeof(err));
	cr_assert(cur);
	sf_elect_record r;
	cr_assert_eq(sf_elect_record_next(NULL, "me", 15, 1800000000LL * S, &r), 0);
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_assert_eq(sf_elect_lease_body(cur, "n", "l", &r, &b), 0);
	sf_obj *put = sf_obj_parse(b.data, b.len, err, sizeof(err));
	cr_assert(put, "%s: %s", b.data, err);
	cr_assert_str_eq(put->rv, "1234");
	cr_assert_str_eq(put->uid, "u-1");
	cr_assert(sf_jv_streq(sf_jv_path(sf_obj_root(put), "metadata.labels.team"), "a"));
	cr_assert(sf_jv_streq(sf_jv_path(sf_obj_root(put), "spec.holderIdentity"), "me"));
	cr_assert(sf_jv_streq(sf_jv_get(sf_obj_root(put), "kind"), "Lease"));
	sf_obj_unref(put);

	sf_buf_reset(&b);
	cr_assert_eq(sf_elect_lease_body(NULL, "n", "l", &r, &b), 0);
	sf_obj *post = sf_obj_parse(b.data, b.len, err, sizeof(err));
	cr_assert(post, "%s: %s", b.data, err);
	cr_assert_str_eq(post->name, "l");
	cr_assert_str_eq(post->ns, "n");
	cr_assert_str_eq(post->rv, "");
	sf_obj_unref(post);
	sf_buf_free(&b);
	sf_elect_record_clear(&r);
	sf_obj_unref(cur);
}

/* ---- decisions ---- */

Test(election_decide, expiry_counts_from_observation_never_renew_time)
{
	/* renewTime far in the past or future makes no difference: only when
	 * the record was seen to change, plus the holder's duration */
	const char *recs[] = {
	    "{\"spec\":{\"holderIdentity\":\"a\",\"leaseDurationSeconds\":15,"
	    "\"renewTime\":\"1999-01-01T00:00:00.000000Z\"}}",
	    "{\"spec\":{\"holderIdentity\":\"a\",\"leaseDurationSeconds\":15,"
	    "\"renewTime\":\"2199-01-01T00:00:00.000000Z\"}}",
	    "{\"spec\":{\"holderIdentity\":\"a\",\"leaseDurationSeconds\":15}}",
	};
	int64_t obs = 1000 * S;
	for (size_t i = 0; i < 3; i++) {
		sf_elect_record r = decode(recs[i]);
		cr_assert_eq(sf_elect_expiry_ns(&r, obs, 99 * S), obs + 15 * S);
		cr_assert(!sf_elect_can_acquire(&r, obs, obs, "me", 99 * S));
		cr_assert(!sf_elect_can_acquire(&r, obs, obs + 15 * S - 1, "me", 99 * S));
		cr_assert(sf_elect_can_acquire(&r, obs, obs + 15 * S, "me", 99 * S));
		/* our own lease is always ours to renew */
		cr_assert(sf_elect_can_acquire(&r, obs, obs, "a", 99 * S));
		sf_elect_record_clear(&r);
	}
}

Test(election_decide, empty_holder_free_at_once_and_bad_duration_uses_fallback)
{
	sf_elect_record empty = decode("{\"spec\":{\"holderIdentity\":\"\","
	                               "\"leaseDurationSeconds\":1}}");
	cr_assert_eq(sf_elect_expiry_ns(&empty, 50 * S, 15 * S), 50 * S);
	cr_assert(sf_elect_can_acquire(&empty, 50 * S, 50 * S, "me", 15 * S));
	sf_elect_record none = decode("{\"metadata\":{}}");
	cr_assert(sf_elect_can_acquire(&none, 50 * S, 50 * S, "me", 15 * S));
	/* holder without a usable duration: wait our own lease duration */
	sf_elect_record nodur = decode("{\"spec\":{\"holderIdentity\":\"ghost\"}}");
	cr_assert_eq(sf_elect_expiry_ns(&nodur, 50 * S, 15 * S), 65 * S);
	cr_assert(!sf_elect_can_acquire(&nodur, 50 * S, 64 * S, "me", 15 * S));
	cr_assert(sf_elect_can_acquire(&nodur, 50 * S, 65 * S, "me", 15 * S));
	/* the holder's duration wins over ours */
	sf_elect_record released = decode("{\"spec\":{\"holderIdentity\":\"x\","
	                                  "\"leaseDurationSeconds\":1}}");
	cr_assert_eq(sf_elect_expiry_ns(&released, 50 * S, 15 * S), 51 * S);
	sf_elect_record_clear(&released);
	sf_elect_record_clear(&nodur);
	sf_elect_record_clear(&none);
	sf_elect_record_clear(&empty);
}

Test(election_decide, fence_and_watchdog)
{
	int64_t renew = 100 * S, dl = 10 * S;
	cr_assert(!sf_elect_fence_check(0, renew, dl, renew));
	cr_assert(sf_elect_fence_check(1, renew, dl, renew));
	cr_assert(sf_elect_fence_check(1, renew, dl, renew + dl - 1));
	cr_assert(!sf_elect_fence_check(1, renew, dl, renew + dl));
	cr_assert(!sf_elect_fence_check(1, renew, dl, renew + 60 * S));
	/* the fence always closes before a follower that saw the renew at
	 * or after it was sent may take over (lease > renew deadline) */
	for (int64_t seen = renew; seen < renew + 3 * S; seen += S / 2) {
		sf_elect_record r = decode("{\"spec\":{\"holderIdentity\":\"L\","
		                           "\"leaseDurationSeconds\":15}}");
		int64_t take = sf_elect_expiry_ns(&r, seen, 15 * S);
		cr_assert(!sf_elect_fence_check(1, renew, dl, take));
		sf_elect_record_clear(&r);
	}
	cr_assert(!sf_elect_watchdog_tripped(0, 0, 15 * S, 20 * S, 1000 * S));
	cr_assert(!sf_elect_watchdog_tripped(1, renew, 15 * S, 20 * S, renew + 35 * S));
	cr_assert(sf_elect_watchdog_tripped(1, renew, 15 * S, 20 * S, renew + 35 * S + 1));
}

Test(election_identity, hostname_or_pod_name_and_random_suffix)
{
	char a[300], b[300];
	unsetenv("POD_NAME");
	cr_assert_eq(sf_elect_default_identity(a, sizeof(a)), 0);
	cr_assert_eq(sf_elect_default_identity(b, sizeof(b)), 0);
	cr_assert_str_neq(a, b);
	const char *us = strrchr(a, '_');
	cr_assert(us && strlen(us + 1) == 36, "%s", a);
	cr_assert_eq(us[15], '4', "uuid v4: %s", us + 1);
	setenv("POD_NAME", "steadfast-7d9f-abcde", 1);
	cr_assert_eq(sf_elect_default_identity(a, sizeof(a)), 0);
	cr_assert(strncmp(a, "steadfast-7d9f-abcde_", 21) == 0, "%s", a);
	unsetenv("POD_NAME");
	char tiny[8];
	cr_assert_eq(sf_elect_default_identity(tiny, sizeof(tiny)), -ERANGE);
}

/* ---- the elector without a server ---- */

static sf_kube_config *unreachable_config(void)
{
	/* port 1 on loopback: connection refused at once */
	const char *yaml = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
	                   "    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\n"
	                   "users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n"
	                   "  context:\n    cluster: c\n    user: u\ncurrent-context: x\n";
	sf_kube_config *cfg = NULL;
	char err[256];
	cr_assert_eq(
	    sf_kube_config_parse(yaml, strlen(yaml), "test", NULL, NULL, &cfg, err, sizeof(err)), 0,
	    "%s", err);
	return cfg;
}

static void on_closed(void *ud)
{
	*(int *)ud = 1;
}

Test(election_elector, bad_options_are_clear_errors)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	sf_kube_config *cfg = unreachable_config();
	sf_elect *e = NULL;
	char err[256];
	sf_elect_opts o = {.ns = "n", .name = "l", .lease_duration_ms = 10000};
	cr_assert_eq(sf_elect_new(&loop, cfg, &o, &e, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "must be greater than the renew deadline"), "%s", err);
	o.lease_duration_ms = 0;
	o.retry_period_ms = 9000;
	cr_assert_eq(sf_elect_new(&loop, cfg, &o, &e, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "1.2 x"), "%s", err);
	sf_elect_opts noname = {.ns = "n"};
	cr_assert_eq(sf_elect_new(&loop, cfg, &noname, &e, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "namespace and name"), "%s", err);
	sf_elect_opts emptyid = {.ns = "n", .name = "l", .identity = ""};
	cr_assert_eq(sf_elect_new(&loop, cfg, &emptyid, &e, err, sizeof(err)), -EINVAL);
	cr_assert_null(e);
	/* defaults are valid; a default identity is made */
	sf_elect_opts ok = {.ns = "n", .name = "l"};
	cr_assert_eq(sf_elect_new(&loop, cfg, &ok, &e, err, sizeof(err)), 0, "%s", err);
	cr_assert(strchr(sf_elect_identity(e), '_'));
	cr_assert_str_eq(sf_elect_leader(e), "");
	cr_assert(!sf_elect_is_leader(e));
	cr_assert(!sf_elect_fence_open(e));
	int closed = 0;
	sf_elect_close(e, on_closed, &closed);
	cr_assert_eq(tl_run_until(&loop, &closed, 5000), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0);
	sf_kube_config_free(cfg);
}

typedef struct unreach_ctx {
	sf_elect *e;
	int unhealthy, released, release_err, closed, leading;
} unreach_ctx;

static int unhealthy_pred(void *ud)
{
	unreach_ctx *x = ud;
	char msg[256];
	x->unhealthy = sf_elect_healthz(x->e, msg, sizeof(msg)) != 0;
	return x->unhealthy;
}

static void on_release(void *ud, int err)
{
	unreach_ctx *x = ud;
	x->released = 1;
	x->release_err = err;
}

static void on_started(void *ud, uint64_t term)
{
	(void)term;
	((unreach_ctx *)ud)->leading = 1;
}

Test(election_elector, unreachable_api_fails_healthz_and_never_leads)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	sf_kube_config *cfg = unreachable_config();
	unreach_ctx x = {0};
	sf_elect_opts o = {.ns = "n",
	                   .name = "l",
	                   .identity = "me_1",
	                   .lease_duration_ms = 2000,
	                   .renew_deadline_ms = 1000,
	                   .retry_period_ms = 100,
	                   .api_unreachable_ms = 400,
	                   .cb = {.on_started_leading = on_started, .ud = &x}};
	char err[256];
	cr_assert_eq(sf_elect_new(&loop, cfg, &o, &x.e, err, sizeof(err)), 0, "%s", err);
	/* a controller client behind the fence: its writes are refused */
	sf_kube_client *ctl;
	cr_assert_eq(sf_kube_client_new(&loop, cfg, NULL, &ctl), 0);
	cr_assert_eq(sf_elect_fence_attach(x.e, ctl), 0);
	cr_assert_eq(sf_elect_fence_attach(x.e, ctl), -EEXIST);
	cr_assert_eq(sf_elect_start(x.e), 0);
	cr_assert_eq(sf_elect_start(x.e), -EALREADY);
	char msg[256];
	cr_assert_eq(sf_elect_healthz(x.e, msg, sizeof(msg)), 0, "%s", msg);
	int64_t t0 = sf_mono_ns();
	cr_assert_eq(tl_run_until_fn(&loop, unhealthy_pred, &x, 5000), 0);
	cr_assert_geq(sf_mono_ns() - t0, 390 * SF_NSEC_PER_MSEC);
	sf_elect_healthz(x.e, msg, sizeof(msg));
	cr_assert(strstr(msg, "has not answered"), "%s", msg);
	cr_assert(!x.leading);

	tl_res r = {0};
	cr_assert_eq(sf_kube_create(ctl, &SF_GVR_CONFIGMAPS, "n", "{}", tl_res_cb, &r, NULL), 0);
	tl_wait(&loop, &r, 5000);
	cr_assert_eq(r.err, -EPERM);
	tl_res_clear(&r);
	sf_elect_stats st;
	sf_elect_stats_get(x.e, &st);
	cr_assert_eq(st.writes_refused, 1);
	cr_assert_eq(st.is_leader, 0);
	cr_assert_eq(st.seconds_since_renew, -1.0);
	sf_buf m;
	sf_buf_init(&m, 0);
	sf_prom *p = sf_prom_new();
	cr_assert_eq(sf_elect_metrics_write(x.e, p), 0);
	cr_assert_eq(sf_prom_render(p, &m), 0);
	sf_prom_free(p);
	cr_assert(strstr(m.data, "leader_election_master_status{name=\"l\"} 0\n"), "%s", m.data);
	cr_assert(strstr(m.data, "steadfast_leader_election_fence_refused_writes_total{name=\"l\"} "
	                         "1\n"),
	          "%s", m.data);
	cr_assert(strstr(m.data, "renew_duration_seconds_bucket{name=\"l\",le=\"+Inf\"} 0\n"), "%s",
	          m.data);
	sf_buf_free(&m);

	/* nothing held: release answers 0 without writing */
	cr_assert_eq(sf_elect_release(x.e, on_release, &x), 0);
	cr_assert_eq(sf_elect_release(x.e, on_release, &x), -EALREADY);
	cr_assert_eq(tl_run_until(&loop, &x.released, 5000), 0);
	cr_assert_eq(x.release_err, 0);
	sf_elect_close(x.e, on_closed, &x.closed);
	cr_assert_eq(tl_run_until(&loop, &x.closed, 5000), 0);
	/* after close the fence stays shut */
	cr_assert_eq(sf_kube_create(ctl, &SF_GVR_CONFIGMAPS, "n", "{}", tl_res_cb, &r, NULL), 0);
	tl_wait(&loop, &r, 5000);
	cr_assert_eq(r.err, -EPERM);
	tl_res_clear(&r);
	int cc = 0;
	sf_kube_client_close(ctl, on_closed, &cc);
	cr_assert_eq(tl_run_until(&loop, &cc, 5000), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0);
	sf_kube_config_free(cfg);
}

/* ---- lease status ---- */

static int status_of(const char *lease_json, int64_t now, int json, sf_buf *b)
{
	sf_buf_reset(b);
	sf_obj *o = NULL;
	if (lease_json) {
		char err[128];
		o = sf_obj_parse(lease_json, strlen(lease_json), err, sizeof(err));
		cr_assert(o, "%s", err);
	}
	int rc = sf_elect_status_format("kube-system", "steadfast", o, now, json, b);
	sf_obj_unref(o);
	return rc;
}

Test(election_status, verdicts_text_and_json)
{
	int64_t renew;
	cr_assert_eq(sf_time_parse_rfc3339("2026-11-29T15:00:00.000000Z", 27, &renew), 0);
	const char *held = "{\"metadata\":{\"name\":\"steadfast\",\"resourceVersion\":\"77\"},"
	                   "\"spec\":{\"holderIdentity\":\"pod-a_1\",\"leaseDurationSeconds\":15,"
	                   "\"acquireTime\":\"2026-11-29T14:00:00.000000Z\","
	                   "\"renewTime\":\"2026-11-29T15:00:00.000000Z\",\"leaseTransitions\":4}}";
	sf_buf b;
	sf_buf_init(&b, 0);

	cr_assert_eq(status_of(held, renew + 2 * S, 0, &b), SF_ELECT_STATUS_HEALTHY);
	cr_assert(strstr(b.data, "Holder:       pod-a_1\n"), "%s", b.data);
	cr_assert(strstr(b.data, "(2.0 s ago)"), "%s", b.data);
	cr_assert(strstr(b.data, "Acquired:     2026-11-29T14:00:00.000000Z (60m00s ago)") ||
	              strstr(b.data, "(1h00m ago)"),
	          "%s", b.data);
	cr_assert(strstr(b.data, "Expires:      in 13.0 s\n"), "%s", b.data);
	cr_assert(strstr(b.data, "Transitions:  4\n"), "%s", b.data);
	cr_assert(strstr(b.data, "Status:       healthy"), "%s", b.data);
	cr_assert(strstr(b.data, "clock"), "the text says ages depend on clocks");

	cr_assert_eq(status_of(held, renew + 20 * S, 0, &b), SF_ELECT_STATUS_EXPIRED);
	cr_assert(strstr(b.data, "Expires:      expired 5.0 s ago\n"), "%s", b.data);

	cr_assert_eq(status_of(held, renew + 20 * S, 1, &b), SF_ELECT_STATUS_EXPIRED);
	char err[128];
	sf_obj *j = sf_obj_parse(b.data, b.len, err, sizeof(err));
	cr_assert(j, "-o json is not JSON: %s (%s)", b.data, err);
	sf_jv root = sf_obj_root(j);
	cr_assert(sf_jv_streq(sf_jv_get(root, "status"), "expired"));
	cr_assert(sf_jv_streq(sf_jv_get(root, "holderIdentity"), "pod-a_1"));
	cr_assert(sf_jv_streq(sf_jv_get(root, "resourceVersion"), "77"));
	cr_assert_eq(sf_jv_type(sf_jv_get(root, "healthy")), SF_JSON_FALSE);
	int64_t tr;
	cr_assert_eq(sf_jv_int64(sf_jv_get(root, "leaseTransitions"), &tr), 0);
	cr_assert_eq(tr, 4);
	cr_assert_eq(sf_jv_type(sf_jv_get(root, "expiresInSeconds")), SF_JSON_NUMBER);
	sf_obj_unref(j);

	const char *released = "{\"metadata\":{\"name\":\"steadfast\"},\"spec\":{"
	                       "\"holderIdentity\":\"\",\"leaseDurationSeconds\":1,"
	                       "\"renewTime\":\"2026-11-29T15:00:00.000000Z\"}}";
	cr_assert_eq(status_of(released, renew, 0, &b), SF_ELECT_STATUS_UNHELD);
	cr_assert(strstr(b.data, "Holder:       (none)"), "%s", b.data);
	cr_assert_eq(status_of(NULL, renew, 0, &b), SF_ELECT_STATUS_ABSENT);
	cr_assert(strstr(b.data, "no such Lease"), "%s", b.data);
	cr_assert_eq(status_of(NULL, renew, 1, &b), SF_ELECT_STATUS_ABSENT);
	cr_assert(strstr(b.data, "\"exists\":false"), "%s", b.data);
	cr_assert_eq(status_of("{\"metadata\":{\"name\":\"x\"}}", renew, 0, &b),
	             SF_ELECT_STATUS_INVALID);
	cr_assert_eq(status_of("{\"spec\":{\"holderIdentity\":\"a\"}}", renew, 0, &b),
	             SF_ELECT_STATUS_INVALID);
	cr_assert_str_eq(sf_elect_status_name(SF_ELECT_STATUS_HEALTHY), "healthy");
	sf_buf_free(&b);
}
