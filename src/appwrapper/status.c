/*
 * status.c - a typed view of an AppWrapper's status (see awstatus.h).
 *
 * The view holds the status as the tree it came in (unknown members and
 * their order included) and reads and writes it through typed getters and
 * setters, so the phase machine states its rules in fields and conditions
 * while the bytes it writes back stay what field-by-field edits of the
 * tree produced. Conditions follow metav1.Condition and apimachinery's
 * meta.SetStatusCondition.
 */
#include "steadfast/awstatus.h"

#include <errno.h>
#include <string.h>

#include "steadfast/time.h"

static const char *const phase_names[SF_AW_NPHASES] = {
    [SF_AW_EMPTY] = "",
    [SF_AW_SUSPENDED] = "Suspended",
    [SF_AW_RESUMING] = "Resuming",
    [SF_AW_RUNNING] = "Running",
    [SF_AW_RESETTING] = "Resetting",
    [SF_AW_SUSPENDING] = "Suspending",
    [SF_AW_SUCCEEDED] = "Succeeded",
    [SF_AW_FAILED] = "Failed",
    [SF_AW_TERMINATING] = "Terminating",
};

const char *sf_aw_phase_name(sf_aw_phase p)
{
	if (p < 0 || p >= SF_AW_NPHASES)
		return "Unknown";
	return phase_names[p];
}

sf_aw_phase sf_aw_phase_parse(sf_jv s)
{
	if (!sf_jv_ok(s) || sf_jv_type(s) == SF_JSON_NULL)
		return SF_AW_EMPTY;
	for (int p = 0; p < SF_AW_NPHASES; p++)
		if (sf_jv_streq(s, phase_names[p]))
			return (sf_aw_phase)p;
	return SF_AW_PHASE_INVALID;
}

/* ---- conditions ---- */

static sf_jd *cond_find(const sf_jd *conds, const char *type)
{
	size_t n = sf_jd_len(conds);
	for (size_t i = 0; i < n; i++) {
		sf_jd *c = sf_jd_at(conds, i, NULL);
		const char *t = sf_jd_str(sf_jd_get(c, "type"), NULL);
		if (t && strcmp(t, type) == 0)
			return c;
	}
	return NULL;
}

static const char *str_or_empty(const sf_jd *n)
{
	const char *s = sf_jd_str(n, NULL);
	return s ? s : "";
}

void sf_aw_cond_get(const sf_jd *conds, const char *type, sf_aw_cond *out)
{
	memset(out, 0, sizeof(*out));
	out->status = out->reason = out->message = "";
	sf_jd *c = cond_find(conds, type);
	if (!c)
		return;
	out->present = 1;
	out->status = str_or_empty(sf_jd_get(c, "status"));
	out->reason = str_or_empty(sf_jd_get(c, "reason"));
	out->message = str_or_empty(sf_jd_get(c, "message"));
	size_t len = 0;
	const char *t = sf_jd_str(sf_jd_get(c, "lastTransitionTime"), &len);
	int64_t ns;
	if (t && sf_time_parse_rfc3339(t, len, &ns) == 0)
		out->ltt_ms = ns / SF_NSEC_PER_MSEC;
}

int sf_aw_cond_true(const sf_jd *conds, const char *type)
{
	sf_aw_cond c;
	sf_aw_cond_get(conds, type, &c);
	return c.present && strcmp(c.status, "True") == 0;
}

int sf_aw_cond_is(const sf_aw_cond *c, const char *status, const char *reason)
{
	return c->present && strcmp(c->status, status) == 0 &&
	       (!reason || strcmp(c->reason, reason) == 0);
}

static int set_str_if_diff(sf_jd *obj, const char *key, const char *val, int *changed)
{
	const char *cur = sf_jd_str(sf_jd_get(obj, key), NULL);
	if (cur && strcmp(cur, val) == 0)
		return 0;
	*changed = 1;
	return sf_jd_set_str(obj, key, val);
}

