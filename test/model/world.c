/*
 * world.c - the model: state, transitions and invariants (README.md).
 *
 * The real cluster is one AppWrapper ("aw", uid "aw-1") wrapping one
 * batch/v1 Job ("job-a"), the Job's incarnations (each create makes a new
 * uid, job#1, job#2, ...) and their pods. Each resource keeps the history
 * of its states; each of the leader's caches is an index into its
 * resource's history (older versions than every index are dropped). A
 * reconcile builds the phase machine's input from those caches and the
 * leader's memory exactly as controller.c's observe_components and process
 * do, runs the real sf_awp_step, writes its status or metadata patch with a
 * resourceVersion precondition and sends its requests; each request is
 * then processed (and answered) by a transition of its own, against the
 * real state of that moment.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "steadfast/awapi.h"
#include "steadfast/awcomp.h"
#include "steadfast/awconfig.h"
#include "steadfast/awphase.h"
#include "steadfast/jdoc.h"
#include "steadfast/json.h"

#define T0 1800000000LL /* the model clock's second 0, wall seconds */
#define BENIGN_MAX_TICK 120

static m_bounds B;
static sf_aw_config cfg;
static sf_aw_settings set;
static char job_template[512];
static int64_t expected_pods;
static int gone_on_observe; /* the scenario's executor variant */
static uint64_t steps_run;
/* the seeded mutation's decisions that differ from the shipped machine's */
static uint64_t mut_diffs, mut_diffs_ending;

/* ---- hashing (MurmurHash3 x64 128, public domain) ---- */

static uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return k;
}

void m_hash128(const void *key, size_t len, uint64_t out[2])
{
	const uint8_t *data = key;
	size_t nblocks = len / 16;
	uint64_t h1 = 0x9368e53c2f6af274ULL, h2 = 0x586dcd208f7cd3fdULL;
	const uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;
	for (size_t i = 0; i < nblocks; i++) {
		uint64_t k1, k2;
		memcpy(&k1, data + i * 16, 8);
		memcpy(&k2, data + i * 16 + 8, 8);
		k1 *= c1, k1 = rotl64(k1, 31), k1 *= c2, h1 ^= k1;
		h1 = rotl64(h1, 27), h1 += h2, h1 = h1 * 5 + 0x52dce729;
		k2 *= c2, k2 = rotl64(k2, 33), k2 *= c1, h2 ^= k2;
		h2 = rotl64(h2, 31), h2 += h1, h2 = h2 * 5 + 0x38495ab5;
	}
	const uint8_t *tail = data + nblocks * 16;
	uint64_t k1 = 0, k2 = 0;
	size_t rest = len & 15;
	for (size_t i = rest; i > 8; i--)
		k2 ^= (uint64_t)tail[i - 1] << ((i - 9) * 8);
	if (rest > 8)
		k2 *= c2, k2 = rotl64(k2, 33), k2 *= c1, h2 ^= k2;
	for (size_t i = rest < 8 ? rest : 8; i > 0; i--)
		k1 ^= (uint64_t)tail[i - 1] << ((i - 1) * 8);
	if (rest)
		k1 *= c1, k1 = rotl64(k1, 31), k1 *= c2, h1 ^= k1;
	h1 ^= len, h2 ^= len;
	h1 += h2, h2 += h1;
	h1 = fmix64(h1), h2 = fmix64(h2);
	h1 += h2, h2 += h1;
	out[0] = h1, out[1] = h2;
}

/* ---- interned status texts, with what the invariants read of them ---- */

typedef struct st_cond {
	char status; /* 'T' 'F' 'U', 0 = absent */
	char reason[48];
} st_cond;

typedef struct st_info {
	sf_aw_phase phase;
	int64_t resets;
	int ncomp;
	st_cond quota, deployed, unhealthy, deleting, comp_rd;
} st_info;

typedef struct st_entry {
	char *text;
	size_t len;
	uint64_t h;
	st_info info;
} st_entry;

static st_entry *sts;
static size_t nsts, capsts;
static uint32_t *st_slots; /* id + 1... no: id (1-based), 0 = empty */
static size_t st_nslots;

static void cond_of(sf_jv conds, const char *type, st_cond *c)
{
	memset(c, 0, sizeof(*c));
	sf_jv_iter it = sf_jv_iter_init(conds);
	sf_jv cd;
	while (sf_jv_next(&it, NULL, &cd)) {
		if (!sf_jv_streq(sf_jv_get(cd, "type"), type))
			continue;
		char st[16] = "";
		sf_jv_str(sf_jv_get(cd, "status"), st, sizeof(st));
		c->status = st[0] ? st[0] : '?';
		if (sf_jv_str(sf_jv_get(cd, "reason"), c->reason, sizeof(c->reason)) < 0)
			c->reason[0] = 0;
		return;
	}
}

static void st_parse(st_entry *e)
{
	st_info *i = &e->info;
	memset(i, 0, sizeof(*i));
	sf_jv st = sf_jv_root(e->text, e->len);
	i->phase = sf_aw_phase_parse(sf_jv_get(st, "phase"));
	if (sf_jv_int64(sf_jv_get(st, "resettingCount"), &i->resets) != 0)
		i->resets = 0;
	sf_jv conds = sf_jv_get(st, "conditions");
	cond_of(conds, "QuotaReserved", &i->quota);
	cond_of(conds, "ResourcesDeployed", &i->deployed);
	cond_of(conds, "Unhealthy", &i->unhealthy);
	cond_of(conds, "DeletingResources", &i->deleting);
	sf_jv comps = sf_jv_get(st, "componentStatus");
	i->ncomp = (int)sf_jv_len(comps);
	cond_of(sf_jv_get(sf_jv_at(comps, 0), "conditions"), "ResourcesDeployed", &i->comp_rd);
}

static void st_grow(void)
{
	size_t n = st_nslots ? st_nslots * 2 : 4096;
	uint32_t *slots = calloc(n, sizeof(*slots));
	if (!slots)
		abort();
	for (size_t i = 0; i < nsts; i++) {
		size_t j = sts[i].h & (n - 1);
		while (slots[j])
			j = (j + 1) & (n - 1);
		slots[j] = (uint32_t)(i + 1);
	}
	free(st_slots);
	st_slots = slots;
	st_nslots = n;
}

static uint16_t st_intern(const char *text, size_t len)
{
	uint64_t h[2];
	m_hash128(text, len, h);
	if ((nsts + 1) * 2 > st_nslots)
		st_grow();
	size_t j = h[0] & (st_nslots - 1);
	while (st_slots[j]) {
		st_entry *e = &sts[st_slots[j] - 1];
		if (e->h == h[0] && e->len == len && memcmp(e->text, text, len) == 0)
			return (uint16_t)st_slots[j];
		j = (j + 1) & (st_nslots - 1);
	}
	if (nsts >= 65535) {
		fprintf(stderr, "model: more than 65535 distinct statuses\n");
		abort();
	}
	if (nsts == capsts) {
		capsts = capsts ? capsts * 2 : 1024;
		sts = realloc(sts, capsts * sizeof(*sts));
		if (!sts)
			abort();
	}
	st_entry *e = &sts[nsts++];
	e->text = malloc(len + 1);
	if (!e->text)
		abort();
	memcpy(e->text, text, len);
	e->text[len] = 0;
	e->len = len;
	e->h = h[0];
	st_parse(e);
	st_slots[j] = (uint32_t)nsts;
	return (uint16_t)nsts;
}

static const st_info *st_get(uint16_t id)
{
	static const st_info none;
	return id ? &sts[id - 1].info : &none;
}

static const char *st_text(uint16_t id)
{
	return id ? sts[id - 1].text : "";
}

/* ---- the step cache: one sf_awp_step per distinct input ---- */

typedef struct m_plan {
	int rc;
	uint16_t status; /* 0: none */
	int8_t meta;     /* a metadata patch */
	int8_t meta_fin; /* the finalizer is in the patched list */
	int8_t meta_suspend; /* -1: not in the patch */
	int8_t to;
	uint8_t nacts;
	uint8_t acts[12][2];
	char why[80];
} m_plan;

typedef struct pc_entry {
	uint64_t k[2];
	m_plan plan;
} pc_entry;

static pc_entry *pc;
static size_t pc_n, pc_slots;

static void pc_grow(void)
{
	size_t n = pc_slots ? pc_slots * 2 : 1 << 14;
	pc_entry *t = calloc(n, sizeof(*t));
	if (!t)
		abort();
	for (size_t i = 0; i < pc_slots; i++) {
		if (!pc[i].k[0] && !pc[i].k[1])
			continue;
		size_t j = pc[i].k[0] & (n - 1);
		while (t[j].k[0] || t[j].k[1])
			j = (j + 1) & (n - 1);
		t[j] = pc[i];
	}
	free(pc);
	pc = t;
	pc_slots = n;
}

static pc_entry *pc_find(const uint64_t k[2], int *found)
{
	if ((pc_n + 1) * 2 > pc_slots)
		pc_grow();
	size_t j = k[0] & (pc_slots - 1);
	while (pc[j].k[0] || pc[j].k[1]) {
		if (pc[j].k[0] == k[0] && pc[j].k[1] == k[1]) {
			*found = 1;
			return &pc[j];
		}
		j = (j + 1) & (pc_slots - 1);
	}
	*found = 0;
	pc_n++;
	pc[j].k[0] = k[0], pc[j].k[1] = k[1] | 1; /* never all zero */
	return &pc[j];
}

uint64_t m_steps_run(void)
{
	return steps_run;
}

/* ---- setup ---- */

void m_world_init(const m_bounds *b)
{
	B = *b;
	sf_awcfg_defaults(&cfg);
	cfg.ft.admission_grace_ms = b->admission_grace * 1000LL;
	cfg.ft.warmup_grace_ms = b->warmup_grace * 1000LL;
	cfg.ft.failure_grace_ms = b->failure_grace * 1000LL;
	cfg.ft.retry_pause_ms = b->retry_pause * 1000LL;
	cfg.ft.retry_limit = b->retry_limit;
	cfg.ft.deletion_grace_ms = b->forceful_grace * 1000LL;
	cfg.ft.success_ttl_ms = b->success_ttl * 1000LL;
	cfg.ft.missing_grace_ms = b->missing_grace * 1000LL;
	sf_aw_settings_resolve(&cfg, SF_JV_NONE, &set);
	snprintf(job_template, sizeof(job_template),
	         "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"job-a\"},"
	         "\"spec\":{\"completions\":%d,\"parallelism\":%d,\"backoffLimit\":0,"
	         "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":"
	         "\"c\",\"image\":\"busybox\"}]}}}}",
	         b->completions, b->parallelism);
	char aw[1024], err[256];
	snprintf(aw, sizeof(aw), "{\"spec\":{\"components\":[{\"template\":%s}]}}", job_template);
	if (sf_awc_expected_pods(sf_jv_root(aw, strlen(aw)), &expected_pods, err, sizeof(err)) < 0)
		expected_pods = 0;
	steps_run = 0;
	mut_diffs = mut_diffs_ending = 0;
}

void m_world_free(void)
{
	for (size_t i = 0; i < nsts; i++)
		free(sts[i].text);
	free(sts);
	free(st_slots);
	free(pc);
	sts = NULL, st_slots = NULL, pc = NULL;
	nsts = capsts = st_nslots = pc_n = pc_slots = 0;
}

/* ---- small helpers ---- */

static int64_t now_ms(const m_state *s)
{
	return (T0 + s->tick) * 1000LL;
}

static m_job real_job(const m_state *s)
{
	return s->job[s->njob - 1];
}

static m_aw real_aw(const m_state *s)
{
	return s->aw[s->naw - 1];
}

static const m_podset *real_pods(const m_state *s)
{
	return &s->pods[s->npod - 1];
}

