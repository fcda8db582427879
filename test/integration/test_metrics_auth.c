/*
 * test_metrics_auth.c - /metrics served as the manifests ship it: HTTPS
 * (TLS 1.2 at least) with the API server deciding who may scrape it
 * (TokenReview, then SubjectAccessReview for get on /metrics), the
 * certificate self-signed or from files that are reloaded when replaced,
 * and the health probes still plain HTTP.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "steadfast/time.h"
#include "steadfast/tlscred.h"
#include "tl.h"
#include "tl_aw.h"
#include "tl_ctl.h"

static tl_kube K;
static tl_aw_watch W;
static char NS[64];

static void setup(void)
{
	tl_aw_env_open(&K, &W, "mauth", NS, sizeof(NS));
}

static void teardown(void)
{
	tl_ctl_stop_all(&K.loop);
	tl_aw_env_close(&K, &W, NS);
}

TestSuite(metrics_auth, .init = setup, .fini = teardown, .timeout = 180);

static tl_ctl *secure_controller(const char *id, const char *const *extra)
{
	tl_ctl_opts o = {
	    .ns = NS, .lease = "steadfast-test", .id = id, .metrics_secure = 1, .extra = extra};
	return tl_ctl_start(&K.loop, &o);
}

static size_t collect(char *p, size_t sz, size_t n, void *ud)
{
	sf_buf_append(ud, p, sz * n);
	return sz * n;
}

static long status_of(int port, const char *token)
{
	sf_buf b;
	sf_buf_init(&b, 1 << 22);
	long st = tl_ctl_https_get(port, "/metrics", token, &b, NULL, 0);
	sf_buf_free(&b);
	return st;
}

static int never_true(void *ud)
{
	(void)ud;
	return 0;
}

/* Polls /metrics until it answers want (RBAC changes reach the
 * authorizer's cache, and ours, within seconds), 30 s at most. */
static long wait_status(int port, const char *token, long want)
{
	int64_t deadline = sf_mono_ns() + 30 * SF_NSEC_PER_SEC;
	long got = status_of(port, token);
	while (got != want && sf_mono_ns() < deadline) {
		tl_run_until_fn(&K.loop, never_true, NULL, 250);
		got = status_of(port, token);
	}
	return got;
}

static void create(const char *path, const char *body)
{
	tl_res r;
	sf_kube_req q = {.method = "POST", .path = path, .body = body, .body_len = strlen(body)};
	tl_do(&K, &q, &r);
	cr_assert_eq(r.http_status, 201, "POST %s: %ld %s", path, r.http_status, r.message);
	tl_res_clear(&r);
}

static void delete (const char *path)
{
	tl_res r;
	sf_kube_req q = {.method = "DELETE", .path = path};
	tl_do(&K, &q, &r);
	tl_res_clear(&r);
}

