/*
 * test_manifests.c - the deployment manifests (manifests/), checked
 * against the real control plane and the real binary (the image built
 * from the Containerfile is test_image.c's).
 *
 * There is no kustomize or kubectl here, so a small kustomization reader
 * follows `resources:` from manifests/default (and refuses any
 * kustomization feature it does not model, rather than silently checking
 * something else than kustomize would build). Then:
 *   - the tree is complete: every manifest file is reached, each kind the
 *     deployment needs is there once (the admission policies of
 *     manifests/admission as many times as they should be), namespaces,
 *     the policy bindings' paramRefs and image agree with manifests/default;
 *   - the Deployment agrees with the rest: its args parse with the
 *     binary's own flag parser and the ConfigMap's config, probe and
 *     metrics ports and paths match the config, Service and
 *     ServiceMonitor; its ServiceAccount is the one bound; the Role covers
 *     the Lease the controller will use; no wildcard or secrets in RBAC;
 *   - every document passes a server-side dry run (dryRun=All) after the
 *     AppWrapper CRD is installed for real (a stand-in CRD provides the
 *     ServiceMonitor kind);
 *   - the RBAC suffices, and no more: the ServiceAccount, Roles and
 *     bindings are created for real (in a fresh namespace made from the
 *     manifest's Namespace), the controller runs with a token minted for
 *     that ServiceAccount (TokenRequest) and carries a Job AppWrapper from
 *     Suspended to Succeeded and through deletion, and a failing Pod one
 *     through two resets to Failed with its Warning Events (created and
 *     patched through events.k8s.io); the audit log shows no request of
 *     it refused and no core/v1 Event write; the Deployment's pod passes
 *     the namespace's restricted Pod Security level; and the same token is
 *     refused what the RBAC does not grant (another Lease, secrets,
 *     writing nodes, deleting its own Lease, core/v1 Events).
 *     Kueue's admission and pod status are played there: the subject is
 *     the RBAC of each request the controller sends, the same whoever
 *     admits (suite kueue runs the real Kueue and kwok nodes).
 * The test plays Kueue (spec.suspend) and kubelet (pod status) with
 * tl_aw's helpers, as test_appwrapper.c does, and waits for states with
 * deadlines.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "steadfast/awapi.h"
#include "steadfast/awconfig.h"
#include "steadfast/buf.h"
#include "steadfast/cache.h"
#include "steadfast/client.h"
#include "steadfast/jdoc.h"
#include "steadfast/log.h"
#include "steadfast/manager.h"
#include "steadfast/time.h"
#include "steadfast/yaml.h"
#include "tl.h"
#include "tl_audit.h"
#include "tl_aw.h"
#include "tl_ctl.h"

#define DEFAULT_DIR "manifests/default"
#define MANIFESTS_DIR "manifests"
#define MAX_FILES 64
#define MAX_DOCS 128
#define SM_CRD_NAME "servicemonitors.monitoring.coreos.com"
#define OPERATOR_CM "steadfast-operator-config"
#define ADMISSION_CM "steadfast-admission"
#define CONTROLLER_CR "steadfast-controller"
#define METRICS_READER_CR "steadfast-metrics-reader"

/* ---- the kustomization reader ---- */

typedef struct mdoc {
	const char *file; /* the manifest file (points into mset.files) */
	char *json;       /* minified (owned) */
	char api_version[128];
	char kind[64];
	char name[254];
	char ns[254];
} mdoc;

typedef struct mset {
	size_t nfiles, ndocs;
	char *files[MAX_FILES]; /* normalised paths from the repository root */
	mdoc docs[MAX_DOCS];
	char ns[254];          /* `namespace:` of manifests/default */
	char image_name[254];  /* images[0].name of manifests/default */
	char image_value[512]; /* what kustomize makes of it: newName:newTag */
} mset;

/* a/b/../c/./d -> a/c/d (lexically; the tree has no symlinks) */
static void norm_join(const char *dir, const char *rel, char *out, size_t n)
{
	char tmp[1024], *parts[64], *save = NULL;
	size_t np = 0;
	snprintf(tmp, sizeof(tmp), "%s/%s", dir, rel);
	for (char *t = strtok_r(tmp, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
		if (strcmp(t, ".") == 0)
			continue;
		if (strcmp(t, "..") == 0 && np > 0 && strcmp(parts[np - 1], "..") != 0) {
			np--;
			continue;
		}
		cr_assert(np < 64);
		parts[np++] = t;
	}
	out[0] = '\0';
	size_t len = 0;
	for (size_t i = 0; i < np; i++)
		len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s%s", i ? "/" : "",
		                        parts[i]);
	cr_assert(len < n, "path too long: %s/%s", dir, rel);
}

static int collect_doc(void *ud, size_t index, const char *json, size_t len)
{
	(void)index;
	mset *m = ud;
	cr_assert(m->ndocs < MAX_DOCS, "more than %d documents", MAX_DOCS);
	mdoc *d = &m->docs[m->ndocs++];
	d->file = m->files[m->nfiles - 1];
	d->json = strndup(json, len);
	cr_assert(d->json);
	sf_jv root = sf_jv_root(d->json, len);
	sf_jv_str(sf_jv_get(root, "apiVersion"), d->api_version, sizeof(d->api_version));
	sf_jv_str(sf_jv_get(root, "kind"), d->kind, sizeof(d->kind));
	sf_jv_str(sf_jv_path(root, "metadata.name"), d->name, sizeof(d->name));
	sf_jv_str(sf_jv_path(root, "metadata.namespace"), d->ns, sizeof(d->ns));
	cr_assert(d->api_version[0] && d->kind[0] && d->name[0],
	          "%s: document %zu has no apiVersion, kind or metadata.name", d->file, index);
	return 0;
}

static void add_file(mset *m, const char *path)
{
	for (size_t i = 0; i < m->nfiles; i++)
		cr_assert(strcmp(m->files[i], path) != 0,
		          "%s is listed twice (kustomize refuses that)", path);
	cr_assert(m->nfiles < MAX_FILES);
	m->files[m->nfiles++] = strdup(path);
	char full[1024], err[512] = "";
	tl_aw_src_path(path, full, sizeof(full));
	int rc = sf_yaml_file_to_json(full, 0, collect_doc, m, err, sizeof(err));
	cr_assert_eq(rc, 0, "%s: %s", path, err);
}