static void broken(m_emit *e, const char *what)
{
	if (!e->broken)
		snprintf(e->why_broken, sizeof(e->why_broken), "%s", what);
	e->broken = 1;
}

static void push_aw(m_state *s, m_aw v, m_emit *e)
{
	if (s->naw == M_AWH) {
		broken(e, "AppWrapper history full: raise M_AWH");
		return;
	}
	if (!v.exists)
		v = (m_aw){0};
	s->aw[s->naw++] = v;
}

static void push_job(m_state *s, m_job j, m_emit *e)
{
	if (memcmp(&j, &s->job[s->njob - 1], sizeof(j)) == 0)
		return;
	if (s->njob == M_JH) {
		broken(e, "Job history full: raise M_JH");
		return;
	}
	s->job[s->njob++] = j;
}

static int pod_cmp(const void *a, const void *b)
{
	const m_pod *x = a, *y = b;
	int ux = x->uid ? x->uid : 256, uy = y->uid ? y->uid : 256;
	return ux - uy;
}

static void push_pods(m_state *s, m_podset ps, m_emit *e)
{
	qsort(ps.p, M_PODS, sizeof(m_pod), pod_cmp);
	if (s->npod == M_PH) {
		broken(e, "pod history full: raise M_PH");
		return;
	}
	s->pods[s->npod++] = ps;
}

static void emit(m_emit *e, const m_state *n, const char *label, const char *viol)
{
	if (!e->stop)
		e->fn(e, n, label, viol && viol[0] ? viol : NULL);
}

__attribute__((format(printf, 3, 4))) static const char *lbl(m_emit *e, char *buf,
                                                              const char *fmt, ...)
{
	if (!e->labels)
		return "";
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, 200, fmt, ap);
	va_end(ap);
	return buf;
}

static const char *phase_str(sf_aw_phase p)
{
	const char *s = sf_aw_phase_name(p);
	return s[0] ? s : "Empty";
}

/* the pods of incarnation inc by phase (not being deleted) */
static void count_pods(const m_podset *ps, int inc, int *active, int *succ, int *failed)
{
	*active = *succ = *failed = 0;
	for (int i = 0; i < M_PODS; i++) {
		const m_pod *p = &ps->p[i];
		if (!p->uid || p->inc != inc)
			continue;
		if (p->phase == POD_SUCCEEDED)
			(*succ)++;
		else if (p->phase == POD_FAILED)
			(*failed)++;
		else if (!p->deleting)
			(*active)++;
	}
}

/* ---- the objects the phase machine reads ---- */

static int aw_json(const m_aw *v, char *buf, size_t cap)
{
	uint16_t st = v->status;
	return snprintf(buf, cap,
	                "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	                "\"metadata\":{\"name\":\"aw\",\"namespace\":\"ns\",\"uid\":\"aw-1\","
	                "\"labels\":{\"" SF_AW_QUEUE_LABEL "\":\"q\"}%s%s},"
	                "\"spec\":{\"suspend\":%s,\"components\":[{%s\"template\":%s}]}%s%s}",
	                v->fin ? ",\"finalizers\":[\"" SF_AW_FINALIZER "\"]" : "",
	                v->deleting ? ",\"deletionTimestamp\":\"2027-01-15T08:00:00Z\"" : "",
	                v->suspend ? "true" : "false",
	                v->psi ? "\"podSetInfos\":[{\"nodeSelector\":{\"zone\":\"a\"}}]," : "",
	                job_template, st ? ",\"status\":" : "", st_text(st));
}

static void pod_add(sf_awp_pods *sum, const m_pod *p)
{
	char buf[512];
	static const char *const ph[] = {"", "Pending", "Running", "Succeeded", "Failed"};
	const char *cs = "";
	if (p->phase == POD_FAILED)
		cs = ",\"containerStatuses\":[{\"name\":\"c\",\"state\":{\"terminated\":"
		     "{\"exitCode\":1,\"reason\":\"Error\"}}}]";
	else if (p->phase == POD_SUCCEEDED)
		cs = ",\"containerStatuses\":[{\"name\":\"c\",\"state\":{\"terminated\":"
		     "{\"exitCode\":0,\"reason\":\"Completed\"}}}]";
	int n = snprintf(buf, sizeof(buf),
	                 "{\"metadata\":{\"name\":\"job-a-p%d\",\"namespace\":\"ns\",\"uid\":\"p%d\""
	                 "%s},\"status\":{\"phase\":\"%s\"%s}}",
	                 p->uid, p->uid,
	                 p->deleting ? ",\"deletionTimestamp\":\"2027-01-15T08:00:00Z\"" : "",
	                 ph[p->phase], cs);
	sf_awp_pods_add(sum, sf_jv_root(buf, (size_t)n), &set);
}

static void pods_sum(const m_pod *pods, int n, sf_awp_pods *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (int i = 0; i < n; i++)
		if (pods[i].uid)
			pod_add(sum, &pods[i]);
}

/* ---- the leader's memory ---- */

enum { MSG_NONE, MSG_LOST, MSG_VANISHED, MSG_GOING, MSG_FOREIGN };
static const char *const msgs[] = {
    "",
    "the answer to the create was lost",
    "component vanished while checking its owner",
    "the previous instance of the component is still being deleted",
    "Job job-a exists, but is not controlled by this AppWrapper",
};

/* controller.c's comp_made: ours, with this uid, not yet in the cache */
static void comp_made(m_state *s, int inc)
{
	m_leader *L = &s->L;
	L->expect = (uint8_t)inc;
	L->confirmed = (uint8_t)(s->tick + 1);
	L->delete_gone = 0;
	L->live_found = L->live_failed = L->live_complete = 0;
	L->deleted_uid = 0;
	L->deleted_cached = 0;
}

static void add_req(m_state *s, m_emit *e, int kind, int a, int b, int c)
{
	m_leader *L = &s->L;
	if (L->nreq == M_REQ) {
		broken(e, "too many requests in flight: raise M_REQ");
		return;
	}
	L->clock++; /* a request sent */
	L->req[L->nreq++] = (m_req){(uint8_t)kind, (uint8_t)a, (uint8_t)b, (uint8_t)c};
}

static void del_req(m_state *s, int i)
{
	m_leader *L = &s->L;
	memmove(&L->req[i], &L->req[i + 1], (size_t)(L->nreq - i - 1) * sizeof(m_req));
	L->nreq--;
	memset(&L->req[L->nreq], 0, sizeof(m_req));
}

/* ---- invariants ---- */

static int pod_nonterminal(const m_pod *p)
{
	return p->uid && (p->phase == POD_PENDING || p->phase == POD_RUNNING);
}

const char *m_check_state(const m_state *s)
{
	static char v[256];
	/* 3: never two live copies of the workload: non-terminal pods of two
	 * incarnations at once (the name itself holds one incarnation). The
	 * pods of a Job someone else deleted are the garbage collector's to
	 * remove, whatever the controller does. */
	const m_podset *ps = real_pods(s);
	int inc = 0;
	for (int i = 0; i < M_PODS; i++) {
		const m_pod *p = &ps->p[i];
		if (!pod_nonterminal(p) || (s->fdel_inc && p->inc == s->fdel_inc))
			continue;
		if (inc && p->inc != inc) {
			snprintf(v, sizeof(v),
			         "invariant 3 (one incarnation at a time): pods of job#%d and job#%d are "
			         "both running or pending",
			         inc, p->inc);
			return v;
		}
		inc = p->inc;
	}
	return "";
}

/* Appends one broken invariant to v. */
__attribute__((format(printf, 3, 4))) static void viol_add(char *v, size_t vn, const char *fmt, ...)
{
	size_t l = strlen(v);
	if (l + 4 >= vn)
		return;
	if (l)
		l += (size_t)snprintf(v + l, vn - l, "; ");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v + l, vn - l, fmt, ap);
	va_end(ap);
}

static int is_true(const st_cond *c, const char *reason)
{
	return c->status == 'T' && strcmp(c->reason, reason) == 0;
}

/* The checks of a write at the moment it lands; old is the version it
 * replaces (the real one: the resourceVersion precondition held). Every
 * invariant it breaks is named. */
static void check_write(const m_state *s, const m_aw *old, const m_aw *nw, const m_plan *p,
                        char *v, size_t vn)
{
	const st_info *o = st_get(old->status), *n = st_get(nw->status);
	m_job j = real_job(s);
	int live = j.inc && !j.deleting;
	int unfinished = live && !j.failed && !j.complete;
	const m_podset *ps = real_pods(s);
	int nonterm = 0;
	for (int i = 0; i < M_PODS; i++)
		nonterm |= pod_nonterminal(&ps->p[i]);
	const char *running = nonterm ? "a pod is pending or running" : "the Job is live and unfinished";
	v[0] = 0;
	if (p->meta) {
		/* 6: an admission is never undone */
		if (p->meta_suspend == 1 && s->kueue_admitted && !old->suspend)
			viol_add(v, vn,
			         "invariant 6 (admission never undone): the controller set "
			         "spec.suspend=true after Kueue admitted the AppWrapper");
		/* 2: the finalizer goes only when nothing runs */
		if (old->fin && !nw->fin && (nonterm || unfinished))
			viol_add(v, vn, "invariant 2 (nothing left running): finalizer removed while %s",
			         running);
		return;
	}
	if (!nw->status)
		return;
	/* 1: MissingComponent only when no incarnation lives */
	if (is_true(&n->unhealthy, "MissingComponent") && !is_true(&o->unhealthy, "MissingComponent") &&
	    live)
		viol_add(v, vn,
		         "invariant 1 (no false MissingComponent): Unhealthy=MissingComponent (phase %s) "
		         "while job#%d lives",
		         phase_str(n->phase), j.inc);
	/* 2: quota released, or deletion complete, only when nothing runs */
	int quota_off = n->quota.status == 'F' && o->quota.status != 'F';
	int del_done = strcmp(n->deleting.reason, "DeletionComplete") == 0 &&
	               strcmp(o->deleting.reason, "DeletionComplete") != 0;
	if ((quota_off || del_done) && (nonterm || unfinished))
		viol_add(v, vn, "invariant 2 (nothing left running): %s while %s",
		         quota_off ? "QuotaReserved=False" : "DeletingResources=DeletionComplete",
		         running);
	/* 4: created successfully only for an incarnation of this attempt */
	int latest = s->next_inc - 1; /* the last incarnation created */
	if (is_true(&n->comp_rd, "ComponentCreatedSuccessfully") &&
	    !is_true(&o->comp_rd, "ComponentCreatedSuccessfully") &&
	    !(live && j.inc > s->reset_mark) &&
	    /* created in this attempt and shown alive to the controller, then
	     * deleted by someone else: the answer was true when it came */
	    !(s->fdel_ok && s->fdel_ok == latest && latest > s->reset_mark)) {
		char why[96];
		if (!j.inc)
			snprintf(why, sizeof(why), "no incarnation exists");
		else if (j.deleting)
			snprintf(why, sizeof(why), "the only incarnation, job#%d, is being deleted", j.inc);
		else
			snprintf(why, sizeof(why),
			         "the live incarnation, job#%d, predates the last reset or suspension",
			         j.inc);
		viol_add(v, vn, "invariant 4 (created means created): ComponentCreatedSuccessfully while %s",
		         why);
	}
	/* 5: Succeeded only after the live incarnation's own Complete=True */
	if (n->phase == SF_AW_SUCCEEDED && o->phase != SF_AW_SUCCEEDED &&
	    !(latest && s->complete_inc == latest))
		viol_add(v, vn, "invariant 5 (no early success): Succeeded while job#%d, the last Job "
		         "created, never was Complete", latest);
	/* 7: a reset (or, past the retry limit, Failed: upstream's
	 * resetOrFail) only on a confirmed failure */
	const char *r = n->unhealthy.reason;
	int failing = n->phase == SF_AW_FAILED && o->phase != SF_AW_FAILED &&
	              (strcmp(r, "FailedComponent") == 0 || strcmp(r, "FoundFailedPods") == 0 ||
	               strcmp(r, "InsufficientPodsReady") == 0);
	if ((n->phase == SF_AW_RESETTING && o->phase != SF_AW_RESETTING) || n->resets > o->resets ||
	    failing) {
		int ok;
		int any_failed_pod = 0, ready = 0;
		for (int i = 0; i < M_PODS; i++) {
			const m_pod *q = &ps->p[i];
			any_failed_pod |= q->uid && q->phase == POD_FAILED;
			ready += q->uid && ((q->phase == POD_RUNNING && !q->deleting) ||
			                    q->phase == POD_SUCCEEDED);
		}
		int latest_failed = latest && s->failed_inc == latest;
		if (strcmp(r, "FailedComponent") == 0)
			ok = latest_failed;
		else if (strcmp(r, "FoundFailedPods") == 0)
			ok = any_failed_pod || latest_failed || (latest && s->podfail_inc == latest);
		else if (strcmp(r, "InsufficientPodsReady") == 0)
			ok = ready < expected_pods || s->list_few;
		else if (strcmp(r, "CreateFailed") == 0)
			ok = 1; /* the create's own answer */
		else
			ok = 0;
		if (!ok)
			viol_add(v, vn, "invariant 7 (no reset without a failure): %s for %s while %s",
			         failing ? "Failed" : "reset", r,
			         strcmp(r, "FailedComponent") == 0 ? "the last Job created never Failed"
			         : strcmp(r, "FoundFailedPods") == 0
			             ? "no pod of the last Job created failed, and no failed pod is left"
			                                             : "enough pods run");
	}
}

