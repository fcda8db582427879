/*
 * test_kubeconfig.c - kubeconfig connection and credential settings against
 * the real kube-apiserver.
 *
 * tls-server-name (a SAN of the serving certificate that is not the address
 * dialled, a wrong one that must fail verification, and a server path that
 * must survive it), proxy-url through a CONNECT proxy on the test's loop,
 * and exec credential plugins: shell scripts that print a ServiceAccount
 * token (minted with TokenRequest) or the low-privilege client certificate
 * of the test cluster, count their runs in a file, and expire or fail on
 * purpose.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "steadfast/client.h"
#include "steadfast/credentials.h"
#include "steadfast/time.h"
#include "tl.h"

static char dir[128];
static tl_kube ADMIN;
static int admin_open;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/sf-kubeconfig-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	if (admin_open)
		tl_kube_close(&ADMIN);
	admin_open = 0;
	sf_buf out;
	sf_buf_init(&out, 0);
	tl_sh(&out, "rm -rf '%s'", dir);
	sf_buf_free(&out);
}

TestSuite(kubeconfig, .init = setup, .fini = teardown, .timeout = 120);

static const char *fpath(const char *name)
{
	static char p[8][256];
	static int i;
	char *s = p[i++ % 8];
	snprintf(s, 256, "%s/%s", dir, name);
	return s;
}

static void write_file(const char *name, const char *content, int mode)
{
	const char *p = fpath(name);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f, "%s", p);
	fputs(content, f);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(p, (mode_t)mode), 0);
}

/* host and port of STEADFAST_APISERVER (https://127.0.0.1:PORT) */
static int api_port(void)
{
	const char *api = tl_env("STEADFAST_APISERVER");
	const char *colon = strrchr(api, ':');
	cr_assert(colon, "%s", api);
	return atoi(colon + 1);
}

/* A kubeconfig at dir/name: cluster fields as given, user fields as given. */
static const char *kubeconfig(const char *name, const char *cluster, const char *user)
{
	char buf[4096];
	snprintf(buf, sizeof(buf),
	         "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
	         "clusters:\n- name: c\n  cluster:\n    certificate-authority: %s\n%s"
	         "users:\n- name: u\n  user:\n%s"
	         "contexts:\n- name: t\n  context: {cluster: c, user: u, namespace: default}\n",
	         tl_env("STEADFAST_CA"), cluster, user);
	write_file(name, buf, 0600);
	return fpath(name);
}

static const char *admin_user(void)
{
	static char u[1024];
	snprintf(u, sizeof(u), "    client-certificate: %s\n    client-key: %s\n",
	         tl_env("STEADFAST_ADMIN_CERT"), tl_env("STEADFAST_ADMIN_KEY"));
	return u;
}

static void get(tl_kube *k, const char *path, tl_res *r)
{
	sf_kube_req req = {.method = "GET", .path = path};
	tl_do(k, &req, r);
}

static int count_runs(const char *name)
{
	FILE *f = fopen(fpath(name), "r");
	if (!f)
		return 0;
	int n = 0;
	if (fscanf(f, "%d", &n) != 1)
		n = 0;
	fclose(f);
	return n;
}

/* --- tls-server-name ------------------------------------------------------------ */

Test(kubeconfig, tls_server_name_is_the_verified_name)
{
	/* the serving certificate names localhost and kubernetes.default.svc
	 * besides 127.0.0.1; we dial 127.0.0.1 and check another name */
	char cl[512];
	snprintf(cl, sizeof(cl),
	         "    server: https://127.0.0.1:%d\n    tls-server-name: kubernetes.default.svc\n",
	         api_port());
	tl_kube k;
	tl_kube_open(&k, kubeconfig("ok", cl, admin_user()), NULL);
	tl_res r = {0};
	get(&k, "/version", &r);
	cr_assert_eq(r.err, 0, "%s", r.errmsg);
	cr_assert_eq(r.http_status, 200, "%s", r.errmsg);
	tl_res_clear(&r);
	sf_kube_client_stats st;
	sf_kube_client_stats_get(k.client, &st);
	cr_assert_eq(st.http2_responses, 1, "not over HTTP/2");
	tl_kube_close(&k);

	/* a name the certificate does not carry fails verification */
	snprintf(cl, sizeof(cl),
	         "    server: https://127.0.0.1:%d\n    tls-server-name: wrong.example\n",
	         api_port());
	tl_kube_open(&k, kubeconfig("bad", cl, admin_user()), NULL);
	get(&k, "/version", &r);
	cr_assert_neq(r.err, 0, "a wrong tls-server-name was accepted (HTTP %ld)", r.http_status);
	cr_assert_eq(r.http_status, 0);
	cr_assert(strstr(r.errmsg, "wrong.example") || strstr(r.errmsg, "certificate") ||
	              strstr(r.errmsg, "SSL"),
	          "error does not point at verification: %s", r.errmsg);
	tl_res_clear(&r);
	tl_kube_close(&k);
}

