/*
 * fakesrv.h - a scripted HTTP/1.1 server on the test's libuv loop.
 *
 * Only for unit tests of error paths the real API server will not produce
 * on demand (429 with Retry-After, a watch cut mid-event, a request that
 * never gets an answer). Each accepted request takes the next scripted
 * response; the connection is closed after it is written.
 */
#ifndef STEADFAST_TEST_FAKESRV_H
#define STEADFAST_TEST_FAKESRV_H

#include <uv.h>

typedef struct fake_resp {
	const char *raw; /* bytes written as the response (status line included) */
	int hang;        /* 1: never answer (the connection stays open) */
} fake_resp;

typedef struct fakesrv fakesrv;

/* Listens on 127.0.0.1 on a free port; responses are borrowed. */
fakesrv *fakesrv_start(uv_loop_t *loop, const fake_resp *script, int n);
int fakesrv_port(const fakesrv *s);
int fakesrv_requests(const fakesrv *s);
/* The request line and headers of request i (0-based), or NULL. */
const char *fakesrv_request(const fakesrv *s, int i);
/* The body of request i ("" when it had none), or NULL. */
const char *fakesrv_body(const fakesrv *s, int i);
/* Closes listener and connections; memory is freed from close callbacks. */
void fakesrv_stop(fakesrv *s);

#endif