/* ---- the reconcile (process + observe_components + sf_awp_step) ---- */

typedef struct key_in {
	int32_t ncomp;
	int32_t state, deleting, failed, complete, live_found, live_failed, live_complete;
	int64_t confirmed_ms;
	int32_t create, create_msg, delete_gone;
	int32_t lp_have, lp_asked_fresh, lp_n;
	int64_t lp_answered;
	int64_t now;
	int32_t mutation;
	m_pod lp[M_LP];
	m_pod pods[M_PODS];
} key_in;

static void compute_plan(const char *json, size_t jlen, const sf_awp_comp *comp, int ncomp,
                         const m_podset *view, const m_leader *L, int64_t now, m_plan *p);
static void plan_diff(const char *json, size_t jlen, const m_plan *m, const m_plan *ref);
static int has_fin(sf_jv aw);
static const char *act_name(int k);

static int has_fin(sf_jv aw)
{
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(aw, "metadata.finalizers"));
	sf_jv f;
	while (sf_jv_next(&it, NULL, &f))
		if (sf_jv_streq(f, SF_AW_FINALIZER))
			return 1;
	return 0;
}

static void get_plan(const char *json, size_t jlen, const sf_awp_comp *comp, int ncomp,
                     const m_podset *view, const m_leader *L, int64_t now, m_plan *out)
{
	/* the cache key: everything the step reads */
	static uint8_t kbuf[8192];
	key_in k;
	memset(&k, 0, sizeof(k));
	k.ncomp = ncomp;
	if (ncomp) {
		k.state = comp->cached.state, k.deleting = comp->cached.deleting;
		k.failed = comp->cached.failed, k.complete = comp->cached.complete;
		k.live_found = comp->live.found, k.live_failed = comp->live.failed;
		k.live_complete = comp->live.complete;
		k.confirmed_ms = comp->confirmed_ms;
		k.create = comp->create, k.delete_gone = comp->delete_gone;
		k.create_msg = L->create_msg;
	}
	k.lp_have = L->lp_have;
	if (L->lp_have) {
		k.lp_asked_fresh = L->lp_asked > L->deletes_acked;
		k.lp_n = L->lp_n;
		k.lp_answered = L->lp_answered;
		memcpy(k.lp, L->lp, sizeof(k.lp));
	}
	k.now = now;
#ifdef SF_AWP_MUTANTS
	k.mutation = (int32_t)sf_awp_mutation;
#endif
	memcpy(k.pods, view->p, sizeof(k.pods));
	if (jlen + sizeof(k) > sizeof(kbuf))
		abort();
	memcpy(kbuf, json, jlen);
	memcpy(kbuf + jlen, &k, sizeof(k));
	uint64_t h[2];
	m_hash128(kbuf, jlen + sizeof(k), h);
	int found;
	pc_entry *ce = pc_find(h, &found);
	if (found) {
		*out = ce->plan;
		return;
	}
	steps_run++;
#ifdef SF_AWP_MUTANTS
	if (sf_awp_mutation != SF_AWP_MUT_NONE) {
		/* the same input to the shipped machine, for m_mutant_diffs */
		sf_awp_mutant mut = sf_awp_mutation;
		m_plan ref;
		sf_awp_mutation = SF_AWP_MUT_NONE;
		get_plan(json, jlen, comp, ncomp, view, L, now, &ref);
		sf_awp_mutation = mut;
		ce = pc_find(h, &found); /* the table may have grown */
		compute_plan(json, jlen, comp, ncomp, view, L, now, &ce->plan);
		plan_diff(json, jlen, &ce->plan, &ref);
		*out = ce->plan;
		return;
	}
#endif
	compute_plan(json, jlen, comp, ncomp, view, L, now, &ce->plan);
	*out = ce->plan;
}

static int ends_deletion(const char *json, size_t jlen, const m_plan *p)
{
	sf_jv aw = sf_jv_root(json, jlen);
	if (p->meta)
		return has_fin(aw) && !p->meta_fin;
	if (!p->status)
		return 0;
	const st_info *n = st_get(p->status);
	st_cond oq, od;
	sf_jv conds = sf_jv_path(aw, "status.conditions");
	cond_of(conds, "QuotaReserved", &oq);
	cond_of(conds, "DeletingResources", &od);
	return (n->quota.status == 'F' && oq.status != 'F') ||
	       (strcmp(n->deleting.reason, "DeletionComplete") == 0 &&
	        strcmp(od.reason, "DeletionComplete") != 0);
}

static void plan_diff(const char *json, size_t jlen, const m_plan *m, const m_plan *ref)
{
	int same = m->rc == ref->rc && m->status == ref->status && m->meta == ref->meta &&
	           m->meta_fin == ref->meta_fin && m->meta_suspend == ref->meta_suspend &&
	           m->nacts == ref->nacts && memcmp(m->acts, ref->acts, sizeof(m->acts)) == 0;
	if (same)
		return;
	mut_diffs++;
	int ending = ends_deletion(json, jlen, m) && !ends_deletion(json, jlen, ref);
	if (ending)
		mut_diffs_ending++;
	if (getenv("STEADFAST_MODEL_SHOWDIFF") && mut_diffs <= 20) {
		char a[128] = "", b[128] = "";
		for (int i = 0; i < m->nacts; i++)
			snprintf(a + strlen(a), sizeof(a) - strlen(a), " %s", act_name(m->acts[i][0]));
		for (int i = 0; i < ref->nacts; i++)
			snprintf(b + strlen(b), sizeof(b) - strlen(b), " %s", act_name(ref->acts[i][0]));
		fprintf(stderr, "model: mutant decides [%s]%s%s, shipped [%s]%s%s%s\n", m->why,
		        m->status ? " write;" : "", a, ref->why, ref->status ? " write;" : "", b,
		        ending ? " (the mutant's ends a deletion)" : "");
	}
}

/* The answer readers under the mutation and as shipped: counts a
 * difference. */
static void read_diff(const sf_awp_answer *a)
{
#ifdef SF_AWP_MUTANTS
	if (sf_awp_mutation == SF_AWP_MUT_NONE)
		return;
	sf_awp_confirmed c1, c2;
	sf_awp_create_outcome o1 = 0, o2 = 0;
	int g1 = 0, g2 = 0;
	int r1 = sf_awp_read_verify(a, &c1), q1 = sf_awp_read_adopt(a, &o1);
	int d1 = sf_awp_read_delete(a, &g1);
	sf_awp_mutant mut = sf_awp_mutation;
	sf_awp_mutation = SF_AWP_MUT_NONE;
	int r2 = sf_awp_read_verify(a, &c2), q2 = sf_awp_read_adopt(a, &o2);
	int d2 = sf_awp_read_delete(a, &g2);
	sf_awp_mutation = mut;
	if (r1 != r2 || (r1 == 0 && memcmp(&c1, &c2, sizeof(c1)) != 0) || q1 != q2 ||
	    (q1 == 0 && o1 != o2) || d1 != d2 || g1 != g2)
		mut_diffs++;
#else
	(void)a;
#endif
}

void m_mutant_diffs(uint64_t *diffs, uint64_t *ending)
{
	*diffs = mut_diffs;
	*ending = mut_diffs_ending;
}

static void compute_plan(const char *json, size_t jlen, const sf_awp_comp *comp, int ncomp,
                         const m_podset *view, const m_leader *L, int64_t now, m_plan *p)
{
	sf_awp_pods pods;
	pods_sum(view->p, M_PODS, &pods);
	sf_awp_live_pods lp;
	memset(&lp, 0, sizeof(lp));
	if (L->lp_have) {
		pods_sum(L->lp, L->lp_n, &lp.pods);
		lp.answered_ms = (T0 + L->lp_answered) * 1000LL;
		lp.asked = L->lp_asked;
	}
	sf_awp_input in = {
	    .aw = sf_jv_root(json, jlen),
	    .cfg = &cfg,
	    .s = &set,
	    .now_ms = now,
	    .comp = ncomp ? comp : NULL,
	    .ncomp = (size_t)ncomp,
	    .pods = &pods,
	    .expected_pods = ncomp ? expected_pods : 0,
	    .live_pods = L->lp_have ? &lp : NULL,
	    .deletes_acked = L->deletes_acked,
	};
	sf_awp_plan plan;
	char err[256];
	memset(p, 0, sizeof(*p));
	p->meta_suspend = -1;
	p->rc = sf_awp_step(&in, &plan, err, sizeof(err));
	if (p->rc == 0) {
		p->to = (int8_t)plan.to;
		snprintf(p->why, sizeof(p->why), "%s", plan.why ? plan.why : "");
		if (plan.status) {
			char *t = sf_jd_dump(plan.status);
			if (!t)
				abort();
			p->status = st_intern(t, strlen(t));
			free(t);
		}
		if (plan.meta_patch) {
			p->meta = 1;
			char *t = sf_jd_dump(plan.meta_patch);
			if (!t)
				abort();
			sf_jv mp = sf_jv_root(t, strlen(t));
			sf_jv_iter it = sf_jv_iter_init(sf_jv_path(mp, "metadata.finalizers"));
			sf_jv f;
			while (sf_jv_next(&it, NULL, &f))
				if (sf_jv_streq(f, SF_AW_FINALIZER))
					p->meta_fin = 1;
			int b = 0;
			if (sf_jv_bool(sf_jv_path(mp, "spec.suspend"), &b) == 0)
				p->meta_suspend = (int8_t)b;
			free(t);
		}
		for (size_t i = 0; i < plan.nacts; i++) {
			if (p->nacts == 12)
				abort();
			p->acts[p->nacts][0] = (uint8_t)plan.acts[i].kind;
			p->acts[p->nacts][1] = (uint8_t)plan.acts[i].idx;
			p->nacts++;
		}
		sf_awp_plan_free(&plan);
	} else {
		snprintf(p->why, sizeof(p->why), "sf_awp_step: %d %.60s", p->rc, err);
	}
}