static int is_dir(const char *rel)
{
	char full[1024];
	struct stat st;
	tl_aw_src_path(rel, full, sizeof(full)); /* fails the test when missing */
	return stat(full, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Reads dir/kustomization.yaml and everything its resources reach. */
static void walk(mset *m, const char *dir, int depth)
{
	static const char *const known[] = {"apiVersion", "kind",   "resources",
	                                    "namespace",  "images", NULL};
	cr_assert(depth < 8, "kustomizations nested too deep at %s", dir);
	char kpath[1024];
	norm_join(dir, "kustomization.yaml", kpath, sizeof(kpath));
	char *json = tl_aw_yaml_json(kpath);
	sf_jv root = sf_jv_root(json, strlen(json));
	cr_assert(sf_jv_streq(sf_jv_get(root, "apiVersion"), "kustomize.config.k8s.io/v1beta1") &&
	              sf_jv_streq(sf_jv_get(root, "kind"), "Kustomization"),
	          "%s is not a kustomize.config.k8s.io/v1beta1 Kustomization", kpath);
	sf_jv_iter it = sf_jv_iter_init(root);
	sf_jv key, val;
	while (sf_jv_next(&it, &key, &val)) {
		char k[64] = "";
		sf_jv_str(key, k, sizeof(k));
		int ok = 0;
		for (size_t i = 0; known[i]; i++)
			ok |= strcmp(k, known[i]) == 0;
		cr_assert(ok, "%s: `%s` is a kustomize feature this reader does not model", kpath,
		          k);
	}
	if (depth == 0) {
		sf_jv_str(sf_jv_get(root, "namespace"), m->ns, sizeof(m->ns));
		sf_jv img = sf_jv_path(root, "images[0]");
		char nn[254] = "", nt[254] = "";
		sf_jv_str(sf_jv_get(img, "name"), m->image_name, sizeof(m->image_name));
		sf_jv_str(sf_jv_get(img, "newName"), nn, sizeof(nn));
		sf_jv_str(sf_jv_get(img, "newTag"), nt, sizeof(nt));
		snprintf(m->image_value, sizeof(m->image_value), "%s:%s",
		         nn[0] ? nn : m->image_name, nt);
	} else {
		cr_assert(!sf_jv_ok(sf_jv_get(root, "images")),
		          "%s: images only in manifests/default", kpath);
	}
	sf_jv res = sf_jv_get(root, "resources");
	cr_assert(sf_jv_type(res) == SF_JSON_ARRAY && sf_jv_len(res) > 0, "%s: no resources list",
	          kpath);
	sf_jv_iter ri = sf_jv_iter_init(res);
	while (sf_jv_next(&ri, NULL, &val)) {
		char rel[512] = "", path[1024];
		cr_assert(sf_jv_str(val, rel, sizeof(rel)) > 0, "%s: a resource is not a path",
		          kpath);
		cr_assert(!strstr(rel, "://"), "%s: remote resource %s", kpath, rel);
		norm_join(dir, rel, path, sizeof(path));
		if (is_dir(path))
			walk(m, path, depth + 1);
		else
			add_file(m, path);
	}
	free(json);
}

static void mset_load(mset *m)
{
	memset(m, 0, sizeof(*m));
	walk(m, DEFAULT_DIR, 0);
	cr_assert(m->ns[0], DEFAULT_DIR "/kustomization.yaml sets no namespace");
}

static void mset_free(mset *m)
{
	for (size_t i = 0; i < m->ndocs; i++)
		free(m->docs[i].json);
	for (size_t i = 0; i < m->nfiles; i++)
		free(m->files[i]);
	memset(m, 0, sizeof(*m));
}

/* The one document of this kind; fails the test unless there is exactly one. */
static const mdoc *only(const mset *m, const char *kind)
{
	const mdoc *f = NULL;
	for (size_t i = 0; i < m->ndocs; i++)
		if (strcmp(m->docs[i].kind, kind) == 0) {
			cr_assert(!f, "two %s documents: %s/%s and %s/%s", kind, f->file, f->name,
			          m->docs[i].file, m->docs[i].name);
			f = &m->docs[i];
		}
	cr_assert(f, "no %s reachable from " DEFAULT_DIR, kind);
	return f;
}

/* The document of this kind and name; fails the test unless there is one. */
static const mdoc *named(const mset *m, const char *kind, const char *name)
{
	for (size_t i = 0; i < m->ndocs; i++)
		if (strcmp(m->docs[i].kind, kind) == 0 && strcmp(m->docs[i].name, name) == 0)
			return &m->docs[i];
	cr_assert_fail("no %s %s reachable from " DEFAULT_DIR, kind, name);
	return NULL;
}

static size_t count_kind(const mset *m, const char *kind)
{
	size_t n = 0;
	for (size_t i = 0; i < m->ndocs; i++)
		n += strcmp(m->docs[i].kind, kind) == 0;
	return n;
}

static sf_jv root_of(const mdoc *d)
{
	return sf_jv_root(d->json, strlen(d->json));
}

static int cluster_scoped(const char *kind)
{
	return strcmp(kind, "Namespace") == 0 || strcmp(kind, "CustomResourceDefinition") == 0 ||
	       strcmp(kind, "ClusterRole") == 0 || strcmp(kind, "ClusterRoleBinding") == 0 ||
	       strstr(kind, "AdmissionPolicy") != NULL; /* and their bindings */
}

/* ---- small JSON helpers ---- */

static int arr_has(sf_jv arr, const char *s)
{
	sf_jv_iter it = sf_jv_iter_init(arr);
	sf_jv v;
	while (sf_jv_next(&it, NULL, &v))
		if (sf_jv_streq(v, s))
			return 1;
	return 0;
}

/* Every matchLabels pair of selector is among labels. */
static int selects(sf_jv match_labels, sf_jv labels)
{
	if (sf_jv_len(match_labels) == 0)
		return 0;
	sf_jv_iter it = sf_jv_iter_init(match_labels);
	sf_jv k, v;
	while (sf_jv_next(&it, &k, &v)) {
		char key[254] = "", want[254] = "";
		sf_jv_str(k, key, sizeof(key));
		sf_jv_str(v, want, sizeof(want));
		if (!sf_jv_streq(sf_jv_get(labels, key), want))
			return 0;
	}
	return 1;
}

/* The containerPort of the named port of container c. */
static long container_port(sf_jv c, const char *name)
{
	sf_jv_iter it = sf_jv_iter_init(sf_jv_get(c, "ports"));
	sf_jv p;
	while (sf_jv_next(&it, NULL, &p))
		if (sf_jv_streq(sf_jv_get(p, "name"), name)) {
			int64_t v = 0;
			sf_jv_int64(sf_jv_get(p, "containerPort"), &v);
			return (long)v;
		}
	return -1;
}

/* A probe's or Service's port: a number, or a name of c's ports. */
static long port_of(sf_jv c, sf_jv port)
{
	int64_t v;
	char name[64];
	if (sf_jv_int64(port, &v) == 0)
		return (long)v;
	if (sf_jv_str(port, name, sizeof(name)) > 0)
		return container_port(c, name);
	return -1;
}

/* ":8081", "0.0.0.0:8081" -> 8081 */
static long bind_port(const char *addr)
{
	const char *c = strrchr(addr, ':');
	return c ? atol(c + 1) : -1;
}

/* The verbs a set of RBAC rules grants on group/resource, for the object
 * `name` (rules with resourceNames count only when they name it). */
static void verbs_for(sf_jv rules, const char *group, const char *resource, const char *name,
                      char *out, size_t n)
{
	out[0] = '\0';
	sf_jv_iter it = sf_jv_iter_init(rules);
	sf_jv r;
	while (sf_jv_next(&it, NULL, &r)) {
		if (!arr_has(sf_jv_get(r, "apiGroups"), group) ||
		    !arr_has(sf_jv_get(r, "resources"), resource))
			continue;
		sf_jv names = sf_jv_get(r, "resourceNames");
		if (sf_jv_len(names) > 0 && !arr_has(names, name))
			continue;
		sf_jv_iter vi = sf_jv_iter_init(sf_jv_get(r, "verbs"));
		sf_jv v;
		while (sf_jv_next(&vi, NULL, &v)) {
			char s[32] = "";
			sf_jv_str(v, s, sizeof(s));
			size_t l = strlen(out);
			snprintf(out + l, n - l, " %s ", s);
		}
	}
}

static int has_verb(const char *verbs, const char *v)
{
	char pat[40];
	snprintf(pat, sizeof(pat), " %s ", v);
	return strstr(verbs, pat) != NULL;
}

/* The operator config of the ConfigMap (data["config.yaml"]), malloc'd. */
static char *operator_config(const mset *m, const char *key)
{
	const mdoc *cm = named(m, "ConfigMap", OPERATOR_CM);
	char *cfg = sf_jv_strdup(sf_jv_get(sf_jv_get(root_of(cm), "data"), key));
	cr_assert(cfg, "ConfigMap %s has no data key %s", cm->name, key);
	return cfg;
}

static char *write_temp(const char *prefix, const char *text)
{
	char *path = NULL;
	cr_assert(asprintf(&path, "/tmp/%s-XXXXXX", prefix) > 0);
	int fd = mkstemp(path);
	cr_assert(fd >= 0, "mkstemp %s: %s", path, strerror(errno));
	size_t len = strlen(text);
	cr_assert_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
	return path;
}

/* ---- suite state (one test per process: criterion forks) ---- */

static tl_kube K;
static int K_OPEN;
static char CTLNS[64], AWNS[64], SUFFIX[32];
static char CR_NAME[300], CRB_NAME[300];
static char MR_NAME[300], MRB_NAME[300]; /* metrics-reader role and its binding */
static int SM_CRD_CREATED;
static tl_aw_watch W; /* AWNS's AppWrappers, pods, Jobs and Events */
static sf_kube_config *SA_CFG;
static sf_kube_client *SA;
static char *TMP_KUBECONFIG, *TMP_CONFIG;

static void suite_init(void)
{
	sf_log_set_level(getenv("SF_DEBUG") ? SF_LOG_DEBUG : SF_LOG_WARN);
}

static void client_closed(void *ud)
{
	*(int *)ud = 1;
}

static long admin_delete(const sf_gvr *gvr, const char *ns, const char *name)
{
	tl_res r;
	sf_kube_req q = {.method = "DELETE", .gvr = gvr, .ns = ns, .name = name};
	tl_do(&K, &q, &r);
	long st = r.http_status;
	tl_res_clear(&r);
	return st;
}

static const sf_gvr GVR_CLUSTERROLES = {"rbac.authorization.k8s.io", "v1", "clusterroles", 0};
static const sf_gvr GVR_CLUSTERROLEBINDINGS = {"rbac.authorization.k8s.io", "v1",
                                               "clusterrolebindings", 0};
static const sf_gvr GVR_SECRETS = {"", "v1", "secrets", 1};
static const sf_gvr GVR_NODES = {"", "v1", "nodes", 0};
static const sf_gvr GVR_DEPLOYMENTS = {"apps", "v1", "deployments", 1};

static void suite_fini(void)
{
	if (TMP_KUBECONFIG)
		unlink(TMP_KUBECONFIG);
	if (TMP_CONFIG)
		unlink(TMP_CONFIG);
	free(TMP_KUBECONFIG);
	free(TMP_CONFIG);
	TMP_KUBECONFIG = TMP_CONFIG = NULL;
	if (!K_OPEN)
		return;
	tl_ctl_stop_all(&K.loop);
	if (SA) {
		int closed = 0;
		sf_kube_client_close(SA, client_closed, &closed);
		tl_run_until(&K.loop, &closed, 10000);
		sf_kube_config_free(SA_CFG);
		SA = NULL;
	}
	tl_aw_watch_stop(&W);
	if (AWNS[0])
		tl_namespace_delete(&K, AWNS);
	if (CTLNS[0])
		tl_namespace_delete(&K, CTLNS);
	if (CRB_NAME[0])
		admin_delete(&GVR_CLUSTERROLEBINDINGS, NULL, CRB_NAME);
	if (CR_NAME[0])
		admin_delete(&GVR_CLUSTERROLES, NULL, CR_NAME);
	if (MRB_NAME[0])
		admin_delete(&GVR_CLUSTERROLEBINDINGS, NULL, MRB_NAME);
	if (MR_NAME[0])
		admin_delete(&GVR_CLUSTERROLES, NULL, MR_NAME);
	if (SM_CRD_CREATED)
		admin_delete(&SF_GVR_CRDS, NULL, SM_CRD_NAME);
	tl_kube_close(&K);
	K_OPEN = 0;
}

TestSuite(manifests, .init = suite_init, .fini = suite_fini, .timeout = 120);

static void admin_open(void)
{
	tl_kube_open(&K, NULL, NULL);
	K_OPEN = 1;
}

/* ---- a) the tree ---- */

static void list_yaml_files(const char *rel, char **out, size_t *n)
{
	char full[1024];
	tl_aw_src_path(rel, full, sizeof(full));
	DIR *dh = opendir(full);
	cr_assert(dh, "opendir %s", full);
	struct dirent *e;
	while ((e = readdir(dh))) {
		if (e->d_name[0] == '.')
			continue;
		char sub[1024];
		snprintf(sub, sizeof(sub), "%s/%s", rel, e->d_name);
		size_t l = strlen(e->d_name);
		if (is_dir(sub)) {
			list_yaml_files(sub, out, n);
		} else if (l > 5 && strcmp(e->d_name + l - 5, ".yaml") == 0 &&
		           strcmp(e->d_name, "kustomization.yaml") != 0) {
			cr_assert(*n < MAX_FILES);
			out[(*n)++] = strdup(sub);
		}
	}
	closedir(dh);
}

Test(manifests, kustomization_reaches_every_manifest_once)
{
	mset m;
	mset_load(&m);
	static const char *const kinds[] = {"CustomResourceDefinition",
	                                    "Namespace",
	                                    "ServiceAccount",
	                                    "ClusterRoleBinding",
	                                    "Role",
	                                    "RoleBinding",
	                                    "Deployment",
	                                    "PodDisruptionBudget",
	                                    "Service",
	                                    "ServiceMonitor",
	                                    NULL};
	for (size_t i = 0; kinds[i]; i++)
		only(&m, kinds[i]);
	/* the controller's ClusterRole and the one for scraping /metrics */
	named(&m, "ClusterRole", CONTROLLER_CR);
	named(&m, "ClusterRole", METRICS_READER_CR);
	cr_assert_eq(count_kind(&m, "ClusterRole"), 2);
	/* the operator config and the admission policies' parameters */
	named(&m, "ConfigMap", OPERATOR_CM);
	named(&m, "ConfigMap", ADMISSION_CM);
	cr_assert_eq(count_kind(&m, "ConfigMap"), 2);
	/* manifests/admission: two validating policies, one mutating, bound */
	cr_assert_eq(count_kind(&m, "ValidatingAdmissionPolicy"), 2);
	cr_assert_eq(count_kind(&m, "ValidatingAdmissionPolicyBinding"), 2);
	cr_assert_eq(count_kind(&m, "MutatingAdmissionPolicy"), 1);
	cr_assert_eq(count_kind(&m, "MutatingAdmissionPolicyBinding"), 1);
	cr_assert_eq(m.ndocs, 20, "%zu documents; expected 20", m.ndocs);

	/* no manifest file is left out of the build */
	char *all[MAX_FILES];
	size_t nall = 0;
	list_yaml_files(MANIFESTS_DIR, all, &nall);
	for (size_t i = 0; i < nall; i++) {
		int reached = 0;
		for (size_t k = 0; k < m.nfiles; k++)
			reached |= strcmp(all[i], m.files[k]) == 0;
		cr_expect(reached, "%s is not reachable from " DEFAULT_DIR, all[i]);
		free(all[i]);
	}
	cr_assert_eq(nall, m.nfiles, "%zu manifest files, %zu reached", nall, m.nfiles);

	/* the files already say what kustomize would set */
	for (size_t i = 0; i < m.ndocs; i++) {
		const mdoc *d = &m.docs[i];
		if (strcmp(d->kind, "Namespace") == 0)
			cr_expect_str_eq(d->name, m.ns, "Namespace %s is not %s", d->name, m.ns);
		else if (cluster_scoped(d->kind))
			cr_expect_str_empty(d->ns, "%s %s is cluster-scoped but has namespace %s",
			                    d->kind, d->name, d->ns);
		else
			cr_expect_str_eq(d->ns, m.ns, "%s: %s %s is in namespace '%s', not %s",
			                 d->file, d->kind, d->name, d->ns, m.ns);
	}
	/* kustomize's namespace transform does not reach a policy binding's
	 * paramRef, so the file must name the namespace itself */
	for (size_t i = 0; i < m.ndocs; i++) {
		sf_jv pr = sf_jv_path(root_of(&m.docs[i]), "spec.paramRef");
		if (!sf_jv_ok(pr))
			continue;
		cr_expect(sf_jv_streq(sf_jv_get(pr, "namespace"), m.ns),
		          "%s: %s %s: spec.paramRef.namespace is not %s", m.docs[i].file,
		          m.docs[i].kind, m.docs[i].name, m.ns);
		cr_expect(sf_jv_streq(sf_jv_get(pr, "name"), ADMISSION_CM),
		          "%s: %s %s: spec.paramRef.name is not %s", m.docs[i].file, m.docs[i].kind,
		          m.docs[i].name, ADMISSION_CM);
	}
	/* the images transform applies to the Deployment's container */
	const mdoc *dep = only(&m, "Deployment");
	char image[512] = "";
	sf_jv_str(sf_jv_path(root_of(dep), "spec.template.spec.containers[0].image"), image,
	          sizeof(image));
	size_t nl = strlen(m.image_name);
	cr_assert(nl > 0 && strncmp(image, m.image_name, nl) == 0 &&
	              (image[nl] == ':' || image[nl] == '\0'),
	          "the Deployment's image %s is not the images[0].name %s of " DEFAULT_DIR, image,
	          m.image_name);
	cr_assert_str_eq(image, m.image_value, "image %s, kustomize would make it %s", image,
	                 m.image_value);
	mset_free(&m);
}

/* ---- the Deployment against config, Service, RBAC ---- */

Test(manifests, deployment_agrees_with_config_services_and_rbac)
{
	mset m;
	mset_load(&m);
	const mdoc *dep = only(&m, "Deployment"), *cm = named(&m, "ConfigMap", OPERATOR_CM);
	const mdoc *sa = only(&m, "ServiceAccount"), *role = only(&m, "Role");
	const mdoc *rb = only(&m, "RoleBinding"), *cr = named(&m, "ClusterRole", CONTROLLER_CR);
	const mdoc *reader = named(&m, "ClusterRole", METRICS_READER_CR);
	const mdoc *crb = only(&m, "ClusterRoleBinding"), *svc = only(&m, "Service");
	const mdoc *sm = only(&m, "ServiceMonitor"), *pdb = only(&m, "PodDisruptionBudget");
	sf_jv d = root_of(dep);
	sf_jv pod = sf_jv_path(d, "spec.template.spec");
	sf_jv labels = sf_jv_path(d, "spec.template.metadata.labels");
	cr_assert_eq(sf_jv_len(sf_jv_get(pod, "containers")), 1);
	sf_jv c = sf_jv_path(pod, "containers[0]");

	/* high availability */
	int64_t replicas = 0, grace = 0;
	sf_jv_int64(sf_jv_path(d, "spec.replicas"), &replicas);
	cr_assert_eq(replicas, 3);
	cr_assert(selects(sf_jv_path(d, "spec.selector.matchLabels"), labels));
	int spread = 0;
	sf_jv_iter it = sf_jv_iter_init(sf_jv_get(pod, "topologySpreadConstraints"));
	sf_jv t;
	while (sf_jv_next(&it, NULL, &t))
		spread |= sf_jv_streq(sf_jv_get(t, "topologyKey"), "kubernetes.io/hostname") &&
		          sf_jv_streq(sf_jv_get(t, "whenUnsatisfiable"), "DoNotSchedule") &&
		          selects(sf_jv_path(t, "labelSelector.matchLabels"), labels);
	cr_assert(spread, "no hostname topology spread constraint selecting the pods");
	cr_assert(selects(sf_jv_path(root_of(pdb), "spec.selector.matchLabels"), labels),
	          "the PodDisruptionBudget does not select the pods");
	sf_jv_int64(sf_jv_get(pod, "terminationGracePeriodSeconds"), &grace);
	cr_assert(grace >= 15, "terminationGracePeriodSeconds %lld: too short for a release",
	          (long long)grace);

	/* the args, through the binary's own flag parser, with the config the
	 * ConfigMap mounts where --config points */
	char *cfg = operator_config(&m, "config.yaml");
	TMP_CONFIG = write_temp("steadfast-config", cfg);
	sf_jv vol = sf_jv_path(pod, "volumes[0]");
	sf_jv mnt = sf_jv_path(c, "volumeMounts[0]");
	cr_assert(sf_jv_streq(sf_jv_path(vol, "configMap.name"), cm->name),
	          "the first volume is not ConfigMap %s", cm->name);
	char vol_name[254] = "", mount_path[256] = "", want_config[300];
	sf_jv_str(sf_jv_get(vol, "name"), vol_name, sizeof(vol_name));
	cr_assert(vol_name[0] && sf_jv_streq(sf_jv_get(mnt, "name"), vol_name),
	          "the first volumeMount is not the config volume");
	sf_jv_str(sf_jv_get(mnt, "mountPath"), mount_path, sizeof(mount_path));
	snprintf(want_config, sizeof(want_config), "--config=%s/config.yaml", mount_path);
	char *argv[32];
	int argc = 0, saw_config = 0;
	argv[argc++] = "steadfast";
	sf_jv_iter ai = sf_jv_iter_init(sf_jv_get(c, "args"));
	sf_jv a;
	char *held[64];
	int nheld = 0;
	while (sf_jv_next(&ai, NULL, &a)) {
		cr_assert(argc < 30);
		char *s = sf_jv_strdup(a);
		cr_assert(s);
		held[nheld++] = s;
		if (strncmp(s, "--config", 8) == 0) {
			cr_assert_str_eq(s, want_config, "--config does not name the mounted file");
			saw_config = 1;
			char *r = NULL;
			cr_assert(asprintf(&r, "--config=%s", TMP_CONFIG) > 0);
			held[nheld++] = r;
			s = r;
		}
		argv[argc++] = s;
	}
	argv[argc] = NULL;
	cr_assert(saw_config, "the Deployment does not pass --config");
	sf_mgr_opts o;
	sf_mgr_flags st;
	char err[512] = "";
	int rc = sf_mgr_flags_parse(argc, argv, &o, &st, err, sizeof(err));
	cr_assert_eq(rc, 0, "the Deployment's args: %s", err);
	cr_assert(o.leader_elect, "leader election is off");
	cr_assert(o.metrics_secure, "/metrics is served to anyone (--metrics-secure=false)");
	cr_assert_null(o.watch_namespace, "--namespace: the ClusterRole would be too wide");

	/* the election's namespace and identity come from the downward API */
	int pod_name = 0, pod_ns = 0;
	sf_jv_iter ei = sf_jv_iter_init(sf_jv_get(c, "env"));
	sf_jv e;
	while (sf_jv_next(&ei, NULL, &e)) {
		sf_jv fp = sf_jv_path(e, "valueFrom.fieldRef.fieldPath");
		pod_name |= sf_jv_streq(sf_jv_get(e, "name"), "POD_NAME") &&
		            sf_jv_streq(fp, "metadata.name");
		pod_ns |= sf_jv_streq(sf_jv_get(e, "name"), "POD_NAMESPACE") &&
		          sf_jv_streq(fp, "metadata.namespace");
	}
	cr_assert(o.identity || pod_name, "no --identity and no POD_NAME from metadata.name");
	cr_assert(o.lease_namespace || pod_ns,
	          "no --leader-election-namespace and no POD_NAMESPACE from metadata.namespace");

	/* probes and metrics on the ports the config binds */
	long health = container_port(c, "health"), metrics = container_port(c, "metrics");
	cr_assert_eq(health, bind_port(st.cfg.health_bind), "health port %ld, config binds %s",
	             health, st.cfg.health_bind);
	cr_assert_eq(metrics, bind_port(st.cfg.metrics_bind), "metrics port %ld, config binds %s",
	             metrics, st.cfg.metrics_bind);
	cr_assert(sf_jv_streq(sf_jv_path(c, "livenessProbe.httpGet.path"), "/healthz"));
	cr_assert(sf_jv_streq(sf_jv_path(c, "readinessProbe.httpGet.path"), "/readyz"));
	cr_assert_eq(port_of(c, sf_jv_path(c, "livenessProbe.httpGet.port")), health);
	cr_assert_eq(port_of(c, sf_jv_path(c, "readinessProbe.httpGet.port")), health);
	sf_jv s = root_of(svc);
	cr_assert(selects(sf_jv_path(s, "spec.selector"), labels), "the Service selects no pod");
	cr_assert_eq(port_of(c, sf_jv_path(s, "spec.ports[0].targetPort")), metrics);
	char svc_port[64] = "";
	sf_jv_str(sf_jv_path(s, "spec.ports[0].name"), svc_port, sizeof(svc_port));
	sf_jv smr = root_of(sm);
	cr_assert(
	    selects(sf_jv_path(smr, "spec.selector.matchLabels"), sf_jv_path(s, "metadata.labels")),
	    "the ServiceMonitor does not select the Service");
	cr_assert(sf_jv_streq(sf_jv_path(smr, "spec.endpoints[0].port"), svc_port));
	cr_assert(sf_jv_streq(sf_jv_path(smr, "spec.endpoints[0].path"), "/metrics"));
	/* secure metrics: HTTPS with the scraper's token; the certificate is
	 * self-signed without --metrics-cert-path, so skip verification, else
	 * a CA must be given */
	sf_jv ep = sf_jv_path(smr, "spec.endpoints[0]");
	char verbs_tr[256];
	cr_assert(sf_jv_streq(sf_jv_get(ep, "scheme"), "https"), "the ServiceMonitor scrapes http");
	cr_assert(sf_jv_ok(sf_jv_get(ep, "bearerTokenFile")) ||
	              sf_jv_ok(sf_jv_get(ep, "authorization")),
	          "the ServiceMonitor sends no token");
	int skip = 0;
	sf_jv_bool(sf_jv_path(ep, "tlsConfig.insecureSkipVerify"), &skip);
	cr_assert(o.metrics_cert_path ? sf_jv_ok(sf_jv_path(ep, "tlsConfig.ca")) : skip,
	          "tlsConfig does not fit the certificate (%s)",
	          o.metrics_cert_path ? "from files: a CA is needed" : "self-signed");
	/* the reviews that guard it, and the role to scrape it: get /metrics */
	verbs_for(sf_jv_get(root_of(cr), "rules"), "authentication.k8s.io", "tokenreviews", "",
	          verbs_tr, sizeof(verbs_tr));
	cr_assert(has_verb(verbs_tr, "create"), "no create on tokenreviews: %s", verbs_tr);
	verbs_for(sf_jv_get(root_of(cr), "rules"), "authorization.k8s.io", "subjectaccessreviews",
	          "", verbs_tr, sizeof(verbs_tr));
	cr_assert(has_verb(verbs_tr, "create"), "no create on subjectaccessreviews: %s", verbs_tr);
	/* Events: events.k8s.io/v1 create and patch (series), exactly; no
	 * core/v1 events (the controller never writes them) */
	verbs_for(sf_jv_get(root_of(cr), "rules"), "events.k8s.io", "events", "", verbs_tr,
	          sizeof(verbs_tr));
	cr_assert_str_eq(verbs_tr, " create  patch ", "events.k8s.io events: %s", verbs_tr);
	verbs_for(sf_jv_get(root_of(cr), "rules"), "", "events", "", verbs_tr, sizeof(verbs_tr));
	cr_assert_str_empty(verbs_tr, "core events: %s", verbs_tr);
	sf_jv rr = sf_jv_get(root_of(reader), "rules");
	cr_assert_eq(sf_jv_len(rr), 1, "%s", reader->json);
	sf_jv r0 = sf_jv_at(rr, 0);
	cr_assert(
	    sf_jv_len(sf_jv_get(r0, "nonResourceURLs")) == 1 &&
	        arr_has(sf_jv_get(r0, "nonResourceURLs"), "/metrics") &&
	        sf_jv_len(sf_jv_get(r0, "verbs")) == 1 && arr_has(sf_jv_get(r0, "verbs"), "get") &&
	        !sf_jv_ok(sf_jv_get(r0, "resources")),
	    "%s %s grants more than get /metrics: %s", reader->kind, reader->name, reader->json);

	/* restricted security context, resources */
	int b = 0;
	cr_assert(sf_jv_bool(sf_jv_path(pod, "securityContext.runAsNonRoot"), &b) == 0 && b);
	cr_assert(
	    sf_jv_streq(sf_jv_path(pod, "securityContext.seccompProfile.type"), "RuntimeDefault"));
	cr_assert(sf_jv_bool(sf_jv_path(c, "securityContext.readOnlyRootFilesystem"), &b) == 0 &&
	          b);
	cr_assert(sf_jv_bool(sf_jv_path(c, "securityContext.allowPrivilegeEscalation"), &b) == 0 &&
	          !b);
	cr_assert(arr_has(sf_jv_path(c, "securityContext.capabilities.drop"), "ALL"));
	cr_assert(sf_jv_ok(sf_jv_path(c, "resources.requests.memory")) &&
	          sf_jv_ok(sf_jv_path(c, "resources.requests.cpu")) &&
	          sf_jv_ok(sf_jv_path(c, "resources.limits.memory")));

	/* the ServiceAccount it runs as is the one bound, to these roles */
	cr_assert(sf_jv_streq(sf_jv_get(pod, "serviceAccountName"), sa->name));
	const mdoc *binds[] = {rb, crb};
	const mdoc *roles[] = {role, cr};
	for (size_t i = 0; i < 2; i++) {
		sf_jv br = root_of(binds[i]);
		cr_assert(sf_jv_streq(sf_jv_path(br, "roleRef.kind"), roles[i]->kind) &&
		              sf_jv_streq(sf_jv_path(br, "roleRef.name"), roles[i]->name),
		          "%s %s does not refer to %s %s", binds[i]->kind, binds[i]->name,
		          roles[i]->kind, roles[i]->name);
		cr_assert_eq(sf_jv_len(sf_jv_get(br, "subjects")), 1);
		sf_jv sub = sf_jv_path(br, "subjects[0]");
		cr_assert(sf_jv_streq(sf_jv_get(sub, "kind"), "ServiceAccount") &&
		              sf_jv_streq(sf_jv_get(sub, "name"), sa->name) &&
		              sf_jv_streq(sf_jv_get(sub, "namespace"), sa->ns),
		          "%s %s is not bound to ServiceAccount %s/%s", binds[i]->kind,
		          binds[i]->name, sa->ns, sa->name);
	}

	/* the Role covers the Lease the flags select, and nothing destructive */
	const char *lease = o.lease_name ? o.lease_name : SF_MGR_DEFAULT_LEASE;
	char verbs[256];
	verbs_for(sf_jv_get(root_of(role), "rules"), "coordination.k8s.io", "leases", lease, verbs,
	          sizeof(verbs));
	static const char *const need[] = {"create", "get", "update", "list", "watch", NULL};
	for (size_t i = 0; need[i]; i++)
		cr_assert(has_verb(verbs, need[i]), "the Role does not allow %s on Lease %s (%s)",
		          need[i], lease, verbs);
	cr_assert(!has_verb(verbs, "delete") && !has_verb(verbs, "patch"), "%s", verbs);
	verbs_for(sf_jv_get(root_of(role), "rules"), "coordination.k8s.io", "leases",
	          "someone-elses-lease", verbs, sizeof(verbs));
	cr_assert_str_eq(verbs, " create ", "other Leases: %s", verbs);

	/* least privilege, coarsely: no wildcard, no secrets, in any rule */
	const mdoc *all_roles[] = {role, cr, reader};
	for (size_t i = 0; i < 3; i++) {
		const char *j = all_roles[i]->json;
		cr_assert(!strstr(j, "\"*\""), "%s %s has a wildcard", all_roles[i]->kind,
		          all_roles[i]->name);
		cr_assert(!strstr(j, "\"secrets\""), "%s %s grants secrets", all_roles[i]->kind,
		          all_roles[i]->name);
	}
	for (int i = 0; i < nheld; i++)
		free(held[i]);
	free(cfg);
	mset_free(&m);
}

/* ---- b) server-side dry run ---- */

static const char *SM_CRD =
    "apiVersion: apiextensions.k8s.io/v1\n"
    "kind: CustomResourceDefinition\n"
    "metadata:\n"
    "  name: " SM_CRD_NAME "\n"
    "spec:\n"
    "  group: monitoring.coreos.com\n"
    "  scope: Namespaced\n"
    "  names: {plural: servicemonitors, singular: servicemonitor, kind: ServiceMonitor,\n"
    "          listKind: ServiceMonitorList}\n"
    "  versions:\n"
    "  - name: v1\n"
    "    served: true\n"
    "    storage: true\n"
    "    schema:\n"
    "      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n";

typedef struct resolve_wait {
	int done, err;
} resolve_wait;

static void on_resolved(void *ud, int err, const char *errmsg, const sf_gvr *gvr)
{
	(void)errmsg;
	(void)gvr;
	resolve_wait *w = ud;
	w->err = err;
	w->done = 1;
}

static void on_tick(uv_timer_t *t)
{
	*(int *)t->data = 1;
}

static void on_timer_closed(uv_handle_t *h)
{
	*(int *)h->data = 1;
}

/* Discovery serves a CRD a moment after it is Established: ask again every
 * 100 ms until it does, within timeout_ms. */
static void wait_resolvable(const char *api_version, const char *kind, long timeout_ms)
{
	int64_t deadline = sf_mono_ns() + (int64_t)timeout_ms * 1000000;
	for (;;) {
		resolve_wait w = {0};
		cr_assert_eq(sf_kube_resolve(K.client, api_version, kind, on_resolved, &w), 0);
		cr_assert_eq(tl_run_until(&K.loop, &w.done, 30000), 0, "discovery did not answer");
		if (w.err == 0)
			return;
		cr_assert(sf_mono_ns() < deadline, "%s %s not served by discovery within %ld ms",
		          api_version, kind, timeout_ms);
		uv_timer_t t;
		int fired = 0, closed = 0;
		uv_timer_init(&K.loop, &t);
		t.data = &fired;
		uv_timer_start(&t, on_tick, 100, 0);
		tl_run_until(&K.loop, &fired, 1000);
		t.data = &closed;
		uv_close((uv_handle_t *)&t, on_timer_closed);
		tl_run_until(&K.loop, &closed, 1000);
	}
}

/* Creates the stand-in ServiceMonitor CRD unless one exists (a real one is
 * left alone), and waits until the kind is served. */
static void install_servicemonitor_crd(void)
{
	char err[256] = "";
	char *json = sf_yaml_one_to_json(SM_CRD, strlen(SM_CRD), err, sizeof(err));
	cr_assert(json, "%s", err);
	tl_res r;
	sf_kube_req q = {
	    .method = "POST", .gvr = &SF_GVR_CRDS, .body = json, .body_len = strlen(json)};
	tl_do(&K, &q, &r);
	cr_assert(r.http_status == 201 || r.http_status == 409, "create %s: %ld %s", SM_CRD_NAME,
	          r.http_status, r.message);
	SM_CRD_CREATED = r.http_status == 201;
	tl_res_clear(&r);
	free(json);
	tl_aw_wait_established(&K, SM_CRD_NAME, 60000);
	wait_resolvable("monitoring.coreos.com/v1", "ServiceMonitor", 30000);
}

/* Creates (or updates) one document for real; json is rewritten first by
 * the caller when needed. Returns the HTTP status. */
static long apply_json(const char *ns, const char *json, const char *query)
{
	char *text = NULL;
	cr_assert(asprintf(&text, "%s\n", json) > 0); /* a newline: YAML text, not a path */
	tl_aw_applied a;
	tl_aw_apply_opts opts = {.query = query, .allow_fail = 1};
	tl_aw_apply_yaml(&K, ns, text, &opts, &a);
	cr_assert_eq(a.n, 1);
	long st = a.docs[0].http_status;
	cr_assert(st >= 200 && st < 300, "%s %s: %ld %s %s", a.docs[0].kind, a.docs[0].name, st,
	          a.docs[0].reason, a.docs[0].message);
	tl_aw_applied_clear(&a);
	free(text);
	return st;
}

Test(manifests, every_manifest_passes_a_server_side_dry_run)
{
	mset m;
	mset_load(&m);
	admin_open();
	tl_aw_install_crd(&K);
	install_servicemonitor_crd();
	/* the namespace for real, so the namespaced documents have a home */
	apply_json(NULL, only(&m, "Namespace")->json, NULL);

	size_t checked = 0;
	for (size_t f = 0; f < m.nfiles; f++) {
		tl_aw_applied a;
		tl_aw_apply_opts opts = {.query = "dryRun=All", .allow_fail = 1};
		tl_aw_apply_yaml(&K, NULL, m.files[f], &opts, &a);
		for (size_t i = 0; i < a.n; i++) {
			const tl_aw_doc *d = &a.docs[i];
			cr_expect(d->http_status >= 200 && d->http_status < 300 && d->obj,
			          "%s: %s %s: %ld %s %s", m.files[f], d->kind, d->name,
			          d->http_status, d->reason, d->message);
			checked++;
		}
		tl_aw_applied_clear(&a);
	}
	cr_assert_eq(checked, m.ndocs, "%zu documents sent, %zu read", checked, m.ndocs);
	/* a dry run persists nothing */
	const mdoc *dep = only(&m, "Deployment");
	tl_res r;
	sf_kube_req q = {
	    .method = "GET", .gvr = &GVR_DEPLOYMENTS, .ns = dep->ns, .name = dep->name};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 404, "Deployment %s/%s exists after a dry run: %ld", dep->ns,
	             dep->name, r.http_status);
	tl_res_clear(&r);
	mset_free(&m);
}

/* ---- c) the RBAC, for real ---- */

static int never_true(void *ud)
{
	(void)ud;
	return 0;
}

static void fmt_suffixed(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s-%s", name, SUFFIX);
}

/* The document moved to namespace ns for this run: namespaced objects into
 * ns (the Namespace itself renamed to ns), cluster-scoped names (and a
 * ClusterRoleBinding's roleRef) suffixed, ServiceAccount subjects into ns. */
static char *relocate(const mdoc *d, const char *ns)
{
	char err[256] = "", name[600];
	sf_jd *root = sf_jd_parse(d->json, strlen(d->json), err, sizeof(err));
	cr_assert(root, "%s: %s", d->file, err);
	sf_jd *md = sf_jd_obj_member(root, "metadata");
	cr_assert(md);
	if (strcmp(d->kind, "Namespace") == 0) {
		cr_assert_eq(sf_jd_set_str(md, "name", ns), 0);
	} else if (!cluster_scoped(d->kind)) {
		cr_assert_eq(sf_jd_set_str(md, "namespace", ns), 0);
	} else {
		fmt_suffixed(name, sizeof(name), d->name);
		cr_assert_eq(sf_jd_set_str(md, "name", name), 0);
	}
	if (strcmp(d->kind, "ClusterRoleBinding") == 0) {
		sf_jd *rr = sf_jd_get(root, "roleRef");
		const char *n = sf_jd_str(sf_jd_get(rr, "name"), NULL);
		cr_assert(n);
		fmt_suffixed(name, sizeof(name), n);
		cr_assert_eq(sf_jd_set_str(rr, "name", name), 0);
	}
	sf_jd *subs = sf_jd_get(root, "subjects");
	for (size_t i = 0; i < sf_jd_len(subs); i++) {
		sf_jd *s = sf_jd_at(subs, i, NULL);
		const char *k = sf_jd_str(sf_jd_get(s, "kind"), NULL);
		if (k && strcmp(k, "ServiceAccount") == 0)
			cr_assert_eq(sf_jd_set_str(s, "namespace", ns), 0);
	}
	char *out = sf_jd_dump(root);
	cr_assert(out);
	sf_jd_free(root);
	return out;
}

/* A request with the ServiceAccount's token (on the admin loop, so the
 * controller's log pipe keeps being read). */
static long sa_do(const sf_kube_req *q, tl_res *r)
{
	memset(r, 0, sizeof(*r));
	cr_assert_eq(sf_kube_do(SA, q, tl_res_cb, r, NULL), 0);
	tl_wait(&K.loop, r, 30000);
	return r->http_status;
}

static long sa_status(const sf_kube_req *q)
{
	tl_res r;
	long st = sa_do(q, &r);
	tl_res_clear(&r);
	return st;
}

static int aw_absent(void *ud)
{
	return tl_aw_cached(&W, ud) == NULL;
}

/* What the ServiceAccount did, from the audit log (after the mark `from`):
 * the distinct "verb group/resource[/subresource] ok|403" answers it got,
 * and how many of its requests were refused with 403. The test cluster
 * audits leases, appwrappers, jobs, pods, configmaps (and events), so
 * only those show here. */
typedef struct audit_seen {
	size_t n, forbidden;
	char items[96][192];
} audit_seen;

static void audit_scan(const char *user, const tl_audit_mark *from, audit_seen *a)
{
	memset(a, 0, sizeof(*a));
	tl_audit_query q = {.user = user};
	tl_audit_req *v = NULL;
	size_t n = tl_audit_select(from, &q, &v);
	for (size_t k = 0; k < n; k++) {
		const tl_audit_req *e = &v[k];
		/* a watch still open has only its ResponseStarted line */
		if (strcmp(e->stage, "ResponseComplete") != 0 &&
		    strcmp(e->stage, "ResponseStarted") != 0)
			continue;
		if (e->code == 403)
			a->forbidden++;
		char item[192];
		snprintf(item, sizeof(item), "%s %s/%s%s%s %s", e->verb, e->group, e->resource,
		         e->sub[0] ? "/" : "", e->sub, e->code == 403 ? "403" : "ok");
		int dup = 0;
		for (size_t i = 0; i < a->n; i++)
			dup |= strcmp(a->items[i], item) == 0;
		if (!dup && a->n < 96)
			snprintf(a->items[a->n++], sizeof(a->items[0]), "%s", item);
	}
	free(v);
}

static int audit_has(const audit_seen *a, const char *item)
{
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->items[i], item) == 0)
			return 1;
	return 0;
}

