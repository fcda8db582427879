/*
 * test_kubeconfig_client.c - what the client puts on the wire for the
 * kubeconfig's connection settings, seen by a scripted local HTTP/1.1
 * server: with tls-server-name the request keeps the server's path and its
 * Host header (only the TLS name and the dialled address change; the real
 * apiserver's side is in test/integration/test_kubeconfig.c),
 * disable-compression sends no Accept-Encoding, a request waiting for an
 * exec plugin can be cancelled or closed while the plugin runs, and a write
 * that waited for it asks the write fence again before it is sent.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fakesrv.h"
#include "steadfast/client.h"
#include "steadfast/credentials.h"
#include "tl.h"

#define OK_RESP                                                                                    \
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"           \
	"{\"kind\":\"Namespace\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"x\"}}"

static void closed(void *ud)
{
	*(int *)ud = 1;
}

/* Runs one GET of namespace x with the given cluster fields; the request
 * head the server saw is copied into head. */
static void one_request(const char *cluster_fmt, char *head, size_t n)
{
	static const fake_resp script[] = {{OK_RESP, 0}};
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	fakesrv *srv = fakesrv_start(&loop, script, 1);
	char cl[256], y[1024];
	snprintf(cl, sizeof(cl), cluster_fmt, fakesrv_port(srv));
	snprintf(y, sizeof(y),
	         "current-context: c\nclusters:\n- name: c\n  cluster:\n%s"
	         "users: [{name: u, user: {token: t}}]\n"
	         "contexts: [{name: c, context: {cluster: c, user: u}}]\n",
	         cl);
	sf_kube_config *cfg = NULL;
	sf_kube_client *c = tl_inline_client(&loop, y, NULL, &cfg);
	tl_res r = {0};
	cr_assert_eq(sf_kube_get(c, &SF_GVR_NAMESPACES, NULL, "x", tl_res_cb, &r, NULL), 0);
	tl_wait(&loop, &r, 5000);
	cr_assert_eq(r.http_status, 200, "%d %s", r.err, r.errmsg);
	tl_res_clear(&r);
	cr_assert_eq(fakesrv_requests(srv), 1);
	snprintf(head, n, "%s", fakesrv_request(srv, 0));
	int done = 0;
	sf_kube_client_close(c, closed, &done);
	fakesrv_stop(srv);
	cr_assert_eq(tl_run_until(&loop, &done, 5000), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	sf_kube_config_free(cfg);
	cr_assert_eq(uv_loop_close(&loop), 0);
}

Test(kubeconfig_client, tls_server_name_keeps_path_and_host)
{
	char head[4096], want[64];
	one_request("    server: http://127.0.0.1:%d/prefix/\n    tls-server-name: api.example\n",
	            head, sizeof(head));
	cr_assert(strncmp(head, "GET /prefix/api/v1/namespaces/x HTTP/1.1\r\n", 42) == 0, "%s",
	          head);
	char *host = strcasestr(head, "\r\nHost: ");
	cr_assert_not_null(host, "%s", head);
	char *port = strstr(head, "127.0.0.1:");
	cr_assert_not_null(port);
	snprintf(want, sizeof(want), "\r\nHost: %.*s\r\n", (int)strcspn(port, "\r"), port);
	cr_assert(strstr(head, want) != NULL, "Host is not the server's: %s", head);
	cr_assert_null(strstr(head, "api.example"), "the TLS name leaked into the request: %s",
	               head);
	cr_assert(strstr(strstr(head, "Host:") + 5, "Host:") == NULL, "two Host headers: %s", head);
}

Test(kubeconfig_client, disable_compression)
{
	char head[4096];
	one_request("    server: http://127.0.0.1:%d\n", head, sizeof(head));
	cr_assert_not_null(strcasestr(head, "\r\nAccept-Encoding: "), "%s", head);
	one_request("    server: http://127.0.0.1:%d\n    disable-compression: true\n", head,
	            sizeof(head));
	cr_assert_null(strcasestr(head, "\r\nAccept-Encoding: "), "%s", head);
}

/* A client of a fake server whose exec plugin (in a fresh directory
 * *dir) sleeps 0.5 s, then prints token exec-tok. */
static sf_kube_client *exec_client(uv_loop_t *loop, fakesrv *srv, sf_kube_config **cfg, char *dir,
                                   size_t dirlen)
{
	snprintf(dir, dirlen, "/tmp/sf-kcc-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	char plugin[128], y[1024];
	snprintf(plugin, sizeof(plugin), "%s/plugin", dir);
	FILE *f = fopen(plugin, "w");
	cr_assert_not_null(f);
	fputs("#!/bin/sh\nsleep 0.5\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
	      "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"exec-tok\"}}'\n",
	      f);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(plugin, 0700), 0);
	snprintf(y, sizeof(y),
	         "current-context: c\nclusters:\n- name: c\n  cluster: {server: "
	         "'http://127.0.0.1:%d'}\n"
	         "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, "
	         "command: %s, interactiveMode: Never}}}]\n"
	         "contexts: [{name: c, context: {cluster: c, user: u}}]\n",
	         fakesrv_port(srv), plugin);
	return tl_inline_client(loop, y, NULL, cfg);
}

static void exec_client_close(uv_loop_t *loop, sf_kube_client *c, fakesrv *srv, sf_kube_config *cfg,
                              const char *dir)
{
	int done = 0;
	sf_kube_client_close(c, closed, &done);
	fakesrv_stop(srv);
	cr_assert_eq(tl_run_until(loop, &done, 5000), 0);
	/* until the plugin has ended and every handle is closed */
	uv_run(loop, UV_RUN_DEFAULT);
	sf_kube_config_free(cfg);
	cr_assert_eq(uv_loop_close(loop), 0);
	char p[160];
	snprintf(p, sizeof(p), "%s/plugin", dir);
	unlink(p);
	rmdir(dir);
}

Test(kubeconfig_client, exec_wait_cancel_and_close)
{
	static const fake_resp script[] = {{OK_RESP, 0}};
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	fakesrv *srv = fakesrv_start(&loop, script, 1);
	sf_kube_config *cfg = NULL;
	char dir[64];
	sf_kube_client *c = exec_client(&loop, srv, &cfg, dir, sizeof(dir));
	tl_res r[3];
	memset(r, 0, sizeof(r));
	sf_kube_call *k0 = NULL;
	cr_assert_eq(sf_kube_get(c, &SF_GVR_NAMESPACES, NULL, "x", tl_res_cb, &r[0], &k0), 0);
	cr_assert_eq(sf_kube_get(c, &SF_GVR_NAMESPACES, NULL, "x", tl_res_cb, &r[1], NULL), 0);
	/* one turn: both are dispatched and wait for the plugin */
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(cfg->exec->runs, 1);
	sf_kube_call_cancel(k0);
	tl_wait(&loop, &r[0], 5000);
	cr_assert_eq(r[0].err, -ECANCELED, "%d %s", r[0].err, r[0].errmsg);
	cr_assert_eq(r[1].done, 0, "the other request did not wait for the plugin");
	tl_wait(&loop, &r[1], 5000);
	cr_assert_eq(r[1].http_status, 200, "%d %s", r[1].err, r[1].errmsg);
	cr_assert(strstr(fakesrv_request(srv, 0), "Authorization: Bearer exec-tok"), "%s",
	          fakesrv_request(srv, 0));
	cr_assert_eq(fakesrv_requests(srv), 1);
	tl_res_clear(&r[0]);
	tl_res_clear(&r[1]);
	/* a request still waiting when the client closes is cancelled */
	sf_kube_config_unauthorized(cfg);
	cr_assert_eq(sf_kube_get(c, &SF_GVR_NAMESPACES, NULL, "x", tl_res_cb, &r[2], NULL), 0);
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(cfg->exec->runs, 2);
	exec_client_close(&loop, c, srv, cfg, dir);
	cr_assert(r[2].done);
	cr_assert_eq(r[2].err, -ECANCELED, "%d %s", r[2].err, r[2].errmsg);
	tl_res_clear(&r[2]);
}

typedef struct fence {
	int refuse;
	int asked;
} fence;

static int fence_gate(void *ud, const sf_kube_req *req)
{
	fence *g = ud;
	(void)req;
	g->asked++;
	return g->refuse;
}

/* The fence is asked when a write leaves, not when it is dispatched: a
 * write that waited for the exec plugin while its leader lost the lease
 * is refused, not sent. */
Test(kubeconfig_client, write_waiting_for_exec_plugin_asks_the_fence_again)
{
	static const fake_resp script[] = {{OK_RESP, 0}};
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	fakesrv *srv = fakesrv_start(&loop, script, 1);
	sf_kube_config *cfg = NULL;
	char dir[64];
	sf_kube_client *c = exec_client(&loop, srv, &cfg, dir, sizeof(dir));
	fence g = {0};
	sf_kube_client_set_write_gate(c, fence_gate, &g);
	tl_res r = {0};
	cr_assert_eq(sf_kube_create(c, &SF_GVR_NAMESPACES, NULL,
	                            "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
	                            "\"metadata\":{\"name\":\"x\"}}",
	                            tl_res_cb, &r, NULL),
	             0);
	/* one turn: the fence lets it through and it waits for the plugin */
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(cfg->exec->runs, 1);
	cr_assert_eq(g.asked, 1);
	cr_assert_eq(r.done, 0);
	/* the leader steps down while the plugin runs */
	g.refuse = 1;
	tl_wait(&loop, &r, 5000);
	cr_assert_eq(r.err, -EPERM, "err %d, HTTP %ld %s; the server got %d requests: %s", r.err,
	             r.http_status, r.errmsg, fakesrv_requests(srv), fakesrv_request(srv, 0));
	cr_assert_str_eq(r.errmsg, "write refused by fence: not the leader");
	cr_assert_eq(g.asked, 2);
	cr_assert_eq(fakesrv_requests(srv), 0, "the write was sent: %s", fakesrv_request(srv, 0));
	sf_kube_client_stats st;
	sf_kube_client_stats_get(c, &st);
	cr_assert_eq(st.writes_refused, 1);
	cr_assert_eq(st.requests, 0);
	tl_res_clear(&r);
	exec_client_close(&loop, c, srv, cfg, dir);
}
