/*
 * syncer.c - the loop part of a leader-side periodic syncer (syncer.h).
 *
 * What the admission parameters and the slack ClusterQueue had each
 * written for themselves: a one-shot timer that starts a pass when the
 * syncer runs and no pass is under way, a pause that stops the timer and
 * cancels the request in flight, a close that frees only once the timer's
 * close callback has run and the cancelled answer has come back, and the
 * passes-by-outcome counter. It lives beside the client because it is
 * made of the client's calls and nothing of what the passes are about.
 */
#include "steadfast/syncer.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

static void on_timer(uv_timer_t *t)
{
	sf_syncer *s = t->data;
	if (!s->running || s->closing || s->step != 0)
		return;
	s->pass(s->ud);
}

void sf_syncer_init(uv_loop_t *loop, sf_syncer *s, void (*pass)(void *ud),
                    void (*release)(void *ud), void *ud)
{
	s->call = NULL;
	s->step = 0;
	s->running = s->closing = s->timer_closed = 0;
	s->pass = pass;
	s->release = release;
	s->ud = ud;
	s->close_cb = NULL;
	s->close_ud = NULL;
	uv_timer_init(loop, &s->timer);
	s->timer.data = s;
}

void sf_syncer_schedule(sf_syncer *s, long ms)
{
	if (s->running && !s->closing)
		uv_timer_start(&s->timer, on_timer, (uint64_t)ms, 0);
}

void sf_syncer_within(sf_syncer *s, long ms)
{
	if (!uv_is_active((uv_handle_t *)&s->timer) ||
	    uv_timer_get_due_in(&s->timer) > (uint64_t)ms)
		sf_syncer_schedule(s, ms);
}

int sf_syncer_run(sf_syncer *s)
{
	if (s->running || s->closing)
		return 0;
	s->running = 1;
	if (s->step == 0)
		sf_syncer_schedule(s, 0);
	return 1;
}

void sf_syncer_pause(sf_syncer *s)
{
	if (!s->running)
		return;
	s->running = 0;
	uv_timer_stop(&s->timer);
	if (s->call)
		sf_kube_call_cancel(s->call);
}

static void maybe_released(sf_syncer *s)
{
	if (!s->closing || !s->timer_closed || s->call)
		return;
	void (*cb)(void *) = s->close_cb;
	void *ud = s->close_ud;
	s->release(s->ud); /* frees s with its owner */
	if (cb)
		cb(ud);
}

int sf_syncer_answer(sf_syncer *s, const sf_kube_result *res)
{
	s->call = NULL;
	if (res->err == -ECANCELED || s->closing || !s->running) {
		s->step = 0;
		/* paused and run again before the cancelled answer came */
		sf_syncer_schedule(s, 0);
		maybe_released(s);
		return 0;
	}
	return 1;
}

static void timer_closed(uv_handle_t *h)
{
	sf_syncer *s = h->data;
	s->timer_closed = 1;
	maybe_released(s);
}

void sf_syncer_close(sf_syncer *s, void (*cb)(void *ud), void *ud)
{
	sf_syncer_pause(s);
	s->closing = 1;
	s->close_cb = cb;
	s->close_ud = ud;
	uv_close((uv_handle_t *)&s->timer, timer_closed);
}

int sf_syncer_metrics_write(const sf_syncer_stats *st, sf_prom *prom, const char *name,
                            const char *help)
{
	static const sf_syncer_stats zero;
	if (!st)
		st = &zero;
	sf_prom_family *f = sf_prom_family_get(prom, name, SF_PROM_COUNTER, help);
	const struct {
		const char *r;
		unsigned long long v;
	} rs[] = {{"unchanged", st->unchanged},
	          {"updated", st->updated},
	          {"absent", st->absent},
	          {"error", st->errors}};
	int rc = 0;
	for (size_t i = 0; i < sizeof(rs) / sizeof(rs[0]); i++)
		rc = sf_prom_add_u(f, (const char *[]){"result", rs[i].r, NULL}, rs[i].v);
	return rc;
}