static const char *act_name(int k)
{
	switch (k) {
	case SF_AWP_ACT_CREATE: return "CREATE";
	case SF_AWP_ACT_DELETE: return "DELETE";
	case SF_AWP_ACT_DELETE_FORCE: return "DELETE(grace 0)";
	case SF_AWP_ACT_DELETE_PODS: return "DELETE_PODS";
	case SF_AWP_ACT_VERIFY: return "GET";
	case SF_AWP_ACT_LIST_PODS: return "LIST_PODS";
	case SF_AWP_ACT_VERIFY_NODES: return "VERIFY_NODES";
	}
	return "?";
}

/* controller.c's run_actions: every request of the plan is sent now */
static void run_actions(m_state *s, const m_plan *p, const m_pod *lp, int lp_n, m_emit *e)
{
	m_leader *L = &s->L;
	for (int i = 0; i < p->nacts; i++) {
		int kind = p->acts[i][0];
		switch (kind) {
		case SF_AWP_ACT_CREATE:
			/* start_create: a create may land even if its answer is
			 * lost, so "gone" no longer holds */
			L->delete_gone = 0;
			L->deleted_cached = 0;
			add_req(s, e, RQ_CREATE, 0, 0, 0);
			break;
		case SF_AWP_ACT_VERIFY: add_req(s, e, RQ_VERIFY, 0, 0, 0); break;
		case SF_AWP_ACT_DELETE:
		case SF_AWP_ACT_DELETE_FORCE: {
			/* start_delete: the cache's copy (every incarnation is
			 * ours), or a live GET first */
			m_job jv = s->job[s->jview];
			int force = kind == SF_AWP_ACT_DELETE_FORCE;
			if (!jv.inc && L->deleted_uid && L->deleted_cached) {
				/* the cache dropped the copy we deleted: learned
				 * gone now */
				L->delete_gone = 1;
				L->create = SF_AWP_CREATE_NONE;
				L->deletes_acked = ++L->clock;
			} else if (jv.inc) {
				add_req(s, e, RQ_DELETE, jv.inc, 1, force);
			} else {
				add_req(s, e, RQ_DEL_GET, 0, 0, force);
			}
			break;
		}
		case SF_AWP_ACT_LIST_PODS: add_req(s, e, RQ_LIST, L->clock + 1, 0, 0); break;
		case SF_AWP_ACT_DELETE_PODS:
			for (int j = 0; j < lp_n; j++)
				if (lp[j].uid)
					add_req(s, e, RQ_DELPOD, lp[j].uid, 0, 0);
			break;
		default: broken(e, "an action the model does not know"); break;
		}
	}
}

static void plan_label(const m_plan *p, const st_info *from, const m_aw *v, char *buf, size_t n)
{
	size_t w = 0;
	w += (size_t)snprintf(buf + w, n - w, "reconcile [%s] %s", p->why, phase_str(from->phase));
	if (p->status) {
		const st_info *to = st_get(p->status);
		if (to->phase != from->phase)
			w += (size_t)snprintf(buf + w, n - w, "->%s", phase_str(to->phase));
		if (w < n && to->unhealthy.status &&
		    (to->unhealthy.status != from->unhealthy.status ||
		     strcmp(to->unhealthy.reason, from->unhealthy.reason)))
			w += (size_t)snprintf(buf + w, n - w, ", Unhealthy=%c %s", to->unhealthy.status,
			                      to->unhealthy.reason);
		if (w < n && to->comp_rd.status &&
		    (to->comp_rd.status != from->comp_rd.status ||
		     strcmp(to->comp_rd.reason, from->comp_rd.reason)))
			w += (size_t)snprintf(buf + w, n - w, ", job-a %s", to->comp_rd.reason);
		if (w < n && to->quota.status != from->quota.status)
			w += (size_t)snprintf(buf + w, n - w, ", QuotaReserved=%c", to->quota.status);
		if (w < n && strcmp(to->deleting.reason, from->deleting.reason))
			w += (size_t)snprintf(buf + w, n - w, ", DeletingResources %s",
			                      to->deleting.reason);
		if (w < n)
			w += (size_t)snprintf(buf + w, n - w, "; status write");
	}
	if (p->meta && w < n)
		w += (size_t)snprintf(buf + w, n - w, "; patch finalizer %s%s",
		                      p->meta_fin ? "on" : "off",
		                      p->meta_suspend == 1   ? ", suspend=true"
		                      : p->meta_suspend == 0 ? ", suspend=false"
		                                             : "");
	for (int i = 0; i < p->nacts && w < n; i++)
		w += (size_t)snprintf(buf + w, n - w, "%s%s", i ? " " : "; send ",
		                      act_name(p->acts[i][0]));
	(void)v;
}

static void do_reconcile(const m_state *s, m_emit *e)
{
	char lb[512] = "";
	if (s->L.nreq)
		return; /* this AppWrapper's last reconcile is still running */
	const m_aw *v = &s->aw[0];
	if (!v->exists) {
		/* process(): gone from the cache, its memory goes */
		m_state n = *s;
		memset(&n.L, 0, sizeof(n.L));
		n.L.clock = s->L.clock;
		emit(e, &n, e->labels ? "reconcile: AppWrapper gone from the cache, memory dropped" : "",
		     NULL);
		return;
	}
	if (s->L.written > 0)
		return; /* our own last write is not in the cache yet */
	m_state n = *s;
	m_leader *L = &n.L;
	/* a copy: interning the plan's status may move the table */
	st_info si_copy = *st_get(v->status);
	const st_info *si = &si_copy;
	int ncomp = si->ncomp > 0 ? 1 : 0;
	sf_awp_comp comp;
	memset(&comp, 0, sizeof(comp));
	if (ncomp) {
		/* observe_components */
		comp.create = (sf_awp_create_outcome)L->create;
		comp.create_msg = msgs[L->create_msg];
		comp.live.found = (sf_awp_live)L->live_found;
		comp.live.failed = L->live_failed;
		comp.live.complete = L->live_complete;
		L->live_found = L->live_failed = L->live_complete = 0; /* news for one step */
		comp.delete_gone = L->delete_gone;
		comp.completion_known = 1;
		m_job jv = s->job[s->jview];
		if (gone_on_observe && !jv.inc && L->deleted_uid && L->deleted_cached &&
		    !L->delete_gone) {
			/* the variant: the cache dropped our deleted copy */
			L->delete_gone = 1;
			L->create = SF_AWP_CREATE_NONE;
		}
		comp.delete_gone = L->delete_gone;
		if (jv.inc && jv.inc == L->deleted_uid) {
			comp.cached.state = SF_AWP_COMP_PRESENT;
			comp.cached.deleting = 1;
		} else if (jv.inc) {
			comp.cached.state = SF_AWP_COMP_PRESENT;
			comp.cached.deleting = jv.deleting;
			comp.cached.failed = jv.failed;
			comp.cached.complete = jv.complete;
			if (!jv.deleting)
				L->confirmed = (uint8_t)(s->tick + 1);
			if (L->expect == jv.inc)
				L->expect = 0;
		} else if (L->expect) {
			comp.cached.state = SF_AWP_COMP_PENDING;
		} else {
			comp.cached.state = SF_AWP_COMP_ABSENT;
		}
		comp.confirmed_ms = L->confirmed ? (T0 + L->confirmed - 1) * 1000LL : 0;
		if (L->create == SF_AWP_CREATE_RETRYABLE || si->comp_rd.status == 'T')
			L->create = SF_AWP_CREATE_NONE;
	}
	char json[4096];
	int jl = aw_json(v, json, sizeof(json));
	if (jl <= 0 || (size_t)jl >= sizeof(json)) {
		broken(e, "AppWrapper JSON too long");
		return;
	}
	m_plan p;
	get_plan(json, (size_t)jl, &comp, ncomp, &s->pods[0], &s->L, now_ms(s), &p);
	/* the live list is news for this step only; the op keeps it for a
	 * DELETE_PODS of what it found */
	m_pod lp[M_LP];
	int lp_n = L->lp_have ? L->lp_n : 0;
	memcpy(lp, L->lp, sizeof(lp));
	L->lp_have = 0;
	if (p.rc < 0) {
		char vb[300];
		snprintf(vb, sizeof(vb), "the phase machine failed: %s", p.why);
		emit(e, &n, "reconcile: sf_awp_step failed", vb);
		return;
	}
	if (e->labels)
		plan_label(&p, si, v, lb, sizeof(lb));
	if (!p.meta && !p.status) {
		run_actions(&n, &p, lp, lp_n, e);
		emit(e, &n, lb, NULL);
		return;
	}
	if (s->naw > 1) {
		/* the write carries the resourceVersion it read: 409 (or 404) */
		char lc[600];
		emit(e, &n, lbl(e, lc, "%s -> 409 Conflict, dropped", lb), NULL);
		return;
	}
	m_aw nw = *v;
	if (p.meta) {
		nw.fin = (uint8_t)p.meta_fin;
		if (p.meta_suspend >= 0)
			nw.suspend = (uint8_t)p.meta_suspend;
		if (nw.deleting && !nw.fin)
			nw.exists = 0; /* the last finalizer went: the object goes */
	} else {
		nw.status = p.status;
	}
	char viol[512];
	check_write(s, v, &nw, &p, viol, sizeof(viol));
	if (p.status) {
		const st_info *to = st_get(p.status);
		/* a reset's or suspension's deletion is over: later creates
		 * belong to the next attempt */
		if (to->deployed.status == 'F' && si->deployed.status != 'F' &&
		    (strcmp(to->deployed.reason, "Resetting") == 0 ||
		     strcmp(to->deployed.reason, "Suspended") == 0))
			n.reset_mark = (uint8_t)(n.next_inc - 1);
	}
	push_aw(&n, nw, e);
	m_state x = n;
	n.L.written = (int8_t)(n.naw - 1);
	run_actions(&n, &p, lp, lp_n, e);
	emit(e, &n, lb, viol);
	if (x.b_lost && !e->benign) {
		/* applied, but the answer is lost: no written_rv, no actions */
		x.b_lost--;
		char lc[600];
		emit(e, &x, lbl(e, lc, "%s -> applied, answer lost", lb), viol);
	}
}

/* ---- requests ---- */

static sf_awp_answer get_answer(const m_state *s)
{
	sf_awp_answer a;
	memset(&a, 0, sizeof(a));
	m_job j = real_job(s);
	if (!j.inc) {
		a.kind = SF_AWP_ANS_ABSENT;
	} else {
		a.kind = SF_AWP_ANS_OK;
		a.owned = 1;
		a.deleting = j.deleting;
		a.ours_gone = j.inc == s->L.deleted_uid;
		a.failed = j.failed;
		a.complete = j.complete;
	}
	return a;
}

static const char *ans_str(const sf_awp_answer *a, const m_state *s, char *buf)
{
	m_job j = real_job(s);
	switch (a->kind) {
	case SF_AWP_ANS_ABSENT: return "404 NotFound";
	case SF_AWP_ANS_FOREIGN_404: return "a proxy's 404";
	case SF_AWP_ANS_CONFLICT: return "409 Conflict";
	case SF_AWP_ANS_OK:
		snprintf(buf, 80, "200 job#%d%s%s%s", j.inc, j.deleting ? " deleting" : "",
		         j.failed ? " Failed" : "", j.complete ? " Complete" : "");
		return buf;
	default: return "error";
	}
}

