/*
 * test_srvtls.c - the server's HTTPS and guarded routes, and its TLS
 * credentials: bearer-token extraction from a request head (any bytes),
 * a guard answering synchronously or later (and after the server was
 * closed), responses over TLS large enough for many records, the
 * credentials' self-signed certificate and reload when the files change.
 * The client is libcurl in a thread; the server runs on the test's loop.
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "steadfast/log.h"
#include "steadfast/server.h"
#include "steadfast/tlscred.h"
#include "tl.h"

/* ---- bearer tokens ---- */

static int bearer(const char *head, char *tok, size_t n)
{
	const char *t;
	size_t tl;
	int rc = sf_srv_bearer(head, strlen(head), &t, &tl);
	if (rc == 1)
		snprintf(tok, n, "%.*s", (int)tl, t);
	return rc;
}

Test(srvtls, bearer_tokens, .init = tl_log_quiet)
{
	char tok[128];
	cr_assert_eq(
	    bearer("GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer abc.DEF-_~+/=\r\n\r\n", tok,
	           sizeof(tok)),
	    1);
	cr_assert_str_eq(tok, "abc.DEF-_~+/=");
	/* scheme case-insensitive, field name too, whitespace trimmed, LF only */
	cr_assert_eq(
	    bearer("GET / HTTP/1.1\nauthorization:   bEaReR   t0k  \n\n", tok, sizeof(tok)), 1);
	cr_assert_str_eq(tok, "t0k");
	/* the first Authorization field counts */
	cr_assert_eq(bearer("GET / HTTP/1.1\r\nAuthorization: Bearer one\r\nAuthorization: Bearer "
	                    "two\r\n\r\n",
	                    tok, sizeof(tok)),
	             1);
	cr_assert_str_eq(tok, "one");
	static const char *const none[] = {
	    "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
	    "GET / HTTP/1.1\r\nAuthorization: Basic dXNlcjpwYXNz\r\n\r\n",
	    "GET / HTTP/1.1\r\nAuthorization: Bearer\r\n\r\n",
	    "GET / HTTP/1.1\r\nAuthorization: Bearer \r\n\r\n",
	    "GET / HTTP/1.1\r\nAuthorization: Bearer a b\r\n\r\n",
	    "GET / HTTP/1.1\r\nAuthorization: Bearertok\r\n\r\n",
	    "GET / HTTP/1.1\r\nAuthorization: Bearer a\"b\r\n\r\n",
	    "GET / HTTP/1.1\r\nX-Authorization: Bearer tok\r\n\r\n",
	    "GET / HTTP/1.1\r\nAuthorizationX: Bearer tok\r\n\r\n",
	    /* the request line is not a field */
	    "Authorization: Bearer tok\r\n\r\n",
	    "",
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		cr_assert_eq(bearer(none[i], tok, sizeof(tok)), 0, "%s", none[i]);
	/* a head cut short stops at its end */
	const char *h = "GET / HTTP/1.1\r\nAuthorization: Bearer abcdef\r\n\r\n";
	const char *t;
	size_t tl;
	cr_assert_eq(
	    sf_srv_bearer(h, strlen("GET / HTTP/1.1\r\nAuthorization: Bearer abc"), &t, &tl), 1);
	cr_assert_eq(tl, 3);
}

/* ---- an HTTPS server with a guarded route ---- */

typedef struct fx {
	uv_loop_t loop;
	sf_tlscred *cred;
	sf_srv *srv;
	int port;
	int closed;
	unsigned guard_calls;
	sf_srv_pending *later; /* a verdict held back */
	uv_timer_t timer;
	size_t big;
} fx;

static int on_data(void *ud, const sf_srv_request *req, sf_srv_response *res)
{
	fx *f = ud;
	(void)req;
	if (f->big) {
		for (size_t i = 0; i < f->big; i++)
			if (sf_buf_putc(&res->body, (char)('a' + i % 26)) < 0)
				return -ENOMEM;
		return 0;
	}
	return sf_buf_puts(&res->body, "secret\n");
}

static void release_later(uv_timer_t *t)
{
	fx *f = t->data;
	if (f->later) {
		sf_srv_pending *p = f->later;
		f->later = NULL;
		sf_srv_verdict(p, 0);
	}
}

/* "good": allowed at once; "slow": allowed 50 ms later; "held": kept
 * until the test releases it; anything else 403; no token 401. */
static void guard(void *ud, const char *tok, size_t n, sf_srv_pending *p)
{
	fx *f = ud;
	f->guard_calls++;
	if (!tok) {
		sf_srv_verdict(p, 401);
	} else if (n == 4 && memcmp(tok, "good", 4) == 0) {
		sf_srv_verdict(p, 0);
	} else if ((n == 4 && memcmp(tok, "slow", 4) == 0) ||
	           (n == 4 && memcmp(tok, "held", 4) == 0)) {
		f->later = p;
		if (tok[0] == 's')
			uv_timer_start(&f->timer, release_later, 50, 0);
	} else {
		sf_srv_verdict(p, 403);
	}
}

static void fx_start(fx *f)
{
	memset(f, 0, sizeof(*f));
	cr_assert_eq(uv_loop_init(&f->loop), 0);
	uv_timer_init(&f->loop, &f->timer);
	f->timer.data = f;
	char err[256] = "";
	sf_tlscred_opts to = {.err = err, .errlen = sizeof(err)};
	cr_assert_eq(sf_tlscred_new(&to, &f->cred), 0, "%s", err);
	sf_srv_opts so = {.bind = "127.0.0.1:0",
	                  .name = "tls-test",
	                  .tls = f->cred,
	                  .timeout_ms = 5000,
	                  .err = err,
	                  .errlen = sizeof(err)};
	cr_assert_eq(sf_srv_new(&f->loop, &so, &f->srv), 0, "%s", err);
	cr_assert_eq(sf_srv_route_guarded(f->srv, "/metrics", on_data, f, guard, f), 0);
	cr_assert_eq(sf_srv_route(f->srv, "/open", on_data, f), 0);
	f->port = sf_srv_port(f->srv);
}

static void on_closed(void *ud)
{
	((fx *)ud)->closed = 1;
}

static void fx_stop(fx *f)
{
	if (f->srv)
		sf_srv_close(f->srv, on_closed, f);
	f->srv = NULL;
	uv_close((uv_handle_t *)&f->timer, NULL);
	while (!f->closed)
		uv_run(&f->loop, UV_RUN_ONCE);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&f->loop), 0);
	sf_tlscred_free(f->cred);
}

