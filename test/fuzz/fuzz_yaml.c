/*
 * fuzz_yaml.c - libFuzzer target for yaml.c.
 *
 * Converts the input as a YAML stream with a 1 MiB cap per document (alias
 * bombs must end in -E2BIG, not in a long run or an allocation storm). Each
 * document handed to the callback must be NUL-terminated at its length,
 * within the cap, and valid JSON that sf_json_minify leaves unchanged (so
 * already minified, within yajl's nesting limit, valid UTF-8), byte for
 * byte: sf_buf_put_json_str escapes as yajl_gen does. A failure
 * must be one of the documented errors, with a message; a "line L column C"
 * one unless it is about memory. sf_yaml_one_to_json must return the first
 * document the callback saw.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/json.h"
#include "steadfast/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

#define MAX_OUT ((size_t)1024 * 1024)

struct seen {
	size_t docs;
	char *first; /* the first document, malloc'd */
};

static int check_doc(void *ud, size_t index, const char *json, size_t len)
{
	struct seen *s = ud;
	CHECK(index == s->docs);
	CHECK(len > 0 && len <= MAX_OUT);
	CHECK(strlen(json) == len);
	CHECK(!(len == 4 && memcmp(json, "null", 4) == 0)); /* null documents are skipped */
	sf_buf b;
	char err[256];
	sf_buf_init(&b, 0);
	CHECK(sf_json_minify(json, len, &b, err, sizeof(err)) == 0);
	CHECK(b.len == len && memcmp(b.data, json, len) == 0);
	sf_buf_free(&b);
	if (!s->first) {
		s->first = malloc(len + 1);
		CHECK(s->first != NULL);
		memcpy(s->first, json, len + 1);
	}
	s->docs++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the input in an allocation of exactly its size */
	char *in = malloc(size ? size : 1);
	if (!in)
		return 0;
	memcpy(in, data, size);

	struct seen s = {0, NULL};
	char err[256];
	int rc = sf_yaml_to_json(in, size, MAX_OUT, check_doc, &s, err, sizeof(err));
	if (rc == 0) {
		CHECK(err[0] == '\0');
	} else {
		CHECK(rc == -EBADMSG || rc == -E2BIG || rc == -ENOMEM);
		CHECK(err[0] != '\0');
		if (rc != -ENOMEM)
			CHECK(strncmp(err, "line ", 5) == 0);
	}

	if (s.first) {
		char *one = sf_yaml_one_to_json(in, size, err, sizeof(err));
		CHECK(one != NULL);
		CHECK(strcmp(one, s.first) == 0);
		free(one);
		free(s.first);
	}
	free(in);
	return 0;
}
