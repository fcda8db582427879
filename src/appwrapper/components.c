/*
 * components.c - pod sets of an AppWrapper's components, the paths to
 * their templates, and who owns a component (see awcomp.h); the object to
 * create for each is built in components_build.c.
 *
 * Kueue admits an AppWrapper by its pod sets and hands back, per pod set,
 * the labels, node selector, tolerations and gates its pods must carry; the
 * Go controller turns each component's template into an object with those
 * injected. For Steadfast to be a drop-in the pod sets (their order, paths
 * and replica counts) and the injected object must come out the same, so
 * this file follows upstream's rules step by step, including its path
 * syntax and error texts. It differs where upstream would panic or wrap
 * around: those become errors.
 *
 * Paths are walked over either a read-only view (inference) or the mutable
 * tree being built (injection) by one walker, so both agree on what a path
 * means. Pod sets are gathered in a growable vector first, because the
 * final validation needs all of them whatever the caller's capacity.
 */
#include "steadfast/buf.h"
#include "steadfast/awcomp.h"

#include "components_podsets.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JOB_INDEX_ANNOT "batch.kubernetes.io/job-completion-index"
#define JOBSET_INDEX_LABEL "jobset.sigs.k8s.io/job-index"
#define PYTORCH_INDEX_LABEL "training.kubeflow.org/replica-index"

/* ---- pod-set vector ---- */

static sf_awc_podset *psvec_push(psvec *pv)
{
	if (pv->n == pv->cap) {
		size_t nc = pv->cap ? pv->cap * 2 : 4;
		sf_awc_podset *nv = realloc(pv->v, nc * sizeof(*nv));
		if (!nv)
			return NULL;
		pv->v = nv;
		pv->cap = nc;
	}
	sf_awc_podset *ps = &pv->v[pv->n++];
	memset(ps, 0, sizeof(*ps));
	ps->annotations = SF_JV_NONE;
	return ps;
}

/* Appends an inferred pod set; annotation pairs follow as key, value, ...
 * (nannots of them). */
static int push_inferred(psvec *pv, const char *path, int32_t replicas, size_t nannots, ...)
{
	sf_awc_podset *ps = psvec_push(pv);
	if (!ps)
		return -ENOMEM;
	ps->replicas = replicas;
	snprintf(ps->path, sizeof(ps->path), "%s", path);
	va_list ap;
	va_start(ap, nannots);
	for (size_t i = 0; i < nannots && i < SF_AWC_MAX_ANNOTS; i++) {
		ps->annots[i].key = va_arg(ap, const char *);
		snprintf(ps->annots[i].value, sizeof(ps->annots[i].value), "%s",
		         va_arg(ap, const char *));
		ps->nannots++;
	}
	va_end(ap);
	return 0;
}

/* ---- paths ---- */

/* A position in either a read-only view or the tree being built. */
typedef struct cur {
	sf_jv v;
	sf_jd *d;
	int tree;
} cur;

static cur cur_view(sf_jv v)
{
	return (cur){v, NULL, 0};
}

static cur cur_tree(sf_jd *d)
{
	return (cur){SF_JV_NONE, d, 1};
}

static sf_json_type cur_type(cur c)
{
	return c.tree ? sf_jd_type(c.d) : sf_jv_type(c.v);
}

static int cur_ok(cur c)
{
	return c.tree ? c.d != NULL : sf_jv_ok(c.v);
}

static size_t cur_len(cur c)
{
	return c.tree ? sf_jd_len(c.d) : sf_jv_len(c.v);
}

static cur cur_at(cur c, size_t i)
{
	return c.tree ? cur_tree(sf_jd_at(c.d, i, NULL)) : cur_view(sf_jv_at(c.v, i));
}

static cur cur_get(cur c, const char *key)
{
	return c.tree ? cur_tree(sf_jd_get(c.d, key)) : cur_view(sf_jv_get(c.v, key));
}