Test(kubeconfig, tls_server_name_keeps_the_server_path)
{
	/* server https://127.0.0.1:PORT/api: a request for /v1/namespaces goes
	 * to /api/v1/namespaces (a dropped prefix would be a 404) */
	char cl[512];
	snprintf(cl, sizeof(cl),
	         "    server: https://127.0.0.1:%d/api\n    tls-server-name: localhost\n",
	         api_port());
	tl_kube k;
	tl_kube_open(&k, kubeconfig("prefix", cl, admin_user()), NULL);
	tl_res r = {0};
	get(&k, "/v1/namespaces/default", &r);
	cr_assert_eq(r.http_status, 200, "%ld %s %s", r.http_status, r.errmsg, r.message);
	char name[64];
	cr_assert_geq(
	    sf_jv_str(sf_jv_path(sf_obj_root(r.obj), "metadata.name"), name, sizeof(name)), 0);
	cr_assert_str_eq(name, "default");
	tl_res_clear(&r);
	tl_kube_close(&k);
}

/* --- proxy-url ------------------------------------------------------------------ */

/* GET through a CONNECT proxy with these extra cluster fields; asserts it
 * went through the proxy, in one tunnel to the API server's address. */
static void get_through_proxy(const char *name, const char *extra)
{
	tl_kube k;
	cr_assert_eq(uv_loop_init(&k.loop), 0);
	tp_proxy *p = NULL;
	cr_assert_eq(tp_start(&k.loop, "127.0.0.1", api_port(), &p), 0);
	tp_connect_mode(p, 1);
	char cl[512];
	snprintf(cl, sizeof(cl),
	         "    server: https://127.0.0.1:%d\n%s    proxy-url: http://127.0.0.1:%d\n",
	         api_port(), extra, tp_port(p));
	char err[512];
	cr_assert_eq(
	    sf_kube_config_load(kubeconfig(name, cl, admin_user()), NULL, &k.cfg, err, sizeof(err)),
	    0, "%s", err);
	cr_assert_eq(sf_kube_client_new(&k.loop, k.cfg, NULL, &k.client), 0);
	tl_res r = {0};
	get(&k, "/api/v1/namespaces/default", &r);
	cr_assert_eq(r.http_status, 200, "%ld %s", r.http_status, r.errmsg);
	tl_res_clear(&r);
	cr_assert_eq(tp_connects(p), 1, "the request did not go through the proxy");
	char want[64];
	snprintf(want, sizeof(want), "127.0.0.1:%d", api_port());
	cr_assert_str_eq(tp_last_connect(p), want);
	tp_close(p);
	tl_kube_close(&k);
}

Test(kubeconfig, proxy_url_connect_proxy)
{
	get_through_proxy("proxy", "");
}

Test(kubeconfig, proxy_url_with_tls_server_name)
{
	/* CONNECT names the real host (as Go's transport does); TLS inside the
	 * tunnel is checked against tls-server-name */
	get_through_proxy("proxy2", "    tls-server-name: kubernetes.default\n");
}

/* --- exec plugins ------------------------------------------------------------------ */

/* A token for ServiceAccount default/default in dir/NAME. */
static void token_file(const char *name)
{
	tl_kube_open(&ADMIN, NULL, NULL);
	admin_open = 1;
	char *tok = tl_mint_token(&ADMIN, "default", "default");
	write_file(name, tok, 0600);
	free(tok);
}

