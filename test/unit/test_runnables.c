/*
 * test_runnables.c - the manager's runnables (runnables.h) with fakes that
 * write down what is done to them: the process start starts only the
 * ones that are not leader-only, once; leading starts and stops the
 * leader-only ones in the order added, and only on a change; closing
 * closes each once and calls back after the last close has, at once when
 * every close calls back at once, later when one calls back later.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "steadfast/runnables.h"

static char trail[512];

typedef struct fake {
	const char *name;
	void (*cb)(void *ud); /* a close held until the test lets it go */
	void *ud;
	int hold;
} fake;

static void note(const char *what, const fake *f)
{
	size_t n = strlen(trail);
	snprintf(trail + n, sizeof(trail) - n, "%s%s:%s", n ? " " : "", what, f->name);
}

static void f_start(void *self)
{
	note("start", self);
}

static void f_stop(void *self)
{
	note("stop", self);
}

static void f_close(void *self, void (*cb)(void *ud), void *ud)
{
	fake *f = self;
	note("close", f);
	if (f->hold) {
		f->cb = cb;
		f->ud = ud;
		return;
	}
	if (cb)
		cb(ud);
}

static void set_flag(void *ud)
{
	*(int *)ud = 1;
}

static sf_runnables *group(fake *a, fake *b, fake *c)
{
	sf_runnables *g = NULL;
	cr_assert_eq(sf_runnables_new(&g), 0);
	cr_assert_eq(
	    sf_runnables_add(
	        g, &(sf_runnable){.self = a, .start = f_start, .stop = f_stop, .close = f_close}),
	    0);
	cr_assert_eq(sf_runnables_add(g, &(sf_runnable){.leader_only = 1,
	                                                .self = b,
	                                                .start = f_start,
	                                                .stop = f_stop,
	                                                .close = f_close}),
	             0);
	/* one the group does not close, with nothing to start */
	cr_assert_eq(
	    sf_runnables_add(g, &(sf_runnable){.leader_only = 1, .self = c, .stop = f_stop}), 0);
	trail[0] = 0;
	return g;
}

Test(runnables, starts_and_stops_follow_the_process_and_leadership)
{
	fake a = {.name = "a"}, b = {.name = "b"}, c = {.name = "c"};
	sf_runnables *g = group(&a, &b, &c);
	sf_runnables_unlead(g); /* not leading: nothing */
	sf_runnables_start(g);
	sf_runnables_start(g);
	cr_assert_str_eq(trail, "start:a");
	trail[0] = 0;
	sf_runnables_lead(g);
	sf_runnables_lead(g);
	cr_assert_str_eq(trail, "start:b");
	trail[0] = 0;
	sf_runnables_unlead(g);
	sf_runnables_unlead(g);
	cr_assert_str_eq(trail, "stop:b stop:c");
	trail[0] = 0;
	sf_runnables_lead(g);
	cr_assert_str_eq(trail, "start:b");
	trail[0] = 0;
	int closed = 0;
	sf_runnables_close(g, set_flag, &closed);
	cr_assert_str_eq(trail, "close:a close:b");
	cr_assert(closed, "every close called back at once");
}

Test(runnables, close_calls_back_after_the_last_close)
{
	fake a = {.name = "a"}, b = {.name = "b", .hold = 1}, c = {.name = "c"};
	sf_runnables *g = group(&a, &b, &c);
	int closed = 0;
	sf_runnables_close(g, set_flag, &closed);
	cr_assert_str_eq(trail, "close:a close:b");
	cr_assert_eq(closed, 0, "called back before b closed");
	cr_assert_not_null(b.cb);
	b.cb(b.ud);
	cr_assert(closed);
}

Test(runnables, closing_none_calls_back)
{
	int closed = 0;
	sf_runnables_close(NULL, set_flag, &closed);
	cr_assert(closed);
	sf_runnables *g = NULL;
	cr_assert_eq(sf_runnables_new(&g), 0);
	closed = 0;
	sf_runnables_close(g, set_flag, &closed);
	cr_assert(closed);
}
