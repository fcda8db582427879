/*
 * test_awstatus.c - the typed view of an AppWrapper's status: what it
 * reads, that its setters change the tree exactly as field-by-field edits
 * did (the bytes a status write carries), and that members it does not
 * know come back untouched and in their order.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/awstatus.h"
#include "steadfast/jdoc.h"
#include "steadfast/time.h"

#define NOW 1800000000000LL /* ms, a whole second */

static sf_jv jv(const char *json)
{
	return sf_jv_root(json, strlen(json));
}

/* the working copy as JSON (the caller's to free) */
static char *dump(const sf_aw_status *s)
{
	char *d = sf_jd_dump(s->doc);
	cr_assert_not_null(d);
	return d;
}

Test(awstatus, open_normalises_lists_and_keeps_unknown_members_in_order)
{
	sf_aw_status s;
	cr_assert_eq(
	    sf_aw_status_open(&s, jv("{\"x\":1,\"conditions\":7,\"phase\":\"Running\"}"), NOW), 0);
	char *d = dump(&s);
	cr_assert_str_eq(
	    d, "{\"x\":1,\"phase\":\"Running\",\"conditions\":[],\"componentStatus\":[]}");
	free(d);
	sf_aw_status_close(&s);

	cr_assert_eq(sf_aw_status_open(&s, SF_JV_NONE, NOW), 0);
	d = dump(&s);
	cr_assert_str_eq(d, "{\"conditions\":[],\"componentStatus\":[]}");
	free(d);
	cr_assert_eq(sf_aw_status_unchanged(&s, SF_JV_NONE), 1, "absent is the empty status");
	cr_assert_eq(sf_aw_status_unchanged(&s, jv("{}")), 1);
	sf_aw_status_close(&s);
}

Test(awstatus, phase_and_resetting_count)
{
	const char *orig = "{\"phase\":\"Running\",\"resettingCount\":2,\"conditions\":[],"
	                   "\"componentStatus\":[]}";
	sf_aw_status s;
	cr_assert_eq(sf_aw_status_open(&s, jv(orig), NOW), 0);
	cr_assert_eq(sf_aw_status_resetting_count(&s), 2);
	cr_assert_eq(sf_aw_status_unchanged(&s, jv(orig)), 1);
	sf_aw_status_set_phase(&s, SF_AW_RESETTING);
	sf_aw_status_set_resetting_count(&s, 3);
	cr_assert_eq(sf_aw_status_unchanged(&s, jv(orig)), 0);
	char *d = dump(&s);
	cr_assert_str_eq(d, "{\"phase\":\"Resetting\",\"resettingCount\":3,\"conditions\":[],"
	                    "\"componentStatus\":[]}");
	free(d);
	cr_assert_eq(s.rc, 0);
	sf_aw_status_close(&s);

	cr_assert_eq(sf_aw_status_open(&s, jv("{\"resettingCount\":-4}"), NOW), 0);
	cr_assert_eq(sf_aw_status_resetting_count(&s), 0, "a negative count reads as none");
	sf_aw_status_close(&s);
}

Test(awstatus, conditions_by_type)
{
	sf_aw_status s;
	cr_assert_eq(sf_aw_status_open(&s, SF_JV_NONE, NOW - 60000), 0);
	cr_assert_eq(
	    sf_aw_status_set_cond(&s, SF_AW_COND_UNHEALTHY, "True", "FoundFailedPods", "m"), 1);
	s.now_ms = NOW;
	cr_assert_eq(
	    sf_aw_status_set_cond(&s, SF_AW_COND_UNHEALTHY, "True", "FoundFailedPods", "m"), 0);
	sf_aw_cond u = sf_aw_status_cond(&s, SF_AW_COND_UNHEALTHY);
	cr_assert(sf_aw_cond_is(&u, "True", "FoundFailedPods"));
	cr_assert(sf_aw_cond_is(&u, "True", NULL));
	cr_assert_not(sf_aw_cond_is(&u, "False", NULL));
	cr_assert_eq(u.ltt_ms, NOW - 60000);
	cr_assert_str_eq(u.message, "m");
	cr_assert(sf_aw_status_cond_true(&s, SF_AW_COND_UNHEALTHY));

	/* clear only turns a True condition False */
	sf_aw_status_clear_cond(&s, SF_AW_COND_PODSREADY, "Resetting", "");
	cr_assert_not(sf_aw_status_cond(&s, SF_AW_COND_PODSREADY).present);
	sf_aw_status_clear_cond(&s, SF_AW_COND_UNHEALTHY, "FoundNoFailedPods", "");
	u = sf_aw_status_cond(&s, SF_AW_COND_UNHEALTHY);
	cr_assert(sf_aw_cond_is(&u, "False", "FoundNoFailedPods"));
	cr_assert_eq(u.ltt_ms, NOW);

	char *d = dump(&s);
	char want[400];
	char t[40];
	sf_time_rfc3339(NOW * SF_NSEC_PER_MSEC, t, sizeof(t));
	snprintf(
	    want, sizeof(want),
	    "{\"conditions\":[{\"type\":\"Unhealthy\",\"status\":\"False\","
	    "\"lastTransitionTime\":\"%s\",\"reason\":\"FoundNoFailedPods\",\"message\":\"\"}],"
	    "\"componentStatus\":[]}",
	    t);
	cr_assert_str_eq(d, want);
	free(d);
	sf_aw_status_close(&s);
}