Test(metrics_auth, token_review_and_access_review)
{
	tl_ctl *c = secure_controller("secure", NULL);
	int mp = tl_ctl_port(&K.loop, c, "metrics");
	int hp = tl_ctl_port(&K.loop, c, "health");

	/* health probes: plain HTTP, no token, as kubelets probe */
	sf_buf b;
	sf_buf_init(&b, 1 << 22);
	cr_assert_eq(tl_ctl_http_get(hp, "/healthz", &b), 200, "%s", b.data);

	/* no token: 401; a token the API server does not know: 401 */
	cr_assert_eq(status_of(mp, NULL), 401);
	cr_assert_eq(status_of(mp, "not-a-token"), 401);

	/* a ServiceAccount's token without the right: 403 */
	char path[512], body[2048];
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/serviceaccounts", NS);
	create(path, "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\","
	             "\"metadata\":{\"name\":\"scraper\"}}");
	char *tok = tl_mint_token(&K, NS, "scraper");
	cr_assert_eq(status_of(mp, tok), 403);

	/* bound to the metrics-reader role: 200 and the exposition */
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\","
	         "\"metadata\":{\"name\":\"%s-metrics-reader\"},\"rules\":[{\"nonResourceURLs\":"
	         "[\"/metrics\"],\"verbs\":[\"get\"]}]}",
	         NS);
	create("/apis/rbac.authorization.k8s.io/v1/clusterroles", body);
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","
	         "\"metadata\":{\"name\":\"%s-metrics-reader\"},\"roleRef\":{\"apiGroup\":"
	         "\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":\"%s-metrics-"
	         "reader\"},\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"scraper\","
	         "\"namespace\":\"%s\"}]}",
	         NS, NS, NS);
	create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", body);
	long got = wait_status(mp, tok, 200);
	snprintf(path, sizeof(path),
	         "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/%s-metrics-reader", NS);
	delete (path);
	snprintf(path, sizeof(path),
	         "/apis/rbac.authorization.k8s.io/v1/clusterroles/%s-metrics-reader", NS);
	delete (path);
	cr_assert_eq(got, 200, "still %ld after binding metrics-reader", got);
	sf_buf_reset(&b);
	char subj[256];
	cr_assert_eq(tl_ctl_https_get(mp, "/metrics", tok, &b, subj, sizeof(subj)), 200);
	sf_buf_putc(&b, '\0');
	cr_assert(strstr(b.data, "steadfast_build_info{version="), "%.400s", b.data);
	cr_assert(strstr(subj, "localhost"), "self-signed subject: %s", subj);

	/* plain HTTP to the metrics port gets no answer */
	sf_buf_reset(&b);
	CURL *h = curl_easy_init();
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", mp);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 15000L);
	CURLcode rc = curl_easy_perform(h);
	long code = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	cr_assert(rc != CURLE_OK || code != 200, "plain HTTP /metrics answered 200");
	free(tok);
	sf_buf_free(&b);

	/* a clean shutdown: the reviewer, its client and the certificate
	 * are released (an ASan build reports leaks on this exit) */
	tl_ctl_signal(c, SIGTERM);
	int64_t status = -1;
	int sig = 0;
	cr_assert_eq(tl_ctl_wait_exit(&K.loop, c, 20000, &status, &sig), 0);
	cr_assert_eq(sig, 0);
	cr_assert_eq(status, 0, "exit status %lld", (long long)status);
	cr_assert_eq(tl_ctl_count(c, "Sanitizer", 0), 0);
}

/* --- certificates from files ------------------------------------------------ */

static void write_file(const char *path, const sf_buf *b)
{
	char tmp[600];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	cr_assert(f, "%s", tmp);
	cr_assert_eq(fwrite(b->data, 1, b->len, f), b->len);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(rename(tmp, path), 0, "%s: %s", path, strerror(errno));
}

/* A certificate for cn in dir/<cert>, dir/<key>, each replaced at once. */
static void write_pair(const char *dir, const char *cert, const char *key, const char *cn)
{
	sf_buf c, k;
	sf_buf_init(&c, 0);
	sf_buf_init(&k, 0);
	char err[256], path[512];
	cr_assert_eq(sf_tlscred_selfsigned(cn, &c, &k, err, sizeof(err)), 0, "%s", err);
	snprintf(path, sizeof(path), "%s/%s", dir, key);
	write_file(path, &k);
	snprintf(path, sizeof(path), "%s/%s", dir, cert);
	write_file(path, &c);
	sf_buf_free(&c);
	sf_buf_free(&k);
}

static const char *served_subject(int port, char *out, size_t n)
{
	sf_buf b;
	sf_buf_init(&b, 1 << 22);
	cr_assert_eq(tl_ctl_https_get(port, "/metrics", NULL, &b, out, n), 401);
	sf_buf_free(&b);
	return out;
}