/* strconv.Atoi on [s, e): optional sign, at least one digit. */
static int parse_index(const char *s, const char *e, long long *out)
{
	int neg = 0;
	if (s < e && (*s == '+' || *s == '-'))
		neg = *s++ == '-';
	if (s == e)
		return -EINVAL;
	long long v = 0;
	for (; s < e; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (999999999999999999LL - (*s - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (*s - '0');
	}
	*out = neg ? -v : v;
	return 0;
}

/*
 * Upstream's getValueAtPath: "template" is the root; then "[i]" indexes an
 * array and ".key" selects a member, the key running to the next '.' or
 * '[' (a separator right at the start of the key does not end it, as
 * upstream). A member present with value null is found (and is not a map).
 */
static int walk(cur c, const char *path, cur *out, char *why, size_t wl)
{
	char done[2 * SF_AWC_PATH_MAX];
	char key[SF_AWC_PATH_MAX];
	size_t plen = strlen(path);

	if (strncmp(path, "template", 8) != 0) {
		sf_errf(why, wl, "first element of the path must be 'template'");
		return -EINVAL;
	}
	if (plen >= SF_AWC_PATH_MAX) {
		sf_errf(why, wl, "path '%.40s...' is longer than %d bytes", path,
		        SF_AWC_PATH_MAX - 1);
		return -EINVAL;
	}
	memcpy(done, "template", 9);
	size_t dl = 8;
	const char *rem = path + 8;
	while (*rem) {
		if (*rem == '[') {
			const char *close = strchr(rem, ']');
			if (!close) {
				sf_errf(why, wl, "at path position '%s' invalid array index '%s'",
				        done, rem);
				return -EINVAL;
			}
			long long idx;
			if (parse_index(rem + 1, close, &idx)) {
				sf_errf(why, wl,
				        "at path position '%s' invalid index expression '%.*s'",
				        done, (int)(close - rem - 1), rem + 1);
				return -EINVAL;
			}
			if (cur_type(c) != SF_JSON_ARRAY) {
				sf_errf(why, wl, "at path position '%s' found non-array value",
				        done);
				return -EINVAL;
			}
			if (idx < 0 || (unsigned long long)idx >= cur_len(c)) {
				sf_errf(why, wl, "at path position '%s' out of bounds index '%lld'",
				        done, idx);
				return -EINVAL;
			}
			c = cur_at(c, (size_t)idx);
			size_t n = (size_t)(close - rem) + 1;
			memcpy(done + dl, rem, n);
			dl += n;
			done[dl] = '\0';
			rem = close + 1;
		} else if (*rem == '.') {
			rem++;
			done[dl++] = '.';
			done[dl] = '\0';
			size_t end = strlen(rem);
			const char *dot = strchr(rem, '.');
			if (dot && dot > rem)
				end = (size_t)(dot - rem);
			const char *br = strchr(rem, '[');
			if (br && br > rem && (size_t)(br - rem) < end)
				end = (size_t)(br - rem);
			memcpy(key, rem, end);
			key[end] = '\0';
			if (cur_type(c) != SF_JSON_OBJECT) {
				sf_errf(why, wl, "at path position '%s' non-map value", done);
				return -EINVAL;
			}
			cur next = cur_get(c, key);
			if (!cur_ok(next)) {
				sf_errf(why, wl, "at path position '%s' missing field '%s'", done,
				        key);
				return -EINVAL;
			}
			c = next;
			memcpy(done + dl, key, end + 1);
			dl += end;
			rem += end;
		} else {
			sf_errf(why, wl, "at path position '%s' invalid path element '%s'", done,
			        rem);
			return -EINVAL;
		}
	}
	*out = c;
	return 0;
}

/* Upstream's GetRawTemplate: the value at path, which must be a map. */
static int raw_template(cur root, const char *path, cur *out, char *why, size_t wl)
{
	int rc = walk(root, path, out, why, wl);
	if (rc)
		return rc;
	if (cur_type(*out) != SF_JSON_OBJECT) {
		sf_errf(why, wl, "at path position '%s' non-map value", path);
		return -EINVAL;
	}
	return 0;
}

/* A pod template at path: a map with a spec map. */
static int pod_template(cur root, const char *path, cur *out, char *why, size_t wl)
{
	int rc = raw_template(root, path, out, why, wl);
	if (rc)
		return rc;
	if (cur_type(cur_get(*out, "spec")) != SF_JSON_OBJECT) {
		sf_errf(why, wl, "content at %s does not contain a spec", path);
		return -EINVAL;
	}
	return 0;
}

int sf_awc_tree_template(sf_jd *root, const char *path, sf_jd **out, char *why, size_t wl)
{
	cur c;
	int rc = raw_template(cur_tree(root), path, &c, why, wl);
	*out = rc ? NULL : c.d;
	return rc;
}

/* ---- inference ---- */

static int jv_int32(sf_jv v, int32_t *out)
{
	int64_t x;
	if (sf_jv_int64(v, &x) || x < INT32_MIN || x > INT32_MAX)
		return -EINVAL;
	*out = (int32_t)x;
	return 0;
}

/* Upstream's GetReplicas: the int at path, or -EINVAL (absent, null, not an
 * int32 - upstream would wrap a larger value around). */
static int get_int32_at(sf_jv t, const char *path, int32_t *out)
{
	cur c;
	if (walk(cur_view(t), path, &c, NULL, 0))
		return -EINVAL;
	return jv_int32(c.v, out);
}

/* Upstream's inferReplicas: 1 if path is "" or its field is absent or null;
 * the int32 there; an error if the parent is not a map or the value is not
 * an int32. */
static int infer_replicas(sf_jv t, const char *path, int32_t *out, char *why, size_t wl)
{
	*out = 1;
	if (!*path)
		return 0;
	const char *dot = strrchr(path, '.');
	sf_jv parent = t;
	const char *field = path;
	if (dot) {
		char pp[SF_AWC_PATH_MAX];
		snprintf(pp, sizeof(pp), "%.*s", (int)(dot - path), path);
		cur c;
		int rc = raw_template(cur_view(t), pp, &c, why, wl);
		if (rc)
			return rc;
		parent = c.v;
		field = dot + 1;
	}
	sf_jv v = sf_jv_get(parent, field);
	sf_json_type ty = sf_jv_type(v);
	if (ty == SF_JSON_NONE || ty == SF_JSON_NULL)
		return 0;
	if (jv_int32(v, out)) {
		sf_errf(why, wl, "at path position '%s' non-int value %.*s", path,
		        (int)(v.n > 40 ? 40 : v.n), v.p);
		return -EINVAL;
	}
	return 0;
}

static int gvk_is(sf_jv av, sf_jv kv, const char *api_version, const char *kind)
{
	return sf_jv_streq(av, api_version) && sf_jv_streq(kv, kind);
}

/* batch/v1 Job pod count: parallelism (default 1), lowered to completions. */
static int32_t job_pods(sf_jv t, const char *prefix)
{
	char p[SF_AWC_PATH_MAX];
	int32_t n = 1, x;
	snprintf(p, sizeof(p), "%sspec.parallelism", prefix);
	if (!get_int32_at(t, p, &x))
		n = x;
	snprintf(p, sizeof(p), "%sspec.completions", prefix);
	if (!get_int32_at(t, p, &x) && x < n)
		n = x;
	return n;
}

static int infer_jobset(sf_jv t, psvec *pv, char *why, size_t wl)
{
	cur jobs;
	if (walk(cur_view(t), "template.spec.replicatedJobs", &jobs, NULL, 0) ||
	    sf_jv_type(jobs.v) != SF_JSON_ARRAY)
		return 0;
	size_t nj = sf_jv_len(jobs.v);
	for (size_t i = 0; i < nj; i++) {
		char pre[128], p[SF_AWC_PATH_MAX], count[16];
		cur c;
		snprintf(pre, sizeof(pre), "template.spec.replicatedJobs[%zu].", i);
		snprintf(p, sizeof(p), "%stemplate", pre);
		if (walk(cur_view(t), p, &c, NULL, 0))
			continue;
		snprintf(p, sizeof(p), "%stemplate.", pre);
		int32_t pods = job_pods(t, p);
		int32_t replicas = 1, x;
		snprintf(p, sizeof(p), "%sreplicas", pre);
		if (!get_int32_at(t, p, &x))
			replicas = x;
		int64_t total = (int64_t)replicas * pods;
		if (total < INT32_MIN || total > INT32_MAX) {
			sf_errf(why, wl,
			        "replicatedJobs[%zu]: %d replicas of %d pods overflow int32", i,
			        replicas, pods);
			return -EINVAL;
		}
		snprintf(p, sizeof(p), "%stemplate.spec.template", pre);
		snprintf(count, sizeof(count), "%d", replicas);
		int rc = push_inferred(pv, p, (int32_t)total, 3, SF_AW_TAS_POD_INDEX_LABEL,
		                       JOB_INDEX_ANNOT, SF_AW_TAS_SUB_GROUP_INDEX_LABEL,
		                       JOBSET_INDEX_LABEL, SF_AW_TAS_SUB_GROUP_COUNT, count);
		if (rc)
			return rc;
	}
	return 0;
}

static int infer_pytorch(sf_jv t, psvec *pv, char *why, size_t wl)
{
	static const char *const types[] = {"Master", "Worker"};
	for (size_t i = 0; i < 2; i++) {
		char pre[128], p[SF_AWC_PATH_MAX], tp[SF_AWC_PATH_MAX];
		cur c;
		int32_t r;
		snprintf(pre, sizeof(pre), "template.spec.pytorchReplicaSpecs.%s.", types[i]);
		snprintf(tp, sizeof(tp), "%stemplate", pre);
		if (walk(cur_view(t), tp, &c, NULL, 0))
			continue;
		snprintf(p, sizeof(p), "%sreplicas", pre);
		int rc = infer_replicas(t, p, &r, why, wl);
		if (!rc)
			rc = push_inferred(pv, tp, r, 1, SF_AW_TAS_POD_INDEX_LABEL,
			                   PYTORCH_INDEX_LABEL);
		if (rc)
			return rc;
	}
	return 0;
}

static int infer_ray(sf_jv t, const char *prefix, psvec *pv, char *why, size_t wl)
{
	char p[SF_AWC_PATH_MAX];
	cur workers;
	snprintf(p, sizeof(p), "%sheadGroupSpec.template", prefix);
	int rc = push_inferred(pv, p, 1, 0);
	if (rc)
		return rc;
	snprintf(p, sizeof(p), "%sworkerGroupSpecs", prefix);
	if (walk(cur_view(t), p, &workers, NULL, 0) || sf_jv_type(workers.v) != SF_JSON_ARRAY)
		return 0;
	size_t nw = sf_jv_len(workers.v);
	for (size_t i = 0; i < nw; i++) {
		char pre[128], tp[SF_AWC_PATH_MAX];
		cur c;
		int32_t r;
		snprintf(pre, sizeof(pre), "%sworkerGroupSpecs[%zu].", prefix, i);
		snprintf(tp, sizeof(tp), "%stemplate", pre);
		if (walk(cur_view(t), tp, &c, NULL, 0))
			continue;
		snprintf(p, sizeof(p), "%sreplicas", pre);
		rc = infer_replicas(t, p, &r, why, wl);
		if (!rc)
			rc = push_inferred(pv, tp, r, 0);
		if (rc)
			return rc;
	}
	return 0;
}

/* Pod, Deployment, StatefulSet: one pod set if its template path exists. */
static int infer_simple(sf_jv t, const char *path, const char *replicas, psvec *pv, char *why,
                        size_t wl)
{
	cur c;
	int32_t r;
	if (walk(cur_view(t), path, &c, NULL, 0))
		return 0;
	int rc = infer_replicas(t, replicas, &r, why, wl);
	return rc ? rc : push_inferred(pv, path, r, 0);
}

static int infer(sf_jv t, psvec *pv, char *why, size_t wl)
{
	if (sf_jv_type(t) != SF_JSON_OBJECT) {
		sf_errf(why, wl, "template is not an object");
		return -EINVAL;
	}
	sf_jv av = sf_jv_get(t, "apiVersion"), kv = sf_jv_get(t, "kind");
	int rc = 0;
	if (gvk_is(av, kv, "batch/v1", "Job"))
		rc = push_inferred(pv, "template.spec.template", job_pods(t, "template."), 1,
		                   SF_AW_TAS_POD_INDEX_LABEL, JOB_INDEX_ANNOT);
	else if (gvk_is(av, kv, "jobset.x-k8s.io/v1alpha2", "JobSet"))
		rc = infer_jobset(t, pv, why, wl);
	else if (gvk_is(av, kv, "kubeflow.org/v1", "PyTorchJob"))
		rc = infer_pytorch(t, pv, why, wl);
	else if (gvk_is(av, kv, "ray.io/v1", "RayCluster"))
		rc = infer_ray(t, "template.spec.", pv, why, wl);
	else if (gvk_is(av, kv, "ray.io/v1", "RayJob"))
		rc = infer_ray(t, "template.spec.rayClusterSpec.", pv, why, wl);
	else if (gvk_is(av, kv, "v1", "Pod"))
		rc = infer_simple(t, "template", "", pv, why, wl);
	else if (gvk_is(av, kv, "apps/v1", "Deployment") ||
	         gvk_is(av, kv, "apps/v1", "StatefulSet"))
		rc = infer_simple(t, "template.spec.template", "template.spec.replicas", pv, why,
		                  wl);
	if (rc)
		return rc;

	for (size_t i = 0; i < pv->n; i++) {
		char inner[WHY_LEN / 2];
		cur c;
		if (pod_template(cur_view(t), pv->v[i].path, &c, inner, sizeof(inner))) {
			sf_errf(why, wl, "%s does not refer to a v1.PodSpecTemplate: %s",
			        pv->v[i].path, inner);
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- declared pod sets ---- */

/* A podSets list as the CRD stores it (spec or status). Not a list: none. */
static int parse_podsets(sf_jv arr, const char *where, psvec *pv, char *why, size_t wl)
{
	if (sf_jv_type(arr) != SF_JSON_ARRAY)
		return 0;
	sf_jv_iter it = sf_jv_iter_init(arr);
	sf_jv e;
	for (size_t i = 0; sf_jv_next(&it, NULL, &e); i++) {
		if (sf_jv_type(e) != SF_JSON_OBJECT) {
			sf_errf(why, wl, "%s[%zu] is not an object", where, i);
			return -EINVAL;
		}
		sf_awc_podset *ps = psvec_push(pv);
		if (!ps)
			return -ENOMEM;
		int r = sf_jv_str(sf_jv_get(e, "path"), ps->path, sizeof(ps->path));
		if (r == -ERANGE) {
			sf_errf(why, wl, "%s[%zu].path is longer than %d bytes", where, i,
			        SF_AWC_PATH_MAX - 1);
			return -EINVAL;
		}
		if (r <= 0) {
			sf_errf(why, wl, "%s[%zu] has no path", where, i);
			return -EINVAL;
		}
		sf_jv rv = sf_jv_get(e, "replicas");
		sf_json_type rt = sf_jv_type(rv);
		ps->replicas = 1;
		if (rt != SF_JSON_NONE && rt != SF_JSON_NULL && jv_int32(rv, &ps->replicas)) {
			sf_errf(why, wl, "%s[%zu].replicas is not an int32", where, i);
			return -EINVAL;
		}
		sf_jv an = sf_jv_get(e, "annotations");
		if (sf_jv_type(an) == SF_JSON_OBJECT)
			ps->annotations = an;
	}
	return 0;
}

static int comp_podsets(sf_jv comp, psvec *pv, char *why, size_t wl)
{
	sf_jv declared = sf_jv_get(comp, "podSets");
	if (sf_jv_type(declared) == SF_JSON_ARRAY && sf_jv_len(declared) > 0)
		return parse_podsets(declared, "podSets", pv, why, wl);
	return infer(sf_jv_get(comp, "template"), pv, why, wl);
}

size_t sf_awc_ncomponents(sf_jv aw, sf_jv *comps)
{
	*comps = sf_jv_path(aw, "spec.components");
	return sf_jv_type(*comps) == SF_JSON_ARRAY ? sf_jv_len(*comps) : 0;
}

/* "component 2 (Job sample)" for messages. */
void sf_awc_comp_desc(sf_jv tmpl, size_t index, char *buf, size_t len)
{
	char kind[128], name[256];
	if (sf_jv_str(sf_jv_get(tmpl, "kind"), kind, sizeof(kind)) <= 0)
		snprintf(kind, sizeof(kind), "?");
	int gen = sf_awc_template_name(tmpl, name, sizeof(name) - 1);
	if (gen < 0)
		snprintf(name, sizeof(name), "?");
	else if (gen > 0)
		strcat(name, "*");
	snprintf(buf, len, "component %zu (%s %s)", index, kind, name);
}

/* The definitive pod sets of component index; message without prefix. */
int sf_awc_definitive_podsets(sf_jv aw, size_t index, psvec *pv, char *why, size_t wl)
{
	sf_jv comps;
	size_t nc = sf_awc_ncomponents(aw, &comps);
	if (index >= nc) {
		sf_errf(why, wl, "no such component (the AppWrapper has %zu)", nc);
		return -EINVAL;
	}
	sf_jv cs = sf_jv_path(aw, "status.componentStatus");
	if (sf_jv_type(cs) == SF_JSON_ARRAY && sf_jv_len(cs) == nc)
		return parse_podsets(sf_jv_get(sf_jv_at(cs, index), "podSets"),
		                     "status.componentStatus.podSets", pv, why, wl);
	return comp_podsets(sf_jv_at(comps, index), pv, why, wl);
}

static int copy_out(psvec *pv, int rc, sf_awc_podset *out, size_t cap, size_t *n, char *err,
                    size_t errlen)
{
	*n = 0;
	if (!rc) {
		*n = pv->n;
		if (pv->n > cap) {
			sf_errf(err, errlen, "%zu pod sets, room for %zu", pv->n, cap);
			rc = -ENOSPC;
		} else if (pv->n) {
			memcpy(out, pv->v, pv->n * sizeof(*out));
		}
	}
	free(pv->v);
	return rc;
}

int sf_awc_infer_podsets(sf_jv template, sf_awc_podset *out, size_t cap, size_t *n, char *err,
                         size_t errlen)
{
	psvec pv = {0};
	int rc = infer(template, &pv, err, errlen);
	return copy_out(&pv, rc, out, cap, n, err, errlen);
}

int sf_awc_podsets(sf_jv component, sf_awc_podset *out, size_t cap, size_t *n, char *err,
                   size_t errlen)
{
	psvec pv = {0};
	int rc = comp_podsets(component, &pv, err, errlen);
	return copy_out(&pv, rc, out, cap, n, err, errlen);
}

int sf_awc_component_podsets(sf_jv aw, size_t index, sf_awc_podset *out, size_t cap, size_t *n,
                             char *err, size_t errlen)
{
	psvec pv = {0};
	char why[WHY_LEN], desc[512];
	int rc = sf_awc_definitive_podsets(aw, index, &pv, why, sizeof(why));
	if (rc) {
		sf_jv comps;
		sf_awc_ncomponents(aw, &comps);
		sf_awc_comp_desc(sf_jv_get(sf_jv_at(comps, index), "template"), index, desc,
		                 sizeof(desc));
		sf_errf(err, errlen, "%s: %s", desc, why);
	}
	return copy_out(&pv, rc, out, cap, n, err, errlen);
}

int sf_awc_component_expected_pods(sf_jv aw, size_t index, int64_t *out, char *err, size_t errlen)
{
	psvec pv = {0};
	char why[WHY_LEN], desc[512];
	int64_t sum = 0;
	*out = 0;
	int rc = sf_awc_definitive_podsets(aw, index, &pv, why, sizeof(why));
	if (rc) {
		sf_jv comps;
		sf_awc_ncomponents(aw, &comps);
		sf_awc_comp_desc(sf_jv_get(sf_jv_at(comps, index), "template"), index, desc,
		                 sizeof(desc));
		sf_errf(err, errlen, "%s: %s", desc, why);
		free(pv.v);
		return rc;
	}
	for (size_t j = 0; j < pv.n; j++)
		sum += pv.v[j].replicas;
	free(pv.v);
	*out = sum;
	return 0;
}

int sf_awc_expected_pods(sf_jv aw, int64_t *out, char *err, size_t errlen)
{
	sf_jv comps;
	size_t nc = sf_awc_ncomponents(aw, &comps);
	int64_t sum = 0;
	*out = 0;
	for (size_t i = 0; i < nc; i++) {
		int64_t one;
		int rc = sf_awc_component_expected_pods(aw, i, &one, err, errlen);
		if (rc)
			return rc;
		sum += one;
	}
	*out = sum;
	return 0;
}

int sf_awc_kind_never_completes(const char *api_version, const char *kind)
{
	static const struct {
		const char *group; /* the apiVersion's group ("" for the core group) */
		const char *kind;
	} k[] = {
	    {"apps", "Deployment"},        {"apps", "StatefulSet"},
	    {"apps", "ReplicaSet"},        {"apps", "DaemonSet"},
	    {"", "ReplicationController"}, {"leaderworkerset.x-k8s.io", "LeaderWorkerSet"},
	    {"ray.io", "RayCluster"},
	};
	if (!api_version || !kind)
		return 0;
	const char *slash = strchr(api_version, '/');
	size_t glen = slash ? (size_t)(slash - api_version) : 0;
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		if (strcmp(kind, k[i].kind) == 0 && strlen(k[i].group) == glen &&
		    strncmp(api_version, k[i].group, glen) == 0)
			return 1;
	return 0;
}

sf_jd *sf_awc_podset_to_jd(const sf_awc_podset *ps)
{
	sf_jd *o = sf_jd_new_obj();
	if (!o || sf_jd_set_int(o, "replicas", ps->replicas) || sf_jd_set_str(o, "path", ps->path))
		goto fail;
	if (sf_jv_type(ps->annotations) == SF_JSON_OBJECT) {
		if (sf_jd_set(o, "annotations", sf_jd_from_jv(ps->annotations)))
			goto fail;
	} else if (ps->nannots) {
		sf_jd *a = sf_jd_new_obj();
		if (sf_jd_set(o, "annotations", a))
			goto fail;
		for (size_t i = 0; i < ps->nannots; i++)
			if (sf_jd_set_str(a, ps->annots[i].key, ps->annots[i].value))
				goto fail;
	}
	return o;
fail:
	sf_jd_free(o);
	return NULL;
}

/* ---- ownership ---- */

int sf_awc_controller_owner(sf_jv obj, sf_jv *owner_ref_out)
{
	sf_jv refs = sf_jv_path(obj, "metadata.ownerReferences");
	if (sf_jv_type(refs) != SF_JSON_ARRAY)
		return 0;
	sf_jv_iter it = sf_jv_iter_init(refs);
	sf_jv r;
	while (sf_jv_next(&it, NULL, &r)) {
		int ctl = 0;
		if (sf_jv_bool(sf_jv_get(r, "controller"), &ctl) == 0 && ctl) {
			if (owner_ref_out)
				*owner_ref_out = r;
			return 1;
		}
	}
	return 0;
}

int sf_awc_owned_by(sf_jv obj, const char *uid)
{
	sf_jv r;
	if (!uid || !*uid || !sf_awc_controller_owner(obj, &r))
		return 0;
	return sf_jv_streq(sf_jv_get(r, "uid"), uid);
}

int sf_awc_template_name(sf_jv tmpl, char *buf, size_t n)
{
	sf_jv md = sf_jv_get(tmpl, "metadata");
	if (sf_jv_type(md) != SF_JSON_OBJECT)
		return -EINVAL;
	if (sf_jv_str(sf_jv_get(md, "name"), buf, n) > 0)
		return 0;
	if (sf_jv_type(sf_jv_get(md, "name")) != SF_JSON_NONE &&
	    sf_jv_type(sf_jv_get(md, "name")) != SF_JSON_NULL &&
	    !sf_jv_streq(sf_jv_get(md, "name"), ""))
		return -EINVAL; /* a name that cannot be read is not "no name" */
	if (sf_jv_str(sf_jv_get(md, "generateName"), buf, n) > 0)
		return 1;
	return -EINVAL;
}

int sf_awc_generated_match(sf_jv obj, const char *awuid, size_t index)
{
	char want[24], have[24];
	snprintf(want, sizeof(want), "%zu", index);
	if (!sf_awc_owned_by(obj, awuid))
		return 0;
	sf_jv v = sf_jv_get(sf_jv_path(obj, "metadata.annotations"), SF_AW_COMPONENT_INDEX);
	return sf_jv_str(v, have, sizeof(have)) > 0 && strcmp(want, have) == 0;
}
