/*
 * tl_aw.h - AppWrapper helpers for the integration tests.
 *
 * Installs our AppWrapper CRD (manifests/crd) on the test control plane and
 * waits until it is Established, creates the objects of a YAML manifest
 * (file or inline text, converted with sf_yaml like kubectl does) and
 * records what was sent and what the server answered, and compares JSON
 * values structurally. Failures of the helpers themselves (a file that
 * cannot be read, a request that never finishes) fail the calling test.
 */
#ifndef STEADFAST_TEST_TL_AW_H
#define STEADFAST_TEST_TL_AW_H

#include <stddef.h>

#include "steadfast/client.h"
#include "steadfast/json.h"
#include "tl.h"

#define TL_AW_CRD_NAME "appwrappers.workload.codeflare.dev"
#define TL_AW_CRD_FILE "manifests/crd/appwrappers.workload.codeflare.dev.yaml"
#define TL_AW_SAMPLES_DIR "test/samples"
#define TL_AW_MAX_DOCS 32

/* workload.codeflare.dev/v1beta2 appwrappers (namespaced). */
extern const sf_gvr TL_AW_GVR;

/* A file of the source tree, by its path from the repository root: rel
 * itself when it exists from the working directory (tests run from the
 * root), else $STEADFAST_SRC_DIR/rel. Fails the test when neither exists.
 * Returns buf. */
const char *tl_aw_src_path(const char *rel, char *buf, size_t n);

/* Creates the AppWrapper CRD from TL_AW_CRD_FILE, or updates it when it
 * exists, then waits (watch, bounded) until it is Established. Returns the
 * HTTP status of the write: 201 created, 200 updated. */
long tl_aw_install_crd(tl_kube *k);

/* Waits until the CRD `name` has condition Established=True: GET, then a
 * watch from that resourceVersion, until timeout_ms (then the test fails). */
void tl_aw_wait_established(tl_kube *k, const char *name, long timeout_ms);

/* One document of a manifest and the server's answer to it. */
typedef struct tl_aw_doc {
	char *sent; /* the document as minified JSON (owned) */
	char api_version[128];
	char kind[64];
	char name[254];
	char resource[64]; /* plural from discovery, "" if the kind is unknown */
	long http_status;  /* of the create (or the update after AlreadyExists) */
	char reason[64];
	char message[512];
	sf_obj *obj; /* the object returned on success (owned), else NULL */
} tl_aw_doc;

typedef struct tl_aw_applied {
	size_t n;
	tl_aw_doc docs[TL_AW_MAX_DOCS];
} tl_aw_applied;

typedef struct tl_aw_apply_opts {
	const char *query; /* added to every write, e.g. "dryRun=All" */
	int allow_fail;    /* 0: fail the test unless every document is stored */
} tl_aw_apply_opts;

/* Creates every document of a YAML stream, one request each, in order; a
 * document that exists already is updated (PUT with its resourceVersion).
 * path_or_yaml is YAML text when it contains a newline, else a file path
 * (resolved as tl_aw_src_path). Namespaced kinds go to ns when it is
 * non-NULL, else to the document's metadata.namespace, else "default".
 * opts may be NULL; out (may be NULL) receives each document and answer
 * (release with tl_aw_applied_clear). Returns the number of documents. */
size_t tl_aw_apply_yaml(tl_kube *k, const char *ns, const char *path_or_yaml,
                        const tl_aw_apply_opts *opts, tl_aw_applied *out);
void tl_aw_applied_clear(tl_aw_applied *a);

/* The first document of a YAML file or text (as tl_aw_apply_yaml) as
 * malloc'd minified JSON; fails the test when there is none. */
char *tl_aw_yaml_json(const char *path_or_yaml);

/* The sorted names of the *.yaml files in a source-tree directory
 * (tl_aw_src_path), as full paths; returns the count (fails the test on an
 * unreadable directory). Release with tl_aw_files_free. */
size_t tl_aw_list_yaml(const char *rel_dir, char ***paths);
void tl_aw_files_free(char **paths, size_t n);

/* Structural JSON equality: objects compare by key whatever the member
 * order, arrays element by element, strings after unescaping, numbers by
 * value. Returns 1 when equal; else 0 with the path of the first
 * difference and a short reason in where (may be NULL). */
int tl_aw_json_equal(sf_jv a, sf_jv b, char *where, size_t n);

/* The status ("True", "False", "Unknown") of the condition of the given
 * type in a conditions array, into buf: 0, or -ENOENT (no such condition). */
int tl_aw_condition(sf_jv conditions, const char *type, char *status, size_t n);

#endif