static void answer_get(const m_state *s, int i, const m_req *r, int foreign, m_emit *e)
{
	m_state n = *s;
	m_leader *L = &n.L;
	char lb[256], ab[80];
	sf_awp_answer a = get_answer(s);
	if (foreign) {
		memset(&a, 0, sizeof(a));
		a.kind = SF_AWP_ANS_FOREIGN_404;
		n.b_f404--;
		n.perturbed = 1;
	}
	m_job j = real_job(s);
	del_req(&n, i);
	read_diff(&a);
	if (r->kind == RQ_ADOPT_GET) {
		sf_awp_create_outcome oc;
		if (a.kind == SF_AWP_ANS_OK && a.owned && !a.deleting && !a.ours_gone)
			n.alive_ev = j.inc;
		if (sf_awp_read_adopt(&a, &oc) == 0) {
			if (oc == SF_AWP_CREATE_OK) {
				comp_made(&n, j.inc);
				L->create = SF_AWP_CREATE_OK;
				L->create_msg = 0;
			} else {
				L->create = (uint8_t)oc;
				L->create_msg = oc == SF_AWP_CREATE_FATAL       ? MSG_FOREIGN
				                : a.kind == SF_AWP_ANS_ABSENT ? MSG_VANISHED
				                                              : MSG_GOING;
			}
		}
		emit(e, &n, lbl(e, lb, "GET job-a (after AlreadyExists) -> %s", ans_str(&a, s, ab)),
		     NULL);
	} else if (r->kind == RQ_VERIFY) {
		sf_awp_confirmed c;
		if (sf_awp_read_verify(&a, &c) == 0) {
			L->live_found = (uint8_t)c.found;
			L->live_failed = (uint8_t)c.failed;
			L->live_complete = (uint8_t)c.complete;
			if (c.found == SF_AWP_LIVE_FOUND)
				L->confirmed = (uint8_t)(s->tick + 1);
		}
		emit(e, &n, lbl(e, lb, "GET job-a (live read) -> %s", ans_str(&a, s, ab)), NULL);
	} else { /* RQ_DEL_GET */
		int gone = 0;
		int rc = sf_awp_read_delete(&a, &gone);
		if (rc > 0) {
			L->delete_gone = 1;
			L->create = SF_AWP_CREATE_NONE;
			L->deletes_acked = ++L->clock; /* learned gone now */
		} else if (rc == 0) {
			add_req(&n, e, RQ_DELETE, j.inc, 0, r->c);
		}
		emit(e, &n,
		     lbl(e, lb, "GET job-a (before DELETE) -> %s%s", ans_str(&a, s, ab),
		         rc == 0 ? "; DELETE" : ""),
		     NULL);
	}
}

static void answer_delete(const m_state *s, int i, const m_req *r, m_emit *e)
{
	m_job j = real_job(s);
	char lb[256];
	if (j.inc == r->a) {
		/* 200: applied; the Job goes at once (no finalizer), or waits
		 * for a foreign finalizer (deletionTimestamp) */
		for (int linger = 0; linger < 2; linger++) {
			if (linger && (!s->b_linger || j.deleting))
				continue;
			for (int lost = 0; lost < 2; lost++) {
				if (lost && !s->b_lost)
					continue;
				m_state n = *s;
				del_req(&n, i);
				if (linger) {
					m_job d = j;
					d.deleting = 1;
					push_job(&n, d, e);
					n.b_linger--;
					n.perturbed = 1;
				} else if (!j.deleting) {
					push_job(&n, (m_job){0, 0, 0, 0}, e);
				}
				if (lost) {
					n.b_lost--;
				} else {
					m_leader *L = &n.L;
					L->deleted_uid = r->a;
					L->deleted_cached = r->b;
					L->create = SF_AWP_CREATE_NONE;
					L->deletes_acked = ++L->clock;
				}
				emit(e, &n,
				     lbl(e, lb, "DELETE job#%d%s -> 200%s%s", r->a, r->c ? " (grace 0)" : "",
				         linger ? ", held by a foreign finalizer"
				         : j.deleting ? " (already deleting)"
				                      : ", job gone (its pods wait for GC)",
				         lost ? ", answer lost" : ""),
				     NULL);
			}
		}
	} else {
		m_state n = *s;
		del_req(&n, i);
		sf_awp_answer a;
		memset(&a, 0, sizeof(a));
		a.kind = j.inc ? SF_AWP_ANS_CONFLICT : SF_AWP_ANS_ABSENT;
		int gone = 0;
		int rc = sf_awp_read_delete(&a, &gone);
		if (rc > 0) {
			n.L.delete_gone = 1;
			n.L.create = SF_AWP_CREATE_NONE;
			n.L.deletes_acked = ++n.L.clock; /* learned gone now */
		} else if (rc == 0) {
			/* 409: who holds the name is read live (delete_done) */
			add_req(&n, e, RQ_DEL_GET, 0, 0, r->c);
		}
		emit(e, &n,
		     lbl(e, lb, "DELETE job#%d -> %s", r->a,
		         j.inc ? "409 Conflict (the name holds another uid)" : "404 NotFound"),
		     NULL);
	}
	if (s->b_f404) {
		m_state n = *s;
		del_req(&n, i);
		n.b_f404--;
		n.perturbed = 1;
		sf_awp_answer a;
		memset(&a, 0, sizeof(a));
		a.kind = SF_AWP_ANS_FOREIGN_404;
		int gone = 0;
		read_diff(&a);
		if (sf_awp_read_delete(&a, &gone) > 0) {
			n.L.delete_gone = 1;
			n.L.create = SF_AWP_CREATE_NONE;
			n.L.deletes_acked = ++n.L.clock;
		}
		emit(e, &n, lbl(e, lb, "DELETE job#%d -> a proxy's 404 (not processed)", r->a), NULL);
	}
}

static void do_requests(const m_state *s, m_emit *e)
{
	char lb[256];
	for (int i = 0; i < s->L.nreq; i++) {
		const m_req *r = &s->L.req[i];
		int dup = 0;
		for (int k = 0; k < i; k++)
			dup |= memcmp(&s->L.req[k], r, sizeof(*r)) == 0;
		if (dup)
			continue;
		switch (r->kind) {
		case RQ_CREATE: {
			m_job j = real_job(s);
			if (j.inc) {
				m_state n = *s;
				del_req(&n, i);
				add_req(&n, e, RQ_ADOPT_GET, 0, 0, 0);
				emit(e, &n, lbl(e, lb, "CREATE job-a -> 409 AlreadyExists; GET"), NULL);
				break;
			}
			for (int lost = 0; lost < 2; lost++) {
				if (lost && (!s->b_lost || e->benign))
					continue;
				m_state n = *s;
				del_req(&n, i);
				int inc = n.next_inc++;
				push_job(&n, (m_job){(uint8_t)inc, 0, 0, 0}, e);
				if (lost) {
					n.b_lost--;
					n.perturbed = 1;
					n.L.create = SF_AWP_CREATE_RETRYABLE;
					n.L.create_msg = MSG_LOST;
				} else {
					comp_made(&n, inc);
					n.L.create = SF_AWP_CREATE_OK;
					n.L.create_msg = 0;
					n.alive_ev = (uint8_t)inc;
				}
				emit(e, &n,
				     lbl(e, lb, "CREATE job-a -> 201 job#%d%s", inc, lost ? ", answer lost" : ""),
				     NULL);
			}
			break;
		}
		case RQ_ADOPT_GET:
		case RQ_VERIFY:
		case RQ_DEL_GET:
			answer_get(s, i, r, 0, e);
			if (s->b_f404 && !e->benign)
				answer_get(s, i, r, 1, e);
			break;
		case RQ_DELETE:
			if (e->benign) {
				m_state t = *s;
				t.b_lost = t.b_linger = t.b_f404 = 0;
				answer_delete(&t, i, r, e);
			} else {
				answer_delete(s, i, r, e);
			}
			break;
		case RQ_LIST: {
			m_state n = *s;
			del_req(&n, i);
			m_leader *L = &n.L;
			const m_podset *ps = real_pods(s);
			memset(L->lp, 0, sizeof(L->lp));
			L->lp_n = 0;
			for (int k = 0; k < M_PODS; k++) {
				if (!ps->p[k].uid)
					continue;
				if (L->lp_n == M_LP) {
					broken(e, "live list full: raise M_LP");
					break;
				}
				L->lp[L->lp_n++] = ps->p[k];
			}
			L->lp_have = 1;
			L->lp_answered = s->tick;
			L->lp_asked = r->a;
			int running = 0;
			for (int k = 0; k < M_PODS; k++) {
				const m_pod *q = &ps->p[k];
				running += q->uid && ((q->phase == POD_RUNNING && !q->deleting) ||
				                      q->phase == POD_SUCCEEDED);
			}
			n.list_few = running < expected_pods;
			emit(e, &n, lbl(e, lb, "LIST pods -> %d pods", L->lp_n), NULL);
			break;
		}
		case RQ_DELPOD: {
			m_state n = *s;
			del_req(&n, i);
			m_podset ps = *real_pods(s);
			int found = 0;
			for (int k = 0; k < M_PODS; k++)
				if (ps.p[k].uid == r->a) {
					memset(&ps.p[k], 0, sizeof(m_pod));
					found = 1;
				}
			if (found) {
				push_pods(&n, ps, e);
				n.L.deletes_acked = ++n.L.clock;
			}
			emit(e, &n,
			     lbl(e, lb, "DELETE pod p%d (grace 0) -> %s", r->a,
			         found ? "200, pod gone" : "404"),
			     NULL);
			break;
		}
		}
	}
}

/* ---- the leader crashes; a standby takes over ---- */

static void apply_write_req(m_state *n, const m_req *r, m_emit *e)
{
	m_job j = real_job(n);
	if (r->kind == RQ_CREATE && !j.inc) {
		int inc = n->next_inc++;
		push_job(n, (m_job){(uint8_t)inc, 0, 0, 0}, e);
	} else if (r->kind == RQ_DELETE && j.inc == r->a && !j.deleting) {
		push_job(n, (m_job){0, 0, 0, 0}, e);
	} else if (r->kind == RQ_DELPOD) {
		m_podset ps = *real_pods(n);
		int found = 0;
		for (int k = 0; k < M_PODS; k++)
			if (ps.p[k].uid == r->a) {
				memset(&ps.p[k], 0, sizeof(m_pod));
				found = 1;
			}
		if (found)
			push_pods(n, ps, e);
	}
}

static void prune_jobs(m_state *s)
{
	if (s->b_crash || !s->jview)
		return;
	memmove(s->job, s->job + s->jview, (size_t)(s->njob - s->jview) * sizeof(m_job));
	s->njob = (uint8_t)(s->njob - s->jview);
	memset(s->job + s->njob, 0, (size_t)(M_JH - s->njob) * sizeof(m_job));
	s->jview = 0;
}

static void shift_aw(m_state *s, int k)
{
	memmove(s->aw, s->aw + k, (size_t)(s->naw - k) * sizeof(m_aw));
	s->naw = (uint8_t)(s->naw - k);
	memset(s->aw + s->naw, 0, (size_t)(M_AWH - s->naw) * sizeof(m_aw));
	s->L.written = (int8_t)(s->L.written - k);
	if (s->L.written <= 0)
		s->L.written = 0;
}

static void shift_pods(m_state *s, int k)
{
	memmove(s->pods, s->pods + k, (size_t)(s->npod - k) * sizeof(m_podset));
	s->npod = (uint8_t)(s->npod - k);
	memset(s->pods + s->npod, 0, (size_t)(M_PH - s->npod) * sizeof(m_podset));
}

