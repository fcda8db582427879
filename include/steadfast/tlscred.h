/*
 * tlscred.h - the certificate an HTTPS server presents, from files that are
 * reloaded when they change, or self-signed at start.
 *
 * As controller-runtime's secure metrics serving: with a certificate
 * directory, <dir>/<cert name> and <dir>/<key name> (PEM; default tls.crt
 * and tls.key, the names of a kubernetes.io/tls Secret) are loaded at start
 * (a failure is a start-up error) and looked at again, at most every
 * recheck_ms, when a handshake asks for the credentials: if either file's
 * inode, size or modification time changed (cert-manager rewriting the
 * Secret, whose mount swaps a symlink), the pair is loaded again and new
 * handshakes use it; a pair that does not load is logged and the old one
 * kept. Without a directory a self-signed certificate (ECDSA P-256, CN and
 * DNS name "localhost", IP 127.0.0.1, one year) is generated at start.
 *
 * Sessions hold a reference to the credentials they were started with, so a
 * reload never frees credentials a connection still uses.
 */
#ifndef STEADFAST_TLSCRED_H
#define STEADFAST_TLSCRED_H

#include <gnutls/gnutls.h>
#include <stddef.h>

#include "steadfast/buf.h"

typedef struct sf_tlscred sf_tlscred;
typedef struct sf_tlscred_ref sf_tlscred_ref;

typedef struct sf_tlscred_opts {
	const char *cert_dir;  /* NULL or "" = self-signed */
	const char *cert_name; /* NULL = "tls.crt" */
	const char *key_name;  /* NULL = "tls.key" */
	long recheck_ms;       /* 0 = 1000; < 0 = every handshake */
	char *err;             /* if not NULL, sf_tlscred_new puts a message here */
	size_t errlen;
} sf_tlscred_opts;

/* 0 and *out, or -ENOENT/-EACCES (a file), -EINVAL (not a certificate and
 * matching key), -ENOMEM, with a message naming the file in opts->err. */
int sf_tlscred_new(const sf_tlscred_opts *opts, sf_tlscred **out);
/* Drops the provider; credentials still referenced live on. NULL: no-op. */
void sf_tlscred_free(sf_tlscred *tc);

/* The credentials for a new session (reloaded first if the files changed),
 * with a reference the caller releases with sf_tlscred_put. */
gnutls_certificate_credentials_t sf_tlscred_get(sf_tlscred *tc, sf_tlscred_ref **ref);
void sf_tlscred_put(sf_tlscred_ref *ref); /* NULL: no-op */
/* Reloads that replaced the pair, for logs and tests. */
unsigned long sf_tlscred_reloads(const sf_tlscred *tc);

/* A new self-signed certificate and its key, PEM, for host cn (also its DNS
 * name; 127.0.0.1 is added as an IP address). 0, or a negative errno with
 * a message in err. */
int sf_tlscred_selfsigned(const char *cn, sf_buf *cert_pem, sf_buf *key_pem, char *err,
                          size_t errlen);

#endif
