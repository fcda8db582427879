/*
 * test_image.c - the controller image built from the Containerfile
 * (make image; $STEADFAST_IMAGE), run with podman against the real control
 * plane as the Deployment runs it.
 *
 *   - contents: FROM scratch and small (under 32 MB), numeric non-root
 *     user, the binary as entrypoint and on PATH; no shell; a dpkg status
 *     stanza and a copyright file for the packages of its libraries; the
 *     same --version as the binary built here;
 *   - in a container: in-cluster configuration from a mounted
 *     ServiceAccount token (no kubeconfig), identity from POD_NAME, a
 *     read-only root filesystem, all capabilities dropped, no privilege
 *     escalation. The process runs as uid 65532 with no capabilities, takes
 *     the Lease, answers /readyz, carries a Job AppWrapper from Suspended to
 *     Succeeded, and on SIGTERM (podman stop's signal, as the kubelet's)
 *     releases the Lease and exits 0.
 * Kueue's admission and the pod's status are played: the subject is the
 * image, and a real Kueue or kubelet would add nothing to what the
 * container is asked to do (suite kueue runs the real ones).
 * RBAC is not this test's subject (test_manifests.c runs the binary under
 * exactly the manifests' RBAC); the ServiceAccount here is bound to
 * cluster-admin.
 *
 * Podman runs containers with runc ($STEADFAST_PODMAN_RUNTIME to change):
 * crun refuses hosts with hybrid cgroups. The open-files and process
 * limits are passed explicitly because podman's defaults raise them, which
 * a container without CAP_SYS_RESOURCE (such as a CI sandbox) may not do.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "steadfast/awapi.h"
#include "steadfast/buf.h"
#include "steadfast/client.h"
#include "steadfast/json.h"
#include "steadfast/log.h"
#include "tl.h"
#include "tl_aw.h"
#include "tl_ctl.h"

#define POD_NAME "steadfast-controller-image-0"
#define LEASE "steadfast-image"

static tl_kube K;
static char NS[64];
static tl_aw_watch W;
static char CONTAINER[96];
static char CRB[128];
static char SADIR[256];

static const sf_gvr GVR_SERVICEACCOUNTS = {"", "v1", "serviceaccounts", 1};
static const sf_gvr GVR_CLUSTERROLEBINDINGS = {"rbac.authorization.k8s.io", "v1",
                                               "clusterrolebindings", 0};

static const char *image(void)
{
	const char *im = getenv("STEADFAST_IMAGE");
	cr_assert(im && im[0], "STEADFAST_IMAGE is not set (run through make integration, which "
	                       "builds the image first)");
	return im;
}

static const char *runtime(void)
{
	const char *r = getenv("STEADFAST_PODMAN_RUNTIME");
	return r && r[0] ? r : "runc";
}

static void ulimits(char *buf, size_t n)
{
	struct rlimit nofile, nproc;
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &nofile), 0);
	cr_assert_eq(getrlimit(RLIMIT_NPROC, &nproc), 0);
	/* podman lowers its own process limit to 32768 (seen in
	 * /proc/PID/limits of podman, conmon and runc), and the runtime
	 * cannot raise it back */
	unsigned long np = nproc.rlim_cur == RLIM_INFINITY || nproc.rlim_cur > 32768
	                       ? 32768
	                       : (unsigned long)nproc.rlim_cur;
	snprintf(buf, n, "--ulimit=nofile=%lu:%lu --ulimit=nproc=%lu:%lu",
	         (unsigned long)nofile.rlim_cur, (unsigned long)nofile.rlim_max, np, np);
}

static void setup(void)
{
	sf_log_set_level(getenv("SF_DEBUG") ? SF_LOG_DEBUG : SF_LOG_WARN);
	tl_kube_open(&K, NULL, NULL);
	tl_aw_install_crd(&K);
	tl_namespace(&K, "image", NS, sizeof(NS));
	tl_aw_watch_start(&W, &K, NS);
	snprintf(CONTAINER, sizeof(CONTAINER), "steadfast-test-%s", NS);
	snprintf(CRB, sizeof(CRB), "steadfast-test-%s", NS);
}

