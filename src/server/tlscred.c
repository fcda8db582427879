/*
 * tlscred.c - HTTPS server credentials: files reloaded on change, or a
 * self-signed certificate (see tlscred.h).
 *
 * The change check is a stat of both files, done from sf_tlscred_get (so on
 * a handshake) at most every recheck_ms: no watch handle on the loop, and a
 * certificate that changed is in use by the first handshake after it.
 */
#include "steadfast/tlscred.h"

#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "steadfast/log.h"

#define LOGGER "tls"
#define DEFAULT_RECHECK_MS 1000
#define SELF_SIGNED_DAYS 365

struct sf_tlscred_ref {
	gnutls_certificate_credentials_t x;
	unsigned refs;
};

typedef struct fstamp {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
} fstamp;

struct sf_tlscred {
	char *cert_path, *key_path; /* NULL: self-signed */
	long recheck_ms;
	int64_t checked_ms;
	fstamp cert_st, key_st;
	sf_tlscred_ref *cur;
	unsigned long reloads;
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int stamp(const char *path, fstamp *out)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	memset(out, 0, sizeof(*out));
	out->dev = st.st_dev;
	out->ino = st.st_ino;
	out->size = st.st_size;
	out->mtime = st.st_mtim;
	return 0;
}

static int stamp_eq(const fstamp *a, const fstamp *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static sf_tlscred_ref *ref_new(void)
{
	sf_tlscred_ref *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	if (gnutls_certificate_allocate_credentials(&r->x) < 0) {
		free(r);
		return NULL;
	}
	r->refs = 1;
	return r;
}

void sf_tlscred_put(sf_tlscred_ref *r)
{
	if (!r || --r->refs > 0)
		return;
	gnutls_certificate_free_credentials(r->x);
	free(r);
}

static int gnutls_errno(int rc)
{
	switch (rc) {
	case GNUTLS_E_MEMORY_ERROR: return -ENOMEM;
	case GNUTLS_E_FILE_ERROR: return -ENOENT;
	default: return -EINVAL;
	}
}

/* Loads the pair from the files into a new reference. */
static int load_files(sf_tlscred *tc, sf_tlscred_ref **out, char *err, size_t errlen)
{
	fstamp cs = {0}, ks = {0};
	const char *bad = tc->cert_path;
	int rc = stamp(tc->cert_path, &cs);
	if (rc == 0) {
		bad = tc->key_path;
		rc = stamp(tc->key_path, &ks);
	}
	if (rc < 0) {
		sf_errf(err, errlen, "%s: %s", bad, strerror(-rc));
		return rc;
	}
	sf_tlscred_ref *r = ref_new();
	if (!r) {
		sf_errf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = gnutls_certificate_set_x509_key_file(r->x, tc->cert_path, tc->key_path,
	                                          GNUTLS_X509_FMT_PEM);
	if (rc < 0) {
		sf_errf(err, errlen, "%s and %s: %s", tc->cert_path, tc->key_path,
		        gnutls_strerror(rc));
		sf_tlscred_put(r);
		return gnutls_errno(rc);
	}
	tc->cert_st = cs;
	tc->key_st = ks;
	*out = r;
	return 0;
}

static int put_pem(gnutls_datum_t *d, sf_buf *out)
{
	int rc = sf_buf_append(out, d->data, d->size);
	gnutls_free(d->data);
	d->data = NULL;
	return rc;
}

int sf_tlscred_selfsigned(const char *cn, sf_buf *cert_pem, sf_buf *key_pem, char *err,
                          size_t errlen)
{
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	gnutls_datum_t d = {NULL, 0};
	unsigned char serial[16];
	const unsigned char ip[4] = {127, 0, 0, 1};
	const char *step = "key";
	time_t now = time(NULL);
	int rc = gnutls_x509_privkey_init(&key);
	if (rc == 0)
		rc = gnutls_x509_privkey_generate(
		    key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
	if (rc == 0) {
		step = "certificate";
		rc = gnutls_x509_crt_init(&crt);
	}
	if (rc == 0)
		rc = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial));
	if (rc == 0) {
		serial[0] &= 0x7f; /* a positive serial number */
		rc = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial));
	}
	if (rc == 0)
		rc = gnutls_x509_crt_set_version(crt, 3);
	if (rc == 0)
		rc = gnutls_x509_crt_set_activation_time(crt, now - 3600);
	if (rc == 0)
		rc = gnutls_x509_crt_set_expiration_time(crt, now + SELF_SIGNED_DAYS * 86400L);
	if (rc == 0)
		rc = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
		                                   (unsigned)strlen(cn));
	if (rc == 0)
		rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, cn,
		                                          (unsigned)strlen(cn), GNUTLS_FSAN_SET);
	if (rc == 0)
		rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, sizeof(ip),
		                                          GNUTLS_FSAN_APPEND);
	if (rc == 0)
		rc = gnutls_x509_crt_set_basic_constraints(crt, 0, -1);
	if (rc == 0)
		rc = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE);
	if (rc == 0)
		rc = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0);
	if (rc == 0)
		rc = gnutls_x509_crt_set_key(crt, key);
	if (rc == 0)
		rc = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0);
	if (rc == 0) {
		step = "PEM";
		rc = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d);
	}
	if (rc == 0 && put_pem(&d, cert_pem) < 0)
		rc = GNUTLS_E_MEMORY_ERROR;
	if (rc == 0)
		rc = gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &d);
	if (rc == 0 && put_pem(&d, key_pem) < 0)
		rc = GNUTLS_E_MEMORY_ERROR;
	if (crt)
		gnutls_x509_crt_deinit(crt);
	if (key)
		gnutls_x509_privkey_deinit(key);
	if (rc < 0) {
		sf_errf(err, errlen, "self-signed %s: %s", step, gnutls_strerror(rc));
		return gnutls_errno(rc);
	}
	return 0;
}

