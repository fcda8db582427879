/*
 * base64.c - base64 through GnuTLS's coder (see base64.h).
 *
 * Kept apart from the credential code that first needed it so that any
 * layer may decode or encode Kubernetes' binary fields without reaching
 * into the Kubernetes client. GnuTLS refuses whitespace, which wrapped
 * values carry, so the text is copied without it first.
 */
#include "steadfast/base64.h"

#include <errno.h>
#include <gnutls/gnutls.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int sf_b64_decode(const char *s, size_t n, unsigned char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	/* whitespace anywhere is ignored (wrapped values); GnuTLS decodes */
	char *clean = malloc(n + 1);
	if (!clean)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!is_space((unsigned char)s[i]))
			clean[k++] = s[i];
	gnutls_datum_t in = {(unsigned char *)clean, (unsigned int)k}, dec = {NULL, 0};
	int rc = k ? gnutls_base64_decode2(&in, &dec) : 0;
	free(clean);
	if (rc == GNUTLS_E_MEMORY_ERROR)
		return -ENOMEM;
	if (rc < 0)
		return -EINVAL;
	unsigned char *o = malloc((size_t)dec.size + 1);
	if (!o) {
		gnutls_free(dec.data);
		return -ENOMEM;
	}
	if (dec.size)
		memcpy(o, dec.data, dec.size);
	o[dec.size] = '\0';
	gnutls_free(dec.data);
	*out = o;
	*len = dec.size;
	return 0;
}

char *sf_b64_encode(const void *p, size_t n)
{
	gnutls_datum_t in = {(unsigned char *)(uintptr_t)p, (unsigned int)n}, enc = {NULL, 0};
	if (!n)
		return strdup("");
	if (gnutls_base64_encode2(&in, &enc) < 0)
		return NULL;
	char *s = strndup((const char *)enc.data, enc.size);
	gnutls_free(enc.data);
	return s;
}