static void teardown(void)
{
	tl_ctl_stop_all(&K.loop);
	/* the container outlives a killed podman client */
	tl_sh(NULL, "podman rm -f -t 0 %s 2>&1", CONTAINER);
	if (CRB[0])
		tl_aw_req(&W, "DELETE", &GVR_CLUSTERROLEBINDINGS, CRB, NULL, NULL);
	if (SADIR[0]) {
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", SADIR);
		if (system(cmd) != 0)
			fprintf(stderr, "image: could not remove %s\n", SADIR);
	}
	tl_aw_watch_stop(&W);
	tl_namespace_delete(&K, NS);
	tl_kube_close(&K);
}

TestSuite(image, .init = setup, .fini = teardown, .timeout = 240);

Test(image, scratch_small_nonroot_with_package_records)
{
	sf_buf out;
	sf_buf_init(&out, 0);
	const char *im = image();
	cr_assert_eq(tl_sh(&out, "podman image inspect %s 2>&1", im), 0, "%s", out.data);
	char err[256] = "";
	sf_buf js;
	sf_buf_init(&js, 0);
	cr_assert_eq(sf_json_minify(out.data, out.len, &js, err, sizeof(err)), 0,
	             "podman image inspect: %s", err);
	sf_jv img = sf_jv_at(sf_jv_root(js.data, js.len), 0);
	cr_assert(sf_jv_ok(img), "no image in %.300s", out.data);
	int64_t size = 0;
	cr_assert_eq(sf_jv_int64(sf_jv_path(img, "Size"), &size), 0);
	fprintf(stderr, "image: %s is %lld bytes\n", im, (long long)size);
	cr_assert(size > 1000000 && size < 32000000, "image size %lld, want 1-32 MB",
	          (long long)size);
	cr_assert(sf_jv_streq(sf_jv_path(img, "Config.User"), "65532:65532"), "%.600s", out.data);
	sf_jv ep = sf_jv_path(img, "Config.Entrypoint");
	cr_assert(sf_jv_streq(sf_jv_at(ep, 0), "/usr/local/bin/steadfast") &&
	              !sf_jv_ok(sf_jv_at(ep, 1)),
	          "entrypoint: %.600s", out.data);
	int path_ok = 0;
	sf_jv env = sf_jv_path(img, "Config.Env");
	for (size_t i = 0; sf_jv_ok(sf_jv_at(env, i)); i++) {
		char e[256] = "";
		sf_jv_str(sf_jv_at(env, i), e, sizeof(e));
		if (strncmp(e, "PATH=", 5) == 0 && strstr(e, "/usr/local/bin"))
			path_ok = 1;
	}
	cr_assert(path_ok, "no PATH with /usr/local/bin in %.600s", out.data);
	/* one layer: FROM scratch plus one COPY */
	sf_jv layers = sf_jv_path(img, "RootFS.Layers");
	cr_assert(sf_jv_ok(sf_jv_at(layers, 0)) && !sf_jv_ok(sf_jv_at(layers, 1)), "layers: %.600s",
	          out.data);
	sf_buf_free(&js);

	/* the binary in the image is the one built here */
	char lim[128];
	ulimits(lim, sizeof(lim));
	cr_assert_eq(
	    tl_sh(&out, "podman --runtime %s run --rm %s %s --version 2>&1", runtime(), lim, im), 0,
	    "%s", out.data);
	char want[128];
	snprintf(want, sizeof(want), "steadfast %s\n", SF_VERSION);
	cr_assert(strstr(out.data, want), "--version in the image: %s", out.data);

	/* no shell to run */
	cr_assert_neq(tl_sh(&out,
	                    "podman --runtime %s run --rm %s --entrypoint /bin/sh %s -c true 2>&1",
	                    runtime(), lim, im),
	              0, "a shell ran in the image: %s", out.data);

	/* the files: the package records, nothing of a distribution besides */
	cr_assert_eq(tl_sh(&out,
	                   "c=$(podman create %s) && podman export $c | tar -t; rc=$?; "
	                   "podman rm $c >/dev/null; exit $rc 2>&1",
	                   im),
	             0, "%s", out.data);
	static const char *const must[] = {"\nusr/local/bin/steadfast\n",
	                                   "\netc/passwd\n",
	                                   "\netc/ssl/certs/ca-certificates.crt\n",
	                                   "\nvar/lib/dpkg/status.d/libc6\n",
	                                   "\nvar/lib/dpkg/status.d/libcurl3-gnutls\n",
	                                   "\nvar/lib/dpkg/status.d/libgnutls30\n",
	                                   "\nvar/lib/dpkg/status.d/libuv1\n",
	                                   "\nvar/lib/dpkg/status.d/libyajl2\n",
	                                   "\nvar/lib/dpkg/status.d/libyaml-0-2\n",
	                                   "\nusr/share/doc/libcurl3-gnutls/copyright\n",
	                                   "\nusr/share/doc/libuv1/copyright\n",
	                                   NULL};
	static const char *const mustnot[] = {
	    "\nbin/sh\n",       "\nusr/bin/sh\n",          "\nbin/bash\n",    "\nusr/bin/apt\n",
	    "\nusr/bin/dpkg\n", "\nvar/lib/dpkg/status\n", "\nusr/bin/env\n", NULL};
	/* tar -t starts without a newline: look at "\n" + listing */
	sf_buf list;
	sf_buf_init(&list, 0);
	sf_buf_putc(&list, '\n');
	sf_buf_append(&list, out.data, out.len);
	sf_buf_putc(&list, '\0');
	for (size_t i = 0; must[i]; i++)
		cr_assert(strstr(list.data, must[i]), "the image lacks %s", must[i] + 1);
	for (size_t i = 0; mustnot[i]; i++)
		cr_assert(!strstr(list.data, mustnot[i]), "the image has %s", mustnot[i] + 1);
	size_t files = 0;
	for (const char *p = list.data + 1; *p; p++)
		files += *p == '\n';
	fprintf(stderr, "image: %zu entries\n", files);
	cr_assert(files < 200, "%zu entries in the image; want only the binary and its libraries",
	          files);
	sf_buf_free(&list);
	sf_buf_free(&out);
}