typedef struct req {
	int port;
	const char *path;
	const char *token;
	long timeout_ms;
	CURLcode rc;
	long status;
	size_t len;
	char body[64];
	int bad_byte;
	atomic_int done;
} req;

static size_t take(char *p, size_t sz, size_t n, void *ud)
{
	req *r = ud;
	for (size_t i = 0; i < sz * n; i++) {
		if (r->len + i < sizeof(r->body) - 1)
			r->body[r->len + i] = p[i];
		if (p[i] != (char)('a' + (r->len + i) % 26))
			r->bad_byte = 1;
	}
	r->len += sz * n;
	return sz * n;
}

static void *get_thread(void *ud)
{
	req *r = ud;
	char url[128], auth[128];
	snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", r->port, r->path);
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = NULL;
	if (r->token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", r->token);
		hdr = curl_slist_append(hdr, auth);
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, take);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, r->timeout_ms ? r->timeout_ms : 10000L);
	r->rc = curl_easy_perform(h);
	if (r->rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	atomic_store(&r->done, 1);
	return NULL;
}

static void tick(uv_timer_t *t)
{
	(void)t;
}

/* One request from a thread while the loop runs. */
static void run_get(fx *f, req *r)
{
	r->port = f->port;
	atomic_init(&r->done, 0);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, get_thread, r), 0);
	uv_timer_t t;
	uv_timer_init(&f->loop, &t);
	uv_timer_start(&t, tick, 5, 5);
	uint64_t end = uv_hrtime() + 15000ull * 1000000;
	while (!atomic_load(&r->done) && uv_hrtime() < end)
		uv_run(&f->loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(&f->loop, UV_RUN_NOWAIT);
	pthread_join(th, NULL);
	cr_assert(atomic_load(&r->done));
}

