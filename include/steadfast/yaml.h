/*
 * yaml.h - YAML to JSON, as Kubernetes reads manifests and config files.
 *
 * Kubernetes tools turn YAML into JSON before decoding it (sigs.k8s.io/yaml
 * over YAML 1.1 scalar rules): plain scalars true/false/yes/no/on/off, null
 * and ~, integers and floats become JSON literals; quoted, block and other
 * scalars stay strings. This module does the same with libyaml, one JSON text
 * per non-empty document of a stream ("---" separated). Mapping keys are
 * always strings. Aliases are expanded with a cap on the total output size
 * so an alias bomb is an error, not an allocation storm; merge keys ("<<")
 * are refused with a clear error.
 */
#ifndef STEADFAST_YAML_H
#define STEADFAST_YAML_H

#include <stddef.h>

/* Called once per non-empty document, in order, with its minified JSON
 * (NUL-terminated, valid during the call). Return non-zero to stop: that
 * value is returned by sf_yaml_to_json. */
typedef int (*sf_yaml_doc_fn)(void *ud, size_t index, const char *json, size_t len);

/* Converts a YAML stream. Returns 0, the callback's non-zero value, or a
 * negative errno with err set ("line 3 column 5: mapping values are not
 * allowed here"): -EBADMSG malformed, -E2BIG output over max_out bytes for
 * one document (0 = 64 MiB), -ENOMEM. */
int sf_yaml_to_json(const char *yaml, size_t len, size_t max_out, sf_yaml_doc_fn fn, void *ud,
                    char *err, size_t errlen);

/* Reads a file and converts it; err also covers open/read errors. */
int sf_yaml_file_to_json(const char *path, size_t max_out, sf_yaml_doc_fn fn, void *ud, char *err,
                         size_t errlen);

/* The first non-empty document as a malloc'd JSON string; NULL with err set
 * (also when the stream holds no document). */
char *sf_yaml_one_to_json(const char *yaml, size_t len, char *err, size_t errlen);

#endif
