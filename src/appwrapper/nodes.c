/*
 * nodes.c - a Node's health for Autopilot (awnodes.h): the rules of
 * upstream's NodeHealthMonitor (updateNoExecuteNodes,
 * updateNoScheduleNodes, nodeIsUnscheduable) over one object, so the
 * controller's node cache and its live reads judge a node the same way.
 */
#include "steadfast/awnodes.h"
#include "steadfast/awcomp.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int has_label(sf_jv labels, const char *key, const char *value)
{
	return sf_jv_streq(sf_jv_get(labels, key), value);
}

static int listed(char (*names)[254], size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return 1;
	return 0;
}

static int unschedulable(sf_jv node)
{
	if (sf_jv_type(sf_jv_path(node, "spec.unschedulable")) == SF_JSON_TRUE)
		return 1;
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(node, "spec.taints"));
	sf_jv t;
	while (sf_jv_next(&it, NULL, &t)) {
		sf_jv k = sf_jv_get(t, "key");
		if (sf_jv_streq(k, "node.kubernetes.io/unreachable") ||
		    sf_jv_streq(k, "node.kubernetes.io/not-ready"))
			return 1;
	}
	return 0;
}

static void add_nosched(sf_awn_health *h, const char *res, const char *q)
{
	for (size_t i = 0; i < h->nnosched; i++)
		if (strcmp(h->nosched[i].resource, res) == 0)
			return;
	if (h->nnosched == SF_AWN_MAX_RESOURCES)
		return;
	sf_awn_quantity *e = &h->nosched[h->nnosched++];
	snprintf(e->resource, sizeof(e->resource), "%s", res);
	snprintf(e->quantity, sizeof(e->quantity), "%s", q);
}

int sf_awn_classify(sf_jv node, const sf_aw_autopilot *ap, sf_awn_health *out)
{
	memset(out, 0, sizeof(*out));
	if (sf_jv_type(node) != SF_JSON_OBJECT)
		return -EINVAL;
	sf_jv labels = sf_jv_path(node, "metadata.labels");
	sf_jv cap = sf_jv_path(node, "status.capacity");
	for (size_t i = 0; i < ap->ntaints; i++) {
		const sf_aw_taint *t = &ap->taints[i];
		if (t->effect == SF_TAINT_NO_EXECUTE && has_label(labels, t->key, t->value) &&
		    !listed(out->noexec, out->nnoexec, t->resource))
			snprintf(out->noexec[out->nnoexec++], sizeof(out->noexec[0]), "%s",
			         t->resource);
	}
	out->unschedulable = unschedulable(node);
	char q[64];
	if (out->unschedulable) {
		sf_jv_iter it = sf_jv_iter_init(cap);
		sf_jv k, v;
		while (sf_jv_next(&it, &k, &v)) {
			char res[254];
			if (sf_jv_str(k, res, sizeof(res)) > 0 && strcmp(res, "pods") != 0 &&
			    sf_jv_str(v, q, sizeof(q)) >= 0)
				add_nosched(out, res, q);
		}
		return 0;
	}
	for (size_t i = 0; i < ap->ntaints; i++) {
		const sf_aw_taint *t = &ap->taints[i];
		if ((t->effect == SF_TAINT_NO_EXECUTE || t->effect == SF_TAINT_NO_SCHEDULE) &&
		    has_label(labels, t->key, t->value) &&
		    sf_jv_str(sf_jv_get(cap, t->resource), q, sizeof(q)) > 0 &&
		    sf_awc_quantity_nonzero(q))
			add_nosched(out, t->resource, q);
	}
	return 0;
}

int sf_awn_noexec_has(const sf_awn_health *h, const char *resource)
{
	for (size_t i = 0; i < h->nnoexec; i++)
		if (strcmp(h->noexec[i], resource) == 0)
			return 1;
	return 0;
}

static int uses(sf_jv list, const char *resource)
{
	char q[64];
	return sf_jv_str(sf_jv_get(list, resource), q, sizeof(q)) > 0 && sf_awc_quantity_nonzero(q);
}

int sf_awn_pod_affected(sf_jv pod, const sf_awn_health *h)
{
	if (h->nnoexec == 0 || !sf_jv_streq(sf_jv_path(pod, "status.phase"), "Running") ||
	    sf_jv_ok(sf_jv_path(pod, "metadata.deletionTimestamp")))
		return 0;
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(pod, "spec.containers"));
	sf_jv c;
	while (sf_jv_next(&it, NULL, &c)) {
		sf_jv lim = sf_jv_path(c, "resources.limits");
		sf_jv req = sf_jv_path(c, "resources.requests");
		for (size_t i = 0; i < h->nnoexec; i++)
			if (uses(lim, h->noexec[i]) || uses(req, h->noexec[i]))
				return 1;
	}
	return 0;
}

const char *const SF_AWN_FIELDS[] = {
    "metadata.name",      "metadata.uid", "metadata.resourceVersion", "metadata.labels",
    "spec.unschedulable", "spec.taints",  "status.capacity",          NULL,
};