Test(srvtls, guarded_route_over_https, .init = tl_log_quiet)
{
	cr_assert_eq(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
	fx f;
	fx_start(&f);
	req none = {.path = "/metrics"}, bad = {.path = "/metrics", .token = "bad"};
	req good = {.path = "/metrics", .token = "good"},
	    slow = {.path = "/metrics", .token = "slow"};
	req open = {.path = "/open"};
	run_get(&f, &none);
	run_get(&f, &bad);
	run_get(&f, &good);
	run_get(&f, &slow);
	run_get(&f, &open);
	cr_assert_eq(none.rc, CURLE_OK, "%s", curl_easy_strerror(none.rc));
	cr_assert_eq(none.status, 401);
	cr_assert_eq(bad.status, 403);
	cr_assert_eq(good.status, 200);
	cr_assert_str_eq(good.body, "secret\n");
	cr_assert_eq(slow.status, 200, "a verdict given later");
	cr_assert_str_eq(slow.body, "secret\n");
	cr_assert_eq(open.status, 200, "an unguarded route needs no token");
	cr_assert_eq(f.guard_calls, 4);
	sf_srv_stats st;
	sf_srv_stats_get(f.srv, &st);
	cr_assert_eq(st.responses, 5);
	cr_assert_eq(st.tls_failures, 0);
	fx_stop(&f);
	curl_global_cleanup();
}

Test(srvtls, large_response_over_tls, .init = tl_log_quiet)
{
	cr_assert_eq(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
	fx f;
	fx_start(&f);
	f.big = (size_t)3 << 20; /* many 16 KiB records */
	req r = {.path = "/metrics", .token = "good"};
	run_get(&f, &r);
	cr_assert_eq(r.rc, CURLE_OK, "%s", curl_easy_strerror(r.rc));
	cr_assert_eq(r.status, 200);
	cr_assert_eq(r.len, f.big);
	cr_assert(!r.bad_byte, "the body arrived altered");
	fx_stop(&f);
	curl_global_cleanup();
}

static int tls_failed_once(fx *f)
{
	sf_srv_stats st;
	sf_srv_stats_get(f->srv, &st);
	return st.tls_failures > 0;
}

Test(srvtls, plain_http_to_tls_port_refused, .init = tl_log_quiet)
{
	fx f;
	fx_start(&f);
	/* plain HTTP bytes where a ClientHello should be */
	uv_tcp_t c;
	uv_tcp_init(&f.loop, &c);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(fd >= 0);
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", f.port, &a);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	const char msg[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	cr_assert_eq(write(fd, msg, sizeof(msg) - 1), (ssize_t)(sizeof(msg) - 1));
	uv_timer_t t;
	uv_timer_init(&f.loop, &t);
	uv_timer_start(&t, tick, 5, 5);
	uint64_t end = uv_hrtime() + 5000ull * 1000000;
	while (!tls_failed_once(&f) && uv_hrtime() < end)
		uv_run(&f.loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_close((uv_handle_t *)&c, NULL);
	cr_assert(tls_failed_once(&f), "the server took plain HTTP on its TLS port");
	/* it answered with an alert (no HTTP response) and closed */
	char buf[512];
	ssize_t n, total = 0;
	int http = 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		http |= n >= 5 && memcmp(buf, "HTTP/", 5) == 0;
		total += n;
	}
	cr_assert(!http, "an HTTP answer on the TLS port");
	cr_assert(total > 0 && total < 64, "%zd bytes: not a TLS alert", total);
	close(fd);
	fx_stop(&f);
}

/* A verdict that arrives after the server was closed frees the
 * connection (ASan and uv_loop_close check that nothing is left). */
Test(srvtls, verdict_after_close, .init = tl_log_quiet)
{
	cr_assert_eq(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
	fx f;
	fx_start(&f);
	req r = {.path = "/metrics", .token = "held", .timeout_ms = 3000};
	r.port = f.port;
	atomic_init(&r.done, 0);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, get_thread, &r), 0);
	uv_timer_t t;
	uv_timer_init(&f.loop, &t);
	uv_timer_start(&t, tick, 5, 5);
	uint64_t end = uv_hrtime() + 10000ull * 1000000;
	while (!f.later && uv_hrtime() < end)
		uv_run(&f.loop, UV_RUN_ONCE);
	cr_assert(f.later, "the guard was not asked");
	sf_srv_close(f.srv, on_closed, &f);
	f.srv = NULL;
	for (int i = 0; i < 20; i++)
		uv_run(&f.loop, UV_RUN_NOWAIT);
	cr_assert(!f.closed, "closed while a verdict was pending");
	sf_srv_pending *p = f.later;
	f.later = NULL;
	sf_srv_verdict(p, 0);
	while (!f.closed && uv_hrtime() < end)
		uv_run(&f.loop, UV_RUN_ONCE);
	cr_assert(f.closed);
	uv_close((uv_handle_t *)&t, NULL);
	pthread_join(th, NULL);
	cr_assert(r.rc != CURLE_OK || r.status != 200, "served after the server was closed");
	fx_stop(&f);
	curl_global_cleanup();
}

/* ---- credentials ---- */

static void write_pair(const char *dir, const char *cn)
{
	sf_buf c, k;
	sf_buf_init(&c, 0);
	sf_buf_init(&k, 0);
	char err[256], path[512], tmp[520];
	cr_assert_eq(sf_tlscred_selfsigned(cn, &c, &k, err, sizeof(err)), 0, "%s", err);
	const sf_buf *bufs[] = {&k, &c};
	const char *names[] = {"tls.key", "tls.crt"};
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		FILE *fp = fopen(tmp, "w");
		cr_assert(fp);
		cr_assert_eq(fwrite(bufs[i]->data, 1, bufs[i]->len, fp), bufs[i]->len);
		cr_assert_eq(fclose(fp), 0);
		cr_assert_eq(rename(tmp, path), 0);
	}
	sf_buf_free(&c);
	sf_buf_free(&k);
}

