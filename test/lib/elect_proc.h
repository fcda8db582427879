/*
 * elect_proc.h - candidate processes for the election tests (prefix ep_).
 *
 * Starts test/election's candidate programs (the C one and the client-go
 * one) as child processes on the test's libuv loop, collects their stdout
 * lines ("<monotonic ms> EVENT key=value ..."), and lets a test wait for an
 * event with a deadline (never a fixed sleep) and check that leadership
 * intervals never overlapped. Each child's stderr (its JSON logs) goes to
 * $(O)/test/election-logs/<identity>-<test pid>.log, printed when a test
 * fails.
 */
#ifndef STEADFAST_TEST_ELECT_PROC_H
#define STEADFAST_TEST_ELECT_PROC_H

#include <stddef.h>
#include <uv.h>

typedef struct ep_line {
	double ms;        /* CLOCK_MONOTONIC of the event, ms */
	char ev[16];      /* START, LEADING, STOPPED, ... */
	const char *text; /* the rest of the line */
} ep_line;

typedef struct ep_proc ep_proc;

typedef enum { EP_C, EP_GO } ep_kind;

typedef struct ep_opts {
	ep_kind kind;
	const char *ns, *lease, *id;
	long lease_ms, renew_ms, retry_ms;
	const char *kubeconfig;  /* NULL = the cluster's admin kubeconfig */
	const char *work_cm;     /* leader work: patch this ConfigMap */
	long work_ms;            /* 0 = 100 */
	long api_unreachable_ms; /* C only */
	int print_renews;        /* C only */
} ep_opts;

/* Monotonic now in ms (the clock of the lines). */
double ep_now_ms(void);
/* Path of a program built next to the test binary ($(O)/test/NAME). */
const char *ep_bin(const char *name, char *buf, size_t n);

ep_proc *ep_start(uv_loop_t *loop, const ep_opts *o);
const char *ep_id(const ep_proc *p);
const char *ep_log_path(const ep_proc *p);
size_t ep_nlines(const ep_proc *p);
const ep_line *ep_line_at(const ep_proc *p, size_t i);
/* First line with event ev whose time is > after_ms (NULL if none yet). */
const ep_line *ep_find(const ep_proc *p, const char *ev, double after_ms);
const ep_line *ep_find_last(const ep_proc *p, const char *ev);
/* Runs the loop until p printed ev after after_ms; NULL on timeout. */
const ep_line *ep_wait(uv_loop_t *loop, ep_proc *p, const char *ev, double after_ms,
                       long timeout_ms);
/* Same over several processes: the first to print it (index in *who). */
const ep_line *ep_wait_any(uv_loop_t *loop, ep_proc **ps, size_t n, const char *ev, double after_ms,
                           long timeout_ms, size_t *who);
/* Numeric value of "key=" in a line's text (-1 if absent). */
double ep_field(const ep_line *l, const char *key);
/* Is the process leading now (last LEADING after last STOPPED, alive)? */
int ep_leading(const ep_proc *p);
int ep_alive(const ep_proc *p);
void ep_kill(ep_proc *p, int sig);
/* Waits for the process to exit; 0, or -ETIMEDOUT. */
int ep_wait_exit(uv_loop_t *loop, ep_proc *p, long timeout_ms);
/* Runs the loop for ms (lines keep arriving). */
void ep_run_for(uv_loop_t *loop, long ms);
/* Checks that no two processes' leadership intervals overlap. A process
 * killed while leading is taken to lead until its last renew + the renew
 * deadline (its fence) when it printed renews, else until it died.
 * Returns 0, or -1 with a description in msg. */
int ep_check_exclusive(ep_proc **ps, size_t n, double renew_deadline_ms, char *msg, size_t len);
/* Prints every process's lines and log path to stderr (on failure). */
void ep_dump(ep_proc **ps, size_t n);
/* SIGKILLs what still runs, waits for exits, frees everything. */
void ep_cleanup(uv_loop_t *loop);

#endif