/* The next incarnation of pod rbac-pod (a UID not seen before, not
 * terminating) in the watch's cache. */
typedef struct incarnation {
	char uid[64];
} incarnation;

static int new_incarnation(void *ud)
{
	incarnation *in = ud;
	sf_obj *p = sf_store_get_ns(sf_informer_store(W.pods), AWNS, "rbac-pod");
	if (!p || sf_jv_ok(sf_jv_path(sf_obj_root(p), "metadata.deletionTimestamp")) ||
	    strcmp(p->uid, in->uid) == 0)
		return 0;
	snprintf(in->uid, sizeof(in->uid), "%s", p->uid);
	return 1;
}

/* An Event whose series counts a repeat (2 or more). */
static int ev_series(void *ud)
{
	tl_aw_events *e = ud;
	tl_aw_events_scan(&W, e);
	return e->count >= 2;
}

static const char *JOB_AW =
    "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\",\"metadata\":{"
    "\"name\":\"rbac-job\",\"labels\":{\"kueue.x-k8s.io/"
    "queue-name\":\"team-q\"}},\"spec\":{\"suspend\":false,\"components\":[{\"template\":{"
    "\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"rbac-job\"},"
    "\"spec\":{\"backoffLimit\":0,\"template\":{\"spec\":{\"restartPolicy\":\"Never\","
    "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"command\":[\"true\"]}]}}}}}]}}";