static const char *exec_user(const char *script)
{
	static char u[1024];
	snprintf(u, sizeof(u),
	         "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
	         "      command: %s\n      interactiveMode: Never\n"
	         "      installHint: see test_kubeconfig.c\n",
	         fpath(script));
	return u;
}

static const char *api_cluster(void)
{
	static char cl[256];
	snprintf(cl, sizeof(cl), "    server: %s\n", tl_env("STEADFAST_APISERVER"));
	return cl;
}

/* The request is authenticated as the ServiceAccount: it has no RBAC, so
 * the answer is a 403 that names it (a bad credential is a 401). */
static void expect_sa(tl_kube *k)
{
	tl_res r = {0};
	get(k, "/api/v1/namespaces/default/secrets", &r);
	cr_assert_eq(r.http_status, 403, "%ld %s %s", r.http_status, r.errmsg, r.message);
	cr_assert(strstr(r.message, "system:serviceaccount:default:default"), "%s", r.message);
	tl_res_clear(&r);
}

/* dir/plugin: counts its runs in dir/runs, then runs the shell lines pre
 * (which may change $tok, the ServiceAccount token, and set $extra, more
 * status members) and prints the ExecCredential. */
static void token_plugin(const char *pre)
{
	char body[2048];
	snprintf(body, sizeof(body),
	         "#!/bin/sh\n"
	         "n=$(cat %s/runs 2>/dev/null || echo 0); echo $((n + 1)) > %s/runs\n"
	         "tok=$(cat %s/sa.token); extra=\n%s\n"
	         "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
	         "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%%s\"%%s}}' \"$tok\" "
	         "\"$extra\"\n",
	         dir, dir, dir, pre);
	write_file("plugin", body, 0700);
}

Test(kubeconfig, exec_plugin_token_is_cached)
{
	token_file("sa.token");
	token_plugin("");
	tl_kube k;
	tl_kube_open(&k, kubeconfig("exec", api_cluster(), exec_user("plugin")), NULL);
	expect_sa(&k);
	expect_sa(&k);
	cr_assert_eq(count_runs("runs"), 1, "a credential without expiry is cached");
	tl_kube_close(&k);
}

struct wait_wall {
	int64_t until_ns;
};

static void nothing(uv_timer_t *t)
{
	(void)t;
}

static int wall_reached(void *ud)
{
	return sf_wall_ns() >= ((struct wait_wall *)ud)->until_ns;
}

struct expiry_wait {
	tl_kube *k;
	int64_t old_ns;
};

static int expiry_changed(void *ud)
{
	const struct expiry_wait *w = ud;
	return w->k->cfg->exec->expiry_ns != w->old_ns;
}

Test(kubeconfig, exec_plugin_reruns_before_expiry)
{
	token_file("sa.token");
	token_plugin("exp=$(date -u -d '+9 seconds' +%Y-%m-%dT%H:%M:%SZ)\n"
	             "extra=\",\\\"expirationTimestamp\\\":\\\"$exp\\\"\"");
	tl_kube k;
	tl_kube_open(&k, kubeconfig("exec", api_cluster(), exec_user("plugin")), NULL);
	expect_sa(&k);
	expect_sa(&k);
	cr_assert_eq(count_runs("runs"), 1, "re-run while the credential was still fresh");
	cr_assert_gt(k.cfg->exec->expiry_ns, 0);
	/* the time passes to the refresh point (margin before the expiry) */
	struct wait_wall w = {k.cfg->exec->expiry_ns - SF_CRED_EXEC_MARGIN_S * SF_NSEC_PER_SEC};
	/* a timer wakes the loop then (the predicate is checked on wake-ups) */
	uv_timer_t wake;
	uv_timer_init(&k.loop, &wake);
	int64_t left_ms = (w.until_ns - sf_wall_ns()) / SF_NSEC_PER_MSEC + 1;
	uv_timer_start(&wake, nothing, left_ms > 0 ? (uint64_t)left_ms : 0, 0);
	cr_assert_eq(tl_run_until_fn(&k.loop, wall_reached, &w, 15000), 0);
	uv_close((uv_handle_t *)&wake, NULL);
	/* this request goes with the credential still valid; the plugin is
	 * run again meanwhile, in the background */
	struct expiry_wait ew = {&k, k.cfg->exec->expiry_ns};
	expect_sa(&k);
	cr_assert_eq(k.cfg->exec->runs, 2, "the plugin was not run again before its expiry");
	cr_assert_eq(tl_run_until_fn(&k.loop, expiry_changed, &ew, 15000), 0,
	             "the background run gave no new credential");
	cr_assert_eq(count_runs("runs"), 2);
	cr_assert_gt(k.cfg->exec->expiry_ns, ew.old_ns);
	expect_sa(&k);
	cr_assert_eq(count_runs("runs"), 2, "the renewed credential was not used");
	tl_kube_close(&k);
}

