/*
 * tl_audit.h - a test control plane's audit log ($STEADFAST_AUDIT_LOG, or
 * the audit.log of a control plane a test starts itself; JSON lines, a
 * ResponseComplete line per request and a ResponseStarted line before it
 * for a watch) read back by a test: the requests logged after a mark,
 * parsed, with the replica that made each (its identity is in its user
 * agent, "steadfast/<version> (linux) appwrapper-controller/<identity>").
 * The one reader of the audit log for every test.
 *
 * kube-apiserver renames the file at 100 MB and starts a new one; a mark
 * remembers the file itself (device and inode), so a read after a rotation
 * takes the rest of the renamed file and then the new one. Lines are
 * written as requests finish, which can be after a watch has shown their
 * effect: tl_audit_sync waits until a request the test makes now is in the
 * log. Failures (an unreadable log, a sync that never shows up) fail the
 * calling test.
 */
#ifndef STEADFAST_TEST_TL_AUDIT_H
#define STEADFAST_TEST_TL_AUDIT_H

#include <limits.h>
#include <stddef.h>

#include "tl.h"

typedef struct tl_audit_mark {
	char path[PATH_MAX];
	unsigned long long dev, ino;
	long long off;
} tl_audit_mark;

/* One completed request. */
typedef struct tl_audit_req {
	char verb[24];     /* create, update, patch, delete, get, list, watch, ... */
	char resource[64]; /* objectRef.resource, e.g. "appwrappers" */
	char sub[32];      /* objectRef.subresource, e.g. "status" ("" none) */
	char ns[64];
	char name[254];
	/* the identity after "appwrapper-controller/" in the user agent, ""
	 * for any other client (the test itself, kube-controller-manager) */
	char who[128];
	long code;         /* responseStatus.code */
	long long recv_us; /* requestReceivedTimestamp, microseconds since the epoch */
	long long done_us; /* stageTimestamp (ResponseComplete: the response completed) */
	char stage[24];    /* ResponseComplete, ResponseStarted (a watch opened), Panic */
	char id[64];       /* auditID: the same for every line of one request */
	char group[64];    /* objectRef.apiGroup ("" for the core group) */
	char user[256];    /* user.username */
	char ua[512];      /* the whole user agent */
	char uri[1024];    /* requestURI, query string included */
} tl_audit_req;

/* Marks the current end of the audit log: only later lines are read. */
void tl_audit_mark_now(tl_audit_mark *m);

/* Marks the current end of the audit log at path (NULL: the control
 * plane's, $STEADFAST_AUDIT_LOG), or its start (every line is read). A
 * log with no file yet (kube-apiserver makes it at its first line) is
 * marked at its start. */
void tl_audit_mark_end(tl_audit_mark *m, const char *path);
void tl_audit_mark_start(tl_audit_mark *m, const char *path);

/* Which lines tl_audit_select takes; a field left 0 takes any. */
typedef struct tl_audit_query {
	const char *ns;    /* objectRef.namespace */
	const char *user;  /* user.username */
	const char *stage; /* "ResponseComplete", "ResponseStarted" */
	const char *text;  /* a text the line holds (part of a requestURI, a user agent) */
	/* 1: each request once, from its first line taken, and only requests
	 * whose first such line is after the mark (a watch open at the mark,
	 * whose ResponseStarted line came before it, is left out); the lines
	 * before the mark are read for that */
	int first;
} tl_audit_query;

/* The requests that q takes after mark m, in the log's order (the stage's
 * time), into *out (malloc'd, free it; NULL when none). Returns their
 * number. A line still being written is not read. */
size_t tl_audit_select(const tl_audit_mark *m, const tl_audit_query *q, tl_audit_req **out);

/* The requests of namespace ns completed after mark m, in the log's order
 * (completion), into *out (malloc'd, free it; NULL when none). Returns
 * their number. tl_audit_select with .ns = ns, .stage = "ResponseComplete". */
size_t tl_audit_read(const tl_audit_mark *m, const char *ns, tl_audit_req **out);

/* Whether r is a write that succeeded: create, update, patch, delete or
 * deletecollection answered 2xx. */
int tl_audit_is_write(const tl_audit_req *r);

/* Makes a request that the audit policy records (a GET of a ConfigMap that
 * does not exist, in ns) and waits until its line is in the log after m
 * (polling the file: no watch reports audit lines), so every request
 * finished before this call is in the log too. Fails the test after
 * timeout_ms. */
void tl_audit_sync(tl_kube *k, const tl_audit_mark *m, const char *ns, long timeout_ms);

#endif
