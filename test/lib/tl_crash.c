/*
 * tl_crash.c - a crash at every write: the machinery test_crash.c and
 * test_kueue_crash.c share (see tl_crash.h).
 */
#include "tl_crash.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "steadfast/awapi.h"
#include "steadfast/buf.h"
#include "steadfast/client.h"
#include "steadfast/json.h"
#include "steadfast/time.h"

const char *const TL_CRASH_VIEW_NAME[TL_CRASH_NVIEWS] = {"a: none", "b: stale", "c: coalesced"};
const char *const TL_CRASH_VIEW_ENV[TL_CRASH_NVIEWS][3] = {
    {NULL},
    {"STEADFAST_FAULT_COMPONENT_WATCH_DELAY_MS=8000", "STEADFAST_FAULT_POD_WATCH_DELAY_MS=8000",
     NULL},
    {"STEADFAST_FAULT_WATCH_COALESCE_MS=3000", NULL},
};
const long TL_CRASH_VIEW_WINDOW_MS[TL_CRASH_NVIEWS] = {0, 9000, 4000};

static int is(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

/* ---- replicas ---- */

tl_ctl *tl_crash_replica(tl_kube *k, const char *ns, const char *lease, const char *id,
                         const char *config, int faults, const char *const *env)
{
	tl_ctl_opts o = {.ns = ns,
	                 .lease = lease,
	                 .id = id,
	                 .lease_ms = 2000,
	                 .renew_ms = 1400,
	                 .retry_ms = 200,
	                 .config = config,
	                 .env = env,
	                 .faults = faults};
	return tl_ctl_start(&k->loop, &o);
}

/* The sum of the samples of series `name` (every label set) in a /metrics
 * body, or -1 when there is none. */
static double metric_sum(const char *body, const char *name)
{
	double sum = -1;
	size_t nl = strlen(name);
	for (const char *l = body; l && *l;) {
		if (strncmp(l, name, nl) == 0 && (l[nl] == '{' || l[nl] == ' ')) {
			const char *sp = strchr(l, ' ');
			const char *eol = strchr(l, '\n');
			if (sp && (!eol || sp < eol))
				sum = (sum < 0 ? 0 : sum) + strtod(sp + 1, NULL);
		}
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	return sum;
}

static int never(void *ud)
{
	(void)ud;
	return 0;
}

void tl_crash_run_for(tl_kube *k, long ms)
{
	if (ms > 0)
		tl_run_until_fn(&k->loop, never, NULL, ms);
}

int tl_crash_wait_quiet(tl_kube *k, tl_ctl *c, int port, int need_reconcile, int64_t deadline)
{
	int quiet = 0;
	while (sf_mono_ns() < deadline) {
		if (!tl_ctl_alive(c))
			return 0;
		sf_buf b;
		sf_buf_init(&b, 0);
		long st = tl_ctl_http_try(port, "/metrics", &b);
		int q = 0;
		if (st == 200 && b.data)
			q = metric_sum(b.data, "workqueue_depth") == 0 &&
			    metric_sum(b.data, "controller_runtime_active_workers") == 0 &&
			    (!need_reconcile ||
			     metric_sum(b.data, "controller_runtime_reconcile_total") > 0);
		sf_buf_free(&b);
		quiet = q ? quiet + 1 : 0;
		if (quiet >= 2)
			return 1;
		tl_crash_run_for(k, 200);
	}
	return -1;
}

/* ---- the audit log ---- */

static int counted(const tl_audit_req *e)
{
	return e->who[0] && tl_audit_is_write(e) &&
	       (is(e->resource, "appwrappers") || is(e->resource, "jobs") ||
	        is(e->resource, "pods"));
}

static int lease_write(const tl_audit_req *e, const char *lease)
{
	return tl_audit_is_write(e) && is(e->resource, "leases") && is(e->name, lease);
}

static void fmt_us(long long us, char *buf, size_t n)
{
	time_t s = (time_t)(us / 1000000);
	struct tm tm;
	gmtime_r(&s, &tm);
	snprintf(buf, n, "%02d:%02d:%02d.%06lld", tm.tm_hour, tm.tm_min, tm.tm_sec, us % 1000000);
}

/* Oracle (v) for replica `id`: none of its writes was received before its
 * first acknowledged Lease write. */
static void check_acquired(const tl_audit_req *v, size_t n, const char *lease, const char *id,
                           tl_crash_tally *t)
{
	const tl_audit_req *acq = NULL;
	for (size_t i = 0; i < n && !acq; i++)
		if (is(v[i].who, id) && lease_write(&v[i], lease))
			acq = &v[i];
	for (size_t i = 0; i < n && !t->lead_bad[0]; i++) {
		if (!is(v[i].who, id) || !tl_audit_is_write(&v[i]) || is(v[i].resource, "leases"))
			continue;
		char a[32], b[32] = "never";
		fmt_us(v[i].recv_us, a, sizeof(a));
		if (acq)
			fmt_us(acq->done_us, b, sizeof(b));
		if (!acq || v[i].recv_us < acq->done_us)
			snprintf(
			    t->lead_bad, sizeof(t->lead_bad),
			    "%s's %s %s%s%s %s received at %s, before it acquired the Lease (%s)",
			    id, v[i].verb, v[i].resource, v[i].sub[0] ? "/" : "", v[i].sub,
			    v[i].name, a, b);
	}
}

void tl_crash_tally_audit(const tl_audit_req *v, size_t n, const char *lease, const char *a,
                          const char *b, tl_crash_tally *t)
{
	long long first_b = 0;
	for (size_t i = 0; i < n; i++) {
		const tl_audit_req *e = &v[i];
		if (b && is(e->who, b) && tl_audit_is_write(e) && !is(e->resource, "leases") &&
		    (!first_b || e->recv_us < first_b))
			first_b = e->recv_us;
		if (!counted(e))
			continue;
		if (t->writes < TL_CRASH_MAX_W)
			snprintf(t->seq[t->writes], sizeof(t->seq[0]), "%s %s%s%s", e->verb,
			         e->resource, e->sub[0] ? "/" : "", e->sub);
		t->writes++;
		t->by_a += is(e->who, a);
		t->by_b += b && is(e->who, b);
		if (is(e->resource, "jobs") && is(e->verb, "create"))
			t->job_creates++;
		if (is(e->resource, "jobs") && is(e->verb, "delete"))
			t->job_deletes++;
		if (is(e->resource, "pods") && is(e->verb, "delete"))
			t->pod_deletes++;
	}
	t->b_first = first_b;
	for (size_t i = 0; i < n; i++) {
		if (b && is(v[i].who, b) && lease_write(&v[i], lease) && !t->b_acquired)
			t->b_acquired = v[i].done_us;
		if (is(v[i].who, a) && tl_audit_is_write(&v[i]) && !is(v[i].resource, "leases") &&
		    v[i].done_us > t->a_last)
			t->a_last = v[i].done_us;
	}
	check_acquired(v, n, lease, a, t);
	if (b)
		check_acquired(v, n, lease, b, t);
	for (size_t i = 0; first_b && i < n && !t->lead_bad[0]; i++) {
		const tl_audit_req *e = &v[i];
		if (!is(e->who, a) || !tl_audit_is_write(e) || e->done_us <= first_b)
			continue;
		char x[32], y[32];
		fmt_us(e->done_us, x, sizeof(x));
		fmt_us(first_b, y, sizeof(y));
		snprintf(t->lead_bad, sizeof(t->lead_bad),
		         "%s's %s %s%s%s %s completed at %s, after %s's first write (%s)", a,
		         e->verb, e->resource, e->sub[0] ? "/" : "", e->sub, e->name, x, b, y);
	}
}

/* ---- a cell ---- */

void tl_crash_fail(tl_crash_cell *c, const char *fmt, ...)
{
	size_t l = strlen(c->fails);
	if (l && l + 2 < sizeof(c->fails)) {
		memcpy(c->fails + l, "; ", 3);
		l += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->fails + l, sizeof(c->fails) - l, fmt, ap);
	va_end(ap);
}

void tl_crash_check_replicas(tl_kube *k, tl_ctl *a, tl_ctl *b, int kth, tl_crash_cell *c)
{
	long at = tl_ctl_wait_log(&k->loop, a, "fault injection: killing the process", 0, 0);
	c->crashed = at >= 0;
	if (c->crashed) {
		const char *line = tl_ctl_line(a, (size_t)at);
		const char *w = strstr(line, "\"what\":\"");
		char want[32];
		snprintf(want, sizeof(want), "\"write\":\"%d\"", kth);
		if (w)
			sscanf(w + 8, "%23[^\"]", c->what);
		if (!strstr(line, want))
			tl_crash_fail(c, "A was killed at another write than %d: %s", kth, line);
	} else if (!tl_ctl_alive(a)) {
		tl_crash_fail(c, "A died without the fault point");
		tl_ctl_dump(a, 20);
	}
	if (!tl_ctl_alive(b)) {
		tl_crash_fail(c, "B died");
		tl_ctl_dump(b, 20);
	}
}

void tl_crash_compare(const tl_crash_tally *t, const tl_crash_tally *clean, tl_crash_cell *c)
{
	if (clean) {
		if (!is(t->outcome, clean->outcome))
			tl_crash_fail(c, "(i) outcome %s, clean run %s", t->outcome,
			              clean->outcome);
		if (t->job_creates != clean->job_creates)
			tl_crash_fail(c, "(ii) %d Job creates, clean run %d", t->job_creates,
			              clean->job_creates);
		if (t->job_deletes != clean->job_deletes)
			tl_crash_fail(c, "(iii) %d Job deletes, clean run %d", t->job_deletes,
			              clean->job_deletes);
		if (t->pod_deletes > clean->pod_deletes)
			tl_crash_fail(c, "(iii) %d pod deletes, clean run %d", t->pod_deletes,
			              clean->pod_deletes);
	}
	if (t->lead_bad[0])
		tl_crash_fail(c, "(v) %s", t->lead_bad);
}

/* ---- oracle (iv) ---- */

typedef struct qlist {
	tl_crash_quota *q;
	char at[200];
	sf_buf bad;
} qlist;

static int qlist_item(void *ud, sf_obj *item)
{
	qlist *ql = ud;
	char ph[32] = "";
	sf_jv_str(sf_jv_path(sf_obj_root(item), "status.phase"), ph, sizeof(ph));
	if (!is(ph, "Succeeded") && !is(ph, "Failed")) {
		char one[400], owner[64] = "", made[32] = "", del[32] = "";
		sf_jv root = sf_obj_root(item);
		sf_jv_str(sf_jv_path(root, "metadata.ownerReferences[0].uid"), owner,
		          sizeof(owner));
		sf_jv_str(sf_jv_path(root, "metadata.creationTimestamp"), made, sizeof(made));
		sf_jv_str(sf_jv_path(root, "metadata.deletionTimestamp"), del, sizeof(del));
		snprintf(one, sizeof(one), "%s%s (%s, Job %.8s, created %s%s%s)",
		         ql->bad.len ? ", " : "", item->name, ph[0] ? ph : "no phase", owner, made,
		         del[0] ? ", deleted " : "", del);
		sf_buf_append(&ql->bad, one, strlen(one));
	}
	sf_obj_unref(item);
	return 0;
}

static void qlist_done(void *ud, const sf_kube_result *res)
{
	qlist *ql = ud;
	tl_crash_quota *q = ql->q;
	q->pending--;
	if (!q->bad[0]) {
		if (!sf_kube_ok(res))
			snprintf(q->bad, sizeof(q->bad), "the live pod LIST at %s answered %ld",
			         ql->at, res->http_status);
		else if (ql->bad.len)
			snprintf(q->bad, sizeof(q->bad), "%s while pods remained: %.*s%s%s", ql->at,
			         (int)ql->bad.len, ql->bad.data, q->note[0] ? " " : "", q->note);
	}
	sf_buf_free(&ql->bad);
	free(ql);
}

void tl_crash_quota_list(tl_crash_quota *q, const char *at)
{
	if (q->closing)
		return;
	qlist *ql = calloc(1, sizeof(*ql));
	cr_assert(ql);
	ql->q = q;
	char ts[40];
	sf_time_rfc3339(sf_wall_ns(), ts, sizeof(ts));
	snprintf(ql->at, sizeof(ql->at), "%s (seen %s)", at, ts);
	sf_buf_init(&ql->bad, 0);
	char sel[128];
	snprintf(sel, sizeof(sel), "%s=%s", SF_AW_LABEL, q->aw);
	sf_kube_list_opts lo = {.label_selector = sel};
	if (sf_kube_list(q->k->client, &SF_GVR_PODS, q->ns, &lo, qlist_item, qlist_done, ql,
	                 NULL) == 0)
		q->pending++;
	else {
		sf_buf_free(&ql->bad);
		free(ql);
		snprintf(q->bad, sizeof(q->bad), "could not send a live pod LIST");
	}
}

int tl_crash_quota_done(void *ud)
{
	return ((tl_crash_quota *)ud)->pending == 0;
}

/* ---- the matrix ---- */

int tl_crash_full_matrix(void)
{
	const char *m = getenv("STEADFAST_CRASH_MATRIX");
	return m && is(m, "full");
}

long tl_crash_cell_seconds(long dflt)
{
	const char *v = getenv("STEADFAST_CRASH_CELL_SECONDS");
	return v && *v ? atol(v) : dflt;
}

/* STEADFAST_CRASH_CELLS="s2:18b,s3:10c": only these cells (lifecycle tag,
 * write k, view), to reproduce one; -1 when it is not set, else whether
 * cell (tag, k, p) is among them (k = 0: any cell of tag). */
static int selected(const char *tag, int k, int p)
{
	const char *v = getenv("STEADFAST_CRASH_CELLS");
	if (!v || !*v)
		return -1;
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", v);
	char *save = NULL;
	for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		char tg[8] = "", view = 0;
		int kk = 0;
		if (sscanf(t, "%7[^:]:%d%c", tg, &kk, &view) == 3 && is(tg, tag) &&
		    (k == 0 || (kk == k && view == "abc"[p])))
			return 1;
	}
	return 0;
}

/* $RESULTS, else test-results next to $STEADFAST_BIN (the build
 * directory), created if needed. */
static const char *results_dir(char *buf, size_t n)
{
	const char *res = getenv("RESULTS");
	if (res && *res) {
		snprintf(buf, n, "%s", res);
	} else {
		const char *bin = getenv("STEADFAST_BIN");
		cr_assert(bin && *bin, "STEADFAST_BIN is not set");
		snprintf(buf, n, "%s", bin);
		char *slash = strrchr(buf, '/');
		snprintf(slash ? slash + 1 : buf, n - (size_t)(slash ? slash + 1 - buf : 0),
		         "test-results");
	}
	mkdir(buf, 0755);
	return buf;
}

/* The 1-based index of the clean run's nth write `w` (0: none). */
static int nth_write(const tl_crash_tally *t, const char *w, int nth)
{
	for (int i = 0; i < t->writes && i < TL_CRASH_MAX_W; i++)
		if (is(t->seq[i], w) && --nth == 0)
			return i + 1;
	return 0;
}

/* The oracles a failed cell names, "(ii, v)", from its fails text. */
static void tags(const tl_crash_cell *c, char *buf, size_t n)
{
	static const char *const t[] = {"(i) ", "(ii) ",  "(iii) ", "(iv) ",
	                                "(v) ", "driver", "A ",     "B "};
	static const char *const name[] = {"i", "ii", "iii", "iv", "v", "driver", "A", "B"};
	size_t l = 0;
	buf[0] = 0;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		const char *f = c->fails;
		int hit = 0;
		while ((f = strstr(f, t[i])) && !hit) {
			hit = f == c->fails || (f >= c->fails + 2 && f[-2] == ';');
			f++;
		}
		if (hit && l + 12 < n)
			l += (size_t)snprintf(buf + l, n - l, "%s%s", l ? ", " : "", name[i]);
	}
}

