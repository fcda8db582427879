/*
 * apply.h - server-side apply of a YAML manifest stream, as
 * `kubectl apply --server-side` does it.
 *
 * Each document is resolved through discovery (its apiVersion and kind),
 * then sent as an apply patch (application/apply-patch+yaml, JSON being
 * YAML) under a field manager, so applying creates or updates in one
 * request and is idempotent. Documents go one after the other in file
 * order (a CRD before the objects of its kind). Used by `steadfast apply`
 * (the demo installs the CRD and the samples with it).
 */
#ifndef STEADFAST_APPLY_H
#define STEADFAST_APPLY_H

#include <stddef.h>
#include <uv.h>

#include "steadfast/client.h"

typedef struct sf_apply_result {
	size_t index;     /* document number in the stream, from 0 */
	const char *kind; /* "" if the document had none */
	const char *name;
	const char *ns; /* "" for cluster-scoped */
	int err; /* 0 applied; -ENOENT kind unknown; -EINVAL bad document; else the request's */
	long http_status;    /* 200 updated / 201 created, or the failure's */
	const char *message; /* error text, "" on success */
} sf_apply_result;

typedef void (*sf_apply_doc_fn)(void *ud, const sf_apply_result *r);
typedef void (*sf_apply_done_fn)(void *ud, int failed);

/* Applies every document of yaml. ns: the namespace for namespaced
 * objects that do not name one (NULL = "default"). doc runs once per
 * document, done once at the end with the number that failed, both from
 * the loop. A YAML error is reported before anything is sent: -EBADMSG
 * with err set, and neither callback runs. The client must outlive the
 * apply; the loop holds one timer handle until done has run. */
int sf_apply_yaml(uv_loop_t *loop, sf_kube_client *c, const char *yaml, size_t len, const char *ns,
                  const char *field_manager, sf_apply_doc_fn doc, sf_apply_done_fn done, void *ud,
                  char *err, size_t errlen);

#endif
