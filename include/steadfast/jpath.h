/*
 * jpath.h - the dotted path grammar of sf_jv_path and sf_jd_path, read
 * step by step.
 *
 * A path is segments joined by '.', each a member key followed by any
 * number of [i] array indexes, or indexes alone: "spec.template.spec",
 * "spec.components[0].template", "m[1][1][0]", "[1][0]". A key is the
 * bytes up to the next '.' or '[' (so keys that contain either, like
 * label keys, cannot be named here); an index is decimal digits that fit
 * a size_t. The empty path names the root. Empty keys ("a..b", ".a",
 * "a."), an index that is empty, not digits, unterminated or too large,
 * and anything but '.', '[' or the end after an index are malformed.
 *
 * One reader for both JSON representations, so that a path means the
 * same in the read-only views (json.h) and in the mutable tree (jdoc.h);
 * each walks its own nodes with the steps read here.
 */
#ifndef STEADFAST_JPATH_H
#define STEADFAST_JPATH_H

#include <stddef.h>

/* A reader over a path; holds no memory, borrows the path. */
typedef struct sf_jpath {
	const char *s; /* what is left to read */
	int mid;       /* inside a segment: after a key or an index */
} sf_jpath;

/* One step: a member key (key[0..len), not NUL-terminated), or, when key
 * is NULL, an array index. */
typedef struct sf_jpath_step {
	const char *key;
	size_t len;
	size_t index;
} sf_jpath_step;

/* A reader at the start of path (not NULL). */
sf_jpath sf_jpath_init(const char *path);
/* Reads the next step into *step: 1, 0 at the end of the path, or
 * -EINVAL when what is left is malformed. */
int sf_jpath_next(sf_jpath *p, sf_jpath_step *step);

#endif