/* ---- the controller in a container ---- */

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	cr_assert(f, "open %s", path);
	cr_assert_eq(fputs(text, f) >= 0, 1);
	cr_assert_eq(fclose(f), 0);
	/* the container's user 65532 reads it */
	cr_assert_eq(chmod(path, 0644), 0);
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	cr_assert(f, "open %s", path);
	sf_buf b;
	sf_buf_init(&b, 0);
	char chunk[4096];
	size_t got;
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
		sf_buf_append(&b, chunk, got);
	fclose(f);
	sf_buf_putc(&b, '\0');
	return b.data;
}

/* The mounted ServiceAccount directory, as the kubelet projects it. */
static void service_account_dir(void)
{
	char sa[] = "{\"metadata\":{\"name\":\"steadfast-controller\"}}";
	cr_assert_eq(tl_aw_req(&W, "POST", &GVR_SERVICEACCOUNTS, NULL, NULL, sa), 201);
	char crb[1024];
	snprintf(
	    crb, sizeof(crb),
	    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","
	    "\"metadata\":{\"name\":\"%s\"},\"roleRef\":{\"apiGroup\":"
	    "\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":\"cluster-admin\"},"
	    "\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"steadfast-controller\","
	    "\"namespace\":\"%s\"}]}",
	    CRB, NS);
	cr_assert_eq(tl_aw_req(&W, "POST", &GVR_CLUSTERROLEBINDINGS, NULL, NULL, crb), 201);

	snprintf(SADIR, sizeof(SADIR), "/tmp/steadfast-image-sa.XXXXXX");
	cr_assert(mkdtemp(SADIR), "mkdtemp");
	cr_assert_eq(chmod(SADIR, 0755), 0);
	char *tok = tl_mint_token(&K, NS, "steadfast-controller");
	write_file(SADIR, "token", tok);
	free(tok);
	char *ca = read_file(tl_env("STEADFAST_CA"));
	write_file(SADIR, "ca.crt", ca);
	free(ca);
	write_file(SADIR, "namespace", NS);
}