Test(kubeconfig, exec_plugin_reruns_after_401)
{
	token_file("sa.token");
	/* the first run hands out a token the server rejects */
	token_plugin("[ \"$n\" = 0 ] && tok=not-a-valid-token");
	tl_kube k;
	tl_kube_open(&k, kubeconfig("exec", api_cluster(), exec_user("plugin")), NULL);
	tl_res r = {0};
	get(&k, "/api/v1/namespaces/default/secrets", &r);
	cr_assert_eq(r.http_status, 401, "%ld %s", r.http_status, r.message);
	tl_res_clear(&r);
	cr_assert_eq(count_runs("runs"), 1);
	expect_sa(&k);
	cr_assert_eq(count_runs("runs"), 2, "a 401 did not make the plugin run again");
	tl_kube_close(&k);
}

Test(kubeconfig, exec_plugin_client_certificate)
{
	/* the low-privilege user may list configmaps in default, nothing else */
	char body[2048];
	snprintf(body, sizeof(body),
	         "#!/bin/sh\n"
	         "esc() { awk '{printf \"%%s\\\\n\", $0}' \"$1\"; }\n"
	         "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
	         "\"kind\":\"ExecCredential\",\"status\":{\"clientCertificateData\":\"%%s\","
	         "\"clientKeyData\":\"%%s\"}}' \"$(esc %s)\" \"$(esc %s)\"\n",
	         tl_env("STEADFAST_LOWPRIV_CERT"), tl_env("STEADFAST_LOWPRIV_KEY"));
	write_file("plugin", body, 0700);
	tl_kube k;
	tl_kube_open(&k, kubeconfig("exec", api_cluster(), exec_user("plugin")), NULL);
	tl_res r = {0};
	get(&k, "/api/v1/namespaces/default/configmaps", &r);
	cr_assert_eq(r.http_status, 200, "%ld %s %s", r.http_status, r.errmsg, r.message);
	tl_res_clear(&r);
	get(&k, "/api/v1/namespaces/default/secrets", &r);
	cr_assert_eq(r.http_status, 403, "%ld %s", r.http_status, r.message);
	cr_assert(strstr(r.message, "steadfast-lowpriv"), "%s", r.message);
	tl_res_clear(&r);
	tl_kube_close(&k);
}

Test(kubeconfig, exec_plugin_failure_fails_the_request)
{
	write_file("plugin", "#!/bin/sh\necho 'credentials expired: log in again' >&2\nexit 2\n",
	           0700);
	tl_kube k;
	tl_kube_open(&k, kubeconfig("exec", api_cluster(), exec_user("plugin")), NULL);
	tl_res r = {0};
	get(&k, "/api/v1/namespaces/default/configmaps", &r);
	cr_assert_eq(r.http_status, 0, "a request went out without credentials");
	cr_assert_eq(r.err, -EIO, "%d %s", r.err, r.errmsg);
	cr_assert(strstr(r.errmsg, "credentials expired: log in again"), "%s", r.errmsg);
	cr_assert(strstr(r.errmsg, "exit status 2"), "%s", r.errmsg);
	cr_assert(strstr(r.errmsg, "see test_kubeconfig.c"), "%s", r.errmsg);
	tl_res_clear(&r);
	tl_kube_close(&k);
}

/* The loop while a plugin runs: a 50 ms timer notes the largest gap
 * between its ticks. */