static void do_crash(const m_state *s, m_emit *e)
{
	if (!s->b_crash)
		return;
	int w[M_REQ], nw = 0;
	for (int i = 0; i < s->L.nreq; i++) {
		int k = s->L.req[i].kind;
		if (k == RQ_CREATE || k == RQ_DELETE || k == RQ_DELPOD)
			w[nw++] = i;
	}
	char lb[256];
	for (int mask = 0; mask < (1 << nw); mask++) {
		m_state n = *s;
		n.b_crash--;
		char applied[120] = "";
		size_t al = 0;
		for (int b = 0; b < nw; b++) {
			if (!(mask & (1 << b)))
				continue;
			const m_req *r = &s->L.req[w[b]];
			apply_write_req(&n, r, e);
			if (e->labels && al < sizeof(applied))
				al += (size_t)snprintf(applied + al, sizeof(applied) - al, " %s",
				                       r->kind == RQ_CREATE   ? "CREATE"
				                       : r->kind == RQ_DELETE ? "DELETE job"
				                                              : "DELETE pod");
		}
		memset(&n.L, 0, sizeof(n.L));
		/* the freshness barrier: the AppWrapper and pod caches hold a
		 * list asked after the new term began */
		shift_aw(&n, n.naw - 1);
		shift_pods(&n, n.npod - 1);
		/* the Job cache is not part of the barrier: any version */
		for (int jv = 0; jv < n.njob; jv++) {
			m_state x = n;
			x.jview = (uint8_t)jv;
			prune_jobs(&x);
			emit(e, &x,
			     lbl(e, lb, "leader crash (in flight, applied:%s); the new leader's Job cache "
			                "shows version %d of %d",
			         al ? applied : " none", jv, n.njob - 1),
			     NULL);
		}
	}
}

/* ---- the environment ---- */

static void do_env(const m_state *s, m_emit *e)
{
	char lb[256];
	m_aw a = real_aw(s);
	const st_info *si = st_get(a.status);
	int benign = e->benign;
	/* Kueue admits: sets suspend=false and podSetInfos */
	if (!benign && a.exists && !a.deleting && a.suspend && s->b_admit &&
	    (si->phase == SF_AW_EMPTY || si->phase == SF_AW_SUSPENDED)) {
		m_state n = *s;
		m_aw v = a;
		v.suspend = 0;
		v.psi = 1;
		push_aw(&n, v, e);
		n.b_admit--;
		n.kueue_admitted = 1;
		emit(e, &n, lbl(e, lb, "Kueue admits (suspend=false, podSetInfos)"), NULL);
	}
	/* Kueue preempts an admitted, unfinished workload */
	if (!benign && a.exists && !a.deleting && !a.suspend && s->b_preempt &&
	    si->phase != SF_AW_SUCCEEDED && si->phase != SF_AW_FAILED) {
		m_state n = *s;
		m_aw v = a;
		v.suspend = 1;
		v.psi = 0;
		push_aw(&n, v, e);
		n.b_preempt--;
		n.kueue_admitted = 0;
		emit(e, &n, lbl(e, lb, "Kueue preempts (suspend=true)"), NULL);
	}
	/* the user deletes the AppWrapper */
	if (!benign && a.exists && !a.deleting && s->b_udelete) {
		m_state n = *s;
		m_aw v = a;
		v.deleting = 1;
		if (!v.fin)
			v.exists = 0;
		push_aw(&n, v, e);
		n.b_udelete--;
		emit(e, &n, lbl(e, lb, "the user deletes the AppWrapper"), NULL);
	}
	m_job j = real_job(s);
	const m_podset *ps = real_pods(s);
	/* the Job controller */
	if (j.inc && !j.deleting) {
		int active, succ, failed;
		count_pods(ps, j.inc, &active, &succ, &failed);
		if (failed && !j.failed) {
			m_state n = *s;
			m_job d = j;
			d.failed = 1;
			push_job(&n, d, e);
			n.failed_inc = j.inc;
			/* a failed Job's active pods are terminated */
			m_podset q = *ps;
			int any = 0;
			for (int i = 0; i < M_PODS; i++)
				if (q.p[i].uid && q.p[i].inc == j.inc && !q.p[i].deleting &&
				    (q.p[i].phase == POD_PENDING || q.p[i].phase == POD_RUNNING))
					q.p[i].deleting = 1, any = 1;
			if (any)
				push_pods(&n, q, e);
			emit(e, &n, lbl(e, lb, "Job controller: job#%d Failed=True (backoffLimit 0)", j.inc),
			     NULL);
		} else if (!failed && succ >= B.completions && !j.complete) {
			m_state n = *s;
			m_job d = j;
			d.complete = 1;
			push_job(&n, d, e);
			n.complete_inc = j.inc;
			emit(e, &n, lbl(e, lb, "Job controller: job#%d Complete=True", j.inc), NULL);
		}
		if (!failed && !j.failed && !j.complete && active < B.parallelism &&
		    succ + active < B.completions && s->b_pods) {
			m_state n = *s;
			m_podset q = *ps;
			int slot = -1;
			for (int i = 0; i < M_PODS; i++)
				if (!q.p[i].uid) {
					slot = i;
					break;
				}
			if (slot < 0) {
				broken(e, "pod set full: raise M_PODS");
			} else {
				int uid = n.next_pod++;
				q.p[slot] = (m_pod){(uint8_t)uid, j.inc, POD_PENDING, 0};
				push_pods(&n, q, e);
				n.b_pods--;
				emit(e, &n, lbl(e, lb, "Job controller creates pod p%d of job#%d", uid, j.inc),
				     NULL);
			}
		}
	}
	/* pods */
	for (int i = 0; i < M_PODS; i++) {
		const m_pod *p = &ps->p[i];
		if (!p->uid)
			continue;
		if (p->deleting) {
			m_state n = *s;
			m_podset q = *ps;
			memset(&q.p[i], 0, sizeof(m_pod));
			push_pods(&n, q, e);
			emit(e, &n, lbl(e, lb, "pod p%d (deleting) is gone", p->uid), NULL);
			continue;
		}
		if (p->phase == POD_PENDING || p->phase == POD_RUNNING) {
			int to = p->phase == POD_PENDING ? POD_RUNNING : POD_SUCCEEDED;
			m_state n = *s;
			m_podset q = *ps;
			q.p[i].phase = (uint8_t)to;
			push_pods(&n, q, e);
			emit(e, &n,
			     lbl(e, lb, "pod p%d of job#%d %s", p->uid, p->inc,
			         to == POD_RUNNING ? "Pending->Running" : "Running->Succeeded"),
			     NULL);
		}
		if (p->phase == POD_RUNNING && s->b_podfail && !benign) {
			m_state n = *s;
			m_podset q = *ps;
			q.p[i].phase = POD_FAILED;
			push_pods(&n, q, e);
			n.b_podfail--;
			n.podfail_inc = p->inc;
			if (n.failures < 255)
				n.failures++;
			emit(e, &n, lbl(e, lb, "pod p%d of job#%d Running->Failed (exit code 1)", p->uid,
			                p->inc),
			     NULL);
		}
	}
	/* the garbage collector: pods whose Job is gone */
	{
		m_podset q = *ps;
		int any = 0;
		for (int i = 0; i < M_PODS; i++)
			if (q.p[i].uid && q.p[i].inc != j.inc && !q.p[i].deleting)
				q.p[i].deleting = 1, any = 1;
		if (any) {
			m_state n = *s;
			push_pods(&n, q, e);
			emit(e, &n, lbl(e, lb, "garbage collector deletes the pods of deleted Jobs"), NULL);
		}
	}
	/* someone else deletes the Job (kubectl delete job): gone at once,
	 * or terminating behind a foreign finalizer */
	if (!benign && j.inc && !j.deleting && s->b_fdel) {
		for (int linger = 0; linger < 2; linger++) {
			if (linger && !s->b_linger)
				continue;
			m_state n = *s;
			n.b_fdel--;
			n.perturbed = 1;
			n.fdel_inc = j.inc;
			if (s->alive_ev == j.inc)
				n.fdel_ok = j.inc;
			if (linger) {
				m_job d = j;
				d.deleting = 1;
				push_job(&n, d, e);
				n.b_linger--;
			} else {
				push_job(&n, (m_job){0, 0, 0, 0}, e);
			}
			emit(e, &n,
			     lbl(e, lb, "someone else deletes job#%d%s", j.inc,
			         linger ? " (a foreign finalizer holds it)" : ""),
			     NULL);
		}
	}
	/* a terminating Job's foreign finalizer is released */
	if (j.inc && j.deleting) {
		m_state n = *s;
		push_job(&n, (m_job){0, 0, 0, 0}, e);
		emit(e, &n, lbl(e, lb, "job#%d's foreign finalizer released: gone", j.inc), NULL);
	}
}

static void do_deliver(const m_state *s, m_emit *e)
{
	char lb[128];
	/* a watch delivers one or more versions at once, never backwards */
	int all = e->benign;
	for (int k = all ? s->naw - 1 : 1; k < s->naw; k++) {
		m_state n = *s;
		shift_aw(&n, k);
		emit(e, &n, lbl(e, lb, "AppWrapper cache +%d version%s", k, k > 1 ? "s" : ""), NULL);
	}
	for (int k = all ? s->npod - 1 : 1; k < s->npod; k++) {
		m_state n = *s;
		shift_pods(&n, k);
		emit(e, &n, lbl(e, lb, "pod cache +%d version%s", k, k > 1 ? "s" : ""), NULL);
	}
	for (int k = all ? s->njob - 1 : s->jview + 1; k < s->njob; k++) {
		if (k <= s->jview)
			continue;
		m_state n = *s;
		n.jview = (uint8_t)k;
		prune_jobs(&n);
		emit(e, &n, lbl(e, lb, "Job cache +%d version%s", k - s->jview, k - s->jview > 1 ? "s" : ""),
		     NULL);
	}
}

static void do_tick(const m_state *s, m_emit *e)
{
	char lb[64];
	if (e->benign ? s->tick >= BENIGN_MAX_TICK : !s->b_tick)
		return;
	m_state n = *s;
	n.tick++;
	if (!e->benign)
		n.b_tick--;
	emit(e, &n, lbl(e, lb, "1 s passes (t=%d)", n.tick), NULL);
}

void m_successors(const m_state *s, m_emit *e)
{
	if (e->benign) {
		/* a catch-up run: the first of these that changes anything */
		do_requests(s, e);
		if (!e->stop)
			do_deliver(s, e);
		if (!e->stop)
			do_env(s, e);
		if (!e->stop)
			do_reconcile(s, e);
		if (!e->stop)
			do_tick(s, e);
		return;
	}
	do_reconcile(s, e);
	do_requests(s, e);
	do_deliver(s, e);
	do_env(s, e);
	do_tick(s, e);
	do_crash(s, e);
}

/* ---- liveness: where a catch-up run must end ---- */

const char *m_check_final(const m_state *s)
{
	static char v[256];
	m_aw a = real_aw(s);
	const st_info *si = st_get(a.status);
	if (!a.exists)
		return "";
	if (a.deleting) {
		snprintf(v, sizeof(v), "liveness: a deleted AppWrapper kept its finalizer (phase %s)",
		         phase_str(si->phase));
		return v;
	}
	if (a.suspend) {
		if (si->phase != SF_AW_SUSPENDED || si->quota.status == 'T') {
			snprintf(v, sizeof(v),
			         "liveness: suspended by Kueue, but ended in phase %s, QuotaReserved=%c",
			         phase_str(si->phase), si->quota.status ? si->quota.status : '-');
			return v;
		}
		return "";
	}
	if (si->phase == SF_AW_SUCCEEDED && si->quota.status == 'F')
		return "";
	if (si->phase == SF_AW_FAILED && si->quota.status == 'F') {
		/* Failed is a right end only for a reason the world gave */
		const char *r = si->unhealthy.reason;
		if (s->failures > 0 &&
		    (strcmp(r, "FailedComponent") == 0 || strcmp(r, "FoundFailedPods") == 0))
			return "";
		/* the environment may be slower than any grace (ticks are free) */
		if (strcmp(r, "InsufficientPodsReady") == 0)
			return "";
		if (s->perturbed && (strcmp(r, "MissingComponent") == 0 || strcmp(r, "CreateFailed") == 0))
			return "";
	}
	snprintf(v, sizeof(v),
	         "liveness: admitted, its pods succeed, but it ended in phase %s (QuotaReserved=%c, "
	         "Unhealthy %s)",
	         phase_str(si->phase), si->quota.status ? si->quota.status : '-',
	         si->unhealthy.reason);
	return v;
}

