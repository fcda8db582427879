/*
 * tl.h - helpers shared by the integration tests.
 *
 * Tests drive the real client on a libuv loop. These helpers run the loop
 * until a callback has fired (never a fixed sleep), with a deadline so a
 * hung request fails the test instead of hanging it, give access to the
 * control plane that tools/with-cluster.sh started (its env file), and
 * collect a child process's output as lines (tl_ctl's controllers, the
 * election tests' candidates).
 */
#ifndef STEADFAST_TEST_TL_H
#define STEADFAST_TEST_TL_H

#include <stddef.h>
#include <uv.h>

#include "steadfast/buf.h"
#include "steadfast/client.h"
#include "fakesrv.h"
#include "tcpproxy.h"

/* Value of KEY from the cluster env file ($STEADFAST_CLUSTER_ENV); aborts
 * the test (criterion failure) when missing. Borrowed, static storage. */
const char *tl_env(const char *key);

/* Runs loop until *flag becomes non-zero or timeout_ms passes.
 * Returns 0 when the flag was set, -ETIMEDOUT otherwise. */
int tl_run_until(uv_loop_t *loop, const int *flag, long timeout_ms);

/* Same, for a predicate checked after each loop iteration. */
int tl_run_until_fn(uv_loop_t *loop, int (*pred)(void *ud), void *ud, long timeout_ms);

/* Drops every log line from now on: a criterion .init for tests whose
 * error paths log on purpose. */
void tl_log_quiet(void);
/* A client from the kubeconfig text yaml with options co (NULL: the
 * defaults); the parsed config lands in *cfg (free it after the client).
 * Fails the test on error. */
sf_kube_client *tl_inline_client(uv_loop_t *loop, const char *yaml, const sf_kube_client_opts *co,
                                 sf_kube_config **cfg);
/* A client of the scripted server srv (plain HTTP, token auth) with
 * options co (NULL: the defaults), from an inline kubeconfig whose parse
 * lands in *cfg (free it after the client). Fails the test on error. */
sf_kube_client *tl_fakesrv_client(uv_loop_t *loop, const fakesrv *srv,
                                  const sf_kube_client_opts *co, sf_kube_config **cfg);

/* A finished request, copied out of its callback. */
typedef struct tl_res {
	int done;
	int err;
	long http_status;
	char reason[64];
	char message[512];
	char errmsg[512];
	sf_obj *obj; /* owned; tl_res_clear releases */
	char list_rv[64];
	char list_continue[1024];
	unsigned long items;
} tl_res;

void tl_res_cb(void *ud, const sf_kube_result *r); /* ud = tl_res* */
void tl_res_clear(tl_res *r);
/* Waits for r->done (fails the test after timeout_ms). */
void tl_wait(uv_loop_t *loop, tl_res *r, long timeout_ms);

/* A client on a fresh loop, from a kubeconfig path (NULL = admin). */
typedef struct tl_kube {
	uv_loop_t loop;
	sf_kube_config *cfg;
	sf_kube_client *client;
} tl_kube;

void tl_kube_open(tl_kube *k, const char *kubeconfig, const sf_kube_client_opts *opts);
/* Closes the client, runs the loop dry and asserts uv_loop_close == 0. */
void tl_kube_close(tl_kube *k);

/* Synchronous helpers on top of tl_kube: each runs the loop until done. */
void tl_do(tl_kube *k, const sf_kube_req *req, tl_res *out);
/* POST, PUT or DELETE of ConfigMap ns/name with data {"v": value} and the
 * given labels (a JSON object's members, e.g. "\"app\":\"x\"", or NULL);
 * fails the test unless it succeeds; rv (if not NULL) gets the answer's
 * resourceVersion. */
void tl_cm_write(tl_kube *k, const char *method, const char *ns, const char *name,
                 const char *labels, const char *value, char *rv, size_t rvlen);
/* Creates a namespace named "<prefix>-<random>" and returns its name. */
const char *tl_namespace(tl_kube *k, const char *prefix, char *buf, size_t n);
/* Deletes a namespace (does not wait for it to go). */
void tl_namespace_delete(tl_kube *k, const char *ns);
/* Runs a shell command line (printf-formatted; the caller quotes what
 * needs it) and keeps its standard output in out (reset first, always
 * NUL-terminated; NULL discards it). Returns its exit status, or -1 when
 * it did not exit normally. */
int tl_sh(sf_buf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A chaos proxy (tcpproxy) on loop to the test control plane's API server,
 * and at path an admin kubeconfig whose server is the proxy (TLS stays end
 * to end: the server's certificate names 127.0.0.1). Fails the test on
 * any error. */
tp_proxy *tl_api_proxy(uv_loop_t *loop, const char *path);

/* A bearer token for ServiceAccount ns/sa (TokenRequest, valid 1 h), as
 * the kubelet projects one into a pod; the caller frees it. Fails the test
 * unless the API server issues one. */
char *tl_mint_token(tl_kube *k, const char *ns, const char *sa);

/* A child process's stdout or stderr, read through a pipe on the test's
 * loop and kept as lines. Each complete line (without its newline) is its
 * own NUL-terminated allocation, so pointers into a line stay valid until
 * tl_lines_free. Use: tl_lines_init, put tl_lines_stdio in the child's
 * stdio, uv_spawn, tl_lines_start; at the end tl_lines_close, run the loop
 * until !open, tl_lines_free. */
typedef struct tl_lines {
	uv_pipe_t pipe; /* the read end (handle data: this tl_lines) */
	int tee_fd;     /* >= 0: every byte read is also written there */
	/* called with each new line once it is kept (may be NULL) */
	void (*on_line)(void *owner, const char *line);
	void *owner;
	char **lines;
	size_t n, cap;
	sf_buf partial; /* the incomplete last line */
	int open;       /* 1 until the loop has closed the pipe */
	int eof;        /* 1 once the writer's end closed (or a read failed) */
} tl_lines;

/* Initialises l and its pipe on loop; tee_fd -1 for none. */
void tl_lines_init(tl_lines *l, uv_loop_t *loop, int tee_fd,
                   void (*on_line)(void *owner, const char *line), void *owner);
/* The stdio entry connecting a child's fd to l's pipe. */
uv_stdio_container_t tl_lines_stdio(tl_lines *l);
/* Starts reading (after uv_spawn succeeded); lines arrive while the loop runs. */
void tl_lines_start(tl_lines *l);
/* Closes the pipe unless it is closing already; open drops to 0 once the
 * loop has run the close. */
void tl_lines_close(tl_lines *l);
/* Frees the lines and the partial one; the pipe must be closed. */
void tl_lines_free(tl_lines *l);

#endif
