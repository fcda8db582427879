/*
 * candidate.c - a small election program for the tests: one replica of a
 * controller that campaigns for a Lease with the election library.
 *
 * It prints one line per transition on stdout, flushed, each starting with
 * the CLOCK_MONOTONIC time in milliseconds (comparable between processes on
 * one machine), so a test can wait for lines and measure handovers:
 *
 *   <ms> START id=<identity> pid=<pid>
 *   <ms> NEW_LEADER leader=<identity or empty>
 *   <ms> READY term=<n> rv=<lease resourceVersion>     (the ready hook ran)
 *   <ms> LEADING term=<n> last_renew=<ms>
 *   <ms> STOPPED term=<n> last_renew=<ms> reason=<text>
 *   <ms> WRITE ok|refused|cancelled|error n=<count> [err=<text>]   (leader work)
 *   <ms> HEALTH ok|fail msg=<text>                      (on change)
 *   <ms> RENEWED at=<ms>          (with --print-renews: each successful renew,
 *                                  at = when it was sent, the fence's origin)
 *   <ms> RELEASED err=<n>
 *   <ms> EXIT
 *
 * Leader work (with --work-configmap NAME) is a merge PATCH of that
 * ConfigMap every --work-interval ms through a client behind the fence, so
 * the audit log (user agent "election-candidate/<identity>") shows who
 * wrote when. SIGTERM/SIGINT release the lease and exit 0.
 * --die-with-parent makes the kernel kill it if the test that started it
 * dies, so a failed test leaves no candidate behind.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <uv.h>

#include "steadfast/client.h"
#include "steadfast/election.h"
#include "steadfast/log.h"
#include "steadfast/time.h"

typedef struct cand {
	uv_loop_t *loop;
	sf_kube_config *cfg;
	sf_kube_client *ctl;
	sf_elect *e;
	uv_signal_t sigterm, sigint;
	uv_timer_t work, health, ready_delay;
	int print_renews;
	int64_t renew_seen;
	const char *ns, *work_cm;
	long work_ms, ready_delay_ms;
	int active;
	uint64_t term, pending_term;
	char pending_rv[64];
	unsigned long writes;
	int write_inflight;
	int last_health; /* -1 unknown, 0 ok, 1 fail */
	int quitting;
	int closed_parts;
} cand;

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	printf("%.3f %s\n", (double)sf_mono_ns() / 1e6, line);
	fflush(stdout);
}

static double last_renew_ms(const cand *c)
{
	sf_elect_stats st;
	sf_elect_stats_get(c->e, &st);
	return (double)st.last_renew_mono_ns / 1e6;
}

/* ---- leader work ---- */

static void work_tick(uv_timer_t *t);

static void on_work_done(void *ud, const sf_kube_result *r)
{
	cand *c = ud;
	c->write_inflight = 0;
	c->writes++;
	char rs[256];
	if (sf_kube_ok(r)) {
		out("WRITE ok n=%lu", c->writes);
	} else if (r->err == -EPERM) {
		out("WRITE refused n=%lu", c->writes);
	} else if (r->err == -ECANCELED) {
		out("WRITE cancelled n=%lu", c->writes);
	} else if (sf_kube_is_not_found(r) && !c->quitting) {
		/* first write: create the ConfigMap (also through the fence) */
		char body[512];
		snprintf(
		    body, sizeof(body),
		    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},"
		    "\"data\":{\"writer\":\"%s\"}}",
		    c->work_cm, sf_elect_identity(c->e));
		if (sf_kube_create(c->ctl, &SF_GVR_CONFIGMAPS, c->ns, body, on_work_done, c,
		                   NULL) == 0)
			c->write_inflight = 1;
		return;
	} else {
		out("WRITE error n=%lu err=%s", c->writes, sf_kube_result_str(r, rs, sizeof(rs)));
	}
}

static void work_tick(uv_timer_t *t)
{
	cand *c = t->data;
	if (!c->active || c->write_inflight || c->quitting)
		return;
	char body[512];
	snprintf(body, sizeof(body), "{\"data\":{\"writer\":\"%s\",\"n\":\"%lu\"}}",
	         sf_elect_identity(c->e), c->writes);
	if (sf_kube_patch(c->ctl, &SF_GVR_CONFIGMAPS, c->ns, c->work_cm, NULL, SF_PATCH_MERGE, body,
	                  NULL, 0, on_work_done, c, NULL) == 0)
		c->write_inflight = 1;
}

