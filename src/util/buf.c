/*
 * buf.c - growable byte buffer with a hard size cap (see buf.h).
 */
#include "steadfast/buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sf_buf_init(sf_buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

void sf_buf_free(sf_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void sf_buf_reset(sf_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

static int buf_reserve(sf_buf *b, size_t extra)
{
	if (b->max && (extra > b->max || b->len > b->max - extra))
		return -E2BIG;
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > ((size_t)-1) / 2 ? need : cap * 2;
	char *p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int sf_buf_append(sf_buf *b, const void *p, size_t n)
{
	int rc = buf_reserve(b, n);
	if (rc)
		return rc;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int sf_buf_puts(sf_buf *b, const char *s)
{
	return sf_buf_append(b, s, strlen(s));
}

int sf_buf_putc(sf_buf *b, char c)
{
	return sf_buf_append(b, &c, 1);
}

int sf_buf_printf(sf_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		va_end(ap2);
		return -EINVAL;
	}
	int rc = buf_reserve(b, (size_t)n);
	if (rc) {
		va_end(ap2);
		return rc;
	}
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	b->len += (size_t)n;
	return 0;
}

/* Escaped as yajl_gen does by default, so that every JSON this program
 * writes agrees byte for byte with sf_json_minify: the two-character
 * escapes for " \ \b \f \n \r \t, \u00XX (upper-case hex) for the other
 * control characters, every other byte (UTF-8, '/', DEL) as it is. */
int sf_buf_put_json_str(sf_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	int rc = sf_buf_putc(b, '"');
	size_t run = 0; /* start of the bytes not yet written */
	for (size_t i = 0; i < n && !rc; i++) {
		unsigned char c = (unsigned char)s[i];
		char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
		const char *esc = NULL;
		size_t el = 2;
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		default:
			if (c < 0x20) {
				esc = u;
				el = sizeof(u);
			}
		}
		if (!esc)
			continue;
		rc = sf_buf_append(b, s + run, i - run);
		if (!rc)
			rc = sf_buf_append(b, esc, el);
		run = i + 1;
	}
	if (!rc)
		rc = sf_buf_append(b, s + run, n - run);
	return rc ? rc : sf_buf_putc(b, '"');
}

char *sf_buf_detach(sf_buf *b, size_t *len)
{
	if (!b->data) {
		if (buf_reserve(b, 0))
			return NULL;
		b->data[0] = '\0';
	}
	char *p = b->data;
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

void sf_buf_consume(sf_buf *b, size_t n)
{
	if (n >= b->len) {
		sf_buf_reset(b);
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

void sf_verrf(char *err, size_t errlen, const char *fmt, va_list ap)
{
	if (!err || !errlen)
		return;
	if (vsnprintf(err, errlen, fmt, ap) < 0)
		err[0] = '\0';
}

void sf_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sf_verrf(err, errlen, fmt, ap);
	va_end(ap);
}