struct ticker {
	uv_timer_t t;
	int64_t last_ns, max_gap_ns;
	unsigned long ticks;
};

static void tick(uv_timer_t *t)
{
	struct ticker *k = t->data;
	int64_t now = sf_mono_ns();
	if (now - k->last_ns > k->max_gap_ns)
		k->max_gap_ns = now - k->last_ns;
	k->last_ns = now;
	k->ticks++;
}

static void ticker_start(struct ticker *k, uv_loop_t *loop)
{
	memset(k, 0, sizeof(*k));
	uv_timer_init(loop, &k->t);
	k->t.data = k;
	k->last_ns = sf_mono_ns();
	uv_timer_start(&k->t, tick, 50, 50);
}

Test(kubeconfig, exec_plugin_slow_run_keeps_the_loop_running)
{
	token_file("sa.token");
	token_plugin("sleep 2");
	tl_kube k;
	tl_kube_open(&k, kubeconfig("exec", api_cluster(), exec_user("plugin")), NULL);
	struct ticker tk;
	ticker_start(&tk, &k.loop);
	int64_t t0 = sf_mono_ns();
	expect_sa(&k);
	int64_t took = sf_mono_ns() - t0;
	tick(&tk.t);
	uv_close((uv_handle_t *)&tk.t, NULL);
	fprintf(stderr, "slow plugin: request took %lld ms, largest loop gap %lld ms, %lu ticks\n",
	        (long long)(took / SF_NSEC_PER_MSEC), (long long)(tk.max_gap_ns / SF_NSEC_PER_MSEC),
	        tk.ticks);
	cr_assert_geq(took, 2 * SF_NSEC_PER_SEC, "the plugin did not take its 2 s");
	cr_assert_lt(tk.max_gap_ns, 500 * SF_NSEC_PER_MSEC,
	             "the loop stopped for %lld ms while the plugin ran",
	             (long long)(tk.max_gap_ns / SF_NSEC_PER_MSEC));
	cr_assert_gt(tk.ticks, 20, "the timer ticked only %lu times in 2 s", tk.ticks);
	cr_assert_eq(count_runs("runs"), 1);
	tl_kube_close(&k);
}

Test(kubeconfig, exec_plugin_runs_once_for_concurrent_requests)
{
	token_file("sa.token");
	token_plugin("sleep 1");
	tl_kube k;
	tl_kube_open(&k, kubeconfig("exec", api_cluster(), exec_user("plugin")), NULL);
	tl_res r[5];
	memset(r, 0, sizeof(r));
	sf_kube_req req = {.method = "GET", .path = "/api/v1/namespaces/default/secrets"};
	for (int i = 0; i < 5; i++)
		cr_assert_eq(sf_kube_do(k.client, &req, tl_res_cb, &r[i], NULL), 0);
	for (int i = 0; i < 5; i++) {
		tl_wait(&k.loop, &r[i], 30000);
		cr_assert_eq(r[i].http_status, 403, "request %d: %ld %s %s", i, r[i].http_status,
		             r[i].errmsg, r[i].message);
		cr_assert(strstr(r[i].message, "system:serviceaccount:default:default"), "%s",
		          r[i].message);
		tl_res_clear(&r[i]);
	}
	cr_assert_eq(count_runs("runs"), 1, "the plugin ran %d times for 5 requests",
	             count_runs("runs"));
	tl_kube_close(&k);
}