/* ---- election callbacks ---- */

static void on_ready_delay(uv_timer_t *t)
{
	cand *c = t->data;
	sf_elect_ready_done(c->e, c->pending_term, 0);
}

static void ready(void *ud, sf_elect *e, uint64_t term, const char *rv)
{
	cand *c = ud;
	out("READY term=%llu rv=%s", (unsigned long long)term, rv);
	if (c->ready_delay_ms > 0) {
		c->pending_term = term;
		uv_timer_start(&c->ready_delay, on_ready_delay, (uint64_t)c->ready_delay_ms, 0);
		return;
	}
	sf_elect_ready_done(e, term, 0);
}

static void started(void *ud, uint64_t term)
{
	cand *c = ud;
	c->active = 1;
	c->term = term;
	out("LEADING term=%llu last_renew=%.3f", (unsigned long long)term, last_renew_ms(c));
	if (c->work_cm)
		uv_timer_start(&c->work, work_tick, 0, (uint64_t)c->work_ms);
}

static void stopped(void *ud, uint64_t term, const char *reason)
{
	cand *c = ud;
	c->active = 0;
	uv_timer_stop(&c->work);
	out("STOPPED term=%llu last_renew=%.3f reason=%s", (unsigned long long)term,
	    last_renew_ms(c), reason);
}

static void new_leader(void *ud, const char *id)
{
	(void)ud;
	out("NEW_LEADER leader=%s", id);
}

static void health_tick(uv_timer_t *t)
{
	cand *c = t->data;
	char msg[512];
	if (c->print_renews) {
		sf_elect_stats st;
		sf_elect_stats_get(c->e, &st);
		if (st.last_renew_mono_ns != c->renew_seen) {
			c->renew_seen = st.last_renew_mono_ns;
			out("RENEWED at=%.3f", (double)st.last_renew_mono_ns / 1e6);
		}
	}
	int bad = sf_elect_healthz(c->e, msg, sizeof(msg)) != 0;
	if (bad != c->last_health) {
		c->last_health = bad;
		out("HEALTH %s msg=%s", bad ? "fail" : "ok", msg);
	}
}

/* ---- shutdown ---- */

static void on_part_closed(void *ud)
{
	cand *c = ud;
	c->closed_parts++;
}

static void on_handle_closed(uv_handle_t *h)
{
	on_part_closed(h->data);
}

static void shutdown_all(cand *c)
{
	uv_timer_stop(&c->work);
	uv_timer_stop(&c->health);
	uv_timer_stop(&c->ready_delay);
	sf_elect_close(c->e, on_part_closed, c);
	sf_kube_client_close(c->ctl, on_part_closed, c);
	uv_handle_t *hs[] = {(uv_handle_t *)&c->sigterm, (uv_handle_t *)&c->sigint,
	                     (uv_handle_t *)&c->work, (uv_handle_t *)&c->health,
	                     (uv_handle_t *)&c->ready_delay};
	for (size_t i = 0; i < sizeof(hs) / sizeof(hs[0]); i++)
		uv_close(hs[i], on_handle_closed);
}

static void on_released(void *ud, int err)
{
	cand *c = ud;
	out("RELEASED err=%d", err);
	shutdown_all(c);
}

static void on_signal(uv_signal_t *s, int signum)
{
	cand *c = s->data;
	(void)signum;
	if (c->quitting)
		return;
	c->quitting = 1;
	if (sf_elect_release(c->e, on_released, c) != 0)
		shutdown_all(c);
}

/* ---- main ---- */