/* ---- canonical form ---- */

static int u8cmp(const void *a, const void *b)
{
	return *(const uint8_t *)a - *(const uint8_t *)b;
}

static int req_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(m_req));
}

/* only the order of evidence-clock values matters: renumber them */
static void canon_clock(m_leader *L)
{
	uint8_t vals[M_REQ + 2];
	int n = 0;
	if (L->deletes_acked)
		vals[n++] = L->deletes_acked;
	if (L->lp_have && L->lp_asked)
		vals[n++] = L->lp_asked;
	for (int i = 0; i < L->nreq; i++)
		if (L->req[i].kind == RQ_LIST)
			vals[n++] = L->req[i].a;
	qsort(vals, (size_t)n, 1, u8cmp);
	int m = 0;
	for (int i = 0; i < n; i++)
		if (!m || vals[m - 1] != vals[i])
			vals[m++] = vals[i];
	for (int i = 0; i < m; i++) {
		uint8_t from = vals[i], to = (uint8_t)(i + 1);
		if (L->deletes_acked == from)
			L->deletes_acked = to | 0x80;
		if (L->lp_have && L->lp_asked == from)
			L->lp_asked = to | 0x80;
		for (int k = 0; k < L->nreq; k++)
			if (L->req[k].kind == RQ_LIST && L->req[k].a == from)
				L->req[k].a = to | 0x80;
	}
	L->deletes_acked &= 0x7f;
	L->lp_asked &= 0x7f;
	for (int k = 0; k < L->nreq; k++)
		if (L->req[k].kind == RQ_LIST)
			L->req[k].a &= 0x7f;
	L->clock = (uint8_t)m;
}

size_t m_pack(const m_state *in, uint8_t *out)
{
	m_state s = *in;
	m_leader *L = &s.L;
	if (!L->lp_have) {
		L->lp_answered = L->lp_asked = L->lp_n = 0;
		memset(L->lp, 0, sizeof(L->lp));
	}
	if (!L->live_found)
		L->live_failed = L->live_complete = 0;
	if (L->create != SF_AWP_CREATE_RETRYABLE && L->create != SF_AWP_CREATE_FATAL)
		L->create_msg = 0;
	if (!L->deleted_uid)
		L->deleted_cached = 0;
	if (L->written < 0)
		L->written = 0;
	canon_clock(L);
	qsort(L->req, L->nreq, sizeof(m_req), req_cmp);
	size_t w = 0;
#define PUT(x) (out[w++] = (uint8_t)(x))
	PUT(s.naw), PUT(s.njob), PUT(s.jview), PUT(s.npod);
	PUT(s.next_inc), PUT(s.next_pod), PUT(s.tick);
	PUT(s.b_admit), PUT(s.b_preempt), PUT(s.b_udelete), PUT(s.b_podfail), PUT(s.b_pods);
	PUT(s.b_tick), PUT(s.b_crash), PUT(s.b_lost), PUT(s.b_f404), PUT(s.b_linger);
	PUT(s.b_fdel);
	PUT(s.kueue_admitted), PUT(s.reset_mark), PUT(s.list_few), PUT(s.failures);
	PUT(s.perturbed), PUT(s.complete_inc), PUT(s.failed_inc), PUT(s.fdel_inc);
	PUT(s.alive_ev), PUT(s.fdel_ok), PUT(s.podfail_inc);
	for (int i = 0; i < s.naw; i++) {
		m_aw *a = &s.aw[i];
		PUT(a->exists | a->suspend << 1 | a->fin << 2 | a->deleting << 3 | a->psi << 4);
		PUT(a->status & 0xff), PUT(a->status >> 8);
	}
	for (int i = 0; i < s.njob; i++) {
		m_job *j = &s.job[i];
		PUT(j->inc), PUT(j->failed | j->complete << 1 | j->deleting << 2);
	}
	for (int i = 0; i < s.npod; i++) {
		int n = 0;
		while (n < M_PODS && s.pods[i].p[n].uid)
			n++;
		PUT(n);
		for (int k = 0; k < n; k++) {
			m_pod *p = &s.pods[i].p[k];
			PUT(p->uid), PUT(p->inc), PUT(p->phase | p->deleting << 4);
		}
	}
	PUT(L->create), PUT(L->create_msg), PUT(L->expect), PUT(L->confirmed);
	PUT(L->deleted_uid), PUT(L->deleted_cached), PUT(L->delete_gone);
	PUT(L->live_found), PUT(L->live_failed), PUT(L->live_complete);
	PUT(L->lp_have), PUT(L->lp_answered), PUT(L->lp_asked), PUT(L->lp_n);
	for (int k = 0; k < L->lp_n; k++)
		PUT(L->lp[k].uid), PUT(L->lp[k].inc), PUT(L->lp[k].phase | L->lp[k].deleting << 4);
	PUT(L->deletes_acked), PUT(L->clock), PUT(L->written), PUT(L->nreq);
	for (int k = 0; k < L->nreq; k++)
		PUT(L->req[k].kind), PUT(L->req[k].a), PUT(L->req[k].b), PUT(L->req[k].c);
#undef PUT
	return w;
}

void m_unpack(const uint8_t *in, size_t len, m_state *s)
{
	size_t r = 0;
	memset(s, 0, sizeof(*s));
	m_leader *L = &s->L;
#define GET() (in[r++])
	s->naw = GET(), s->njob = GET(), s->jview = GET(), s->npod = GET();
	s->next_inc = GET(), s->next_pod = GET(), s->tick = GET();
	s->b_admit = GET(), s->b_preempt = GET(), s->b_udelete = GET(), s->b_podfail = GET();
	s->b_pods = GET();
	s->b_tick = GET(), s->b_crash = GET(), s->b_lost = GET(), s->b_f404 = GET();
	s->b_linger = GET();
	s->b_fdel = GET();
	s->kueue_admitted = GET(), s->reset_mark = GET(), s->list_few = GET();
	s->failures = GET();
	s->perturbed = GET();
	s->complete_inc = GET(), s->failed_inc = GET(), s->fdel_inc = GET();
	s->alive_ev = GET(), s->fdel_ok = GET(), s->podfail_inc = GET();
	for (int i = 0; i < s->naw; i++) {
		uint8_t f = GET();
		m_aw *a = &s->aw[i];
		a->exists = f & 1, a->suspend = f >> 1 & 1, a->fin = f >> 2 & 1;
		a->deleting = f >> 3 & 1, a->psi = f >> 4 & 1;
		a->status = GET();
		a->status = (uint16_t)(a->status | GET() << 8);
	}
	for (int i = 0; i < s->njob; i++) {
		m_job *j = &s->job[i];
		j->inc = GET();
		uint8_t f = GET();
		j->failed = f & 1, j->complete = f >> 1 & 1, j->deleting = f >> 2 & 1;
	}
	for (int i = 0; i < s->npod; i++) {
		int n = GET();
		for (int k = 0; k < n; k++) {
			m_pod *p = &s->pods[i].p[k];
			p->uid = GET(), p->inc = GET();
			uint8_t f = GET();
			p->phase = f & 15, p->deleting = f >> 4;
		}
	}
	L->create = GET(), L->create_msg = GET(), L->expect = GET(), L->confirmed = GET();
	L->deleted_uid = GET(), L->deleted_cached = GET(), L->delete_gone = GET();
	L->live_found = GET(), L->live_failed = GET(), L->live_complete = GET();
	L->lp_have = GET(), L->lp_answered = GET(), L->lp_asked = GET(), L->lp_n = GET();
	for (int k = 0; k < L->lp_n; k++) {
		L->lp[k].uid = GET(), L->lp[k].inc = GET();
		uint8_t f = GET();
		L->lp[k].phase = f & 15, L->lp[k].deleting = f >> 4;
	}
	L->deletes_acked = GET(), L->clock = GET(), L->written = (int8_t)GET(), L->nreq = GET();
	for (int k = 0; k < L->nreq; k++) {
		L->req[k].kind = GET(), L->req[k].a = GET(), L->req[k].b = GET();
		L->req[k].c = GET();
	}
#undef GET
	if (r != len) {
		fprintf(stderr, "model: unpack read %zu of %zu bytes\n", r, len);
		abort();
	}
}

/* ---- describing a state ---- */

static const char *pod_str(const m_pod *p, char *b)
{
	static const char *const ph[] = {"?", "Pending", "Running", "Succeeded", "Failed"};
	sprintf(b, "p%d/job#%d %s%s", p->uid, p->inc, ph[p->phase & 7], p->deleting ? " deleting" : "");
	return b;
}

static size_t podset_str(const m_podset *ps, char *buf, size_t n)
{
	size_t w = 0;
	char pb[64];
	int any = 0;
	w += (size_t)snprintf(buf + w, n - w, "[");
	for (int i = 0; i < M_PODS && w < n; i++)
		if (ps->p[i].uid) {
			w += (size_t)snprintf(buf + w, n - w, "%s%s", any ? ", " : "", pod_str(&ps->p[i], pb));
			any = 1;
		}
	if (w < n)
		w += (size_t)snprintf(buf + w, n - w, "]");
	return w;
}

static size_t aw_str(const m_aw *a, char *buf, size_t n)
{
	if (!a->exists)
		return (size_t)snprintf(buf, n, "gone");
	const st_info *si = st_get(a->status);
	return (size_t)snprintf(
	    buf, n, "%s suspend=%d%s%s Quota=%c Deployed=%c Unhealthy=%c%s%s%s job-a=%s resets=%" PRId64,
	    phase_str(si->phase), a->suspend, a->fin ? " fin" : "", a->deleting ? " DELETED" : "",
	    si->quota.status ? si->quota.status : '-', si->deployed.status ? si->deployed.status : '-',
	    si->unhealthy.status ? si->unhealthy.status : '-', si->unhealthy.reason[0] ? "(" : "",
	    si->unhealthy.reason, si->unhealthy.reason[0] ? ")" : "",
	    si->comp_rd.reason[0] ? si->comp_rd.reason : "-", si->resets);
}

static const char *job_str(const m_job *j, char *b)
{
	if (!j->inc)
		return strcpy(b, "none");
	sprintf(b, "job#%d%s%s%s", j->inc, j->failed ? " Failed" : "", j->complete ? " Complete" : "",
	        j->deleting ? " deleting" : "");
	return b;
}