Test(srvtls, credentials_reloaded_when_files_change, .init = tl_log_quiet)
{
	char dir[] = "/tmp/sf-tlscred-XXXXXX";
	cr_assert(mkdtemp(dir));
	char err[512] = "";
	sf_tlscred *tc = NULL;
	sf_tlscred_opts o = {.cert_dir = dir, .recheck_ms = -1, .err = err, .errlen = sizeof(err)};
	cr_assert_eq(sf_tlscred_new(&o, &tc), -ENOENT);
	cr_assert(strstr(err, "tls.crt"), "%s", err);
	write_pair(dir, "one.test");
	cr_assert_eq(sf_tlscred_new(&o, &tc), 0, "%s", err);
	sf_tlscred_ref *r1, *r2, *r3;
	gnutls_certificate_credentials_t x1 = sf_tlscred_get(tc, &r1);
	cr_assert_eq(sf_tlscred_get(tc, &r2), x1, "unchanged files: the same credentials");
	cr_assert_eq(sf_tlscred_reloads(tc), 0);
	write_pair(dir, "two.test");
	gnutls_certificate_credentials_t x3 = sf_tlscred_get(tc, &r3);
	cr_assert_neq(x3, x1, "new files were not loaded");
	cr_assert_eq(sf_tlscred_reloads(tc), 1);
	/* a broken certificate keeps the last good one */
	char path[600];
	snprintf(path, sizeof(path), "%s/tls.crt", dir);
	FILE *fp = fopen(path, "w");
	cr_assert(fp);
	fputs("not a certificate\n", fp);
	fclose(fp);
	sf_tlscred_ref *r4;
	cr_assert_eq(sf_tlscred_get(tc, &r4), x3);
	cr_assert_eq(sf_tlscred_reloads(tc), 1);
	/* references outlive the provider and the reload */
	sf_tlscred_free(tc);
	sf_tlscred_put(r1);
	sf_tlscred_put(r2);
	sf_tlscred_put(r3);
	sf_tlscred_put(r4);
	unlink(path);
	snprintf(path, sizeof(path), "%s/tls.key", dir);
	unlink(path);
	rmdir(dir);
}
