/*
 * components_build.c - the object to create for one component of an
 * AppWrapper (sf_awc_build, see awcomp.h).
 *
 * The component's template with, per pod set, what Kueue handed back
 * injected as upstream does (labels, annotations, node selector,
 * tolerations, scheduling gates, the scheduler name and Autopilot's
 * anti-affinities), and the AppWrapper as its controller owner. Upstream's
 * error texts are kept; where upstream would panic they become errors. The
 * pod sets and the paths to their templates come from components.c, whose
 * path walker reads the tree being built here, so inference and injection
 * agree on what a path means.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/awcomp.h"
#include "steadfast/buf.h"

#include "components_podsets.h"

/* Upstream's toMap for one value: strings as they are, anything else as
 * text (null as Go prints it). */
static sf_jd *as_string(const sf_jd *v)
{
	if (sf_jd_type(v) == SF_JSON_STRING)
		return sf_jd_clone(v);
	if (sf_jd_type(v) == SF_JSON_NULL)
		return sf_jd_new_str("<nil>");
	char *text = sf_jd_dump(v);
	if (!text)
		return NULL;
	sf_jd *s = sf_jd_new_str(text);
	free(text);
	return s;
}

/* Makes every member of map a string. */
static int stringify_values(sf_jd *map)
{
	size_t n = sf_jd_len(map);
	for (size_t i = 0; i < n; i++) {
		const char *k;
		sf_jd *v = sf_jd_at(map, i, &k);
		if (sf_jd_type(v) == SF_JSON_STRING)
			continue;
		char *key = strdup(k);
		sf_jd *s = as_string(v);
		int rc = key && s ? sf_jd_set(map, key, s) : -ENOMEM;
		if (!key)
			sf_jd_free(s);
		free(key);
		if (rc)
			return -ENOMEM;
	}
	return 0;
}

/* A string map from a view (an object; anything else reads as empty). */
static sf_jd *string_map(sf_jv m)
{
	sf_jd *d = sf_jv_type(m) == SF_JSON_OBJECT ? sf_jd_from_jv(m) : sf_jd_new_obj();
	if (d && stringify_values(d)) {
		sf_jd_free(d);
		return NULL;
	}
	return d;
}

static int same_str(const sf_jd *a, const sf_jd *b)
{
	size_t la, lb;
	const char *sa = sf_jd_str(a, &la), *sb = sf_jd_str(b, &lb);
	return sa && sb && la == lb && memcmp(sa, sb, la) == 0;
}

/*
 * parent[member] = MergeKeepFirst(existing, inject), upstream's string-map
 * injection: the existing map (values as strings; a non-map counts as
 * empty) keeps its entries, inject adds the keys it lacks. With check, a
 * key in both with different values is a conflict (upstream's HaveConflict
 * and Kueue's BadPodSetsUpdateError message).
 */
static int merge_map(sf_jd *parent, const char *member, const sf_jd *inject, int check, char *why,
                     size_t wl)
{
	sf_jd *ex = sf_jd_get(parent, member);
	sf_jd *res = sf_jd_type(ex) == SF_JSON_OBJECT ? sf_jd_clone(ex) : sf_jd_new_obj();
	int rc = res ? stringify_values(res) : -ENOMEM;
	if (rc)
		goto fail;
	size_t n = sf_jd_len(res);
	for (size_t i = 0; check && i < n; i++) {
		const char *k;
		sf_jd *v = sf_jd_at(res, i, &k);
		sf_jd *iv = sf_jd_get(inject, k);
		if (iv && !same_str(v, iv)) {
			size_t la, lb;
			const char *a = sf_jd_str(v, &la), *b = sf_jd_str(iv, &lb);
			sf_errf(
			    why, wl,
			    "invalid admission check PodSetUpdate: conflict for %s: conflict for "
			    "key=%s, value1=%.*s, value2=%.*s",
			    member, k, (int)(la > 200 ? 200 : la), a ? a : "",
			    (int)(lb > 200 ? 200 : lb), b ? b : "");
			rc = -EINVAL;
			goto fail;
		}
	}
	size_t ni = sf_jd_len(inject);
	for (size_t i = 0; i < ni; i++) {
		const char *k;
		sf_jd *v = sf_jd_at(inject, i, &k);
		if (sf_jd_get(res, k))
			continue;
		sf_jd *c = sf_jd_clone(v);
		if (!c || sf_jd_set(res, k, c)) {
			rc = -ENOMEM;
			goto fail;
		}
	}
	return sf_jd_set(parent, member, res) ? -ENOMEM : 0;
fail:
	sf_jd_free(res);
	return rc;
}