int sf_aw_cond_set(sf_jd *conds, const char *type, const char *status, const char *reason,
                   const char *message, int64_t now_ms, int64_t generation)
{
	char ts[40];
	int changed = 0, rc = 0;
	sf_jd *c = cond_find(conds, type);
	sf_time_rfc3339(now_ms * SF_NSEC_PER_MSEC, ts, sizeof(ts));
	if (!c) {
		c = sf_jd_new_obj();
		if (!c)
			return -ENOMEM;
		if ((rc = sf_jd_set_str(c, "type", type)) < 0 ||
		    (rc = sf_jd_set_str(c, "status", status)) < 0 ||
		    (generation > 0 &&
		     (rc = sf_jd_set_int(c, "observedGeneration", generation)) < 0) ||
		    (rc = sf_jd_set_str(c, "lastTransitionTime", ts)) < 0 ||
		    (rc = sf_jd_set_str(c, "reason", reason)) < 0 ||
		    (rc = sf_jd_set_str(c, "message", message ? message : "")) < 0) {
			sf_jd_free(c);
			return rc;
		}
		rc = sf_jd_append(conds, c);
		return rc < 0 ? rc : 1;
	}
	const char *cur = sf_jd_str(sf_jd_get(c, "status"), NULL);
	if (!cur || strcmp(cur, status) != 0) {
		if ((rc = sf_jd_set_str(c, "status", status)) < 0 ||
		    (rc = sf_jd_set_str(c, "lastTransitionTime", ts)) < 0)
			return rc;
		changed = 1;
	}
	if ((rc = set_str_if_diff(c, "reason", reason, &changed)) < 0 ||
	    (rc = set_str_if_diff(c, "message", message ? message : "", &changed)) < 0)
		return rc;
	if (generation > 0) {
		int64_t g = 0;
		if (sf_jd_int(sf_jd_get(c, "observedGeneration"), &g) != 0 || g != generation) {
			if ((rc = sf_jd_set_int(c, "observedGeneration", generation)) < 0)
				return rc;
			changed = 1;
		}
	}
	return changed;
}

/* ---- the view ---- */

static int keep(sf_aw_status *s, int rc)
{
	if (rc < 0 && s->rc == 0)
		s->rc = rc;
	return rc;
}

/* status (absent: an empty object) with conditions and componentStatus
 * lists present; NULL on -ENOMEM. */
static sf_jd *normalised(sf_jv status, sf_jd **conds, sf_jd **comps)
{
	sf_jd *doc = sf_jv_type(status) == SF_JSON_OBJECT ? sf_jd_from_jv(status) : sf_jd_new_obj();
	if (!doc)
		return NULL;
	*conds = sf_jd_arr_member(doc, "conditions");
	if (!*conds) {
		/* a conditions member of the wrong type: start over */
		sf_jd_del(doc, "conditions");
		*conds = sf_jd_arr_member(doc, "conditions");
	}
	*comps = sf_jd_get(doc, "componentStatus");
	if (sf_jd_type(*comps) != SF_JSON_ARRAY) {
		sf_jd_del(doc, "componentStatus");
		*comps = sf_jd_arr_member(doc, "componentStatus");
	}
	if (!*conds || !*comps) {
		sf_jd_free(doc);
		return NULL;
	}
	return doc;
}

int sf_aw_status_open(sf_aw_status *s, sf_jv status, int64_t now_ms)
{
	memset(s, 0, sizeof(*s));
	s->now_ms = now_ms;
	s->doc = normalised(status, &s->conds, &s->comps);
	return s->doc ? 0 : -ENOMEM;
}

void sf_aw_status_close(sf_aw_status *s)
{
	sf_jd_free(s->doc);
	s->doc = s->conds = s->comps = NULL;
}

sf_jd *sf_aw_status_take(sf_aw_status *s)
{
	sf_jd *doc = s->doc;
	s->doc = s->conds = s->comps = NULL;
	return doc;
}

