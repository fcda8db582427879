/*
 * test_admcheck.c - the start-up look at the installed admission
 * (admcheck.h) against the scripted server: with every binding present
 * as the config asks, one summary line says they agree; closed while
 * its reads are in flight, the check cancels them, logs nothing, and
 * frees itself before its callback.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "fakesrv.h"
#include "steadfast/admcheck.h"
#include "steadfast/awconfig.h"
#include "steadfast/log.h"
#include "tl.h"

typedef struct fx {
	uv_loop_t loop;
	fakesrv *srv;
	sf_kube_config *cfg;
	sf_kube_client *c;
	sf_aw_config ac;
	fake_resp script[3];
} fx;

static char lines[4096];

static void capture(sf_log_level level, const char *line, void *ud)
{
	(void)level;
	(void)ud;
	if (strstr(line, "\"logger\":\"admission\"") &&
	    strlen(lines) + strlen(line) + 2 < sizeof(lines)) {
		strcat(lines, line);
		strcat(lines, "\n");
	}
}

#define OK_RESP "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"

static void fx_open(fx *f, int hang)
{
	memset(f, 0, sizeof(*f));
	lines[0] = 0;
	sf_log_set_sink(capture, NULL);
	for (int i = 0; i < 3; i++)
		f->script[i] = (fake_resp){hang ? "" : OK_RESP, hang};
	cr_assert_eq(uv_loop_init(&f->loop), 0);
	f->srv = fakesrv_start(&f->loop, f->script, 3);
	sf_kube_client_opts co = {.http1_only = 1};
	f->c = tl_fakesrv_client(&f->loop, f->srv, &co, &f->cfg);
	sf_awcfg_defaults(&f->ac);
	f->ac.webhooks_enabled = 1;
	f->ac.user_rbac_admission_check = 1;
}

static void set_flag(void *ud)
{
	*(int *)ud = 1;
}

static void fx_close(fx *f)
{
	int cl = 0;
	sf_kube_client_close(f->c, set_flag, &cl);
	fakesrv_stop(f->srv);
	cr_assert_eq(tl_run_until(&f->loop, &cl, 5000), 0);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	sf_kube_config_free(f->cfg);
	cr_assert_eq(uv_loop_close(&f->loop), 0);
	sf_log_set_sink(NULL, NULL);
}

static int requests(void *ud)
{
	fx *f = ud;
	return fakesrv_requests(f->srv) >= 3;
}

static int summary(void *ud)
{
	(void)ud;
	return strstr(lines, "admission agrees with the config") != NULL;
}

Test(admcheck, bindings_as_the_config_asks_agree)
{
	fx f;
	fx_open(&f, 0);
	sf_admcheck *a = NULL;
	cr_assert_eq(sf_admcheck_start(f.c, &f.ac, &a), 0);
	cr_assert_eq(tl_run_until_fn(&f.loop, summary, NULL, 5000), 0, "%s", lines);
	int closed = 0;
	sf_admcheck_close(a, set_flag, &closed);
	cr_assert(closed, "a finished check closes at once");
	fx_close(&f);
}

Test(admcheck, closing_cancels_the_reads_and_logs_nothing)
{
	fx f;
	fx_open(&f, 1);
	sf_admcheck *a = NULL;
	cr_assert_eq(sf_admcheck_start(f.c, &f.ac, &a), 0);
	cr_assert_eq(tl_run_until_fn(&f.loop, requests, &f, 5000), 0);
	int closed = 0;
	sf_admcheck_close(a, set_flag, &closed);
	cr_assert_eq(closed, 0, "closed with reads in flight");
	cr_assert_eq(tl_run_until(&f.loop, &closed, 5000), 0);
	cr_assert_eq(lines[0], 0, "%s", lines);
	fx_close(&f);
}

Test(admcheck, closing_none_calls_back)
{
	int closed = 0;
	sf_admcheck_close(NULL, set_flag, &closed);
	cr_assert(closed);
}
