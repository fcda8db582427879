/*
 * tl_audit.h - the test control plane's audit log ($STEADFAST_AUDIT_LOG,
 * JSON lines, one ResponseComplete line per request) read back by a test:
 * the requests of one namespace that completed after a mark, parsed, with
 * the replica that made each (its identity is in its user agent,
 * "steadfast/<version> (linux) appwrapper-controller/<identity>").
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
	long long done_us; /* stageTimestamp (the response completed) */
} tl_audit_req;

/* Marks the current end of the audit log: only later lines are read. */
void tl_audit_mark_now(tl_audit_mark *m);

/* The requests of namespace ns completed after mark m, in the log's order
 * (completion), into *out (malloc'd, free it; NULL when none). Returns
 * their number. */
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