/* "https://127.0.0.1:PORT" -> PORT */
static const char *apiserver_port(void)
{
	const char *url = tl_env("STEADFAST_APISERVER");
	const char *colon = strrchr(url, ':');
	cr_assert(colon && strncmp(url, "https://", 8) == 0, "STEADFAST_APISERVER %s", url);
	return colon + 1;
}

static long holder(char *out, size_t n)
{
	tl_res r;
	sf_kube_req q = {.method = "GET", .gvr = &SF_GVR_LEASES, .ns = NS, .name = LEASE};
	tl_do(&K, &q, &r);
	long st = r.http_status;
	out[0] = '\0';
	if (st == 200)
		sf_jv_str(sf_jv_path(sf_obj_root(r.obj), "spec.holderIdentity"), out, n);
	tl_res_clear(&r);
	return st;
}

/* "Uid:\t65532\t65532..." etc. of a /proc/PID/status text */
static const char *status_field(const char *status, const char *field, char *out, size_t n)
{
	const char *p = strstr(status, field);
	cr_assert(p, "no %s in %s", field, status);
	p += strlen(field);
	while (*p == '\t' || *p == ' ')
		p++;
	size_t i = 0;
	while (p[i] && p[i] != '\n' && i + 1 < n) {
		out[i] = p[i];
		i++;
	}
	out[i] = '\0';
	return out;
}

