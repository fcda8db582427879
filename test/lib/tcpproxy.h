/*
 * tcpproxy.h - a small TCP proxy for the chaos tests.
 *
 * Runs on the test's own libuv loop (it forwards while the test waits on
 * that loop) and forwards 127.0.0.1:<port> to one upstream host:port, byte
 * for byte, so TLS stays end to end. It can be switched to blackhole mode
 * (nothing is forwarded in either direction, connections stay open, no
 * RST: a network partition as the two ends see it) and back, and can reset
 * every connection it carries. In CONNECT mode it is an HTTP forward proxy
 * as kubeconfig's proxy-url expects: each connection must start with
 * "CONNECT host:port HTTP/1.1", answered 200, then bytes flow to the
 * upstream (whatever host:port asked for; the request is recorded).
 */
#ifndef STEADFAST_TEST_TCPPROXY_H
#define STEADFAST_TEST_TCPPROXY_H

#include <stddef.h>
#include <uv.h>

typedef struct tp_proxy tp_proxy;

/* Listens on 127.0.0.1 on a free port and forwards to up_ip:up_port (an IPv4
 * address). Returns 0 or a negative libuv error. */
int tp_start(uv_loop_t *loop, const char *up_ip, int up_port, tp_proxy **out);
int tp_port(const tp_proxy *p);

/* Blackhole on: stop reading from both sides of every connection (bytes
 * already sent stay in the kernel's buffers), accept new connections but do
 * not connect them upstream. Off: forward again, including what was held. */
void tp_blackhole(tp_proxy *p, int on);
int tp_is_blackholed(const tp_proxy *p);

/* Blackholes every connection open now, for good (a NAT entry dropped, a
 * load balancer replaced without a RST): nothing more is forwarded on them,
 * they stay open; connections accepted later are forwarded as usual. */
void tp_blackhole_existing(tp_proxy *p);

/* Closes every connection with a TCP RST on both sides (what was held in
 * blackhole mode is dropped). The listener stays. */
void tp_reset(tp_proxy *p);

/* Connections open now, and accepted since the start. */
size_t tp_nconns(const tp_proxy *p);
unsigned long tp_accepted(const tp_proxy *p);

/* CONNECT mode for connections accepted from now on (on = 1). */
void tp_connect_mode(tp_proxy *p, int on);
/* CONNECT requests answered so far, and the target of the last one
 * ("host:port", "" if none). */
unsigned long tp_connects(const tp_proxy *p);
const char *tp_last_connect(const tp_proxy *p);

/* Closes the listener and every connection; the memory goes when the loop
 * has run the close callbacks (run the loop dry before closing it). */
void tp_close(tp_proxy *p);

#endif
