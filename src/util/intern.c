/*
 * intern.c - shared, reference-counted string copies (see intern.h).
 *
 * Each string lives in one allocation with its count, found through a
 * keyed strmap (the allocation holds its key). The last release removes
 * and frees it, so the table holds only the strings live objects use.
 */
#include "steadfast/intern.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/strmap.h"

typedef struct istr {
	size_t refs;
	char s[];
} istr;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sf_strmap *table;
static const char empty[1];

static const char *istr_key(const void *v)
{
	return ((const istr *)v)->s;
}

static istr *istr_of(const char *p)
{
	return (istr *)(void *)((char *)(uintptr_t)p - offsetof(istr, s));
}

const char *sf_intern(const char *s, size_t n)
{
	if (n == 0)
		return empty;
	const char *out = NULL;
	pthread_mutex_lock(&lock);
	if (!table && sf_strmap_new_keyed(istr_key, 0, &table) < 0)
		goto done;
	istr *i = sf_strmap_getn(table, s, n);
	if (i) {
		i->refs++;
		out = i->s;
		goto done;
	}
	i = malloc(sizeof(*i) + n + 1);
	if (!i)
		goto done;
	i->refs = 1;
	memcpy(i->s, s, n);
	i->s[n] = '\0';
	if (sf_strmap_put(table, i->s, i, NULL) < 0) {
		free(i);
		goto done;
	}
	out = i->s;
done:
	pthread_mutex_unlock(&lock);
	return out;
}

void sf_intern_release(const char *p)
{
	if (!p || p == empty || !*p)
		return;
	istr *i = istr_of(p);
	pthread_mutex_lock(&lock);
	if (--i->refs == 0) {
		sf_strmap_remove(table, i->s, NULL);
		free(i);
	}
	pthread_mutex_unlock(&lock);
}

size_t sf_intern_count(void)
{
	pthread_mutex_lock(&lock);
	size_t n = table ? sf_strmap_len(table) : 0;
	pthread_mutex_unlock(&lock);
	return n;
}
