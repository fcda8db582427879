/*
 * base64.h - base64 (RFC 4648 standard alphabet, padded) to and from
 * bytes, as Kubernetes writes binary data in JSON and YAML (a kubeconfig's
 * *-data fields, Secrets). GnuTLS does the coding; this adds what the
 * callers need around it: whitespace in the text (wrapped values) is
 * ignored, and both results are malloc'd and NUL-terminated, so decoded
 * PEM can be used as a C string.
 */
#ifndef STEADFAST_BASE64_H
#define STEADFAST_BASE64_H

#include <stddef.h>

/* base64 (standard alphabet, padded; whitespace ignored) into a malloc'd
 * buffer (NUL-terminated, *len without it). 0, -EINVAL malformed, -ENOMEM. */
int sf_b64_decode(const char *s, size_t n, unsigned char **out, size_t *len);
/* base64 of p[0..n) appended NUL-terminated into a malloc'd string. */
char *sf_b64_encode(const void *p, size_t n);

#endif