static const char *POD_AW =
    "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\",\"metadata\":{"
    "\"name\":\"rbac-pod\",\"labels\":{\"kueue.x-k8s.io/queue-name\":\"team-q\"},"
    "\"annotations\":{\"" SF_AW_ANNOT_PREFIX "retryLimit\":\"2\",\"" SF_AW_ANNOT_PREFIX
    "failureGracePeriodDuration\":\"0s\",\"" SF_AW_ANNOT_PREFIX
    "retryPausePeriodDuration\":\"0s\"}},\"spec\":{"
    "\"suspend\":false,\"components\":[{\"template\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
    "\"metadata\":{\"name\":\"rbac-pod\"},\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{"
    "\"name\":\"main\",\"image\":\"busybox\"}]}}}]}}";

/* The Deployment's pod, as a Pod in namespace ns (for a dry run through
 * Pod Security admission); weaken drops its security settings. */
static char *deployment_pod(const mdoc *dep, const char *ns, int weaken)
{
	char err[256] = "";
	sf_jd *d = sf_jd_parse(dep->json, strlen(dep->json), err, sizeof(err));
	cr_assert(d, "%s", err);
	sf_jd *spec = sf_jd_clone(sf_jd_path(d, "spec.template.spec"));
	cr_assert(spec);
	if (weaken) {
		sf_jd_del(sf_jd_get(spec, "securityContext"), "runAsNonRoot");
		sf_jd_del(sf_jd_path(spec, "containers[0]"), "securityContext");
	}
	sf_jd *pod = sf_jd_new_obj();
	sf_jd *md = sf_jd_obj_member(pod, "metadata");
	cr_assert(pod && md);
	sf_jd_set_str(pod, "apiVersion", "v1");
	sf_jd_set_str(pod, "kind", "Pod");
	sf_jd_set_str(md, "name", weaken ? "steadfast-pss-weakened" : "steadfast-pss-check");
	sf_jd_set_str(md, "namespace", ns);
	sf_jd_set(pod, "spec", spec);
	char *out = sf_jd_dump(pod);
	cr_assert(out);
	sf_jd_free(pod);
	sf_jd_free(d);
	return out;
}