int sf_aw_status_unchanged(const sf_aw_status *s, sf_jv status)
{
	sf_jd *conds, *comps;
	sf_jd *orig = normalised(status, &conds, &comps);
	if (!orig)
		return -ENOMEM;
	int same = sf_jd_equal(orig, s->doc);
	sf_jd_free(orig);
	return same;
}

void sf_aw_status_set_phase(sf_aw_status *s, sf_aw_phase p)
{
	keep(s, sf_jd_set_str(s->doc, "phase", sf_aw_phase_name(p)));
}

int64_t sf_aw_status_resetting_count(const sf_aw_status *s)
{
	int64_t n = 0;
	if (sf_jd_int(sf_jd_get(s->doc, "resettingCount"), &n) != 0 || n < 0)
		n = 0;
	return n;
}

void sf_aw_status_set_resetting_count(sf_aw_status *s, int64_t n)
{
	keep(s, sf_jd_set_int(s->doc, "resettingCount", n));
}

sf_aw_cond sf_aw_status_cond(const sf_aw_status *s, const char *type)
{
	sf_aw_cond c;
	sf_aw_cond_get(s->conds, type, &c);
	return c;
}

int sf_aw_status_cond_true(const sf_aw_status *s, const char *type)
{
	return sf_aw_cond_true(s->conds, type);
}

int sf_aw_status_set_cond(sf_aw_status *s, const char *type, const char *status, const char *reason,
                          const char *message)
{
	return keep(s, sf_aw_cond_set(s->conds, type, status, reason, message, s->now_ms, 0));
}

void sf_aw_status_clear_cond(sf_aw_status *s, const char *type, const char *reason,
                             const char *message)
{
	if (sf_aw_status_cond_true(s, type))
		sf_aw_status_set_cond(s, type, "False", reason, message);
}

/* ---- componentStatus entries ---- */

const char *sf_aw_comp_id_key(sf_aw_comp_id f)
{
	static const char *const keys[SF_AW_NIDS] = {
	    [SF_AW_ID_API_VERSION] = "apiVersion",
	    [SF_AW_ID_KIND] = "kind",
	    [SF_AW_ID_NAME] = "name",
	};
	return f >= 0 && f < SF_AW_NIDS ? keys[f] : "";
}

size_t sf_aw_status_ncomps(const sf_aw_status *s)
{
	return sf_jd_len(s->comps);
}

sf_aw_comp_status sf_aw_status_comp(const sf_aw_status *s, size_t i)
{
	sf_aw_comp_status c;
	const sf_jd *cs = sf_jd_at(s->comps, i, NULL);
	c.present = cs != NULL;
	for (int f = 0; f < SF_AW_NIDS; f++)
		c.id[f] = str_or_empty(sf_jd_get(cs, sf_aw_comp_id_key((sf_aw_comp_id)f)));
	/* reading never creates the conditions member */
	sf_aw_cond_get(sf_jd_get(cs, "conditions"), SF_AW_COND_DEPLOYED, &c.deployed);
	return c;
}

void sf_aw_status_set_comp_id(sf_aw_status *s, size_t i, sf_aw_comp_id f, const char *value)
{
	keep(s, sf_jd_set_str(sf_jd_at(s->comps, i, NULL), sf_aw_comp_id_key(f), value));
}

void sf_aw_status_set_comp_deployed(sf_aw_status *s, size_t i, const char *status,
                                    const char *reason)
{
	sf_jd *cs = sf_jd_at(s->comps, i, NULL);
	sf_jd *cc = cs ? sf_jd_arr_member(cs, "conditions") : NULL;
	if (cs && !cc)
		keep(s, -ENOMEM);
	if (cc)
		keep(s, sf_aw_cond_set(cc, SF_AW_COND_DEPLOYED, status, reason, "", s->now_ms, 0));
}

void sf_aw_status_set_comps(sf_aw_status *s, sf_jd *list)
{
	keep(s, sf_jd_set(s->doc, "componentStatus", list));
	s->comps = sf_jd_get(s->doc, "componentStatus");
}