void m_describe(const m_state *s, char *buf, size_t n)
{
	size_t w = 0;
	char jb[64];
	static const char *const cr[] = {"-", "OK", "RETRYABLE", "FATAL"};
	static const char *const lv[] = {"-", "FOUND", "MISSING"};
	static const char *const rq[] = {"?", "CREATE", "GET(adopt)", "GET(live)", "GET(delete)",
	                                 "DELETE", "LIST", "DELETE-pod"};
	m_aw ra = real_aw(s);
	w += (size_t)snprintf(buf + w, n - w, "t=%d | AW: ", s->tick);
	w += aw_str(&ra, buf + w, n - w);
	if (w < n && s->naw > 1) {
		w += (size_t)snprintf(buf + w, n - w, " (cache %d behind: ", s->naw - 1);
		w += aw_str(&s->aw[0], buf + w, n - w);
		w += (size_t)snprintf(buf + w, n - w, ")");
	}
	if (w < n) {
		m_job rj = real_job(s);
		w += (size_t)snprintf(buf + w, n - w, "\n        | Job: %s", job_str(&rj, jb));
		if (s->jview != s->njob - 1)
			w += (size_t)snprintf(buf + w, n - w, " (cache: %s)", job_str(&s->job[s->jview], jb));
		w += (size_t)snprintf(buf + w, n - w, " | pods: ");
		w += podset_str(real_pods(s), buf + w, n - w);
		if (s->npod > 1 && w < n) {
			w += (size_t)snprintf(buf + w, n - w, " (cache: ");
			w += podset_str(&s->pods[0], buf + w, n - w);
			w += (size_t)snprintf(buf + w, n - w, ")");
		}
	}
	const m_leader *L = &s->L;
	if (w < n)
		w += (size_t)snprintf(buf + w, n - w,
		                      "\n        | leader: create=%s expect=%d deleted=%d%s gone=%d live=%s "
		                      "livelist=%s acked=%d written=%d",
		                      cr[L->create & 3], L->expect, L->deleted_uid,
		                      L->deleted_cached ? "(cached)" : "", L->delete_gone,
		                      lv[L->live_found % 3], L->lp_have ? "yes" : "no", L->deletes_acked,
		                      L->written);
	if (L->lp_have && w < n) {
		w += (size_t)snprintf(buf + w, n - w, " list(asked %d)=", L->lp_asked);
		m_podset t;
		memset(&t, 0, sizeof(t));
		memcpy(t.p, L->lp, sizeof(m_pod) * (L->lp_n < M_PODS ? L->lp_n : M_PODS));
		w += podset_str(&t, buf + w, n - w);
	}
	for (int i = 0; i < L->nreq && w < n; i++) {
		const m_req *r = &L->req[i];
		w += (size_t)snprintf(buf + w, n - w, "%s%s", i ? ", " : " | in flight: ",
		                      rq[r->kind < 8 ? r->kind : 0]);
		if (w < n && (r->kind == RQ_DELETE || r->kind == RQ_DELPOD))
			w += (size_t)snprintf(buf + w, n - w, " %s%d", r->kind == RQ_DELETE ? "job#" : "p",
			                      r->a);
	}
}

/* ---- seeds: milestones reached by scripted runs ---- */

/* The initial state: a new AppWrapper, suspended by the admission webhook
 * for Kueue, no finalizer yet. Scripts run with every environment budget
 * open and no perturbation; the scenario's budgets apply from its seed. */
static void initial(m_state *s)
{
	memset(s, 0, sizeof(*s));
	s->naw = 1;
	s->aw[0] = (m_aw){.exists = 1, .suspend = 1};
	s->njob = 1;
	s->npod = 1;
	s->next_inc = 1;
	s->next_pod = 1;
	s->b_admit = s->b_preempt = s->b_udelete = s->b_podfail = s->b_pods = s->b_tick = 200;
	/* scripts pick transitions by label: one of each perturbation is there
	 * to be picked (and b_crash keeps the Job history whole) */
	s->b_crash = s->b_lost = s->b_f404 = s->b_linger = s->b_fdel = 1;
}

static void budgets(const m_scen *b, m_state *s)
{
	s->b_admit = (uint8_t)b->admits;
	s->b_preempt = (uint8_t)b->preempts;
	s->b_udelete = (uint8_t)b->user_deletes;
	s->b_podfail = (uint8_t)b->pod_failures;
	s->b_pods = (uint8_t)b->max_pods;
	s->b_tick = (uint8_t)b->ticks;
	s->b_crash = (uint8_t)b->crashes;
	s->b_lost = (uint8_t)b->lost_answers;
	s->b_f404 = (uint8_t)b->foreign_404s;
	s->b_linger = (uint8_t)b->lingers;
	s->b_fdel = (uint8_t)b->foreign_deletes;
	prune_jobs(s);
}

typedef struct pick {
	m_emit e;
	const char *want;
	int found;
	m_state got;
	char label[600];
} pick;

static void pick_fn(m_emit *e, const m_state *n, const char *label, const char *viol)
{
	pick *p = (pick *)e;
	if (!p->found && strncmp(label, p->want, strlen(p->want)) == 0) {
		p->found = 1;
		p->got = *n;
		snprintf(p->label, sizeof(p->label), "%s%s%s", label, viol ? "   <== " : "",
		         viol ? viol : "");
	}
}

/* Runs a script: each entry is the start of the label of the transition
 * to take (from the canonical state, as the search expands it). Appends
 * the numbered steps to *tr. Returns 0, or -1 (printing which step was not
 * enabled). */
static int run_script(m_state *s, const char *const *script, char **tr, size_t *tl, int *no)
{
	for (int i = 0; script[i]; i++) {
		pick p;
		memset(&p, 0, sizeof(p));
		p.e.fn = pick_fn;
		p.e.labels = 1;
		p.want = script[i];
		m_successors(s, &p.e);
		char d[2048];
		if (!p.found || p.e.broken) {
			m_describe(s, d, sizeof(d));
			fprintf(stderr, "model: seed script step %d \"%s\" not enabled in\n        %s\n", i,
			        script[i], d);
			return -1;
		}
		uint8_t buf[M_PACK];
		size_t n = m_pack(&p.got, buf);
		m_unpack(buf, n, s);
		if (!tr)
			continue;
		m_describe(s, d, sizeof(d));
		size_t need = strlen(p.label) + strlen(d) + 64;
		char *t = realloc(*tr, *tl + need);
		if (!t)
			abort();
		*tr = t;
		*tl += (size_t)snprintf(t + *tl, need, "  %4d. %s\n        %s\n", ++*no, p.label, d);
	}
	return 0;
}

/* Scripts (label prefixes). Each is a run of the model itself, so a state
 * reached from a milestone is reachable from the initial state. */
static const char *const to_suspended[] = {
    "reconcile", /* Empty: the finalizer */
    "AppWrapper cache +1",
    "reconcile", /* Empty -> Suspended: componentStatus */
    "AppWrapper cache +1",
    NULL,
};

static const char *const to_running[] = {
    "Kueue admits",
    "AppWrapper cache +1",
    "reconcile", /* Suspended -> Resuming */
    "AppWrapper cache +1",
    "reconcile", /* Resuming: ComponentCreationInitiated, CREATE */
    "CREATE job-a -> 201 job#1",
    "AppWrapper cache +1",
    "reconcile", /* Resuming -> Running */
    "AppWrapper cache +1",
    "Job cache +1",
    NULL,
};

/* Kueue preempts a Running AppWrapper: it is suspended again, job#1 is
 * deleted (job#1 never made a pod) */
static const char *const to_preempted[] = {
    "Kueue preempts",
    "AppWrapper cache +1",
    "reconcile", /* Running -> Suspending */
    "AppWrapper cache +1",
    "reconcile", /* DeletingResources, DELETE job#1 (the cache's copy) */
    "DELETE job#1 -> 200",
    "Job cache +1",
    "AppWrapper cache +1",
    "reconcile", /* the cache dropped job#1: gone */
    "reconcile", /* job-a CompononetDeleted; LIST */
    "LIST pods -> 0",
    "AppWrapper cache +1",
    "reconcile", /* Suspending -> Suspended, QuotaReserved=False */
    "AppWrapper cache +1",
    NULL,
};

/* job#1's pod fails, the Job fails, the AppWrapper resets: job#1 is
 * deleted, its pod collected, and after the pause it resumes. The pod
 * cache never delivers (it lags the whole time). */
static const char *const to_reset[] = {
    "Job controller creates pod p1 of job#1",
    "pod p1 of job#1 Pending->Running",
    "pod p1 of job#1 Running->Failed",
    "Job controller: job#1 Failed=True",
    "Job cache +1",
    "reconcile", /* a cached Failed=True: live GET */
    "GET job-a (live read) -> 200 job#1 Failed",
    "reconcile", /* FailedComponent: Running -> Resetting */
    "AppWrapper cache +1",
    "reconcile", /* DeletingResources, DELETE job#1 */
    "DELETE job#1 -> 200",
    "garbage collector deletes the pods",
    "pod p1 (deleting) is gone",
    "Job cache +1",
    "AppWrapper cache +1",
    "reconcile", /* the cache dropped job#1: gone */
    "reconcile", /* job-a CompononetDeleted; LIST */
    "LIST pods -> 0",
    "AppWrapper cache +1",
    "reconcile", /* DeletionComplete, ResourcesDeployed=False (Resetting) */
    "AppWrapper cache +1",
    "1 s passes",
    "1 s passes",
    "reconcile", /* the pause is over: Resetting -> Resuming */
    "AppWrapper cache +1",
    NULL,
};

/* Kueue preempts a Running AppWrapper whose job#1 has not made a pod yet;
 * the first DELETE of job#1 meets a proxy's 404 and the next reconcile
 * comes after the forceful deletion grace. */
static const char *const to_stalled[] = {
    "Kueue preempts",
    "AppWrapper cache +1",
    "reconcile", /* Running -> Suspending */
    "AppWrapper cache +1",
    "reconcile", /* DeletingResources, DELETE job#1 */
    "DELETE job#1 -> a proxy's 404",
    "AppWrapper cache +1",
    "1 s passes",
    "1 s passes",
    "1 s passes",
    NULL,
};

typedef struct milestone {
	const char *name;
	const char *const *parts[5];
} milestone;

static const milestone milestones[] = {
    {"a new AppWrapper (Empty, suspended by the webhook, no finalizer)", {NULL}},
    {"Suspended (initialised)", {to_suspended, NULL}},
    {"Running (admitted, job#1 created, caches caught up)", {to_suspended, to_running, NULL}},
    {"Suspended again (preempted while Running, job#1 deleted)",
     {to_suspended, to_running, to_preempted, NULL}},
    {"Resuming after a reset (job#1's pod failed; the pod cache never caught up)",
     {to_suspended, to_running, to_reset, NULL}},
    {"Suspending, job#1's DELETE stalled past the forceful deletion grace",
     {to_suspended, to_running, to_stalled, NULL}},
};
#define NMILESTONES (int)(sizeof(milestones) / sizeof(milestones[0]))

static int seed_script(const m_scen *sc, m_state *s, char **tr, size_t *tl, int *no);

const char *m_seed_name(int seed)
{
	return seed >= 0 && seed < NMILESTONES ? milestones[seed].name : "?";
}

int m_seed(const m_scen *sc, m_state *s, char **tr, int *steps)
{
	size_t tl = 0;
	int no = 0;
	if (sc->seed < 0 || sc->seed >= NMILESTONES)
		return -1;
	gone_on_observe = sc->gone_on_observe;
#ifdef SF_AWP_MUTANTS
	/* milestones are the shipped machine's: a mutant takes over from there */
	sf_awp_mutant mut = sf_awp_mutation;
	sf_awp_mutation = SF_AWP_MUT_NONE;
#endif
	int rc = seed_script(sc, s, tr, &tl, &no);
#ifdef SF_AWP_MUTANTS
	sf_awp_mutation = mut;
#endif
	if (rc < 0)
		return -1;
	budgets(sc, s);
	uint8_t buf[M_PACK];
	size_t n = m_pack(s, buf);
	m_unpack(buf, n, s);
	if (tr && !*tr)
		*tr = calloc(1, 1);
	if (steps)
		*steps = no;
	return 0;
}

static int seed_script(const m_scen *sc, m_state *s, char **tr, size_t *tl, int *no)
{
	initial(s);
	if (tr)
		*tr = NULL;
	for (int i = 0; milestones[sc->seed].parts[i]; i++)
		if (run_script(s, milestones[sc->seed].parts[i], tr, tl, no) < 0) {
			if (tr)
				free(*tr);
			return -1;
		}
	return 0;
}

int m_longest_timer(void)
{
	int m = B.admission_grace;
	int t[] = {B.warmup_grace, B.failure_grace, B.forceful_grace, B.success_ttl,
	           B.missing_grace, B.retry_pause << (B.retry_limit > 0 ? B.retry_limit : 0)};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i] > m)
			m = t[i];
	return m + 2;
}
