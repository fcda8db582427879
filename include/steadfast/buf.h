/*
 * buf.h - growable byte buffer with a hard size cap.
 *
 * Everything read from the network lands in one of these; the cap turns an
 * endless or hostile response into an error instead of unbounded memory.
 * data is always NUL-terminated (not counted in len) so text can be used as a
 * C string. Modelled on curl's dynbuf.
 */
#ifndef STEADFAST_BUF_H
#define STEADFAST_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct sf_buf {
	char *data; /* NULL until the first append */
	size_t len;
	size_t cap;
	size_t max; /* appends past this fail with -E2BIG; 0 = no cap */
} sf_buf;

void sf_buf_init(sf_buf *b, size_t max);
void sf_buf_free(sf_buf *b);                           /* releases memory, keeps max; b reusable */
void sf_buf_reset(sf_buf *b);                          /* len = 0, keeps memory */
int sf_buf_append(sf_buf *b, const void *p, size_t n); /* 0 or -E2BIG/-ENOMEM */
int sf_buf_puts(sf_buf *b, const char *s);
int sf_buf_printf(sf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sf_buf_putc(sf_buf *b, char c);
/* Appends s as a JSON string literal (with quotes and escapes), byte for
 * byte as yajl_gen writes it (see buf.c). The one JSON escaper: every JSON
 * writer here uses it. */
int sf_buf_put_json_str(sf_buf *b, const char *s, size_t n);
/* Hands the memory to the caller (to free()); b is left empty. Never NULL
 * on success: an empty buffer yields "". Returns NULL on -ENOMEM. */
char *sf_buf_detach(sf_buf *b, size_t *len);
/* Removes the first n bytes. */
void sf_buf_consume(sf_buf *b, size_t n);

/* Error messages into a caller's fixed buffer, the convention of every
 * `char *err, size_t errlen` parameter here: writes the printf-formatted
 * message into err (at most errlen bytes, always NUL-terminated, cut short
 * if need be); with err NULL or errlen 0 it does nothing. */
void sf_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void sf_verrf(char *err, size_t errlen, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