static void usage(void)
{
	fprintf(
	    stderr,
	    "usage: election-candidate --namespace NS --name LEASE [--kubeconfig PATH]\n"
	    "  [--identity ID] [--lease-duration MS] [--renew-deadline MS] [--retry-period MS]\n"
	    "  [--api-unreachable MS] [--work-configmap NAME] [--work-interval MS]\n"
	    "  [--ready-delay MS] [--log-level LEVEL] [--print-renews] [--die-with-parent]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"kubeconfig", required_argument, 0, 'k'},
	    {"namespace", required_argument, 0, 'n'},
	    {"name", required_argument, 0, 'l'},
	    {"identity", required_argument, 0, 'i'},
	    {"lease-duration", required_argument, 0, 'd'},
	    {"renew-deadline", required_argument, 0, 'r'},
	    {"retry-period", required_argument, 0, 'p'},
	    {"api-unreachable", required_argument, 0, 'u'},
	    {"work-configmap", required_argument, 0, 'w'},
	    {"work-interval", required_argument, 0, 'W'},
	    {"ready-delay", required_argument, 0, 'R'},
	    {"log-level", required_argument, 0, 'v'},
	    {"print-renews", no_argument, 0, 'P'},
	    {"die-with-parent", no_argument, 0, 'D'},
	    {0, 0, 0, 0},
	};
	const char *kubeconfig = NULL, *identity = NULL;
	sf_elect_opts eo = {0};
	cand c = {.work_ms = 100, .last_health = -1};
	int ch;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'k': kubeconfig = optarg; break;
		case 'n': eo.ns = optarg; break;
		case 'l': eo.name = optarg; break;
		case 'i': identity = optarg; break;
		case 'd': eo.lease_duration_ms = atol(optarg); break;
		case 'r': eo.renew_deadline_ms = atol(optarg); break;
		case 'p': eo.retry_period_ms = atol(optarg); break;
		case 'u': eo.api_unreachable_ms = atol(optarg); break;
		case 'w': c.work_cm = optarg; break;
		case 'W': c.work_ms = atol(optarg); break;
		case 'R': c.ready_delay_ms = atol(optarg); break;
		case 'P': c.print_renews = 1; break;
		case 'D': prctl(PR_SET_PDEATHSIG, SIGKILL); break;
		case 'v': {
			int lvl;
			if (sf_log_parse_level(optarg, &lvl) != 0) {
				usage();
				return 2;
			}
			sf_log_set_level(lvl);
			break;
		}
		default: usage(); return 2;
		}
	}
	if (!eo.ns || !eo.name) {
		usage();
		return 2;
	}
	c.ns = eo.ns;
	signal(SIGPIPE, SIG_IGN);
	uv_loop_t loop;
	uv_loop_init(&loop);
	c.loop = &loop;
	char err[512];
	if (sf_kube_config_load(kubeconfig, NULL, &c.cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "election-candidate: %s\n", err);
		return 1;
	}
	char idbuf[300];
	if (!identity) {
		if (sf_elect_default_identity(idbuf, sizeof(idbuf)) != 0)
			return 1;
		identity = idbuf;
	}
	char ua[400];
	snprintf(ua, sizeof(ua), "election-candidate/%s", identity);
	sf_kube_client_opts co = {.user_agent = ua};
	if (sf_kube_client_new(&loop, c.cfg, &co, &c.ctl) != 0) {
		fprintf(stderr, "election-candidate: cannot create the client\n");
		return 1;
	}
	eo.identity = identity;
	eo.user_agent = ua;
	eo.cb = (sf_elect_callbacks){.ready = ready,
	                             .on_started_leading = started,
	                             .on_stopped_leading = stopped,
	                             .on_new_leader = new_leader,
	                             .ud = &c};
	int rc = sf_elect_new(&loop, c.cfg, &eo, &c.e, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "election-candidate: %s\n", err);
		return 2;
	}
	sf_elect_fence_attach(c.e, c.ctl);
	uv_signal_init(&loop, &c.sigterm);
	uv_signal_init(&loop, &c.sigint);
	c.sigterm.data = c.sigint.data = &c;
	uv_signal_start(&c.sigterm, on_signal, SIGTERM);
	uv_signal_start(&c.sigint, on_signal, SIGINT);
	uv_timer_init(&loop, &c.work);
	uv_timer_init(&loop, &c.health);
	uv_timer_init(&loop, &c.ready_delay);
	c.work.data = c.health.data = c.ready_delay.data = &c;
	uv_timer_start(&c.health, health_tick, 0, c.print_renews ? 5 : 100);
	out("START id=%s pid=%d", identity, (int)getpid());
	sf_elect_start(c.e);
	uv_run(&loop, UV_RUN_DEFAULT);
	sf_kube_config_free(c.cfg);
	rc = uv_loop_close(&loop);
	out("EXIT");
	return rc == 0 ? 0 : 3;
}
