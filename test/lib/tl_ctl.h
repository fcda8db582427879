/*
 * tl_ctl.h - steadfast controller processes for the integration tests.
 *
 * Starts the real binary ($STEADFAST_BIN; $STEADFAST_FAULT_BIN, the test
 * build with its fault points live, when asked for faults), or a launcher such as podman
 * running the image, as a child on the test's loop,
 * under `setpriv --pdeathsig KILL` so a test that dies takes its
 * controllers with it, keeps every stderr line (the JSON logs) in memory
 * and in $(O)/test/controller-logs/<identity>-<test pid>.log, and lets a
 * test wait for a log line, signal a replica and wait for it to exit, and
 * query its health and metrics servers.
 */
#ifndef STEADFAST_TEST_TL_CTL_H
#define STEADFAST_TEST_TL_CTL_H

#include <stddef.h>
#include <uv.h>

#include "steadfast/buf.h"

typedef struct tl_ctl tl_ctl;

typedef struct tl_ctl_opts {
	const char *ns;                    /* watched namespace and Lease namespace */
	const char *lease_ns;              /* another Lease namespace, or NULL (= ns) */
	const char *lease;                 /* Lease name */
	const char *id;                    /* election identity */
	long lease_ms, renew_ms, retry_ms; /* 0 = 3000 / 2000 / 500 */
	const char *kubeconfig;            /* NULL = admin */
	/* --config FILE. NULL: the tests' config, in which Kueue manages every
	 * AppWrapper (manageJobsWithoutQueueName: true), so that one created
	 * without a queue name waits in Suspended for the test to admit it as
	 * Kueue would; set shipped_defaults for no --config at all (always so
	 * with a launcher: the file would not be inside its container). */
	const char *config;
	int shipped_defaults;
	int no_leader_elect;
	const char *const *extra; /* more arguments, NULL-terminated */
	const char *const *env;   /* more "K=V" environment entries, NULL-terminated */
	/* The command before the controller's arguments, NULL-terminated
	 * (e.g. podman run ... IMAGE); NULL = setpriv --pdeathsig KILL
	 * $STEADFAST_BIN. */
	const char *const *launcher;
	/* No --kubeconfig and no --identity: the process finds the in-cluster
	 * configuration and takes its identity from $POD_NAME, as in a pod
	 * (id still names its log file). */
	int in_cluster;
	/* Run the test build whose fault points read $STEADFAST_FAULT_<NAME>
	 * (pass them in env); the shipped binary ignores them. */
	int faults;
	/* Serve /metrics as shipped (HTTPS, TokenReview/SubjectAccessReview);
	 * 0 = --metrics-secure=false, so tl_ctl_http_get can scrape it. */
	int metrics_secure;
	/* Another program (the upstream controller): the command line is
	 * launcher then extra and nothing else (none of the controller's
	 * flags); its stderr is kept and waited for as the controller's. */
	int raw;
} tl_ctl_opts;

tl_ctl *tl_ctl_start(uv_loop_t *loop, const tl_ctl_opts *o);
const char *tl_ctl_id(const tl_ctl *p);
int tl_ctl_pid(const tl_ctl *p);
int tl_ctl_alive(const tl_ctl *p);
/* Sends sig (SIGTERM, SIGKILL, ...). */
void tl_ctl_signal(tl_ctl *p, int sig);
/* Runs the loop until the process exits: 0 and its status/signal, or
 * -ETIMEDOUT. */
int tl_ctl_wait_exit(uv_loop_t *loop, tl_ctl *p, long timeout_ms, int64_t *status, int *sig);
/* Number of stderr lines containing needle (from line `from` on). */
size_t tl_ctl_count(const tl_ctl *p, const char *needle, size_t from);
size_t tl_ctl_nlines(const tl_ctl *p);
/* Its stderr line i (without the newline), NULL past the last; valid
 * until tl_ctl_stop_all. */
const char *tl_ctl_line(const tl_ctl *p, size_t i);
/* Runs the loop until a line containing needle appears at or after line
 * `from`: its index, or -1 on timeout. */
long tl_ctl_wait_log(uv_loop_t *loop, tl_ctl *p, const char *needle, size_t from, long timeout_ms);
/* The port of its "health" or "metrics" server (from its log; replicas
 * listen on ephemeral ports). Fails the test if none shows up. */
int tl_ctl_port(uv_loop_t *loop, tl_ctl *p, const char *server);
/* A blocking GET of http://127.0.0.1:port/path (a server of a controller,
 * see tl_ctl_port), 5 s at most: the HTTP status, the body appended to b.
 * Fails the test when no answer comes. */
long tl_ctl_http_get(int port, const char *path, sf_buf *b);
/* The same, -1 instead of a failed test when no answer comes (a replica
 * that may have died meanwhile). */
long tl_ctl_http_try(int port, const char *path, sf_buf *b);
/* The same over HTTPS (the server's certificate not verified), with token
 * as a bearer token unless NULL; subject (if not NULL) gets the subject
 * of the certificate the server presented. */
long tl_ctl_https_get(int port, const char *path, const char *token, sf_buf *b, char *subject,
                      size_t n);
/* SIGTERM, as the kubelet sends it on a pod's deletion: fails the test
 * unless the process exits 0 within timeout_ms having logged that it
 * released the Lease. */
void tl_ctl_term_released(uv_loop_t *loop, tl_ctl *p, long timeout_ms);
/* Prints the log file's path and last lines (for a failing test). */
void tl_ctl_dump(const tl_ctl *p, size_t last);
/* SIGKILLs every live controller of this test process, waits for exits,
 * closes handles and frees them. With STEADFAST_SANITIZED=1 (make asan)
 * each gets SIGTERM first (up to 10 s to exit, so the leak check at exit
 * runs), and a sanitizer report in any controller's stderr fails the
 * test. */
void tl_ctl_stop_all(uv_loop_t *loop);

#endif
