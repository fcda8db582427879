/*
 * fuzz_yaml.c - libFuzzer target for yaml.c.
 *
 * Converts the input as a YAML stream with a 1 MiB cap per document (alias
 * bombs must end in -E2BIG, not in a long run or an allocation storm). Each
 * document handed to the callback must be NUL-terminated at its length,
 * within the cap, and valid JSON that sf_json_minify leaves unchanged (so
 * already minified, within yajl's nesting limit, valid UTF-8) except for the
 * spelling of control-character escapes: sf_buf_put_json_str writes \u0008,
 * \u000c and lowercase hex where yajl_gen writes \b, \f and uppercase hex,
 * so escapes are compared by the character they stand for. A failure
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

static int hex4(const char *p)
{
	int v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
		        : c >= 'a' && c <= 'f' ? c - 'a' + 10
		        : c >= 'A' && c <= 'F' ? c - 'A' + 10
		                               : -1;
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/* The character the escape at p (a backslash, n bytes left) stands for, and
 * its length; -1 if malformed. */
static int unescape(const char *p, size_t n, size_t *len)
{
	if (n < 2)
		return -1;
	*len = 2;
	switch (p[1]) {
	case 'b': return '\b';
	case 'f': return '\f';
	case 'n': return '\n';
	case 'r': return '\r';
	case 't': return '\t';
	case '"':
	case '\\':
	case '/': return p[1];
	case 'u': *len = 6; return n < 6 ? -1 : hex4(p + 2);
	default: return -1;
	}
}

/* a and b are the same JSON text up to how characters are escaped. */
static int same_text(const char *a, size_t na, const char *b, size_t nb)
{
	size_t i = 0, j = 0;
	while (i < na && j < nb) {
		if (a[i] == '\\' && b[j] == '\\') {
			size_t la, lb;
			int ca = unescape(a + i, na - i, &la), cb = unescape(b + j, nb - j, &lb);
			if (ca < 0 || ca != cb)
				return 0;
			i += la;
			j += lb;
		} else if (a[i] != b[j]) {
			return 0;
		} else {
			i++;
			j++;
		}
	}
	return i == na && j == nb;
}

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
	CHECK(same_text(json, len, b.data, b.len));
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