Test(kubeconfig, exec_plugin_that_hangs_is_killed_at_its_limit)
{
	/* it ignores SIGTERM, so only the SIGKILL after it ends it */
	char body[512];
	snprintf(body, sizeof(body),
	         "#!/bin/sh\necho $$ > %s/pid\ntrap '' TERM\nwhile :; do sleep 0.05; done\n", dir);
	write_file("plugin", body, 0700);
	tl_kube k;
	tl_kube_open(&k, kubeconfig("exec", api_cluster(), exec_user("plugin")), NULL);
	k.cfg->exec->timeout_ms = 400;
	struct ticker tk;
	ticker_start(&tk, &k.loop);
	tl_res r[3];
	memset(r, 0, sizeof(r));
	sf_kube_req req = {.method = "GET", .path = "/api/v1/namespaces/default/configmaps"};
	int64_t t0 = sf_mono_ns();
	for (int i = 0; i < 3; i++)
		cr_assert_eq(sf_kube_do(k.client, &req, tl_res_cb, &r[i], NULL), 0);
	for (int i = 0; i < 3; i++) {
		tl_wait(&k.loop, &r[i], 30000);
		cr_assert_eq(r[i].http_status, 0, "a request went out without credentials");
		cr_assert_eq(r[i].err, -ETIMEDOUT, "%d %s", r[i].err, r[i].errmsg);
		cr_assert(strstr(r[i].errmsg, fpath("plugin")), "%s", r[i].errmsg);
		cr_assert(strstr(r[i].errmsg, "did not finish within 400 ms"), "%s", r[i].errmsg);
		tl_res_clear(&r[i]);
	}
	int64_t took = sf_mono_ns() - t0;
	cr_assert_lt(took, 3 * SF_NSEC_PER_SEC, "the requests failed only after %lld ms",
	             (long long)(took / SF_NSEC_PER_MSEC));
	uv_close((uv_handle_t *)&tk.t, NULL);
	cr_assert_lt(tk.max_gap_ns, 250 * SF_NSEC_PER_MSEC,
	             "the loop stopped for %lld ms while the plugin hung",
	             (long long)(tk.max_gap_ns / SF_NSEC_PER_MSEC));
	FILE *f = fopen(fpath("pid"), "r");
	cr_assert_not_null(f);
	int pid = 0;
	cr_assert_eq(fscanf(f, "%d", &pid), 1);
	fclose(f);
	/* closing runs the loop until every handle is closed: the child has
	 * been killed and reaped by then (a zombie still answers kill 0) */
	tl_kube_close(&k);
	cr_assert_eq(kill(pid, 0), -1, "plugin %d is still there", pid);
	cr_assert_eq(errno, ESRCH);
	cr_assert_eq(waitpid(pid, NULL, WNOHANG), -1);
	cr_assert_eq(errno, ECHILD);
}

/* --- TLS version -------------------------------------------------------------- */

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof(a);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* GET /version from an openssl s_server (the API server's certificate)
 * that speaks only the given TLS version option (-tls1_1, -tls1_2). */
static void get_from_openssl(const char *version_opt, tl_res *r)
{
	int port = free_port();
	const char *pki = tl_env("STEADFAST_CLUSTER_DIR");
	sf_buf out;
	sf_buf_init(&out, 0);
	/* ready once it prints ACCEPT; it exits after one connection */
	int st = tl_sh(&out,
	               "openssl s_server -accept 127.0.0.1:%d -cert %s/pki/apiserver.crt "
	               "-key %s/pki/apiserver.key %s -cipher 'DEFAULT:@SECLEVEL=0' -www "
	               "-naccept 1 >%s/s_server.log 2>&1 </dev/null & echo $!; "
	               "for i in $(seq 100); do grep -q ACCEPT %s/s_server.log && exit 0; "
	               "sleep 0.05; done; exit 1",
	               port, pki, pki, version_opt, dir, dir);
	cr_assert_eq(st, 0, "openssl s_server did not start");
	int pid = atoi(out.data);
	char cl[256];
	snprintf(cl, sizeof(cl), "    server: https://127.0.0.1:%d\n", port);
	tl_kube k;
	tl_kube_open(&k, kubeconfig("tls", cl, admin_user()), NULL);
	get(&k, "/version", r);
	tl_kube_close(&k);
	tl_sh(NULL, "kill %d 2>/dev/null; true", pid);
	sf_buf_free(&out);
}

Test(kubeconfig, tls_1_2_is_the_minimum)
{
	tl_res r = {0};
	get_from_openssl("-tls1_2", &r);
	cr_assert_eq(r.http_status, 200, "the TLS 1.2 control failed: %d %s", r.err, r.errmsg);
	tl_res_clear(&r);
	memset(&r, 0, sizeof(r));
	get_from_openssl("-tls1_1", &r);
	cr_assert_eq(r.http_status, 0, "a TLS 1.1 server was accepted");
	cr_assert_neq(r.err, 0);
	tl_res_clear(&r);
}
