/*
 * jpath.c - reading a dotted JSON path step by step (see jpath.h).
 *
 * The grammar was written twice, once per JSON representation; here it
 * is once, as a reader that hands out one step at a time, so a walker
 * can stop at the first step that finds nothing without reading on.
 * A path is only ever malformed at or after the step that reports it, so
 * a walk that stops early because a step found nothing gives the same
 * answer (nothing) as one that read the whole path.
 */
#include "steadfast/jpath.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

sf_jpath sf_jpath_init(const char *path)
{
	return (sf_jpath){.s = path, .mid = 0};
}

/* "[digits]" at s into *index; returns what follows, NULL if malformed. */
static const char *read_index(const char *s, size_t *index)
{
	s++; /* '[' */
	if (*s < '0' || *s > '9')
		return NULL;
	size_t i = 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		size_t d = (size_t)(*s - '0');
		if (i > (SIZE_MAX - d) / 10)
			return NULL;
		i = i * 10 + d;
	}
	if (*s != ']')
		return NULL;
	*index = i;
	return s + 1;
}

int sf_jpath_next(sf_jpath *p, sf_jpath_step *step)
{
	const char *s = p->s;
	if (!*s)
		return 0;
	if (p->mid) {
		if (*s == '.') {
			s++;
			if (!*s)
				return -EINVAL; /* "a." */
		} else if (*s != '[') {
			return -EINVAL; /* "a[0]b" */
		}
	}
	if (*s == '[') {
		const char *e = read_index(s, &step->index);
		if (!e)
			return -EINVAL;
		step->key = NULL;
		step->len = 0;
		p->s = e;
		p->mid = 1;
		return 1;
	}
	size_t k = strcspn(s, ".[");
	if (!k)
		return -EINVAL; /* empty key: ".a", "a..b" */
	step->key = s;
	step->len = k;
	step->index = 0;
	p->s = s + k;
	p->mid = 1;
	return 1;
}