Test(awstatus, component_entries)
{
	const char *orig =
	    "{\"componentStatus\":[{\"name\":\"\",\"kind\":\"Job\","
	    "\"podSets\":[]},{\"name\":\"b\",\"kind\":\"Pod\",\"apiVersion\":\"v1\"}]}";
	sf_aw_status s;
	cr_assert_eq(sf_aw_status_open(&s, jv(orig), NOW), 0);
	cr_assert_eq(sf_aw_status_ncomps(&s), 2);
	sf_aw_comp_status c = sf_aw_status_comp(&s, 0);
	cr_assert(c.present);
	cr_assert_str_eq(c.id[SF_AW_ID_KIND], "Job");
	cr_assert_str_eq(c.id[SF_AW_ID_API_VERSION], "", "absent reads as empty");
	cr_assert_not(c.deployed.present);
	cr_assert_not(sf_aw_status_comp(&s, 2).present);
	cr_assert_str_eq(sf_aw_status_comp(&s, 2).id[SF_AW_ID_NAME], "");

	sf_aw_status_set_comp_id(&s, 0, SF_AW_ID_API_VERSION, "batch/v1");
	sf_aw_status_set_comp_id(&s, 0, SF_AW_ID_NAME, "job-x7");
	sf_aw_status_set_comp_deployed(&s, 0, "Unknown", "ComponentCreationInitiated");
	c = sf_aw_status_comp(&s, 0);
	cr_assert_str_eq(c.id[SF_AW_ID_NAME], "job-x7");
	cr_assert(sf_aw_cond_is(&c.deployed, "Unknown", "ComponentCreationInitiated"));
	cr_assert_eq(c.deployed.ltt_ms, NOW);
	cr_assert_eq(s.rc, 0);
	char *d = dump(&s);
	char t[40], want[600];
	sf_time_rfc3339(NOW * SF_NSEC_PER_MSEC, t, sizeof(t));
	snprintf(want, sizeof(want),
	         "{\"componentStatus\":[{\"name\":\"job-x7\",\"kind\":\"Job\",\"podSets\":[],"
	         "\"apiVersion\":\"batch/v1\",\"conditions\":[{\"type\":\"ResourcesDeployed\","
	         "\"status\":\"Unknown\",\"lastTransitionTime\":\"%s\",\"reason\":"
	         "\"ComponentCreationInitiated\",\"message\":\"\"}]},{\"name\":\"b\",\"kind\":"
	         "\"Pod\",\"apiVersion\":\"v1\"}],\"conditions\":[]}",
	         t);
	cr_assert_str_eq(d, want);
	free(d);

	/* an entry that is not there: the error is kept */
	sf_aw_status_set_comp_id(&s, 5, SF_AW_ID_NAME, "z");
	cr_assert_eq(s.rc, -EINVAL);
	sf_aw_status_close(&s);
}

Test(awstatus, set_comps_replaces_the_list)
{
	sf_aw_status s;
	cr_assert_eq(sf_aw_status_open(&s, jv("{\"phase\":\"\"}"), NOW), 0);
	const char *one = "[{\"name\":\"a\"}]";
	sf_jd *list = sf_jd_parse(one, strlen(one), NULL, 0);
	cr_assert_not_null(list);
	sf_aw_status_set_comps(&s, list);
	cr_assert_eq(sf_aw_status_ncomps(&s), 1);
	cr_assert_str_eq(sf_aw_status_comp(&s, 0).id[SF_AW_ID_NAME], "a");
	sf_jd *doc = sf_aw_status_take(&s);
	cr_assert_null(s.doc);
	sf_aw_status_close(&s); /* nothing left to free */
	char *d = sf_jd_dump(doc);
	cr_assert_str_eq(
	    d, "{\"phase\":\"\",\"conditions\":[],\"componentStatus\":[{\"name\":\"a\"}]}");
	free(d);
	sf_jd_free(doc);
}