static long post_dry_run(const sf_gvr *gvr, const char *ns, const char *json, tl_res *r)
{
	sf_kube_req q = {.method = "POST",
	                 .gvr = gvr,
	                 .ns = ns,
	                 .query = "dryRun=All",
	                 .body = json,
	                 .body_len = strlen(json)};
	tl_do(&K, &q, r);
	return r->http_status;
}

Test(manifests, rbac_suffices_for_the_lifecycle_and_refuses_the_rest, .timeout = 240)
{
	mset m;
	mset_load(&m);
	admin_open();
	tl_aw_install_crd(&K);
	snprintf(SUFFIX, sizeof(SUFFIX), "%04x%04x", (unsigned)rand() & 0xffff,
	         (unsigned)(sf_mono_ns() & 0xffff));
	snprintf(CTLNS, sizeof(CTLNS), "sfctl-%s", SUFFIX);
	const mdoc *sa = only(&m, "ServiceAccount");
	const char *lease = SF_MGR_DEFAULT_LEASE; /* the Deployment's: see the test above */

	/* the controller namespace, from the manifest (its Pod Security labels
	 * included), and the RBAC objects for real */
	char *j = relocate(only(&m, "Namespace"), CTLNS);
	apply_json(NULL, j, NULL);
	free(j);
	tl_namespace(&K, "sfaw", AWNS, sizeof(AWNS));
	fmt_suffixed(CR_NAME, sizeof(CR_NAME), named(&m, "ClusterRole", CONTROLLER_CR)->name);
	fmt_suffixed(CRB_NAME, sizeof(CRB_NAME), only(&m, "ClusterRoleBinding")->name);
	static const char *const rbac[] = {
	    "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", NULL};
	for (size_t i = 0; rbac[i]; i++) {
		j = relocate(strcmp(rbac[i], "ClusterRole") == 0
		                 ? named(&m, "ClusterRole", CONTROLLER_CR)
		                 : only(&m, rbac[i]),
		             CTLNS);
		cr_assert_eq(apply_json(CTLNS, j, NULL), 201, "%s was not created", rbac[i]);
		free(j);
	}

	/* the admission parameters, which the leader keeps (get, patch) */
	j = relocate(named(&m, "ConfigMap", ADMISSION_CM), CTLNS);
	cr_assert_eq(apply_json(CTLNS, j, NULL), 201, "the admission parameters were not created");
	free(j);

	/* the Deployment's pod passes the namespace's Pod Security level, and
	 * the level is really enforced (a weakened pod is refused) */
	tl_res r;
	j = deployment_pod(only(&m, "Deployment"), CTLNS, 0);
	cr_assert_eq(post_dry_run(&SF_GVR_PODS, CTLNS, j, &r), 201,
	             "the Deployment's pod in %s: %ld %s", CTLNS, r.http_status, r.message);
	tl_res_clear(&r);
	free(j);
	j = deployment_pod(only(&m, "Deployment"), CTLNS, 1);
	cr_assert_eq(post_dry_run(&SF_GVR_PODS, CTLNS, j, &r), 403,
	             "a pod without runAsNonRoot and container securityContext: %ld %s",
	             r.http_status, r.message);
	cr_assert(strstr(r.message, "PodSecurity"), "%s", r.message);
	tl_res_clear(&r);
	free(j);

	/* a kubeconfig with a token of the ServiceAccount */
	char *tok = tl_mint_token(&K, CTLNS, sa->name);
	char *kc = NULL;
	cr_assert(
	    asprintf(&kc,
	             "apiVersion: v1\nkind: Config\nclusters:\n- name: steadfast\n  cluster:\n"
	             "    server: %s\n    certificate-authority: %s\nusers:\n- name: sa\n"
	             "  user:\n    token: %s\ncontexts:\n- name: sa\n  context:\n"
	             "    cluster: steadfast\n    user: sa\n    namespace: %s\n"
	             "current-context: sa\n",
	             tl_env("STEADFAST_APISERVER"), tl_env("STEADFAST_CA"), tok, CTLNS) > 0);
	TMP_KUBECONFIG = write_temp("steadfast-sa-kubeconfig", kc);
	free(kc);
	free(tok);
	char err[512] = "";
	cr_assert_eq(sf_kube_config_load(TMP_KUBECONFIG, NULL, &SA_CFG, err, sizeof(err)), 0, "%s",
	             err);
	cr_assert_eq(sf_kube_client_new(&K.loop, SA_CFG, NULL, &SA), 0);
	char user[400];
	snprintf(user, sizeof(user), "system:serviceaccount:%s:%s", CTLNS, sa->name);
	static const char ssr[] =
	    "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}";
	sf_kube_req who = {.method = "POST",
	                   .path = "/apis/authentication.k8s.io/v1/selfsubjectreviews",
	                   .body = ssr,
	                   .body_len = strlen(ssr)};
	cr_assert_eq(sa_do(&who, &r), 201, "SelfSubjectReview: %ld %s", r.http_status, r.message);
	cr_assert(sf_jv_streq(sf_jv_path(sf_obj_root(r.obj), "status.userInfo.username"), user),
	          "the token is not %s's: %s", user, r.obj->json);
	tl_res_clear(&r);

	/* the controller with that token and the ConfigMap's config */
	char *cfg = operator_config(&m, "config.yaml");
	TMP_CONFIG = write_temp("steadfast-config", cfg);
	free(cfg);
	tl_aw_watch_start(&W, &K, AWNS);
	tl_audit_mark audit_from;
	tl_audit_mark_now(&audit_from);
	const char *extra[] = {"--leader-election-namespace", CTLNS, NULL};
	tl_ctl_opts co = {.ns = AWNS,
	                  .lease = lease,
	                  .id = "manifests-rbac",
	                  .kubeconfig = TMP_KUBECONFIG,
	                  .config = TMP_CONFIG,
	                  .extra = extra,
	                  .metrics_secure = 1};
	tl_ctl *c = tl_ctl_start(&K.loop, &co);
	if (tl_ctl_wait_log(&K.loop, c, "leader work starting", 0, 30000) < 0) {
		tl_ctl_dump(c, 40);
		cr_assert_fail("the controller did not start leading within 30 s");
	}
	sf_kube_req lq = {.method = "GET", .gvr = &SF_GVR_LEASES, .ns = CTLNS, .name = lease};
	tl_do(&K, &lq, &r);
	cr_assert_eq(r.http_status, 200);
	cr_assert(
	    sf_jv_streq(sf_jv_path(sf_obj_root(r.obj), "spec.holderIdentity"), "manifests-rbac"),
	    "%s", r.obj->json);
	tl_res_clear(&r);

	/* the probe and scrape paths of the manifests answer */
	int hport = tl_ctl_port(&K.loop, c, "health"), mport = tl_ctl_port(&K.loop, c, "metrics");
	sf_buf body;
	sf_buf_init(&body, 0);
	cr_assert_eq(tl_ctl_http_get(hport, "/healthz", &body), 200);
	cr_assert_eq(tl_ctl_http_get(hport, "/readyz", &body), 200);
	/* secure metrics, as the Deployment serves them: the ClusterRole lets
	 * the controller review tokens (else 500); its own token may not get
	 * /metrics until bound to the metrics-reader role */
	char *mtok = tl_mint_token(&K, CTLNS, sa->name);
	body.len = 0;
	cr_assert_eq(tl_ctl_https_get(mport, "/metrics", NULL, &body, NULL, 0), 401);
	body.len = 0;
	cr_assert_eq(tl_ctl_https_get(mport, "/metrics", mtok, &body, NULL, 0), 403);
	fmt_suffixed(MR_NAME, sizeof(MR_NAME), METRICS_READER_CR);
	j = relocate(named(&m, "ClusterRole", METRICS_READER_CR), CTLNS);
	cr_assert_eq(apply_json(NULL, j, NULL), 201, "%s was not created", MR_NAME);
	free(j);
	snprintf(MRB_NAME, sizeof(MRB_NAME), "%s", MR_NAME);
	char mrb[2048];
	snprintf(mrb, sizeof(mrb),
	         "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","
	         "\"metadata\":{\"name\":\"%s\"},\"roleRef\":{\"apiGroup\":"
	         "\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":\"%s\"},"
	         "\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"%s\",\"namespace\":"
	         "\"%s\"}]}",
	         MRB_NAME, MR_NAME, sa->name, CTLNS);
	cr_assert_eq(apply_json(NULL, mrb, NULL), 201, "%s was not created", MRB_NAME);
	/* until the authorizer sees the binding and the 403 cached for the
	 * token (10 s) expires: 30 s at most */
	long mst = 0;
	int64_t mdeadline = sf_mono_ns() + 30 * SF_NSEC_PER_SEC;
	do {
		if (mst)
			tl_run_until_fn(&K.loop, never_true, NULL, 250);
		body.len = 0;
		mst = tl_ctl_https_get(mport, "/metrics", mtok, &body, NULL, 0);
	} while (mst != 200 && sf_mono_ns() < mdeadline);
	cr_assert_eq(mst, 200, "still %ld with metrics-reader bound", mst);
	sf_buf_putc(&body, '\0');
	cr_assert(strstr(body.data, "leader_election_master_status"), "%.400s", body.data);
	sf_buf_free(&body);
	free(mtok);

	/* a Job AppWrapper with a queue name: suspended for Kueue, admitted, Running, Succeeded */
	tl_aw_create(&W, JOB_AW);
	tl_aw_wait_phase(&W, "rbac-job", "Suspended", 20000);
	sf_jv aw = sf_obj_root(tl_aw_cached(&W, "rbac-job"));
	cr_assert_eq(sf_jv_type(sf_jv_path(aw, "spec.suspend")), SF_JSON_TRUE, "not suspended");
	tl_aw_admit(&W, "rbac-job", NULL);
	tl_aw_wait_phase(&W, "rbac-job", "Running", 20000);
	aw = sf_obj_root(tl_aw_cached(&W, "rbac-job"));
	cr_assert(arr_has(sf_jv_path(aw, "metadata.finalizers"), SF_AW_FINALIZER),
	          "no finalizer on the running AppWrapper");
	char pod[254];
	tl_aw_pod_ready(&W, "rbac-job", pod, sizeof(pod), 20000);
	tl_aw_kubelet(&W, pod, "Succeeded", 0, NULL);
	tl_aw_wait_phase(&W, "rbac-job", "Succeeded", 20000);

	/* deletion: the finalizer goes after the components */
	cr_assert_eq(tl_aw_req(&W, "DELETE", &SF_GVR_APPWRAPPERS, "rbac-job", NULL, NULL), 200);
	if (tl_run_until_fn(&K.loop, aw_absent, "rbac-job", 30000) != 0) {
		tl_aw_dump(&W, "rbac-job");
		cr_assert_fail("the AppWrapper was not finalized within 30 s");
	}
	tl_aw_wait_all_gone(&W, "rbac-job", 30000);
	cr_assert_eq(tl_aw_req(&W, "GET", &SF_GVR_JOBS, "rbac-job", NULL, NULL), 404);

	/* a Pod AppWrapper whose pod fails three times (retryLimit 2): its
	 * Warning Events (events.k8s.io: created, then the two resets' series
	 * patched), then Failed and its pod deleted */
	tl_aw_create(&W, POD_AW);
	tl_aw_wait_phase(&W, "rbac-pod", "Suspended", 20000);
	tl_aw_admit(&W, "rbac-pod", NULL);
	tl_aw_wait_phase(&W, "rbac-pod", "Running", 20000);
	incarnation inc = {""};
	for (int k = 1; k <= 3; k++) {
		if (tl_run_until_fn(&K.loop, new_incarnation, &inc, 30000) != 0) {
			tl_aw_dump(&W, "rbac-pod");
			cr_assert_fail("incarnation %d of rbac-pod did not appear within 30 s", k);
		}
		tl_aw_kubelet(&W, "rbac-pod", "Failed", 3, NULL);
	}
	tl_aw_wait_phase(&W, "rbac-pod", "Failed", 20000);
	tl_aw_events ev = tl_aw_wait_event(&W, "rbac-pod", "exited with code 3", 10000);
	cr_assert(ev.warning);
	tl_aw_events agg = {.aw = "rbac-pod", .needle = "exited with code 3"};
	cr_assert_eq(tl_run_until_fn(&K.loop, ev_series, &agg, 10000), 0,
	             "no Event counts the repeated reset (largest series.count %ld)", agg.count);
	tl_aw_wait_all_gone(&W, "rbac-pod", 30000);

	/* SIGTERM, as the kubelet sends it: the leader releases the Lease (an
	 * update) and exits 0 well within the pod's grace period */
	tl_ctl_term_released(&K.loop, c, 15000);
	tl_do(&K, &lq, &r);
	cr_assert_eq(r.http_status, 200);
	char holder[128] = "";
	sf_jv_str(sf_jv_path(sf_obj_root(r.obj), "spec.holderIdentity"), holder, sizeof(holder));
	cr_assert_str_empty(holder, "the Lease is still held after the release: %s", r.obj->json);
	tl_res_clear(&r);

	/* nothing the controller asked for was refused */
	audit_seen as;
	audit_scan(user, &audit_from, &as);
	fprintf(stderr, "manifests: requests of %s (audit log, audited resources only):\n", user);
	for (size_t i = 0; i < as.n; i++)
		fprintf(stderr, "  %s\n", as.items[i]);
	cr_assert_eq(as.forbidden, 0, "%zu requests of the controller were refused (see above)",
	             as.forbidden);
	static const char *const used[] = {"create coordination.k8s.io/leases ok",
	                                   "update coordination.k8s.io/leases ok",
	                                   "list coordination.k8s.io/leases ok",
	                                   "watch coordination.k8s.io/leases ok",
	                                   "watch " SF_AW_GROUP "/" SF_AW_RESOURCE " ok",
	                                   "patch " SF_AW_GROUP "/" SF_AW_RESOURCE " ok",
	                                   "patch " SF_AW_GROUP "/" SF_AW_RESOURCE "/status ok",
	                                   "create batch/jobs ok",
	                                   "delete batch/jobs ok",
	                                   "watch batch/jobs ok",
	                                   "watch /pods ok",
	                                   "create /pods ok",
	                                   "delete /pods ok",
	                                   "get /configmaps ok",
	                                   "patch /configmaps ok",
	                                   "create events.k8s.io/events ok",
	                                   "patch events.k8s.io/events ok",
	                                   NULL};
	for (size_t i = 0; used[i]; i++)
		cr_assert(audit_has(&as, used[i]), "the test did not exercise \"%s\"", used[i]);
	/* the Job's success was confirmed by a live read of the Job (its
	 * Complete condition: docs/failure-semantics.md, Evidence by step) */
	cr_assert(audit_has(&as, "get batch/jobs ok"), "Succeeded without a live read of the Job");
	/* Events go through events.k8s.io only (the ClusterRole has no core
	 * events rule) */
	cr_assert(!audit_has(&as, "create /events ok") && !audit_has(&as, "patch /events ok"),
	          "a core/v1 Event write");
	/* it deleted what its cache held and learnt from the cache that the
	 * objects were gone: no live read of a Pod (it would answer 404) */
	cr_assert(!audit_has(&as, "get /pods ok"), "a GET of a Pod during deletion");
	cr_assert_eq(tl_ctl_count(c, "orbidden", 0), 0, "the controller logged a Forbidden");
	/* its ClusterRole lets it read the admission bindings it checks at start */
	cr_expect_eq(tl_ctl_count(c, "\"undecided\":\"0\"", 0), 1,
	             "the start-up admission check could not read every binding");

	/* and the token gets nothing beyond the RBAC */
	const char *other = "not-steadfasts-lease";
	char lb[300];
	snprintf(lb, sizeof(lb),
	         "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{"
	         "\"name\":\"%s\"},\"spec\":{\"holderIdentity\":\"someone\"}}",
	         other);
	sf_kube_req mk = {.method = "POST",
	                  .gvr = &SF_GVR_LEASES,
	                  .ns = CTLNS,
	                  .body = lb,
	                  .body_len = strlen(lb)};
	tl_do(&K, &mk, &r);
	cr_assert_eq(r.http_status, 201);
	tl_res_clear(&r);
	sf_kube_req own = {.method = "GET", .gvr = &SF_GVR_LEASES, .ns = CTLNS, .name = lease};
	cr_assert_eq(sa_status(&own), 200, "the token cannot read its own Lease");
	sf_kube_req q1 = {.method = "DELETE", .gvr = &SF_GVR_LEASES, .ns = CTLNS, .name = other};
	cr_assert_eq(sa_status(&q1), 403, "deleting another Lease");
	sf_kube_req q2 = {.method = "GET", .gvr = &SF_GVR_LEASES, .ns = CTLNS, .name = other};
	cr_assert_eq(sa_status(&q2), 403, "reading another Lease");
	sf_kube_req q3 = {.method = "DELETE",
	                  .gvr = &SF_GVR_LEASES,
	                  .ns = CTLNS,
	                  .name = lease,
	                  .query = "dryRun=All"};
	cr_assert_eq(sa_status(&q3), 403, "deleting its own Lease");
	sf_kube_req q4 = {.method = "GET", .gvr = &SF_GVR_LEASES, .ns = CTLNS};
	cr_assert_eq(sa_status(&q4), 403, "listing all Leases (no field selector)");
	char fs[300];
	snprintf(fs, sizeof(fs), "fieldSelector=metadata.name%%3D%s", lease);
	sf_kube_req q5 = {.method = "GET", .gvr = &SF_GVR_LEASES, .ns = CTLNS, .query = fs};
	cr_assert_eq(sa_status(&q5), 200,
	             "listing its Lease by field selector, as the elector does");
	sf_kube_req q6 = {.method = "GET", .gvr = &GVR_SECRETS, .ns = AWNS};
	cr_assert_eq(sa_status(&q6), 403, "listing secrets");
	sf_kube_req q7 = {.method = "GET", .gvr = &GVR_SECRETS};
	cr_assert_eq(sa_status(&q7), 403, "listing secrets cluster-wide");
	sf_kube_req q8 = {.method = "GET", .gvr = &GVR_NODES};
	cr_assert_eq(sa_status(&q8), 200, "listing nodes (Autopilot's node cache)");
	static const char nodepatch[] = "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}";
	sf_kube_req q8w = {.method = "PATCH",
	                   .gvr = &GVR_NODES,
	                   .name = "no-such-node",
	                   .content_type = "application/merge-patch+json",
	                   .query = "dryRun=All",
	                   .body = nodepatch,
	                   .body_len = strlen(nodepatch)};
	cr_assert_eq(sa_status(&q8w), 403, "patching a node");
	static const char cmb[] =
	    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"}}";
	sf_kube_req q9 = {.method = "POST",
	                  .gvr = &SF_GVR_CONFIGMAPS,
	                  .ns = AWNS,
	                  .query = "dryRun=All",
	                  .body = cmb,
	                  .body_len = strlen(cmb)};
	cr_assert_eq(sa_status(&q9), 403, "creating a ConfigMap");
	static const char cmpatch[] = "{\"data\":{\"x\":\"y\"}}";
	sf_kube_req q9b = {.method = "PATCH",
	                   .gvr = &SF_GVR_CONFIGMAPS,
	                   .ns = CTLNS,
	                   .name = OPERATOR_CM,
	                   .query = "dryRun=All",
	                   .body = cmpatch,
	                   .body_len = strlen(cmpatch),
	                   .content_type = "application/merge-patch+json"};
	cr_assert_eq(sa_status(&q9b), 403, "patching a ConfigMap other than the parameters");
	static const char awput[] = "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}";
	sf_kube_req q10 = {.method = "PUT",
	                   .gvr = &SF_GVR_APPWRAPPERS,
	                   .ns = AWNS,
	                   .name = "rbac-pod",
	                   .query = "dryRun=All",
	                   .body = awput,
	                   .body_len = strlen(awput)};
	cr_assert_eq(sa_status(&q10), 403, "updating (PUT) an AppWrapper");
	static const char coreev[] =
	    "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"x.1\"},"
	    "\"involvedObject\":{\"kind\":\"AppWrapper\",\"namespace\":\"%s\",\"name\":"
	    "\"rbac-pod\"},\"reason\":\"R\",\"message\":\"m\",\"type\":\"Normal\"}";
	char cev[512];
	snprintf(cev, sizeof(cev), coreev, AWNS);
	sf_kube_req q11 = {.method = "POST",
	                   .gvr = &SF_GVR_EVENTS,
	                   .ns = AWNS,
	                   .query = "dryRun=All",
	                   .body = cev,
	                   .body_len = strlen(cev)};
	cr_assert_eq(sa_status(&q11), 403, "creating a core/v1 Event");
	/* the other Lease is still there */
	tl_do(&K, &q2, &r);
	cr_assert_eq(r.http_status, 200);
	tl_res_clear(&r);
	mset_free(&m);
}