typedef tl_crash_cell cell_row[TL_CRASH_NVIEWS];

/* Writes shape s's section and assembles the book's file from the
 * sections there; prints the section to stderr. */
static void report(const tl_crash_book *book, const tl_crash_shape *s, const tl_crash_tally *clean,
                   cell_row *cells, double secs)
{
	char dir[512], sec[640], path[700], tmp[720];
	results_dir(dir, sizeof(dir));
	snprintf(sec, sizeof(sec), "%s/%s", dir, book->parts);
	mkdir(sec, 0755);
	sf_buf b;
	sf_buf_init(&b, 0);
	char line[2048], when[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
	int ran = 0, failed = 0;
	for (int k = 1; k <= clean->writes; k++)
		for (int p = 0; p < TL_CRASH_NVIEWS; p++) {
			ran += cells[k][p].done;
			failed += cells[k][p].done && !cells[k][p].pass;
		}
	snprintf(line, sizeof(line),
	         "\n## %s %s\n\n%s, %s: %d cells, %d failed, %.0f s. Clean run: W = %d, outcome "
	         "%s, %d Job create(s), %d Job delete(s), %d pod delete(s).\n\n"
	         "| k | the clean run's write k | %s | %s | %s |\n|---:|---|---|---|---|\n",
	         s->tag, s->id,
	         selected(s->tag, 0, 0) == 1 ? "selected cells"
	         : tl_crash_full_matrix()    ? "full matrix"
	                                     : "slice",
	         when, ran, failed, secs, clean->writes, clean->outcome, clean->job_creates,
	         clean->job_deletes, clean->pod_deletes, TL_CRASH_VIEW_NAME[0],
	         TL_CRASH_VIEW_NAME[1], TL_CRASH_VIEW_NAME[2]);
	sf_buf_append(&b, line, strlen(line));
	for (int k = 1; k <= clean->writes; k++) {
		size_t l = (size_t)snprintf(line, sizeof(line), "| %d | %s |", k,
		                            k <= TL_CRASH_MAX_W ? clean->seq[k - 1] : "?");
		for (int p = 0; p < TL_CRASH_NVIEWS; p++) {
			const tl_crash_cell *c = &cells[k][p];
			char t[64];
			if (!c->done)
				l += (size_t)snprintf(line + l, sizeof(line) - l, " · |");
			else if (!c->pass) {
				tags(c, t, sizeof(t));
				l += (size_t)snprintf(line + l, sizeof(line) - l,
				                      " **FAIL** (%s) |", t);
			} else if (!c->crashed)
				l += (size_t)snprintf(line + l, sizeof(line) - l,
				                      " pass, no crash (A: %d writes) |",
				                      c->a_writes);
			else
				l += (size_t)snprintf(line + l, sizeof(line) - l, " pass |");
		}
		snprintf(line + l, sizeof(line) - l, "\n");
		sf_buf_append(&b, line, strlen(line));
	}
	if (failed) {
		snprintf(line, sizeof(line), "\nFailed cells:\n\n");
		sf_buf_append(&b, line, strlen(line));
		for (int k = 1; k <= clean->writes; k++)
			for (int p = 0; p < TL_CRASH_NVIEWS; p++) {
				const tl_crash_cell *c = &cells[k][p];
				if (!c->done || c->pass)
					continue;
				if (c->crashed)
					snprintf(line, sizeof(line),
					         "- k = %d, %s (A killed right after its write %d, "
					         "a %s): %s\n",
					         k, TL_CRASH_VIEW_NAME[p], k, c->what, c->fails);
				else
					snprintf(line, sizeof(line),
					         "- k = %d, %s (A never reached write %d): %s\n", k,
					         TL_CRASH_VIEW_NAME[p], k, c->fails);
				sf_buf_append(&b, line, strlen(line));
			}
	}
	snprintf(path, sizeof(path), "%s/%s.md", sec, s->tag);
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	FILE *f = fopen(tmp, "w");
	cr_assert(f, "open %s", tmp);
	fwrite(b.data, 1, b.len, f);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(rename(tmp, path), 0, "rename %s", tmp);
	fprintf(stderr, "%.*s\n", (int)b.len, b.data);
	sf_buf_free(&b);

	/* (tests may run in parallel: each writes a whole file and renames it
	 * into place) */
	snprintf(path, sizeof(path), "%s/%s", dir, book->file);
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	f = fopen(tmp, "w");
	cr_assert(f, "open %s", tmp);
	fputs(book->head, f);
	for (size_t i = 0; i < book->ntags; i++) {
		char one[700];
		snprintf(one, sizeof(one), "%s/%s.md", sec, book->tags[i]);
		FILE *in = fopen(one, "r");
		if (!in)
			continue;
		char buf[4096];
		size_t got;
		while ((got = fread(buf, 1, sizeof(buf), in)) > 0)
			fwrite(buf, 1, got, f);
		fclose(in);
	}
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(rename(tmp, path), 0, "rename %s", tmp);
}

static tl_crash_cell CELLS[TL_CRASH_MAX_W + 1][TL_CRASH_NVIEWS];

void tl_crash_matrix(const tl_crash_book *book, const tl_crash_shape *s, tl_crash_run_fn *run,
                     void *ud)
{
	int64_t t0 = sf_mono_ns();
	if (selected(s->tag, 0, 0) == 0)
		return; /* STEADFAST_CRASH_CELLS names none of this lifecycle's */
	tl_crash_tally clean, t;
	tl_crash_cell cc;
	run(ud, s, 0, TL_CRASH_NONE, NULL, &clean, &cc);
	cr_assert(cc.pass, "%s: the clean run failed: %s", s->id, cc.fails);
	cr_assert_str_eq(clean.outcome, s->outcome, "%s: the clean run ended %s", s->id,
	                 clean.outcome);
	int w = clean.writes;
	cr_assert(w > 0 && w <= TL_CRASH_MAX_W, "%s: %d writes in the clean run", s->id, w);
	fprintf(stderr, "crash %s: clean run: %d writes (", s->id, w);
	for (int i = 0; i < w; i++)
		fprintf(stderr, "%s%s", i ? ", " : "", clean.seq[i]);
	fprintf(stderr, "), outcome %s, %.1f s\n", clean.outcome, cc.secs);

	int plan[TL_CRASH_MAX_W + 1][TL_CRASH_NVIEWS];
	memset(plan, 0, sizeof(plan));
	memset(CELLS, 0, sizeof(CELLS));
	for (int k = 1; k <= w; k++)
		for (int p = 0; p < TL_CRASH_NVIEWS; p++)
			plan[k][p] = tl_crash_full_matrix();
	if (!s->picks_only) {
		plan[1][TL_CRASH_NONE] = plan[(w + 1) / 2][TL_CRASH_NONE] = plan[w][TL_CRASH_NONE] =
		    1;
		for (int k = 1; k <= w; k++) /* and every write of a component */
			if (is(clean.seq[k - 1], "create jobs") ||
			    is(clean.seq[k - 1], "delete jobs"))
				plan[k][TL_CRASH_NONE] = 1;
	}
	for (int i = 0; i < s->npicks; i++) {
		const tl_crash_pick *pk = &s->picks[i];
		int k = pk->write ? nth_write(&clean, pk->write, pk->nth) : pk->nth;
		plan[k >= 1 && k <= w ? k : (w + 1) / 2][pk->view] = 1;
	}
	if (selected(s->tag, 0, 0) == 1)
		for (int k = 1; k <= w; k++)
			for (int p = 0; p < TL_CRASH_NVIEWS; p++)
				plan[k][p] = selected(s->tag, k, p) == 1;
	sf_buf fails;
	sf_buf_init(&fails, 0);
	int nfail = 0;
	for (int k = 1; k <= w; k++)
		for (int p = 0; p < TL_CRASH_NVIEWS; p++) {
			if (!plan[k][p])
				continue;
			tl_crash_cell *c = &CELLS[k][p];
			run(ud, s, k, p, &clean, &t, c);
			fprintf(
			    stderr,
			    "crash %s: k = %d (%s), %s: %s%s%s (%.1f s; writes A %d, B %d; Job "
			    "creates %d, deletes %d; B's first write %.0f ms after it acquired, "
			    "%.0f ms after A's last)\n",
			    s->id, k, clean.seq[k - 1], TL_CRASH_VIEW_NAME[p],
			    c->pass ? "pass" : "FAIL: ", c->pass ? "" : c->fails,
			    c->crashed ? "" : ", no crash", c->secs, t.by_a, t.by_b, t.job_creates,
			    t.job_deletes,
			    t.b_first && t.b_acquired ? (double)(t.b_first - t.b_acquired) / 1e3
			                              : -1.0,
			    t.b_first && t.a_last ? (double)(t.b_first - t.a_last) / 1e3 : -1.0);
			if (!c->pass) {
				char one[1200];
				snprintf(one, sizeof(one), "%s%s k=%d %s: %s", nfail ? "\n" : "",
				         s->id, k, TL_CRASH_VIEW_NAME[p], c->fails);
				sf_buf_append(&fails, one, strlen(one));
				nfail++;
			}
		}
	report(book, s, &clean, CELLS, (double)(sf_mono_ns() - t0) / 1e9);
	if (nfail)
		cr_assert_fail("%d crash cell(s) failed:\n%.*s", nfail, (int)fails.len, fails.data);
	sf_buf_free(&fails);
}