Test(image, controller_in_a_restricted_container_with_in_cluster_config)
{
	service_account_dir();
	char lim[128];
	ulimits(lim, sizeof(lim));
	char vol[400], host[64], port[64], pod[64], podns[96], name[128], rt[64];
	snprintf(vol, sizeof(vol), "--volume=%s:/var/run/secrets/kubernetes.io/serviceaccount:ro",
	         SADIR);
	snprintf(host, sizeof(host), "--env=KUBERNETES_SERVICE_HOST=127.0.0.1");
	snprintf(port, sizeof(port), "--env=KUBERNETES_SERVICE_PORT=%s", apiserver_port());
	snprintf(pod, sizeof(pod), "--env=POD_NAME=%s", POD_NAME);
	snprintf(podns, sizeof(podns), "--env=POD_NAMESPACE=%s", NS);
	snprintf(name, sizeof(name), "--name=%s", CONTAINER);
	snprintf(rt, sizeof(rt), "%s", runtime());
	char nofile[64], nproc[64];
	cr_assert_eq(sscanf(lim, "%63s %63s", nofile, nproc), 2);
	/* podman forwards SIGTERM to the container (--sig-proxy, its
	 * default); --timeout stops a container whose test died */
	const char *launcher[] = {"setpriv",
	                          "--pdeathsig",
	                          "TERM",
	                          "podman",
	                          "--runtime",
	                          rt,
	                          "run",
	                          "--rm",
	                          name,
	                          "--timeout=300",
	                          "--network=host",
	                          "--read-only",
	                          "--cap-drop=all",
	                          "--security-opt=no-new-privileges",
	                          nofile,
	                          nproc,
	                          vol,
	                          host,
	                          port,
	                          pod,
	                          podns,
	                          image(),
	                          NULL};
	tl_ctl_opts co = {
	    .ns = NS, .lease = LEASE, .id = POD_NAME, .launcher = launcher, .in_cluster = 1};
	tl_ctl *c = tl_ctl_start(&K.loop, &co);
	if (tl_ctl_wait_log(&K.loop, c, "leader work starting", 0, 60000) < 0) {
		tl_ctl_dump(c, 40);
		cr_assert_fail("the controller in the container did not start leading within 60 s");
	}
	/* the identity is POD_NAME's, with a per-process suffix */
	char h[256];
	cr_assert_eq(holder(h, sizeof(h)), 200);
	cr_assert(strncmp(h, POD_NAME "_", strlen(POD_NAME) + 1) == 0, "holder %s", h);
	cr_assert(tl_ctl_count(c, "\"kubeconfig\":\"in-cluster\"", 0) > 0,
	          "the controller did not start from the in-cluster configuration");

	/* the process: uid 65532, no capabilities, no_new_privs */
	sf_buf out;
	sf_buf_init(&out, 0);
	cr_assert_eq(tl_sh(&out, "podman inspect --format '{{.State.Pid}}' %s 2>&1", CONTAINER), 0,
	             "%s", out.data);
	int pid = atoi(out.data);
	cr_assert(pid > 1, "container pid %s", out.data);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	char *st = read_file(path);
	char v[128];
	cr_assert(strncmp(status_field(st, "\nUid:", v, sizeof(v)), "65532\t65532", 11) == 0,
	          "Uid %s", v);
	cr_assert(strncmp(status_field(st, "\nGid:", v, sizeof(v)), "65532\t65532", 11) == 0,
	          "Gid %s", v);
	cr_assert_str_eq(status_field(st, "\nCapEff:", v, sizeof(v)), "0000000000000000");
	cr_assert_str_eq(status_field(st, "\nCapPrm:", v, sizeof(v)), "0000000000000000");
	cr_assert_str_eq(status_field(st, "\nNoNewPrivs:", v, sizeof(v)), "1");
	free(st);
	/* a read-only root: not even root can write into it */
	cr_assert_neq(tl_sh(&out, "touch /proc/%d/root/usr/local/bin/x 2>&1", pid), 0,
	              "wrote into the container's root");
	cr_assert(strstr(out.data, "Read-only file system"), "%s", out.data);

	/* probes */
	int hport = tl_ctl_port(&K.loop, c, "health");
	sf_buf body;
	sf_buf_init(&body, 0);
	cr_assert_eq(tl_ctl_http_get(hport, "/healthz", &body), 200);
	cr_assert_eq(tl_ctl_http_get(hport, "/readyz", &body), 200);
	sf_buf_free(&body);

	/* a Job AppWrapper with a queue name from Suspended to Succeeded */
	static const char aw[] =
	    "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	    "\"metadata\":{\"name\":\"image-job\",\"labels\":{\"kueue.x-k8s.io/queue-name\":"
	    "\"team-q\"}},\"spec\":{\"components\":[{\"template\":{"
	    "\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"image-job\"},"
	    "\"spec\":{\"backoffLimit\":0,\"template\":{\"spec\":{\"restartPolicy\":\"Never\","
	    "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"command\":[\"true\"]}]}}}}}"
	    "]}}";
	tl_aw_create(&W, aw);
	tl_aw_wait_phase(&W, "image-job", "Suspended", 20000);
	tl_aw_admit(&W, "image-job", NULL);
	tl_aw_wait_phase(&W, "image-job", "Running", 20000);
	char p[254];
	tl_aw_pod_ready(&W, "image-job", p, sizeof(p), 20000);
	tl_aw_kubelet(&W, p, "Succeeded", 0, NULL);
	tl_aw_wait_phase(&W, "image-job", "Succeeded", 20000);

	/* SIGTERM through podman: the Lease released, exit 0 */
	tl_ctl_term_released(&K.loop, c, 30000);
	cr_assert_eq(holder(h, sizeof(h)), 200);
	cr_assert_str_empty(h, "the Lease is still held after the release: %s", h);
	sf_buf_free(&out);
}