static int load_selfsigned(sf_tlscred_ref **out, char *err, size_t errlen)
{
	sf_buf cert, key;
	sf_buf_init(&cert, 0);
	sf_buf_init(&key, 0);
	int rc = sf_tlscred_selfsigned("localhost", &cert, &key, err, errlen);
	sf_tlscred_ref *r = NULL;
	if (rc == 0 && !(r = ref_new())) {
		sf_errf(err, errlen, "out of memory");
		rc = -ENOMEM;
	}
	if (rc == 0) {
		gnutls_datum_t c = {(unsigned char *)cert.data, (unsigned)cert.len};
		gnutls_datum_t k = {(unsigned char *)key.data, (unsigned)key.len};
		int g = gnutls_certificate_set_x509_key_mem(r->x, &c, &k, GNUTLS_X509_FMT_PEM);
		if (g < 0) {
			sf_errf(err, errlen, "self-signed certificate: %s", gnutls_strerror(g));
			rc = gnutls_errno(g);
			sf_tlscred_put(r);
		} else {
			*out = r;
		}
	}
	sf_buf_free(&cert);
	sf_buf_free(&key);
	return rc;
}

static char *join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

int sf_tlscred_new(const sf_tlscred_opts *opts, sf_tlscred **out)
{
	sf_tlscred_opts o = {0};
	if (opts)
		o = *opts;
	*out = NULL;
	sf_tlscred *tc = calloc(1, sizeof(*tc));
	if (!tc) {
		sf_errf(o.err, o.errlen, "out of memory");
		return -ENOMEM;
	}
	tc->recheck_ms = o.recheck_ms ? o.recheck_ms : DEFAULT_RECHECK_MS;
	int rc;
	if (o.cert_dir && o.cert_dir[0]) {
		tc->cert_path = join(o.cert_dir, o.cert_name ? o.cert_name : "tls.crt");
		tc->key_path = join(o.cert_dir, o.key_name ? o.key_name : "tls.key");
		rc = tc->cert_path && tc->key_path ? load_files(tc, &tc->cur, o.err, o.errlen)
		                                   : -ENOMEM;
		tc->checked_ms = now_ms();
	} else {
		rc = load_selfsigned(&tc->cur, o.err, o.errlen);
	}
	if (rc < 0) {
		sf_tlscred_free(tc);
		return rc;
	}
	sf_log_info(LOGGER, "serving certificate loaded", "cert",
	            tc->cert_path ? tc->cert_path : "self-signed", "key", tc->key_path, NULL);
	*out = tc;
	return 0;
}

void sf_tlscred_free(sf_tlscred *tc)
{
	if (!tc)
		return;
	sf_tlscred_put(tc->cur);
	free(tc->cert_path);
	free(tc->key_path);
	free(tc);
}

/* Reloads the pair if a file changed since it was loaded. */
static void maybe_reload(sf_tlscred *tc)
{
	int64_t now = now_ms();
	if (tc->recheck_ms > 0 && now - tc->checked_ms < tc->recheck_ms)
		return;
	tc->checked_ms = now;
	fstamp cs = {0}, ks = {0};
	if (stamp(tc->cert_path, &cs) == 0 && stamp(tc->key_path, &ks) == 0 &&
	    stamp_eq(&cs, &tc->cert_st) && stamp_eq(&ks, &tc->key_st))
		return;
	char err[512] = "";
	sf_tlscred_ref *r = NULL;
	if (load_files(tc, &r, err, sizeof(err)) < 0) {
		/* half-written, or the key not yet in place: keep serving the old pair
		 * and try again after recheck_ms. */
		sf_log_warn(LOGGER, "cannot reload the serving certificate, keeping the old one",
		            "error", err, NULL);
		return;
	}
	sf_tlscred_put(tc->cur);
	tc->cur = r;
	tc->reloads++;
	sf_log_info(LOGGER, "serving certificate reloaded", "cert", tc->cert_path, NULL);
}

gnutls_certificate_credentials_t sf_tlscred_get(sf_tlscred *tc, sf_tlscred_ref **ref)
{
	if (tc->cert_path)
		maybe_reload(tc);
	tc->cur->refs++;
	*ref = tc->cur;
	return tc->cur->x;
}

unsigned long sf_tlscred_reloads(const sf_tlscred *tc)
{
	return tc ? tc->reloads : 0;
}