Test(metrics_auth, certificate_from_files_reloaded)
{
	char dir[] = "/tmp/steadfast-mcert-XXXXXX";
	cr_assert(mkdtemp(dir));
	write_pair(dir, "serving.crt", "serving.key", "first.steadfast.test");
	char pathflag[128];
	snprintf(pathflag, sizeof(pathflag), "--metrics-cert-path=%s", dir);
	const char *extra[] = {pathflag, "--metrics-cert-name=serving.crt",
	                       "--metrics-cert-key=serving.key", NULL};
	tl_ctl *c = secure_controller("files", extra);
	int mp = tl_ctl_port(&K.loop, c, "metrics");
	char subj[256];
	cr_assert(strstr(served_subject(mp, subj, sizeof(subj)), "first.steadfast.test"),
	          "served: %s", subj);

	size_t from = tl_ctl_nlines(c);
	write_pair(dir, "serving.crt", "serving.key", "second.steadfast.test");
	/* the files are looked at again on a handshake at most every second */
	int64_t deadline = sf_mono_ns() + 10 * SF_NSEC_PER_SEC;
	while (!strstr(served_subject(mp, subj, sizeof(subj)), "second.steadfast.test") &&
	       sf_mono_ns() < deadline)
		tl_run_until_fn(&K.loop, never_true, NULL, 200);
	cr_assert(strstr(subj, "second.steadfast.test"), "still served: %s", subj);
	cr_assert(tl_ctl_wait_log(&K.loop, c, "serving certificate reloaded", from, 5000) >= 0);

	char path[600];
	snprintf(path, sizeof(path), "%s/serving.crt", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/serving.key", dir);
	unlink(path);
	rmdir(dir);
}

Test(metrics_auth, missing_certificate_is_a_startup_error)
{
	const char *extra[] = {"--metrics-cert-path=/nonexistent/steadfast-certs", NULL};
	tl_ctl *c = secure_controller("nocert", extra);
	int64_t status = -1;
	int sig = 0;
	cr_assert_eq(tl_ctl_wait_exit(&K.loop, c, 20000, &status, &sig), 0);
	cr_assert_eq(status, 1);
	cr_assert(tl_ctl_count(c, "/nonexistent/steadfast-certs/tls.crt", 0) >= 1);
}

/* --- protocol versions ------------------------------------------------------ */

static ssize_t fd_push(gnutls_transport_ptr_t p, const void *d, size_t n)
{
	return send((int)(intptr_t)p, d, n, MSG_NOSIGNAL);
}

static ssize_t fd_pull(gnutls_transport_ptr_t p, void *d, size_t n)
{
	return recv((int)(intptr_t)p, d, n, 0);
}

/* A blocking handshake with only the versions prio allows: its result,
 * and the alert the server sent if it refused. */
static int handshake(int port, const char *prio, int *alert)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	struct timeval tv = {.tv_sec = 10};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	gnutls_certificate_credentials_t x;
	gnutls_session_t s;
	cr_assert_eq(gnutls_certificate_allocate_credentials(&x), 0);
	cr_assert_eq(gnutls_init(&s, GNUTLS_CLIENT), 0);
	cr_assert_eq(gnutls_priority_set_direct(s, prio, NULL), 0, "%s", prio);
	gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, x);
	gnutls_transport_set_ptr(s, (gnutls_transport_ptr_t)(intptr_t)fd);
	gnutls_transport_set_push_function(s, fd_push);
	gnutls_transport_set_pull_function(s, fd_pull);
	int rc;
	do {
		rc = gnutls_handshake(s);
	} while (rc < 0 && !gnutls_error_is_fatal(rc));
	*alert = rc == GNUTLS_E_FATAL_ALERT_RECEIVED ? (int)gnutls_alert_get(s) : -1;
	gnutls_deinit(s);
	gnutls_certificate_free_credentials(x);
	close(fd);
	return rc;
}

Test(metrics_auth, tls_1_1_refused)
{
	tl_ctl *c = secure_controller("versions", NULL);
	int mp = tl_ctl_port(&K.loop, c, "metrics");
	int alert;
	/* the same client code succeeds with TLS 1.2 and 1.3 */
	cr_assert_eq(handshake(mp, "NORMAL:-VERS-ALL:+VERS-TLS1.2", &alert), 0);
	cr_assert_eq(handshake(mp, "NORMAL:-VERS-ALL:+VERS-TLS1.3", &alert), 0);
	int rc = handshake(mp, "NORMAL:-VERS-ALL:+VERS-TLS1.1:+VERS-TLS1.0", &alert);
	cr_assert(rc < 0, "a TLS 1.1 handshake succeeded");
	/* refused by the server with a protocol_version alert, not by this
	 * client */
	cr_assert_eq(rc, GNUTLS_E_FATAL_ALERT_RECEIVED, "handshake: %s", gnutls_strerror(rc));
	cr_assert_eq(alert, GNUTLS_A_PROTOCOL_VERSION, "alert %d", alert);
}