/* parent[key] as an object or array (type t): created when absent or null,
 * -EINVAL when it holds something else. */
static int container_member(sf_jd *parent, const char *key, sf_json_type t, sf_jd **out)
{
	sf_jd *m = sf_jd_get(parent, key);
	sf_json_type mt = sf_jd_type(m);
	if (mt == t) {
		*out = m;
		return 0;
	}
	if (mt != SF_JSON_NONE && mt != SF_JSON_NULL)
		return -EINVAL;
	sf_jd *n = t == SF_JSON_OBJECT ? sf_jd_new_obj() : sf_jd_new_arr();
	if (!n || sf_jd_set(parent, key, n))
		return -ENOMEM;
	*out = sf_jd_get(parent, key);
	return *out ? 0 : -ENOMEM;
}

/* Non-empty object or array member of a podSetInfo. */
static sf_jv info_member(sf_jv info, const char *key, sf_json_type t)
{
	sf_jv v = sf_jv_get(info, key);
	return sf_jv_type(v) == t && sf_jv_len(v) > 0 ? v : SF_JV_NONE;
}

static int append_gates(sf_jd *spec, sf_jv gates, const char *path, char *why, size_t wl)
{
	sf_jd *arr;
	int rc = container_member(spec, "schedulingGates", SF_JSON_ARRAY, &arr);
	if (rc == -EINVAL)
		sf_errf(why, wl, "spec.schedulingGates at %s is not a list", path);
	if (rc)
		return rc;
	sf_jv_iter it = sf_jv_iter_init(gates);
	sf_jv g;
	while (sf_jv_next(&it, NULL, &g)) {
		sf_jv nv = sf_jv_get(g, "name");
		char *name = NULL;
		if (sf_jv_type(nv) == SF_JSON_STRING && !(name = sf_jv_strdup(nv)))
			return -ENOMEM;
		const char *nm = name ? name : ""; /* Go's zero value */
		int dup = 0;
		size_t n = sf_jd_len(arr);
		for (size_t i = 0; i < n && !dup; i++) {
			const char *s = sf_jd_str(sf_jd_get(sf_jd_at(arr, i, NULL), "name"), NULL);
			dup = s && strcmp(s, nm) == 0;
		}
		if (!dup) {
			sf_jd *o = sf_jd_new_obj();
			if (!o) {
				rc = -ENOMEM;
			} else if (sf_jd_set_str(o, "name", nm)) {
				sf_jd_free(o);
				rc = -ENOMEM;
			} else if (sf_jd_append(arr, o)) {
				rc = -ENOMEM;
			}
		}
		free(name);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- Autopilot anti-affinities ---- */

/* A quantity upstream counts as a request: an integer > 0, or a string
 * whose number part has a non-zero digit ("500m", "1Gi"; "0", "0Gi" do
 * not). Other JSON numbers do not count, as in upstream (unstructured
 * floats match none of its cases). */
static int quantity_nonzero(const sf_jd *q)
{
	int64_t n;
	if (sf_jd_int(q, &n) == 0)
		return n > 0;
	const char *s = sf_jd_str(q, NULL);
	return s && sf_awc_quantity_nonzero(s);
}

int sf_awc_quantity_nonzero(const char *q)
{
	for (; *q && !((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')); q++)
		if (*q >= '1' && *q <= '9')
			return 1;
	return 0;
}

/* 1 when a container or init container of spec requests or limits a
 * non-zero amount of resource (upstream's hasResourceRequest). */
static int requests_resource(const sf_jd *spec, const char *res)
{
	static const char *const lists[] = {"containers", "initContainers"};
	for (size_t l = 0; l < 2; l++) {
		const sf_jd *cs = sf_jd_get(spec, lists[l]);
		for (size_t i = 0; sf_jd_type(cs) == SF_JSON_ARRAY && i < sf_jd_len(cs); i++) {
			const sf_jd *r = sf_jd_get(sf_jd_at(cs, i, NULL), "resources");
			if (quantity_nonzero(sf_jd_get(sf_jd_get(r, "limits"), res)) ||
			    quantity_nonzero(sf_jd_get(sf_jd_get(r, "requests"), res)))
				return 1;
		}
	}
	return 0;
}

/* NotIn expressions, one per label key in order of first appearance, for
 * the taints of ap whose resource spec requests and whose effect is
 * preferred (PreferNoSchedule) or not (NoSchedule, NoExecute). NULL and
 * *n = 0 when there are none; -ENOMEM as NULL with *n = 1. */
static sf_jd *anti_exprs(const sf_jd *spec, const sf_aw_autopilot *ap, int preferred, size_t *n)
{
	sf_jd *exprs = NULL;
	*n = 0;
	for (size_t i = 0; i < ap->ntaints; i++) {
		const sf_aw_taint *t = &ap->taints[i];
		if ((t->effect == SF_TAINT_PREFER_NO_SCHEDULE) != preferred ||
		    !requests_resource(spec, t->resource))
			continue;
		if (!exprs && !(exprs = sf_jd_new_arr()))
			goto oom;
		sf_jd *e = NULL;
		for (size_t j = 0; j < sf_jd_len(exprs) && !e; j++) {
			sf_jd *x = sf_jd_at(exprs, j, NULL);
			if (strcmp(sf_jd_str(sf_jd_get(x, "key"), NULL), t->key) == 0)
				e = x;
		}
		if (!e) {
			sf_jd *ne = sf_jd_new_obj();
			if (!ne || sf_jd_set_str(ne, "key", t->key) ||
			    sf_jd_set_str(ne, "operator", "NotIn") ||
			    !sf_jd_arr_member(ne, "values")) {
				sf_jd_free(ne);
				goto oom;
			}
			if (sf_jd_append(exprs, ne)) /* frees ne on failure */
				goto oom;
			e = sf_jd_at(exprs, sf_jd_len(exprs) - 1, NULL);
		}
		sf_jd *vals = sf_jd_get(e, "values");
		int dup = 0;
		for (size_t j = 0; j < sf_jd_len(vals); j++)
			dup |= strcmp(sf_jd_str(sf_jd_at(vals, j, NULL), NULL), t->value) == 0;
		if (!dup && sf_jd_append(vals, sf_jd_new_str(t->value)))
			goto oom;
	}
	*n = sf_jd_len(exprs);
	return exprs;
oom:
	sf_jd_free(exprs);
	*n = 1;
	return NULL;
}

/* Upstream's injectAntiAffinities: required node anti-affinity (NotIn,
 * added to every existing nodeSelectorTerm, or to a new one) for the
 * NoSchedule and NoExecute label values of each resource the pod requests,
 * preferred anti-affinity (one term of ap's weight) for the
 * PreferNoSchedule ones; the template's own affinity is kept. */
static int inject_anti_affinities(sf_jd *spec, const sf_aw_autopilot *ap, const char *path,
                                  char *why, size_t wl)
{
	size_t nreq = 0, npref = 0;
	sf_jd *req = anti_exprs(spec, ap, 0, &nreq);
	sf_jd *pref = req || !nreq ? anti_exprs(spec, ap, 1, &npref) : NULL;
	int rc = 0;
	if ((nreq && !req) || (npref && !pref)) {
		rc = -ENOMEM;
		goto out;
	}
	if (!nreq && !npref)
		goto out;
	sf_jd *aff, *na;
	if ((rc = container_member(spec, "affinity", SF_JSON_OBJECT, &aff)) ||
	    (rc = container_member(aff, "nodeAffinity", SF_JSON_OBJECT, &na))) {
		if (rc == -EINVAL)
			sf_errf(why, wl, "spec.affinity at %s is not an object", path);
		goto out;
	}
	if (nreq) {
		sf_jd *sel, *terms;
		if ((rc = container_member(na, "requiredDuringSchedulingIgnoredDuringExecution",
		                           SF_JSON_OBJECT, &sel)) ||
		    (rc = container_member(sel, "nodeSelectorTerms", SF_JSON_ARRAY, &terms))) {
			if (rc == -EINVAL)
				sf_errf(why, wl, "spec.affinity.nodeAffinity at %s is not valid",
				        path);
			goto out;
		}
		if (sf_jd_len(terms) == 0 && sf_jd_append(terms, sf_jd_new_obj())) {
			rc = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < sf_jd_len(terms); i++) {
			sf_jd *me;
			if ((rc = container_member(sf_jd_at(terms, i, NULL), "matchExpressions",
			                           SF_JSON_ARRAY, &me))) {
				if (rc == -EINVAL)
					sf_errf(why, wl,
					        "nodeSelectorTerms[%zu] at %s is not valid", i,
					        path);
				goto out;
			}
			for (size_t j = 0; j < nreq; j++)
				if (sf_jd_append(me, sf_jd_clone(sf_jd_at(req, j, NULL)))) {
					rc = -ENOMEM;
					goto out;
				}
		}
	}
	if (npref) {
		sf_jd *terms, *term = sf_jd_new_obj(), *p;
		if ((rc = container_member(na, "preferredDuringSchedulingIgnoredDuringExecution",
		                           SF_JSON_ARRAY, &terms))) {
			sf_jd_free(term);
			if (rc == -EINVAL)
				sf_errf(why, wl, "spec.affinity.nodeAffinity at %s is not valid",
				        path);
			goto out;
		}
		if (!term || sf_jd_set_int(term, "weight", ap->prefer_weight) ||
		    !(p = sf_jd_obj_member(term, "preference")) ||
		    sf_jd_set(p, "matchExpressions", pref)) {
			sf_jd_free(term);
			pref = NULL; /* taken by the set, or freed with term */
			rc = -ENOMEM;
			goto out;
		}
		pref = NULL; /* now term's */
		if (sf_jd_append(terms, term)) {
			rc = -ENOMEM;
			goto out;
		}
	}
out:
	sf_jd_free(req);
	sf_jd_free(pref);
	return rc;
}

/* Injects podSetInfo info (SF_JV_NONE: nothing but the label) into the pod
 * template of pod set ps. */
static int inject_podset(sf_jd *obj, const sf_awc_podset *ps, sf_jv info, const char *awname,
                         const sf_awc_build_opts *o, char *why, size_t wl)
{
	const char *sched = o ? o->scheduler_name : NULL;
	char inner[WHY_LEN / 2];
	sf_jd *tpl;
	int rc = sf_awc_tree_template(obj, ps->path, &tpl, inner, sizeof(inner));
	if (rc) {
		sf_errf(why, wl, "path '%s': %s", ps->path, inner);
		return rc;
	}
	sf_jd *md, *spec = sf_jd_get(tpl, "spec");
	rc = container_member(tpl, "metadata", SF_JSON_OBJECT, &md);
	if (rc == -EINVAL)
		sf_errf(why, wl, "metadata at %s is not an object", ps->path);
	if (rc)
		return rc;
	if (sf_jd_type(spec) != SF_JSON_OBJECT) {
		sf_errf(why, wl, "content at %s does not contain a spec", ps->path);
		return -EINVAL;
	}

	sf_jv v = info_member(info, "annotations", SF_JSON_OBJECT);
	if (sf_jv_ok(v)) {
		sf_jd *inj = string_map(v);
		rc = inj ? merge_map(md, "annotations", inj, 1, why, wl) : -ENOMEM;
		sf_jd_free(inj);
		if (rc)
			return rc;
	}

	sf_jd *labels = string_map(sf_jv_get(info, "labels"));
	rc = labels ? 0 : -ENOMEM;
	if (!rc && !sf_jd_get(labels, SF_AW_LABEL))
		rc = sf_jd_set_str(labels, SF_AW_LABEL, awname) ? -ENOMEM : 0;
	if (!rc)
		rc = merge_map(md, "labels", labels, 1, why, wl);
	sf_jd_free(labels);
	if (rc)
		return rc;

	v = info_member(info, "nodeSelector", SF_JSON_OBJECT);
	if (sf_jv_ok(v)) {
		sf_jd *inj = string_map(v);
		rc = inj ? merge_map(spec, "nodeSelector", inj, 1, why, wl) : -ENOMEM;
		sf_jd_free(inj);
		if (rc)
			return rc;
	}

	v = info_member(info, "tolerations", SF_JSON_ARRAY);
	if (sf_jv_ok(v)) {
		sf_jd *arr;
		rc = container_member(spec, "tolerations", SF_JSON_ARRAY, &arr);
		if (rc == -EINVAL)
			sf_errf(why, wl, "spec.tolerations at %s is not a list", ps->path);
		sf_jv_iter it = sf_jv_iter_init(v);
		sf_jv t;
		while (!rc && sf_jv_next(&it, NULL, &t))
			rc = sf_jd_append(arr, sf_jd_from_jv(t)) ? -ENOMEM : 0;
		if (rc)
			return rc;
	}

	v = info_member(info, "schedulingGates", SF_JSON_ARRAY);
	if (sf_jv_ok(v) && (rc = append_gates(spec, v, ps->path, why, wl)))
		return rc;

	if (sched && *sched) {
		size_t l = 0;
		const char *s = sf_jd_str(sf_jd_get(spec, "schedulerName"), &l);
		if ((!s || !l) && sf_jd_set_str(spec, "schedulerName", sched))
			return -ENOMEM;
	}
	if (o && o->autopilot && o->autopilot->inject_anti_affinities)
		return inject_anti_affinities(spec, o->autopilot, ps->path, why, wl);
	return 0;
}

static const char *str_or_empty(const sf_jd *n)
{
	const char *s = sf_jd_str(n, NULL);
	return s ? s : "";
}

/* metav1 owner references refer to the same object when group (of
 * apiVersion), kind and name agree (controller-runtime's referSameObject). */
static int refers_to_aw(const sf_jd *ref, const char *awname)
{
	size_t l;
	const char *av = sf_jd_str(sf_jd_get(ref, "apiVersion"), &l);
	if (!av)
		return 0;
	const char *slash = memchr(av, '/', l);
	size_t glen = slash ? (size_t)(slash - av) : 0;
	if (slash && memchr(slash + 1, '/', l - glen - 1))
		return 0; /* not a group/version */
	const char *kind = sf_jd_str(sf_jd_get(ref, "kind"), NULL);
	const char *name = sf_jd_str(sf_jd_get(ref, "name"), NULL);
	return glen == strlen(SF_AW_GROUP) && memcmp(av, SF_AW_GROUP, glen) == 0 && kind &&
	       strcmp(kind, SF_AW_KIND) == 0 && name && strcmp(name, awname) == 0;
}

/* controller-runtime's SetControllerReference. */
static int set_controller(sf_jd *md, const char *awname, const char *awuid, char *why, size_t wl)
{
	sf_jd *refs;
	int rc = container_member(md, "ownerReferences", SF_JSON_ARRAY, &refs);
	if (rc == -EINVAL)
		sf_errf(why, wl, "metadata.ownerReferences is not a list");
	if (rc)
		return rc;
	size_t n = sf_jd_len(refs), same = n;
	int seen_controller = 0;
	for (size_t i = 0; i < n; i++) {
		sf_jd *r = sf_jd_at(refs, i, NULL);
		int ctl = 0, ours = refers_to_aw(r, awname);
		if (same == n && ours)
			same = i;
		if (seen_controller || sf_jd_bool(sf_jd_get(r, "controller"), &ctl) || !ctl)
			continue;
		seen_controller = 1; /* only the first one counts (metav1.GetControllerOf) */
		if (!ours) {
			sf_errf(
			    why, wl, "Object %s/%s is already owned by another %s controller %s",
			    str_or_empty(sf_jd_get(md, "namespace")),
			    str_or_empty(sf_jd_get(md, "name")), str_or_empty(sf_jd_get(r, "kind")),
			    str_or_empty(sf_jd_get(r, "name")));
			return -EINVAL;
		}
	}
	sf_jd *ref = sf_jd_new_obj();
	if (!ref || sf_jd_set_str(ref, "apiVersion", SF_AW_API_VERSION) ||
	    sf_jd_set_str(ref, "kind", SF_AW_KIND) || sf_jd_set_str(ref, "name", awname) ||
	    sf_jd_set_str(ref, "uid", awuid) || sf_jd_set_bool(ref, "controller", 1) ||
	    sf_jd_set_bool(ref, "blockOwnerDeletion", 1)) {
		sf_jd_free(ref);
		return -ENOMEM;
	}
	if (same == n)
		return sf_jd_append(refs, ref) ? -ENOMEM : 0;
	/* Replace entry `same`: rebuild the list, it has no set-at-index. */
	sf_jd *nl = sf_jd_new_arr();
	rc = nl ? 0 : -ENOMEM;
	for (size_t i = 0; i < n && !rc; i++) {
		sf_jd *e = i == same ? ref : sf_jd_clone(sf_jd_at(refs, i, NULL));
		if (i == same)
			ref = NULL;
		rc = sf_jd_append(nl, e) ? -ENOMEM : 0;
	}
	sf_jd_free(ref);
	if (rc) {
		sf_jd_free(nl);
		return rc;
	}
	return sf_jd_set(md, "ownerReferences", nl) ? -ENOMEM : 0;
}

/* The string at key of v into buf: 0, or -EINVAL if absent, empty, not a
 * string or too long. */
static int req_str(sf_jv v, char *buf, size_t cap)
{
	return sf_jv_str(v, buf, cap) > 0 ? 0 : -EINVAL;
}

static int build(sf_jd *obj, sf_jv comp, const psvec *pv, const char *awname, const char *awns,
                 const char *awuid, size_t index, int generated, const sf_awc_build_opts *o,
                 char *why, size_t wl)
{
	sf_jd *md = sf_jd_get(obj, "metadata");
	size_t l = 0;
	sf_jd *nsn = sf_jd_get(md, "namespace");
	const char *ns = sf_jd_str(nsn, &l);
	sf_json_type nst = sf_jd_type(nsn);
	if (nst != SF_JSON_NONE && nst != SF_JSON_NULL && !ns) {
		sf_errf(why, wl, "metadata.namespace is not a string");
		return -EINVAL;
	}
	if (!ns || !l) {
		if (sf_jd_set_str(md, "namespace", awns))
			return -ENOMEM;
	} else if (l != strlen(awns) || memcmp(ns, awns, l) != 0) {
		sf_errf(why, wl,
		        "component namespace \"%.*s\" is different from appwrapper namespace "
		        "\"%s\"",
		        (int)(l > 253 ? 253 : l), ns, awns);
		return -EINVAL;
	}

	/* The object's own label: an existing value is kept (MergeKeepFirst). */
	sf_jd *lab = sf_jd_new_obj();
	int rc = !lab || sf_jd_set_str(lab, SF_AW_LABEL, awname) ? -ENOMEM : 0;
	if (!rc)
		rc = merge_map(md, "labels", lab, 0, why, wl);
	sf_jd_free(lab);
	if (rc)
		return rc;
	if (generated) {
		/* the index, ours alone to set: what finds the object when
		 * the create's answer (the name) was lost */
		char ix[24];
		snprintf(ix, sizeof(ix), "%zu", index);
		sf_jd *an = sf_jd_obj_member(md, "annotations");
		if (!an) {
			sf_errf(why, wl, "metadata.annotations is not a map");
			return -EINVAL;
		}
		if (sf_jd_set_str(an, SF_AW_COMPONENT_INDEX, ix))
			return -ENOMEM;
	}

	sf_jv infos = sf_jv_get(comp, "podSetInfos");
	size_t ninfo = sf_jv_type(infos) == SF_JSON_ARRAY ? sf_jv_len(infos) : 0;
	for (size_t i = 0; i < pv->n; i++) {
		char inner[WHY_LEN / 2];
		sf_jv info = i < ninfo ? sf_jv_at(infos, i) : SF_JV_NONE;
		rc = inject_podset(obj, &pv->v[i], info, awname, o, inner, sizeof(inner));
		if (rc == -EINVAL)
			sf_errf(why, wl, "pod set %zu: %s", i, inner);
		if (rc)
			return rc;
	}
	return set_controller(md, awname, awuid, why, wl);
}

int sf_awc_build(sf_jv aw, size_t index, const sf_awc_build_opts *o, sf_jd **out, int *fatal,
                 char *err, size_t errlen)
{
	char desc[512], why[WHY_LEN], awname[256], awns[256], awuid[256], tmp[256];
	sf_jv comps;
	size_t nc = sf_awc_ncomponents(aw, &comps);
	*out = NULL;
	*fatal = 1;
	if (index >= nc) {
		sf_errf(err, errlen, "component %zu: no such component (the AppWrapper has %zu)",
		        index, nc);
		return -EINVAL;
	}
	sf_jv comp = sf_jv_at(comps, index);
	sf_jv tmpl = sf_jv_get(comp, "template");
	sf_awc_comp_desc(tmpl, index, desc, sizeof(desc));

	const char *missing = NULL;
	if (req_str(sf_jv_path(aw, "metadata.name"), awname, sizeof(awname)))
		missing = "the AppWrapper has no metadata.name";
	else if (req_str(sf_jv_path(aw, "metadata.namespace"), awns, sizeof(awns)))
		missing = "the AppWrapper has no metadata.namespace";
	else if (req_str(sf_jv_path(aw, "metadata.uid"), awuid, sizeof(awuid)))
		missing = "the AppWrapper has no metadata.uid";
	else if (sf_jv_type(tmpl) != SF_JSON_OBJECT)
		missing = "template is not an object";
	else if (req_str(sf_jv_get(tmpl, "apiVersion"), tmp, sizeof(tmp)))
		missing = "template has no apiVersion";
	else if (req_str(sf_jv_get(tmpl, "kind"), tmp, sizeof(tmp)))
		missing = "template has no kind";
	int generated = 0;
	if (!missing) {
		generated = sf_awc_template_name(tmpl, tmp, sizeof(tmp));
		if (generated < 0)
			missing = "template has no metadata.name or metadata.generateName";
	}
	if (missing) {
		sf_errf(err, errlen, "%s: %s", desc, missing);
		return -EINVAL;
	}

	psvec pv = {0};
	sf_jd *obj = NULL;
	int rc = sf_awc_definitive_podsets(aw, index, &pv, why, sizeof(why));
	if (!rc) {
		obj = sf_jd_from_jv(tmpl);
		rc = obj ? build(obj, comp, &pv, awname, awns, awuid, index, generated, o, why,
		                 sizeof(why))
		         : -ENOMEM;
	}
	free(pv.v);
	if (rc) {
		sf_jd_free(obj);
		if (rc == -ENOMEM)
			sf_errf(err, errlen, "%s: out of memory", desc);
		else
			sf_errf(err, errlen, "%s: %s", desc, why);
		*fatal = rc != -ENOMEM;
		return rc;
	}
	*out = obj;
	*fatal = 0;
	return 0;
}
