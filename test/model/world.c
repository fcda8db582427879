/*
 * world.c - the model: state, transitions and invariants (README.md).
 *
 * The real cluster is one AppWrapper ("aw", uid "aw-1") wrapping a batch/v1
 * Job ("job-a") and, in some scenarios, a second component: a bare v1 Pod
 * ("pod-b", the component is its own pod) or an apps/v1 Deployment
 * ("deploy-b"). Each component's name is held by one incarnation at a time
 * (each create makes a new uid: job#1, job#2, ..., pod#1, deploy#1, ...);
 * the pods are those of every component. Each resource keeps the history
 * of its states; each of the leader's caches is an index into its
 * resource's history (older versions than every index are dropped). A
 * reconcile builds the phase machine's input from those caches and the
 * leader's memory exactly as reconcile.c's observe_components and step
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
/* the scenario's AppWrapper: its components' kinds and templates */
static int ncomps;
static int ckind[M_NCOMP];
static char templates[M_NCOMP][512];
static int completions, parallelism;                  /* the Job's */
static int64_t expected_pods, comp_expected[M_NCOMP]; /* all, each component's */
static int gone_on_observe;                           /* the scenario's executor variant */
static int scen_edits;                                /* the scenario's user may edit annotations */
static uint64_t steps_run;
/* the seeded mutation's decisions that differ from the shipped machine's */
static uint64_t mut_diffs, mut_diffs_ending;

/* by kind: the component's name, its incarnations' and its cache's names */
static const char *const comp_names[] = {"", "job-a", "pod-b", "deploy-b"};
static const char *const inc_names[] = {"", "job", "pod", "deploy"};
static const char *const cache_names[] = {"", "Job cache", "Pod component cache",
                                          "Deployment cache"};
#define CNAME(i) comp_names[ckind[i]]
#define INAME(i) inc_names[ckind[i]]

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
	int64_t found; /* MissingComponent: the components its message says it found */
} st_cond;

typedef struct st_info {
	sf_aw_phase phase;
	int64_t resets;
	int ncomp;
	st_cond quota, deployed, podsready, unhealthy, deleting;
	st_cond comp_rd[M_NCOMP]; /* componentStatus[i] ResourcesDeployed */
} st_info;

typedef struct st_entry {
	char *text;
	size_t len;
	uint64_t h;
	st_info info;
} st_entry;

static st_entry *sts;
static size_t nsts, capsts;
static uint32_t *st_slots; /* 1-based ids into sts, 0 = empty */
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
		char msg[160];
		long long found;
		if (sf_jv_str(sf_jv_get(cd, "message"), msg, sizeof(msg)) > 0 &&
		    sscanf(msg, "Only found %lld deployed components", &found) == 1)
			c->found = found;
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
	cond_of(conds, "PodsReady", &i->podsready);
	cond_of(conds, "Unhealthy", &i->unhealthy);
	cond_of(conds, "DeletingResources", &i->deleting);
	sf_jv comps = sf_jv_get(st, "componentStatus");
	i->ncomp = (int)sf_jv_len(comps);
	for (int k = 0; k < M_NCOMP; k++)
		cond_of(sf_jv_get(sf_jv_at(comps, (size_t)k), "conditions"), "ResourcesDeployed",
		        &i->comp_rd[k]);
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
	uint16_t status;     /* 0: none */
	int8_t meta;         /* a metadata patch */
	int8_t meta_fin;     /* the finalizer is in the patched list */
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
	ncomps = 0;
	steps_run = 0;
	mut_diffs = mut_diffs_ending = 0;
}

/* The scenario's AppWrapper: the Job, and its second component if any. */
static void scen_setup(const m_scen *sc)
{
	static const char containers[] = "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]";
	ncomps = sc->second ? 2 : 1;
	completions = sc->completions ? sc->completions : B.completions;
	parallelism = sc->parallelism ? sc->parallelism : B.parallelism;
	ckind[0] = M_JOB;
	ckind[1] = sc->second;
	snprintf(templates[0], sizeof(templates[0]),
	         "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"job-a\"},"
	         "\"spec\":{\"completions\":%d,\"parallelism\":%d,\"backoffLimit\":0,"
	         "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",%s}}}}",
	         completions, parallelism, containers);
	if (sc->second == M_POD)
		snprintf(
		    templates[1], sizeof(templates[1]),
		    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod-b\"},"
		    "\"spec\":{\"restartPolicy\":\"Never\",%s}}",
		    containers);
	else if (sc->second == M_DEPLOY)
		snprintf(
		    templates[1], sizeof(templates[1]),
		    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":"
		    "\"deploy-b\"},\"spec\":{\"replicas\":%d,\"selector\":{\"matchLabels\":{"
		    "\"app\":"
		    "\"b\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"b\"}},\"spec\":{%s}}"
		    "}}",
		    B.replicas, containers);
	char aw[2048], err[256];
	size_t w = (size_t)snprintf(aw, sizeof(aw), "{\"spec\":{\"components\":[");
	for (int i = 0; i < ncomps && w < sizeof(aw); i++)
		w += (size_t)snprintf(aw + w, sizeof(aw) - w, "%s{\"template\":%s}", i ? "," : "",
		                      templates[i]);
	if (w < sizeof(aw))
		snprintf(aw + w, sizeof(aw) - w, "]}}");
	if (sf_awc_expected_pods(sf_jv_root(aw, strlen(aw)), &expected_pods, err, sizeof(err)) < 0)
		expected_pods = 0;
	for (int i = 0; i < ncomps; i++)
		if (sf_awc_component_expected_pods(sf_jv_root(aw, strlen(aw)), (size_t)i,
		                                   &comp_expected[i], err, sizeof(err)) < 0)
			comp_expected[i] = 0;
	gone_on_observe = sc->gone_on_observe;
	scen_edits = sc->edits;
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

/* component c's name as the API server holds it, and as the leader's
 * cache shows it */
static m_job real_job(const m_state *s, int c)
{
	return s->job[c][s->njob[c] - 1];
}

static m_job view_job(const m_state *s, int c)
{
	return s->job[c][s->jview[c]];
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

static void push_job(m_state *s, int c, m_job j, m_emit *e)
{
	if (memcmp(&j, &s->job[c][s->njob[c] - 1], sizeof(j)) == 0)
		return;
	if (s->njob[c] == M_JH) {
		broken(e, "component history full: raise M_JH");
		return;
	}
	s->job[c][s->njob[c]++] = j;
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

__attribute__((format(printf, 3, 4))) static const char *lbl(m_emit *e, char *buf, const char *fmt,
                                                             ...)
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

/* the pods incarnation inc of component own made, by phase (not being
 * deleted) */
static void count_pods(const m_podset *ps, int own, int inc, int *active, int *succ, int *failed)
{
	*active = *succ = *failed = 0;
	for (int i = 0; i < M_PODS; i++) {
		const m_pod *p = &ps->p[i];
		if (!p->uid || p->own != own || p->inc != inc)
			continue;
		if (p->phase == POD_SUCCEEDED)
			(*succ)++;
		else if (p->phase == POD_FAILED)
			(*failed)++;
		else if (!p->deleting)
			(*active)++;
	}
}

/* Some component has fewer pods of its own Running (not being deleted)
 * or Succeeded than it expects: too few pods ready (a component's surplus
 * Succeeded pods never make up for another's). */
static int few_ready(const m_podset *ps)
{
	int64_t ready[M_NCOMP] = {0}, sum = 0;
	for (int i = 0; i < M_PODS; i++) {
		const m_pod *q = &ps->p[i];
		if (q->uid && q->own < M_NCOMP &&
		    ((q->phase == POD_RUNNING && !q->deleting) || q->phase == POD_SUCCEEDED))
			ready[q->own]++;
	}
	for (int c = 0; c < ncomps; c++)
		sum += ready[c] < comp_expected[c] ? ready[c] : comp_expected[c];
	return sum < expected_pods;
}

/* the slot of the pod of a Pod component's incarnation inc, or -1 */
static int comp_pod(const m_podset *ps, int c, int inc)
{
	for (int i = 0; i < M_PODS; i++)
		if (ps->p[i].uid && ps->p[i].own == c && ps->p[i].inc == inc)
			return i;
	return -1;
}

/* the retry limit an AppWrapper version's annotations give */
static int retry_limit_of(const m_aw *v)
{
	switch (v->ann & ANN_RL) {
	case ANN_RL0: return 0;
	case ANN_RL2: return 2;
	default: return B.retry_limit;
	}
}

/* ---- the objects the phase machine reads ---- */

static int aw_json(const m_aw *v, char *buf, size_t cap)
{
	uint16_t st = v->status;
	char ann[256] = "", comps[1600] = "";
	if (v->ann) {
		const char *rl = (v->ann & ANN_RL) == ANN_RL0   ? "0"
		                 : (v->ann & ANN_RL) == ANN_RL2 ? "2"
		                                                : NULL;
		snprintf(ann, sizeof(ann), ",\"annotations\":{%s%s%s%s%s}",
		         rl ? "\"" SF_AW_ANNOT_PREFIX "retryLimit\":\"" : "", rl ? rl : "",
		         rl ? "\"" : "", rl && (v->ann & ANN_FG0) ? "," : "",
		         v->ann & ANN_FG0 ? "\"" SF_AW_ANNOT_PREFIX
		                            "forcefulDeletionGracePeriodDuration\":\"0s\""
		                          : "");
	}
	size_t w = 0;
	for (int i = 0; i < ncomps && w < sizeof(comps); i++)
		w += (size_t)snprintf(
		    comps + w, sizeof(comps) - w, "%s{%s\"template\":%s}", i ? "," : "",
		    v->psi ? "\"podSetInfos\":[{\"nodeSelector\":{\"zone\":\"a\"}}]," : "",
		    templates[i]);
	if (w >= sizeof(comps))
		return -1;
	return snprintf(buf, cap,
	                "{\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
	                "\"metadata\":{\"name\":\"aw\",\"namespace\":\"ns\",\"uid\":\"aw-1\","
	                "\"labels\":{\"" SF_AW_QUEUE_LABEL "\":\"q\"}%s%s%s},"
	                "\"spec\":{\"suspend\":%s,\"components\":[%s]}%s%s}",
	                ann, v->fin ? ",\"finalizers\":[\"" SF_AW_FINALIZER "\"]" : "",
	                v->deleting ? ",\"deletionTimestamp\":\"2027-01-15T08:00:00Z\"" : "",
	                v->suspend ? "true" : "false", comps, st ? ",\"status\":" : "",
	                st_text(st));
}

/* The succeeded pods of each component, as the controller counts them:
 * *own[i] for component i (of comp_status) whose Succeeded pod it is. */
typedef struct m_claims {
	sf_jv comp_status;
	int32_t *own[M_NCOMP];
} m_claims;

/* A pod as the API server shows it, added to the tally and, when it is
 * Succeeded, counted for the component it is (sf_awp_pod_component, the
 * controller's rule). A Job's pods are controlled by their Job, a
 * Deployment's by its ReplicaSet (deploy-b-<incarnation>, no component),
 * a Pod component's pod by the AppWrapper: it is the component itself; a
 * Deployment's pod (restartPolicy Always) fails only when it is evicted,
 * without an exit code. */
static void pod_add(sf_awp_pods *sum, const m_pod *p, const sf_aw_settings *set, const m_claims *cl)
{
	char buf[768], name[32], owner[200];
	static const char *const ph[] = {"", "Pending", "Running", "Succeeded", "Failed"};
	const char *cs = "";
	int kind = ckind[p->own];
	if (p->phase == POD_FAILED && kind == M_DEPLOY)
		cs = ",\"reason\":\"Evicted\"";
	else if (p->phase == POD_FAILED)
		cs = ",\"containerStatuses\":[{\"name\":\"c\",\"state\":{\"terminated\":"
		     "{\"exitCode\":1,\"reason\":\"Error\"}}}]";
	else if (p->phase == POD_SUCCEEDED)
		cs = ",\"containerStatuses\":[{\"name\":\"c\",\"state\":{\"terminated\":"
		     "{\"exitCode\":0,\"reason\":\"Completed\"}}}]";
	if (kind == M_POD)
		snprintf(name, sizeof(name), "%s", comp_names[kind]);
	else
		snprintf(name, sizeof(name), "%s-p%d", comp_names[kind], p->uid);
	if (kind == M_JOB)
		snprintf(owner, sizeof(owner),
		         "\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"%s\","
		         "\"uid\":\"job-%d\"",
		         comp_names[kind], p->inc);
	else if (kind == M_DEPLOY)
		snprintf(owner, sizeof(owner),
		         "\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"%s-%d\","
		         "\"uid\":\"rs-%d\"",
		         comp_names[kind], p->inc, p->inc);
	else
		snprintf(owner, sizeof(owner),
		         "\"apiVersion\":\"" SF_AW_API_VERSION "\",\"kind\":\"AppWrapper\","
		         "\"name\":\"aw\",\"uid\":\"aw-1\"");
	int n = snprintf(buf, sizeof(buf),
	                 "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"p%d\""
	                 ",\"ownerReferences\":[{%s,\"controller\":true}]"
	                 "%s},\"status\":{\"phase\":\"%s\"%s}}",
	                 name, p->uid, owner,
	                 p->deleting ? ",\"deletionTimestamp\":\"2027-01-15T08:00:00Z\"" : "",
	                 ph[p->phase], cs);
	sf_jv pod = sf_jv_root(buf, (size_t)n);
	sf_awp_pods_add(sum, pod, set);
	if (p->phase != POD_SUCCEEDED || !cl)
		return;
	int i = sf_awp_pod_component(pod, cl->comp_status);
	if (i >= 0 && i < M_NCOMP && cl->own[i])
		(*cl->own[i])++;
}

static void pods_sum(const m_pod *pods, int n, sf_awp_pods *sum, const sf_aw_settings *set,
                     const m_claims *cl)
{
	memset(sum, 0, sizeof(*sum));
	for (int i = 0; i < n; i++)
		if (pods[i].uid)
			pod_add(sum, &pods[i], set, cl);
}

/* ---- the leader's memory ---- */

enum { MSG_NONE, MSG_LOST, MSG_VANISHED, MSG_GOING, MSG_FOREIGN };
static const char *const msgs[] = {
    "",
    "the answer to the create was lost",
    "component vanished while checking its owner",
    "the previous instance of the component is still being deleted",
    "the component exists, but is not controlled by this AppWrapper",
};

/* memory.c's sf_awctl_comp_made: ours, with this uid, not yet in the cache */
static void comp_made(m_state *s, int c, int inc)
{
	m_cmem *M = &s->L.c[c];
	M->expect = (uint8_t)inc;
	M->confirmed = (uint8_t)(s->tick + 1);
	M->delete_gone = 0;
	M->live_found = M->live_failed = M->live_complete = 0;
	M->deleted_uid = 0;
	M->deleted_cached = 0;
}

static void add_req(m_state *s, m_emit *e, int kind, int i, int a, int b, int c)
{
	m_leader *L = &s->L;
	if (L->nreq == M_REQ) {
		broken(e, "too many requests in flight: raise M_REQ");
		return;
	}
	L->clock++; /* a request sent */
	L->req[L->nreq++] = (m_req){(uint8_t)kind, (uint8_t)i, (uint8_t)a, (uint8_t)b, (uint8_t)c};
}

static void del_req(m_state *s, int i)
{
	m_leader *L = &s->L;
	memmove(&L->req[i], &L->req[i + 1], (size_t)(L->nreq - i - 1) * sizeof(m_req));
	L->nreq--;
	memset(&L->req[L->nreq], 0, sizeof(m_req));
}

/* learned that nothing of ours is left under component c's name */
static void learned_gone(m_state *s, int c)
{
	m_leader *L = &s->L;
	L->c[c].delete_gone = 1;
	L->c[c].create = SF_AWP_CREATE_NONE;
	L->deletes_acked = ++L->clock; /* learned gone now */
}

/* ---- the real cluster's own changes ---- */

/* A new incarnation of component c holds its name (a create landed); a
 * Pod component's is its own pod, Pending. */
static int make_inc(m_state *s, int c, m_emit *e)
{
	int inc = s->next_inc[c]++;
	push_job(s, c, (m_job){(uint8_t)inc, 0, 0, 0}, e);
	if (ckind[c] == M_POD) {
		m_podset q = *real_pods(s);
		int slot = -1;
		for (int i = 0; i < M_PODS; i++)
			if (!q.p[i].uid) {
				slot = i;
				break;
			}
		if (slot < 0) {
			broken(e, "pod set full: raise M_PODS");
			return inc;
		}
		q.p[slot] =
		    (m_pod){(uint8_t)s->next_pod++, (uint8_t)inc, POD_PENDING, 0, (uint8_t)c};
		push_pods(s, q, e);
	}
	return inc;
}

/* The pod with this uid is gone (a grace-0 DELETE, or a terminating pod's
 * end); a Pod component's incarnation goes with it. Returns 1 if it was
 * there. */
static int pod_gone(m_state *s, int uid, m_emit *e)
{
	m_podset ps = *real_pods(s);
	int found = 0;
	for (int k = 0; k < M_PODS; k++)
		if (ps.p[k].uid == uid) {
			int c = ps.p[k].own;
			if (ckind[c] == M_POD && real_job(s, c).inc == ps.p[k].inc)
				push_job(s, c, (m_job){0, 0, 0, 0}, e);
			memset(&ps.p[k], 0, sizeof(m_pod));
			found = 1;
		}
	if (found)
		push_pods(s, ps, e);
	return found;
}

/* A Pod component's incarnation is deleted: with grace 0 it is gone at
 * once, else it terminates (deletionTimestamp) until the kubelet has
 * stopped it. */
static void pod_comp_delete(m_state *s, int c, int force, m_emit *e)
{
	m_job j = real_job(s, c);
	int slot = comp_pod(real_pods(s), c, j.inc);
	if (force) {
		if (slot >= 0)
			pod_gone(s, real_pods(s)->p[slot].uid, e);
		else
			push_job(s, c, (m_job){0, 0, 0, 0}, e);
		return;
	}
	m_job d = j;
	d.deleting = 1;
	push_job(s, c, d, e);
	if (slot >= 0 && !real_pods(s)->p[slot].deleting) {
		m_podset q = *real_pods(s);
		q.p[slot].deleting = 1;
		push_pods(s, q, e);
	}
}

/* ---- invariants ---- */

static int pod_nonterminal(const m_pod *p)
{
	return p->uid && (p->phase == POD_PENDING || p->phase == POD_RUNNING);
}

const char *m_check_state(const m_state *s)
{
	static char v[256];
	/* 3: never two live copies of a component's workload: non-terminal
	 * pods of two of its incarnations at once (the name itself holds one
	 * incarnation). The pods of an incarnation someone else deleted are
	 * the garbage collector's to remove, whatever the controller does. */
	const m_podset *ps = real_pods(s);
	for (int c = 0; c < ncomps; c++) {
		int inc = 0;
		for (int i = 0; i < M_PODS; i++) {
			const m_pod *p = &ps->p[i];
			if (!pod_nonterminal(p) || p->own != c ||
			    (s->fdel_inc[c] && p->inc == s->fdel_inc[c]))
				continue;
			if (inc && p->inc != inc) {
				snprintf(v, sizeof(v),
				         "invariant 3 (one incarnation at a time): pods of %s#%d "
				         "and %s#%d are "
				         "both running or pending",
				         INAME(c), inc, INAME(c), p->inc);
				return v;
			}
			inc = p->inc;
		}
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
static void check_write(const m_state *s, const m_aw *old, const m_aw *nw, const m_plan *p, char *v,
                        size_t vn)
{
	const st_info *o = st_get(old->status), *n = st_get(nw->status);
	const m_podset *ps = real_pods(s);
	int nonterm = 0;
	for (int i = 0; i < M_PODS; i++)
		nonterm |= pod_nonterminal(&ps->p[i]);
	/* each component: live (an incarnation holds the name, not
	 * terminating) and unfinished (a live Job neither Failed nor
	 * Complete, a live Deployment: they make pods; a Pod component's
	 * own pod is among the pods) */
	int live[M_NCOMP] = {0}, nlive = 0, unfinished = -1;
	char lives[64] = "";
	for (int c = 0; c < ncomps; c++) {
		m_job j = real_job(s, c);
		live[c] = j.inc && !j.deleting;
		if (!live[c])
			continue;
		snprintf(lives + strlen(lives), sizeof(lives) - strlen(lives), "%s%s#%d",
		         nlive ? " and " : "", INAME(c), j.inc);
		nlive++;
		int unf = ckind[c] == M_JOB ? !j.failed && !j.complete : ckind[c] == M_DEPLOY;
		if (unf && unfinished < 0)
			unfinished = c;
	}
	char running[96] = "a pod is pending or running";
	if (!nonterm && unfinished >= 0) {
		if (ncomps == 1)
			snprintf(running, sizeof(running), "the Job is live and unfinished");
		else
			snprintf(running, sizeof(running), "%s#%d is live and unfinished",
			         INAME(unfinished), real_job(s, unfinished).inc);
	}
	v[0] = 0;
	if (p->meta) {
		/* 6: an admission is never undone */
		if (p->meta_suspend == 1 && s->kueue_admitted && !old->suspend)
			viol_add(v, vn,
			         "invariant 6 (admission never undone): the controller set "
			         "spec.suspend=true after Kueue admitted the AppWrapper");
		/* 2: the finalizer goes only when nothing runs */
		if (old->fin && !nw->fin && (nonterm || unfinished >= 0))
			viol_add(v, vn,
			         "invariant 2 (nothing left running): finalizer removed while %s",
			         running);
		return;
	}
	if (!nw->status)
		return;
	/* 1: MissingComponent only for components no incarnation of which
	 * lives: its message counts those it found */
	if (is_true(&n->unhealthy, "MissingComponent") &&
	    !is_true(&o->unhealthy, "MissingComponent") && nlive > n->unhealthy.found)
		viol_add(v, vn,
		         "invariant 1 (no false MissingComponent): Unhealthy=MissingComponent "
		         "(phase %s, "
		         "%" PRId64 " of %d found) while %s %s",
		         phase_str(n->phase), n->unhealthy.found, ncomps, lives,
		         nlive > 1 ? "live" : "lives");
	/* 2: quota released, or deletion complete, only when nothing runs */
	int quota_off = n->quota.status == 'F' && o->quota.status != 'F';
	int del_done = strcmp(n->deleting.reason, "DeletionComplete") == 0 &&
	               strcmp(o->deleting.reason, "DeletionComplete") != 0;
	if ((quota_off || del_done) && (nonterm || unfinished >= 0))
		viol_add(v, vn, "invariant 2 (nothing left running): %s while %s",
		         quota_off ? "QuotaReserved=False" : "DeletingResources=DeletionComplete",
		         running);
	/* 4: created successfully only for an incarnation of this attempt */
	for (int c = 0; c < ncomps; c++) {
		int latest = s->next_inc[c] - 1; /* the last incarnation created */
		m_job j = real_job(s, c);
		if (!is_true(&n->comp_rd[c], "ComponentCreatedSuccessfully") ||
		    is_true(&o->comp_rd[c], "ComponentCreatedSuccessfully") ||
		    (live[c] && j.inc > s->reset_mark[c]) ||
		    /* created in this attempt and shown alive to the controller,
		     * then deleted by someone else: the answer was true when it
		     * came */
		    (s->fdel_ok[c] && s->fdel_ok[c] == latest && latest > s->reset_mark[c]))
			continue;
		char why[96];
		if (!j.inc)
			snprintf(why, sizeof(why), "no incarnation exists");
		else if (j.deleting)
			snprintf(why, sizeof(why), "the only incarnation, %s#%d, is being deleted",
			         INAME(c), j.inc);
		else
			snprintf(
			    why, sizeof(why),
			    "the live incarnation, %s#%d, predates the last reset or suspension",
			    INAME(c), j.inc);
		viol_add(v, vn,
		         "invariant 4 (created means created): %s%sComponentCreatedSuccessfully "
		         "while %s",
		         ncomps > 1 ? CNAME(c) : "", ncomps > 1 ? " " : "", why);
	}
	/* 5: Succeeded only after every component's last incarnation
	 * completed: a Job's Complete=True, a Pod component Succeeded; a
	 * Deployment never completes */
	if (n->phase == SF_AW_SUCCEEDED && o->phase != SF_AW_SUCCEEDED) {
		for (int c = 0; c < ncomps; c++) {
			int latest = s->next_inc[c] - 1;
			if (ckind[c] == M_DEPLOY)
				viol_add(v, vn,
				         "invariant 5 (no early success): Succeeded while the "
				         "AppWrapper holds "
				         "a Deployment (%s#%d, %s), which never completes",
				         INAME(c), latest, live[c] ? "live" : "gone");
			else if (!(latest && s->complete_inc[c] == latest))
				viol_add(v, vn,
				         "invariant 5 (no early success): Succeeded while %s#%d, "
				         "the last %s "
				         "created, never %s",
				         INAME(c), latest, ckind[c] == M_JOB ? "Job" : "Pod",
				         ckind[c] == M_JOB ? "was Complete" : "Succeeded");
		}
	}
	/* 7: a reset (or, past the retry limit, Failed: upstream's
	 * resetOrFail) only on a confirmed failure */
	const char *r = n->unhealthy.reason;
	int failing = n->phase == SF_AW_FAILED && o->phase != SF_AW_FAILED &&
	              (strcmp(r, "FailedComponent") == 0 || strcmp(r, "FoundFailedPods") == 0 ||
	               strcmp(r, "InsufficientPodsReady") == 0);
	int resetting =
	    (n->phase == SF_AW_RESETTING && o->phase != SF_AW_RESETTING) || n->resets > o->resets;
	if (resetting || failing) {
		int ok;
		int any_failed_pod = 0, latest_failed = 0, latest_podfail = 0;
		for (int i = 0; i < M_PODS; i++) {
			const m_pod *q = &ps->p[i];
			any_failed_pod |= q->uid && q->phase == POD_FAILED;
		}
		for (int c = 0; c < ncomps; c++) {
			int latest = s->next_inc[c] - 1;
			latest_failed |= latest && s->failed_inc[c] == latest;
			latest_podfail |= latest && s->podfail_inc[c] == latest;
		}
		if (strcmp(r, "FailedComponent") == 0)
			ok = latest_failed;
		else if (strcmp(r, "FoundFailedPods") == 0)
			ok = any_failed_pod || latest_failed || latest_podfail;
		else if (strcmp(r, "InsufficientPodsReady") == 0)
			ok = few_ready(ps) || s->list_few;
		else if (strcmp(r, "CreateFailed") == 0)
			ok = 1; /* the create's own answer */
		else
			ok = 0;
		if (!ok)
			viol_add(
			    v, vn, "invariant 7 (no reset without a failure): %s for %s while %s",
			    failing ? "Failed" : "reset", r,
			    strcmp(r, "FailedComponent") == 0 ? "the last Job created never Failed"
			    : strcmp(r, "FoundFailedPods") == 0
			        ? "no pod of the last incarnation created failed, and no failed "
			          "pod "
			          "is left"
			        : "enough pods run");
	}
	/* 8: the retry limit is the user's, as the annotation says when the
	 * write lands: a reset only below it, Failed for a retryable failure
	 * only at it (no exit code is terminal here) */
	int limit = retry_limit_of(old);
	if (n->resets > o->resets && o->resets >= limit)
		viol_add(v, vn,
		         "invariant 8 (the user's retry limit): reset %" PRId64
		         " while the retryLimit "
		         "annotation allows %d",
		         n->resets, limit);
	if (failing && o->resets < limit)
		viol_add(v, vn,
		         "invariant 8 (the user's retry limit): Failed for %s after %" PRId64
		         " resets while the retryLimit annotation allows %d",
		         r, o->resets, limit);
}

/* ---- the reconcile (process + observe_components + sf_awp_step) ---- */

typedef struct key_comp {
	int32_t state, deleting, failed, complete, live_found, live_failed, live_complete;
	int32_t create, create_msg, delete_gone, completion_known;
	int64_t confirmed_ms;
} key_comp;

typedef struct key_in {
	int32_t ncomp;
	key_comp c[M_NCOMP];
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
	for (int i = 0; i < ncomp; i++) {
		const sf_awp_comp *oc = &comp[i];
		key_comp *kc = &k.c[i];
		kc->state = oc->cached.state, kc->deleting = oc->cached.deleting;
		kc->failed = oc->cached.failed, kc->complete = oc->cached.complete;
		kc->live_found = oc->live.found, kc->live_failed = oc->live.failed;
		kc->live_complete = oc->live.complete;
		kc->confirmed_ms = oc->confirmed_ms;
		kc->create = oc->create, kc->delete_gone = oc->delete_gone;
		kc->create_msg = L->c[i].create_msg;
		kc->completion_known = oc->completion_known;
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
			snprintf(a + strlen(a), sizeof(a) - strlen(a), " %s",
			         act_name(m->acts[i][0]));
		for (int i = 0; i < ref->nacts; i++)
			snprintf(b + strlen(b), sizeof(b) - strlen(b), " %s",
			         act_name(ref->acts[i][0]));
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
	/* the settings of this AppWrapper version: its annotations */
	sf_jv aw = sf_jv_root(json, jlen);
	sf_aw_settings set;
	sf_aw_settings_resolve(&cfg, sf_jv_path(aw, "metadata.annotations"), &set);
	/* each component's succeeded pods, in the pod cache and the live
	 * list (process, pod_list_item) */
	sf_awp_comp cc[M_NCOMP];
	memset(cc, 0, sizeof(cc));
	if (ncomp)
		memcpy(cc, comp, (size_t)ncomp * sizeof(cc[0]));
	m_claims cache = {.comp_status = sf_jv_path(aw, "status.componentStatus")};
	m_claims live = cache;
	for (int i = 0; i < ncomp; i++) {
		cache.own[i] = &cc[i].succeeded;
		live.own[i] = &cc[i].live_succeeded;
	}
	sf_awp_pods pods;
	pods_sum(view->p, M_PODS, &pods, &set, &cache);
	sf_awp_live_pods lp;
	memset(&lp, 0, sizeof(lp));
	if (L->lp_have) {
		pods_sum(L->lp, L->lp_n, &lp.pods, &set, &live);
		lp.answered_ms = (T0 + L->lp_answered) * 1000LL;
		lp.asked = L->lp_asked;
	}
	sf_awp_input in = {
	    .aw = aw,
	    .cfg = &cfg,
	    .s = &set,
	    .now_ms = now,
	    .comp = ncomp ? cc : NULL,
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

/* executor.c's run_actions: every request of the plan is sent now */
static void run_actions(m_state *s, const m_plan *p, const m_pod *lp, int lp_n, m_emit *e)
{
	m_leader *L = &s->L;
	for (int i = 0; i < p->nacts; i++) {
		int kind = p->acts[i][0], c = p->acts[i][1];
		if (c >= ncomps && kind != SF_AWP_ACT_LIST_PODS && kind != SF_AWP_ACT_DELETE_PODS) {
			broken(e, "an action for a component the AppWrapper does not have");
			return;
		}
		m_cmem *M = &L->c[c < M_NCOMP ? c : 0];
		switch (kind) {
		case SF_AWP_ACT_CREATE:
			/* start_create: a create may land even if its answer is
			 * lost, so "gone" no longer holds */
			M->delete_gone = 0;
			M->deleted_cached = 0;
			add_req(s, e, RQ_CREATE, c, 0, 0, 0);
			break;
		case SF_AWP_ACT_VERIFY: add_req(s, e, RQ_VERIFY, c, 0, 0, 0); break;
		case SF_AWP_ACT_DELETE:
		case SF_AWP_ACT_DELETE_FORCE: {
			/* start_delete: the cache's copy (every incarnation is
			 * ours), or a live GET first */
			m_job jv = view_job(s, c);
			int force = kind == SF_AWP_ACT_DELETE_FORCE;
			if (!jv.inc && M->deleted_uid && M->deleted_cached) {
				/* the cache dropped the copy we deleted: learned
				 * gone now */
				learned_gone(s, c);
			} else if (jv.inc) {
				add_req(s, e, RQ_DELETE, c, jv.inc, 1, force);
			} else {
				add_req(s, e, RQ_DEL_GET, c, 0, 0, force);
			}
			break;
		}
		case SF_AWP_ACT_LIST_PODS: add_req(s, e, RQ_LIST, 0, L->clock + 1, 0, 0); break;
		case SF_AWP_ACT_DELETE_PODS:
			for (int j = 0; j < lp_n; j++)
				if (lp[j].uid)
					add_req(s, e, RQ_DELPOD, 0, lp[j].uid, 0, 0);
			break;
		default: broken(e, "an action the model does not know"); break;
		}
	}
}

static void plan_label(const m_plan *p, const st_info *from, char *buf, size_t n)
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
			w += (size_t)snprintf(buf + w, n - w, ", Unhealthy=%c %s",
			                      to->unhealthy.status, to->unhealthy.reason);
		for (int c = 0; c < ncomps && w < n; c++)
			if (to->comp_rd[c].status &&
			    (to->comp_rd[c].status != from->comp_rd[c].status ||
			     strcmp(to->comp_rd[c].reason, from->comp_rd[c].reason)))
				w += (size_t)snprintf(buf + w, n - w, ", %s %s", CNAME(c),
				                      to->comp_rd[c].reason);
		if (w < n && to->quota.status != from->quota.status)
			w += (size_t)snprintf(buf + w, n - w, ", QuotaReserved=%c",
			                      to->quota.status);
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
	for (int i = 0; i < p->nacts && w < n; i++) {
		int k = p->acts[i][0];
		w += (size_t)snprintf(buf + w, n - w, "%s%s", i ? " " : "; send ", act_name(k));
		if (ncomps > 1 && w < n && k != SF_AWP_ACT_LIST_PODS && k != SF_AWP_ACT_DELETE_PODS)
			w += (size_t)snprintf(buf + w, n - w, "(%s)",
			                      p->acts[i][1] < ncomps ? CNAME(p->acts[i][1]) : "?");
	}
}

/* observe_components for component c: its input from the cache's copy
 * and the leader's memory */
static void observe(m_state *n, const m_state *s, int c, const st_info *si, sf_awp_comp *oc)
{
	m_cmem *M = &n->L.c[c];
	memset(oc, 0, sizeof(*oc));
	oc->create = (sf_awp_create_outcome)M->create;
	oc->create_msg = msgs[M->create_msg];
	oc->live.found = (sf_awp_live)M->live_found;
	oc->live.failed = M->live_failed;
	oc->live.complete = M->live_complete;
	M->live_found = M->live_failed = M->live_complete = 0; /* news for one step */
	/* only a Job reports its completion and its failure */
	oc->completion_known = ckind[c] == M_JOB;
	m_job jv = view_job(s, c);
	if (gone_on_observe && !jv.inc && M->deleted_uid && M->deleted_cached && !M->delete_gone) {
		/* the variant: the cache dropped our deleted copy */
		M->delete_gone = 1;
		M->create = SF_AWP_CREATE_NONE;
	}
	oc->delete_gone = M->delete_gone;
	if (jv.inc && jv.inc == M->deleted_uid) {
		oc->cached.state = SF_AWP_COMP_PRESENT;
		oc->cached.deleting = 1;
	} else if (jv.inc) {
		oc->cached.state = SF_AWP_COMP_PRESENT;
		oc->cached.deleting = jv.deleting;
		oc->cached.failed = jv.failed;
		oc->cached.complete = jv.complete;
		if (!jv.deleting)
			M->confirmed = (uint8_t)(s->tick + 1);
		if (M->expect == jv.inc)
			M->expect = 0;
	} else if (M->expect) {
		oc->cached.state = SF_AWP_COMP_PENDING;
	} else {
		oc->cached.state = SF_AWP_COMP_ABSENT;
	}
	oc->confirmed_ms = M->confirmed ? (T0 + M->confirmed - 1) * 1000LL : 0;
	if (M->create == SF_AWP_CREATE_RETRYABLE || si->comp_rd[c].status == 'T')
		M->create = SF_AWP_CREATE_NONE;
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
		emit(e, &n,
		     e->labels ? "reconcile: AppWrapper gone from the cache, memory dropped" : "",
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
	int ncomp = si->ncomp;
	if (ncomp != 0 && ncomp != ncomps) {
		broken(e, "a componentStatus of another length than the components");
		return;
	}
	sf_awp_comp comp[M_NCOMP];
	memset(comp, 0, sizeof(comp));
	for (int c = 0; c < ncomp; c++)
		observe(&n, s, c, si, &comp[c]);
	char json[4096];
	int jl = aw_json(v, json, sizeof(json));
	if (jl <= 0 || (size_t)jl >= sizeof(json)) {
		broken(e, "AppWrapper JSON too long");
		return;
	}
	m_plan p;
	get_plan(json, (size_t)jl, comp, ncomp, &s->pods[0], &s->L, now_ms(s), &p);
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
		plan_label(&p, si, lb, sizeof(lb));
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
			for (int c = 0; c < ncomps; c++)
				n.reset_mark[c] = (uint8_t)(n.next_inc[c] - 1);
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

static sf_awp_answer get_answer(const m_state *s, int c)
{
	sf_awp_answer a;
	memset(&a, 0, sizeof(a));
	m_job j = real_job(s, c);
	if (!j.inc) {
		a.kind = SF_AWP_ANS_ABSENT;
	} else {
		a.kind = SF_AWP_ANS_OK;
		a.owned = 1;
		a.deleting = j.deleting;
		a.ours_gone = j.inc == s->L.c[c].deleted_uid;
		a.failed = j.failed;
		a.complete = j.complete;
	}
	return a;
}

static const char *ans_str(const sf_awp_answer *a, const m_state *s, int c, char *buf)
{
	m_job j = real_job(s, c);
	switch (a->kind) {
	case SF_AWP_ANS_ABSENT: return "404 NotFound";
	case SF_AWP_ANS_FOREIGN_404: return "a proxy's 404";
	case SF_AWP_ANS_CONFLICT: return "409 Conflict";
	case SF_AWP_ANS_OK:
		snprintf(buf, 80, "200 %s#%d%s%s%s", INAME(c), j.inc, j.deleting ? " deleting" : "",
		         j.failed ? " Failed" : "", j.complete ? " Complete" : "");
		return buf;
	default: return "error";
	}
}

static void answer_get(const m_state *s, int i, const m_req *r, int foreign, m_emit *e)
{
	m_state n = *s;
	int c = r->i;
	m_cmem *M = &n.L.c[c];
	char lb[256], ab[80];
	sf_awp_answer a = get_answer(s, c);
	if (foreign) {
		memset(&a, 0, sizeof(a));
		a.kind = SF_AWP_ANS_FOREIGN_404;
		n.b_f404--;
		n.perturbed = 1;
	}
	m_job j = real_job(s, c);
	del_req(&n, i);
	read_diff(&a);
	if (r->kind == RQ_ADOPT_GET) {
		sf_awp_create_outcome oc;
		if (a.kind == SF_AWP_ANS_OK && a.owned && !a.deleting && !a.ours_gone)
			n.alive_ev[c] = j.inc;
		if (sf_awp_read_adopt(&a, &oc) == 0) {
			if (oc == SF_AWP_CREATE_OK) {
				comp_made(&n, c, j.inc);
				M->create = SF_AWP_CREATE_OK;
				M->create_msg = 0;
			} else {
				M->create = (uint8_t)oc;
				M->create_msg = oc == SF_AWP_CREATE_FATAL     ? MSG_FOREIGN
				                : a.kind == SF_AWP_ANS_ABSENT ? MSG_VANISHED
				                                              : MSG_GOING;
			}
		}
		emit(e, &n,
		     lbl(e, lb, "GET %s (after AlreadyExists) -> %s", CNAME(c),
		         ans_str(&a, s, c, ab)),
		     NULL);
	} else if (r->kind == RQ_VERIFY) {
		sf_awp_confirmed cf;
		if (sf_awp_read_verify(&a, &cf) == 0) {
			M->live_found = (uint8_t)cf.found;
			M->live_failed = (uint8_t)cf.failed;
			M->live_complete = (uint8_t)cf.complete;
			if (cf.found == SF_AWP_LIVE_FOUND)
				M->confirmed = (uint8_t)(s->tick + 1);
		}
		emit(e, &n, lbl(e, lb, "GET %s (live read) -> %s", CNAME(c), ans_str(&a, s, c, ab)),
		     NULL);
	} else { /* RQ_DEL_GET */
		int gone = 0;
		int rc = sf_awp_read_delete(&a, &gone);
		if (rc > 0)
			learned_gone(&n, c);
		else if (rc == 0)
			add_req(&n, e, RQ_DELETE, c, j.inc, 0, r->c);
		emit(e, &n,
		     lbl(e, lb, "GET %s (before DELETE) -> %s%s", CNAME(c), ans_str(&a, s, c, ab),
		         rc == 0 ? "; DELETE" : ""),
		     NULL);
	}
}

/* A DELETE with the UID precondition r->a of component r->i, applied: a
 * Job or a Deployment goes at once (no finalizer; its pods wait for the
 * garbage collector) or, perturbed, stays terminating behind a foreign
 * finalizer; a Pod component terminates (the kubelet stops it), or goes
 * at once with grace 0. */
static void answer_delete_ok(const m_state *s, int i, const m_req *r, m_emit *e)
{
	int c = r->i;
	m_job j = real_job(s, c);
	char lb[256];
	int pod = ckind[c] == M_POD;
	for (int linger = 0; linger < 2; linger++) {
		if (linger && (pod || !s->b_linger || j.deleting))
			continue;
		for (int lost = 0; lost < 2; lost++) {
			if (lost && !s->b_lost)
				continue;
			m_state n = *s;
			del_req(&n, i);
			const char *what;
			if (pod) {
				pod_comp_delete(&n, c, r->c, e);
				what = r->c         ? ", its pod gone"
				       : j.deleting ? " (already terminating)"
				                    : ", its pod terminating";
			} else if (linger) {
				m_job d = j;
				d.deleting = 1;
				push_job(&n, c, d, e);
				n.b_linger--;
				n.perturbed = 1;
				what = ", held by a foreign finalizer";
			} else if (!j.deleting) {
				push_job(&n, c, (m_job){0, 0, 0, 0}, e);
				what = ckind[c] == M_JOB
				           ? ", job gone (its pods wait for GC)"
				           : ", deployment gone (its pods wait for GC)";
			} else {
				what = " (already deleting)";
			}
			if (lost) {
				n.b_lost--;
			} else {
				m_cmem *M = &n.L.c[c];
				M->deleted_uid = r->a;
				M->deleted_cached = r->b;
				M->create = SF_AWP_CREATE_NONE;
				n.L.deletes_acked = ++n.L.clock;
			}
			emit(e, &n,
			     lbl(e, lb, "DELETE %s#%d%s -> 200%s%s", INAME(c), r->a,
			         r->c ? " (grace 0)" : "", what, lost ? ", answer lost" : ""),
			     NULL);
		}
	}
}

static void answer_delete(const m_state *s, int i, const m_req *r, m_emit *e)
{
	int c = r->i;
	m_job j = real_job(s, c);
	char lb[256];
	if (j.inc == r->a) {
		answer_delete_ok(s, i, r, e);
	} else {
		m_state n = *s;
		del_req(&n, i);
		sf_awp_answer a;
		memset(&a, 0, sizeof(a));
		a.kind = j.inc ? SF_AWP_ANS_CONFLICT : SF_AWP_ANS_ABSENT;
		int gone = 0;
		int rc = sf_awp_read_delete(&a, &gone);
		if (rc > 0)
			learned_gone(&n, c);
		else if (rc == 0)
			/* 409: who holds the name is read live (delete_done) */
			add_req(&n, e, RQ_DEL_GET, c, 0, 0, r->c);
		emit(e, &n,
		     lbl(e, lb, "DELETE %s#%d -> %s", INAME(c), r->a,
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
		if (sf_awp_read_delete(&a, &gone) > 0)
			learned_gone(&n, c);
		emit(e, &n,
		     lbl(e, lb, "DELETE %s#%d -> a proxy's 404 (not processed)", INAME(c), r->a),
		     NULL);
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
			int c = r->i;
			m_job j = real_job(s, c);
			if (j.inc) {
				m_state n = *s;
				del_req(&n, i);
				add_req(&n, e, RQ_ADOPT_GET, c, 0, 0, 0);
				emit(e, &n,
				     lbl(e, lb, "CREATE %s -> 409 AlreadyExists; GET", CNAME(c)),
				     NULL);
				break;
			}
			for (int lost = 0; lost < 2; lost++) {
				if (lost && (!s->b_lost || e->benign))
					continue;
				m_state n = *s;
				del_req(&n, i);
				int inc = make_inc(&n, c, e);
				m_cmem *M = &n.L.c[c];
				if (lost) {
					n.b_lost--;
					n.perturbed = 1;
					M->create = SF_AWP_CREATE_RETRYABLE;
					M->create_msg = MSG_LOST;
				} else {
					comp_made(&n, c, inc);
					M->create = SF_AWP_CREATE_OK;
					M->create_msg = 0;
					n.alive_ev[c] = (uint8_t)inc;
				}
				emit(e, &n,
				     lbl(e, lb, "CREATE %s -> 201 %s#%d%s", CNAME(c), INAME(c), inc,
				         lost ? ", answer lost" : ""),
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
			n.list_few = (uint8_t)few_ready(ps);
			emit(e, &n, lbl(e, lb, "LIST pods -> %d pods", L->lp_n), NULL);
			break;
		}
		case RQ_DELPOD: {
			m_state n = *s;
			del_req(&n, i);
			int found = pod_gone(&n, r->a, e);
			if (found)
				n.L.deletes_acked = ++n.L.clock;
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
	int c = r->i;
	if (r->kind == RQ_CREATE && !real_job(n, c).inc) {
		make_inc(n, c, e);
	} else if (r->kind == RQ_DELETE && real_job(n, c).inc == r->a) {
		m_job j = real_job(n, c);
		if (ckind[c] == M_POD)
			pod_comp_delete(n, c, r->c, e);
		else if (!j.deleting)
			push_job(n, c, (m_job){0, 0, 0, 0}, e);
	} else if (r->kind == RQ_DELPOD) {
		pod_gone(n, r->a, e);
	}
}

static void prune_jobs(m_state *s)
{
	if (s->b_crash)
		return;
	for (int c = 0; c < ncomps; c++) {
		int k = s->jview[c];
		if (!k)
			continue;
		memmove(s->job[c], s->job[c] + k, (size_t)(s->njob[c] - k) * sizeof(m_job));
		s->njob[c] = (uint8_t)(s->njob[c] - k);
		memset(s->job[c] + s->njob[c], 0, (size_t)(M_JH - s->njob[c]) * sizeof(m_job));
		s->jview[c] = 0;
	}
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
				al +=
				    (size_t)snprintf(applied + al, sizeof(applied) - al, " %s%s%s",
				                     r->kind == RQ_CREATE   ? "CREATE"
				                     : r->kind == RQ_DELETE ? "DELETE"
				                                            : "DELETE pod",
				                     r->kind == RQ_DELPOD ? "" : " ",
				                     r->kind == RQ_DELPOD ? "" : CNAME(r->i));
		}
		memset(&n.L, 0, sizeof(n.L));
		/* the freshness barrier: the AppWrapper and pod caches hold a
		 * list asked after the new term began */
		shift_aw(&n, n.naw - 1);
		shift_pods(&n, n.npod - 1);
		/* the component caches are not part of the barrier: each any
		 * version (the last component's varies fastest) */
		int total = 1;
		for (int c = 0; c < ncomps; c++)
			total *= n.njob[c];
		for (int k = 0; k < total; k++) {
			m_state x = n;
			char views[120] = "";
			size_t vl = 0;
			for (int c = ncomps - 1, rest = k; c >= 0; c--) {
				x.jview[c] = (uint8_t)(rest % n.njob[c]);
				rest /= n.njob[c];
			}
			for (int c = 1; c < ncomps && e->labels; c++)
				vl += (size_t)snprintf(
				    views + vl, sizeof(views) - vl, ", its %s version %d of %d",
				    cache_names[ckind[c]], x.jview[c], n.njob[c] - 1);
			int v0 = x.jview[0];
			prune_jobs(&x);
			emit(e, &x,
			     lbl(e, lb,
			         "leader crash (in flight, applied:%s); the new leader's Job cache "
			         "shows version %d of %d%s",
			         al ? applied : " none", v0, n.njob[0] - 1, views),
			     NULL);
		}
	}
}

/* ---- the environment ---- */

/* Kueue, the user's deletion and the user's edits of the annotations */
static void env_aw(const m_state *s, m_emit *e)
{
	char lb[256];
	m_aw a = real_aw(s);
	const st_info *si = st_get(a.status);
	if (e->benign || !a.exists)
		return;
	/* Kueue admits: sets suspend=false and podSetInfos */
	if (!a.deleting && a.suspend && s->b_admit &&
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
	if (!a.deleting && !a.suspend && s->b_preempt && si->phase != SF_AW_SUCCEEDED &&
	    si->phase != SF_AW_FAILED) {
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
	if (!a.deleting && s->b_udelete) {
		m_state n = *s;
		m_aw v = a;
		v.deleting = 1;
		if (!v.fin)
			v.exists = 0;
		push_aw(&n, v, e);
		n.b_udelete--;
		emit(e, &n, lbl(e, lb, "the user deletes the AppWrapper"), NULL);
	}
	/* the user edits what may be edited (the admission policy guards
	 * the components, their pod sets, managedBy and the user labels):
	 * the retryLimit annotation lowered to 0 or raised to 2, the
	 * forceful deletion grace set to 0s */
	static const struct {
		uint8_t mask, val;
		const char *what;
	} edits[] = {
	    {ANN_RL, ANN_RL0, "retryLimit=0"},
	    {ANN_RL, ANN_RL2, "retryLimit=2"},
	    {ANN_FG0, ANN_FG0, "forcefulDeletionGracePeriodDuration=0s"},
	};
	for (size_t k = 0; k < sizeof(edits) / sizeof(edits[0]) && s->b_edit; k++) {
		if ((a.ann & edits[k].mask) == edits[k].val)
			continue;
		m_state n = *s;
		m_aw v = a;
		v.ann = (uint8_t)((v.ann & ~edits[k].mask) | edits[k].val);
		push_aw(&n, v, e);
		n.b_edit--;
		emit(e, &n, lbl(e, lb, "the user annotates the AppWrapper %s", edits[k].what),
		     NULL);
	}
}

/* a new pod of incarnation inc of component c, Pending (the pod budget
 * bounds the search, not a catch-up run) */
static void new_pod(const m_state *s, int c, int inc, const char *who, m_emit *e)
{
	char lb[256];
	m_state n = *s;
	m_podset q = *real_pods(s);
	int slot = -1;
	for (int i = 0; i < M_PODS; i++)
		if (!q.p[i].uid) {
			slot = i;
			break;
		}
	if (slot < 0) {
		broken(e, "pod set full: raise M_PODS");
		return;
	}
	int uid = n.next_pod++;
	q.p[slot] = (m_pod){(uint8_t)uid, (uint8_t)inc, POD_PENDING, 0, (uint8_t)c};
	push_pods(&n, q, e);
	if (!e->benign)
		n.b_pods--;
	emit(e, &n, lbl(e, lb, "%s controller creates pod p%d of %s#%d", who, uid, INAME(c), inc),
	     NULL);
}

/* the Job controller (backoffLimit 0) */
static void env_job(const m_state *s, int c, m_emit *e)
{
	char lb[256];
	m_job j = real_job(s, c);
	const m_podset *ps = real_pods(s);
	if (!j.inc || j.deleting)
		return;
	int active, succ, failed;
	count_pods(ps, c, j.inc, &active, &succ, &failed);
	if (failed && !j.failed) {
		m_state n = *s;
		m_job d = j;
		d.failed = 1;
		push_job(&n, c, d, e);
		n.failed_inc[c] = j.inc;
		/* a failed Job's active pods are terminated */
		m_podset q = *ps;
		int any = 0;
		for (int i = 0; i < M_PODS; i++)
			if (q.p[i].uid && q.p[i].own == c && q.p[i].inc == j.inc &&
			    !q.p[i].deleting &&
			    (q.p[i].phase == POD_PENDING || q.p[i].phase == POD_RUNNING))
				q.p[i].deleting = 1, any = 1;
		if (any)
			push_pods(&n, q, e);
		emit(e, &n,
		     lbl(e, lb, "Job controller: job#%d Failed=True (backoffLimit 0)", j.inc),
		     NULL);
	} else if (!failed && succ >= completions && !j.complete) {
		m_state n = *s;
		m_job d = j;
		d.complete = 1;
		push_job(&n, c, d, e);
		n.complete_inc[c] = j.inc;
		emit(e, &n, lbl(e, lb, "Job controller: job#%d Complete=True", j.inc), NULL);
	}
	if (!failed && !j.failed && !j.complete && active < parallelism &&
	    succ + active < completions && (s->b_pods || e->benign))
		new_pod(s, c, j.inc, "Job", e);
}

/* the Deployment controller (through its ReplicaSet): replicas pods not
 * terminating, a failed (evicted) one replaced */
static void env_deploy(const m_state *s, int c, m_emit *e)
{
	m_job j = real_job(s, c);
	if (!j.inc || j.deleting)
		return;
	int active, succ, failed;
	count_pods(real_pods(s), c, j.inc, &active, &succ, &failed);
	if (active < B.replicas && (s->b_pods || e->benign))
		new_pod(s, c, j.inc, "Deployment", e);
}

static void env_pods(const m_state *s, m_emit *e)
{
	char lb[256];
	const m_podset *ps = real_pods(s);
	for (int i = 0; i < M_PODS; i++) {
		const m_pod *p = &ps->p[i];
		if (!p->uid)
			continue;
		if (p->deleting) {
			m_state n = *s;
			pod_gone(&n, p->uid, e);
			emit(e, &n, lbl(e, lb, "pod p%d (deleting) is gone", p->uid), NULL);
			continue;
		}
		int kind = ckind[p->own];
		/* a Deployment's pods restart in place: Running until evicted */
		if (p->phase == POD_PENDING || (p->phase == POD_RUNNING && kind != M_DEPLOY)) {
			int to = p->phase == POD_PENDING ? POD_RUNNING : POD_SUCCEEDED;
			m_state n = *s;
			m_podset q = *ps;
			q.p[i].phase = (uint8_t)to;
			push_pods(&n, q, e);
			if (to == POD_SUCCEEDED && kind == M_POD)
				n.complete_inc[p->own] = p->inc;
			emit(e, &n,
			     lbl(e, lb, "pod p%d of %s#%d %s", p->uid, inc_names[kind], p->inc,
			         to == POD_RUNNING ? "Pending->Running" : "Running->Succeeded"),
			     NULL);
		}
		if (p->phase == POD_RUNNING && s->b_podfail && !e->benign) {
			m_state n = *s;
			m_podset q = *ps;
			q.p[i].phase = POD_FAILED;
			push_pods(&n, q, e);
			n.b_podfail--;
			n.podfail_inc[p->own] = p->inc;
			if (n.failures < 255)
				n.failures++;
			emit(e, &n,
			     lbl(e, lb, "pod p%d of %s#%d Running->Failed (%s)", p->uid,
			         inc_names[kind], p->inc,
			         kind == M_DEPLOY ? "evicted" : "exit code 1"),
			     NULL);
		}
	}
	/* the garbage collector: the pods of a Job or a Deployment whose
	 * incarnation no longer holds the name */
	for (int c = 0; c < ncomps; c++) {
		if (ckind[c] == M_POD)
			continue;
		m_job j = real_job(s, c);
		m_podset q = *ps;
		int any = 0;
		for (int i = 0; i < M_PODS; i++)
			if (q.p[i].uid && q.p[i].own == c && q.p[i].inc != j.inc &&
			    !q.p[i].deleting)
				q.p[i].deleting = 1, any = 1;
		if (any) {
			m_state n = *s;
			push_pods(&n, q, e);
			emit(e, &n,
			     lbl(e, lb, "garbage collector deletes the pods of deleted %s",
			         ckind[c] == M_JOB ? "Jobs" : "Deployments"),
			     NULL);
		}
	}
}

/* someone else deletes a component (kubectl delete), and a terminating
 * Job's or Deployment's foreign finalizer is released */
static void env_foreign(const m_state *s, m_emit *e)
{
	char lb[256];
	for (int c = 0; c < ncomps; c++) {
		m_job j = real_job(s, c);
		int pod = ckind[c] == M_POD;
		if (!e->benign && j.inc && !j.deleting && s->b_fdel) {
			/* a Job or a Deployment goes at once, or terminates behind
			 * a foreign finalizer; a Pod terminates */
			for (int linger = 0; linger < 2; linger++) {
				if (linger && (pod || !s->b_linger))
					continue;
				m_state n = *s;
				n.b_fdel--;
				n.perturbed = 1;
				n.fdel_inc[c] = j.inc;
				if (s->alive_ev[c] == j.inc)
					n.fdel_ok[c] = j.inc;
				if (pod) {
					pod_comp_delete(&n, c, 0, e);
				} else if (linger) {
					m_job d = j;
					d.deleting = 1;
					push_job(&n, c, d, e);
					n.b_linger--;
				} else {
					push_job(&n, c, (m_job){0, 0, 0, 0}, e);
				}
				emit(e, &n,
				     lbl(e, lb, "someone else deletes %s#%d%s", INAME(c), j.inc,
				         pod      ? " (terminating)"
				         : linger ? " (a foreign finalizer holds it)"
				                  : ""),
				     NULL);
			}
		}
		if (!pod && j.inc && j.deleting) {
			m_state n = *s;
			push_job(&n, c, (m_job){0, 0, 0, 0}, e);
			emit(
			    e, &n,
			    lbl(e, lb, "%s#%d's foreign finalizer released: gone", INAME(c), j.inc),
			    NULL);
		}
	}
}

static void do_env(const m_state *s, m_emit *e)
{
	env_aw(s, e);
	for (int c = 0; c < ncomps; c++) {
		if (ckind[c] == M_JOB)
			env_job(s, c, e);
		else if (ckind[c] == M_DEPLOY)
			env_deploy(s, c, e);
	}
	env_pods(s, e);
	env_foreign(s, e);
}

static void do_deliver(const m_state *s, m_emit *e)
{
	char lb[128];
	/* a watch delivers one or more versions at once, never backwards */
	int all = e->benign;
	for (int k = all ? s->naw - 1 : 1; k < s->naw; k++) {
		m_state n = *s;
		shift_aw(&n, k);
		emit(e, &n, lbl(e, lb, "AppWrapper cache +%d version%s", k, k > 1 ? "s" : ""),
		     NULL);
	}
	for (int k = all ? s->npod - 1 : 1; k < s->npod; k++) {
		m_state n = *s;
		shift_pods(&n, k);
		emit(e, &n, lbl(e, lb, "pod cache +%d version%s", k, k > 1 ? "s" : ""), NULL);
	}
	for (int c = 0; c < ncomps; c++)
		for (int k = all ? s->njob[c] - 1 : s->jview[c] + 1; k < s->njob[c]; k++) {
			if (k <= s->jview[c])
				continue;
			m_state n = *s;
			n.jview[c] = (uint8_t)k;
			prune_jobs(&n);
			int d = k - s->jview[c];
			emit(e, &n,
			     lbl(e, lb, "%s +%d version%s", cache_names[ckind[c]], d,
			         d > 1 ? "s" : ""),
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

int m_pass_second(m_state *s)
{
	if (s->tick >= BENIGN_MAX_TICK)
		return 0;
	s->tick++;
	return 1;
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
		snprintf(v, sizeof(v),
		         "liveness: a deleted AppWrapper kept its finalizer (phase %s)",
		         phase_str(si->phase));
		return v;
	}
	if (a.suspend) {
		if (si->phase != SF_AW_SUSPENDED || si->quota.status == 'T') {
			snprintf(
			    v, sizeof(v),
			    "liveness: suspended by Kueue, but ended in phase %s, QuotaReserved=%c",
			    phase_str(si->phase), si->quota.status ? si->quota.status : '-');
			return v;
		}
		return "";
	}
	if (si->phase == SF_AW_SUCCEEDED && si->quota.status == 'F')
		return "";
	/* a Deployment never completes: Running with its pods ready is where
	 * such an AppWrapper stays */
	int deploy = 0;
	for (int c = 0; c < ncomps; c++)
		deploy |= ckind[c] == M_DEPLOY;
	if (deploy && si->phase == SF_AW_RUNNING && si->podsready.status == 'T')
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
		if (s->perturbed &&
		    (strcmp(r, "MissingComponent") == 0 || strcmp(r, "CreateFailed") == 0))
			return "";
	}
	snprintf(v, sizeof(v),
	         "liveness: admitted, its pods %s, but it ended in phase %s (QuotaReserved=%c, "
	         "Unhealthy %s)",
	         deploy ? "run" : "succeed", phase_str(si->phase),
	         si->quota.status ? si->quota.status : '-', si->unhealthy.reason);
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

static uint8_t pod_flags(const m_pod *p)
{
	return (uint8_t)(p->phase | p->deleting << 4 | p->own << 5);
}

static void pod_unflags(m_pod *p, uint8_t f)
{
	p->phase = f & 15, p->deleting = f >> 4 & 1, p->own = f >> 5;
}

/* The first component's fields come first; a second component's are
 * packed only when the scenario has one. */
size_t m_pack(const m_state *in, uint8_t *out)
{
	m_state s = *in;
	m_leader *L = &s.L;
	if (!L->lp_have) {
		L->lp_answered = L->lp_asked = L->lp_n = 0;
		memset(L->lp, 0, sizeof(L->lp));
	}
	for (int c = 0; c < ncomps; c++) {
		m_cmem *M = &L->c[c];
		if (!M->live_found)
			M->live_failed = M->live_complete = 0;
		if (M->create != SF_AWP_CREATE_RETRYABLE && M->create != SF_AWP_CREATE_FATAL)
			M->create_msg = 0;
		if (!M->deleted_uid)
			M->deleted_cached = 0;
	}
	if (L->written < 0)
		L->written = 0;
	canon_clock(L);
	qsort(L->req, L->nreq, sizeof(m_req), req_cmp);
	size_t w = 0;
#define PUT(x) (out[w++] = (uint8_t)(x))
	PUT(s.naw), PUT(s.npod), PUT(s.next_pod), PUT(s.tick);
	PUT(s.b_admit), PUT(s.b_preempt), PUT(s.b_udelete), PUT(s.b_podfail), PUT(s.b_pods);
	PUT(s.b_tick), PUT(s.b_crash), PUT(s.b_lost), PUT(s.b_f404), PUT(s.b_linger);
	PUT(s.b_fdel), PUT(s.b_edit);
	PUT(s.kueue_admitted), PUT(s.list_few), PUT(s.failures), PUT(s.perturbed);
	for (int c = 0; c < ncomps; c++) {
		PUT(s.njob[c]), PUT(s.jview[c]), PUT(s.next_inc[c]);
		PUT(s.reset_mark[c]), PUT(s.complete_inc[c]), PUT(s.failed_inc[c]);
		PUT(s.fdel_inc[c]), PUT(s.alive_ev[c]), PUT(s.fdel_ok[c]), PUT(s.podfail_inc[c]);
		for (int i = 0; i < s.njob[c]; i++) {
			m_job *j = &s.job[c][i];
			PUT(j->inc), PUT(j->failed | j->complete << 1 | j->deleting << 2);
		}
	}
	for (int i = 0; i < s.naw; i++) {
		m_aw *a = &s.aw[i];
		PUT(a->exists | a->suspend << 1 | a->fin << 2 | a->deleting << 3 | a->psi << 4 |
		    a->ann << 5);
		PUT(a->status & 0xff), PUT(a->status >> 8);
	}
	for (int i = 0; i < s.npod; i++) {
		int n = 0;
		while (n < M_PODS && s.pods[i].p[n].uid)
			n++;
		PUT(n);
		for (int k = 0; k < n; k++) {
			m_pod *p = &s.pods[i].p[k];
			PUT(p->uid), PUT(p->inc), PUT(pod_flags(p));
		}
	}
	for (int c = 0; c < ncomps; c++) {
		m_cmem *M = &L->c[c];
		PUT(M->create), PUT(M->create_msg), PUT(M->expect), PUT(M->confirmed);
		PUT(M->deleted_uid), PUT(M->deleted_cached), PUT(M->delete_gone);
		PUT(M->live_found), PUT(M->live_failed), PUT(M->live_complete);
	}
	PUT(L->lp_have), PUT(L->lp_answered), PUT(L->lp_asked), PUT(L->lp_n);
	for (int k = 0; k < L->lp_n; k++)
		PUT(L->lp[k].uid), PUT(L->lp[k].inc), PUT(pod_flags(&L->lp[k]));
	PUT(L->deletes_acked), PUT(L->clock), PUT(L->written), PUT(L->nreq);
	for (int k = 0; k < L->nreq; k++)
		PUT(L->req[k].kind), PUT(L->req[k].i), PUT(L->req[k].a), PUT(L->req[k].b),
		    PUT(L->req[k].c);
#undef PUT
	return w;
}

void m_unpack(const uint8_t *in, size_t len, m_state *s)
{
	size_t r = 0;
	memset(s, 0, sizeof(*s));
	m_leader *L = &s->L;
#define GET() (in[r++])
	s->naw = GET(), s->npod = GET(), s->next_pod = GET(), s->tick = GET();
	s->b_admit = GET(), s->b_preempt = GET(), s->b_udelete = GET(), s->b_podfail = GET();
	s->b_pods = GET();
	s->b_tick = GET(), s->b_crash = GET(), s->b_lost = GET(), s->b_f404 = GET();
	s->b_linger = GET();
	s->b_fdel = GET(), s->b_edit = GET();
	s->kueue_admitted = GET(), s->list_few = GET(), s->failures = GET();
	s->perturbed = GET();
	for (int c = 0; c < ncomps; c++) {
		s->njob[c] = GET(), s->jview[c] = GET(), s->next_inc[c] = GET();
		s->reset_mark[c] = GET(), s->complete_inc[c] = GET(), s->failed_inc[c] = GET();
		s->fdel_inc[c] = GET(), s->alive_ev[c] = GET(), s->fdel_ok[c] = GET();
		s->podfail_inc[c] = GET();
		for (int i = 0; i < s->njob[c]; i++) {
			m_job *j = &s->job[c][i];
			j->inc = GET();
			uint8_t f = GET();
			j->failed = f & 1, j->complete = f >> 1 & 1, j->deleting = f >> 2 & 1;
		}
	}
	for (int i = 0; i < s->naw; i++) {
		uint8_t f = GET();
		m_aw *a = &s->aw[i];
		a->exists = f & 1, a->suspend = f >> 1 & 1, a->fin = f >> 2 & 1;
		a->deleting = f >> 3 & 1, a->psi = f >> 4 & 1, a->ann = f >> 5;
		a->status = GET();
		a->status = (uint16_t)(a->status | GET() << 8);
	}
	for (int i = 0; i < s->npod; i++) {
		int n = GET();
		for (int k = 0; k < n; k++) {
			m_pod *p = &s->pods[i].p[k];
			p->uid = GET(), p->inc = GET();
			pod_unflags(p, GET());
		}
	}
	for (int c = 0; c < ncomps; c++) {
		m_cmem *M = &L->c[c];
		M->create = GET(), M->create_msg = GET(), M->expect = GET(), M->confirmed = GET();
		M->deleted_uid = GET(), M->deleted_cached = GET(), M->delete_gone = GET();
		M->live_found = GET(), M->live_failed = GET(), M->live_complete = GET();
	}
	L->lp_have = GET(), L->lp_answered = GET(), L->lp_asked = GET(), L->lp_n = GET();
	for (int k = 0; k < L->lp_n; k++) {
		L->lp[k].uid = GET(), L->lp[k].inc = GET();
		pod_unflags(&L->lp[k], GET());
	}
	L->deletes_acked = GET(), L->clock = GET(), L->written = (int8_t)GET(), L->nreq = GET();
	for (int k = 0; k < L->nreq; k++) {
		L->req[k].kind = GET(), L->req[k].i = GET(), L->req[k].a = GET();
		L->req[k].b = GET(), L->req[k].c = GET();
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
	sprintf(b, "p%d/%s#%d %s%s", p->uid, inc_names[ckind[p->own & 1]], p->inc, ph[p->phase & 7],
	        p->deleting ? " deleting" : "");
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
			w += (size_t)snprintf(buf + w, n - w, "%s%s", any ? ", " : "",
			                      pod_str(&ps->p[i], pb));
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
	size_t w = (size_t)snprintf(
	    buf, n, "%s suspend=%d%s%s Quota=%c Deployed=%c Unhealthy=%c%s%s%s",
	    phase_str(si->phase), a->suspend, a->fin ? " fin" : "", a->deleting ? " DELETED" : "",
	    si->quota.status ? si->quota.status : '-',
	    si->deployed.status ? si->deployed.status : '-',
	    si->unhealthy.status ? si->unhealthy.status : '-', si->unhealthy.reason[0] ? "(" : "",
	    si->unhealthy.reason, si->unhealthy.reason[0] ? ")" : "");
	for (int c = 0; c < ncomps && w < n; c++)
		w += (size_t)snprintf(buf + w, n - w, " %s=%s", CNAME(c),
		                      si->comp_rd[c].reason[0] ? si->comp_rd[c].reason : "-");
	if (w < n)
		w += (size_t)snprintf(buf + w, n - w, " resets=%" PRId64, si->resets);
	if (w < n && a->ann)
		w += (size_t)snprintf(buf + w, n - w, " [user: %s%s%s]",
		                      (a->ann & ANN_RL) == ANN_RL0   ? "retryLimit=0"
		                      : (a->ann & ANN_RL) == ANN_RL2 ? "retryLimit=2"
		                                                     : "",
		                      (a->ann & ANN_RL) && (a->ann & ANN_FG0) ? ", " : "",
		                      a->ann & ANN_FG0 ? "forceful grace 0s" : "");
	return w;
}

static const char *job_str(const m_job *j, int c, char *b)
{
	if (!j->inc)
		return strcpy(b, "none");
	sprintf(b, "%s#%d%s%s%s", INAME(c), j->inc, j->failed ? " Failed" : "",
	        j->complete ? " Complete" : "", j->deleting ? " deleting" : "");
	return b;
}

void m_describe(const m_state *s, char *buf, size_t n)
{
	size_t w = 0;
	char jb[64];
	static const char *const cr[] = {"-", "OK", "RETRYABLE", "FATAL"};
	static const char *const lv[] = {"-", "FOUND", "MISSING"};
	static const char *const rq[] = {"?",           "CREATE", "GET(adopt)", "GET(live)",
	                                 "GET(delete)", "DELETE", "LIST",       "DELETE-pod"};
	static const char *const kinds[] = {"", "Job", "Pod", "Deployment"};
	m_aw ra = real_aw(s);
	w += (size_t)snprintf(buf + w, n - w, "t=%d | AW: ", s->tick);
	w += aw_str(&ra, buf + w, n - w);
	if (w < n && s->naw > 1) {
		w += (size_t)snprintf(buf + w, n - w, " (cache %d behind: ", s->naw - 1);
		w += aw_str(&s->aw[0], buf + w, n - w);
		w += (size_t)snprintf(buf + w, n - w, ")");
	}
	for (int c = 0; c < ncomps && w < n; c++) {
		m_job rj = real_job(s, c);
		w += (size_t)snprintf(buf + w, n - w, "%s%s: %s", c ? " | " : "\n        | ",
		                      kinds[ckind[c]], job_str(&rj, c, jb));
		if (w < n && s->jview[c] != s->njob[c] - 1)
			w += (size_t)snprintf(buf + w, n - w, " (cache: %s)",
			                      job_str(&s->job[c][s->jview[c]], c, jb));
	}
	if (w < n) {
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
		w += (size_t)snprintf(buf + w, n - w, "\n        | leader:");
	for (int c = 0; c < ncomps && w < n; c++) {
		const m_cmem *M = &L->c[c];
		w += (size_t)snprintf(
		    buf + w, n - w, "%s%s%s create=%s expect=%d deleted=%d%s gone=%d live=%s",
		    c ? ";" : "", ncomps > 1 ? " " : "", ncomps > 1 ? CNAME(c) : "",
		    cr[M->create & 3], M->expect, M->deleted_uid,
		    M->deleted_cached ? "(cached)" : "", M->delete_gone, lv[M->live_found % 3]);
	}
	if (w < n)
		w += (size_t)snprintf(buf + w, n - w, " livelist=%s acked=%d written=%d",
		                      L->lp_have ? "yes" : "no", L->deletes_acked, L->written);
	if (L->lp_have && w < n) {
		w += (size_t)snprintf(buf + w, n - w, " list(asked %d)=", L->lp_asked);
		m_podset t;
		memset(&t, 0, sizeof(t));
		memcpy(t.p, L->lp, sizeof(m_pod) * (L->lp_n < M_PODS ? L->lp_n : M_PODS));
		w += podset_str(&t, buf + w, n - w);
	}
	for (int i = 0; i < L->nreq && w < n; i++) {
		const m_req *r = &L->req[i];
		w += (size_t)snprintf(buf + w, n - w, "%s%s",
		                      i ? ", " : " | in flight: ", rq[r->kind < 8 ? r->kind : 0]);
		if (w < n && r->kind == RQ_DELETE)
			w += (size_t)snprintf(buf + w, n - w, " %s#%d", inc_names[ckind[r->i & 1]],
			                      r->a);
		else if (w < n && r->kind == RQ_DELPOD)
			w += (size_t)snprintf(buf + w, n - w, " p%d", r->a);
		else if (w < n && ncomps > 1 && r->kind != RQ_LIST)
			w += (size_t)snprintf(buf + w, n - w, " %s", comp_names[ckind[r->i & 1]]);
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
	for (int c = 0; c < ncomps; c++) {
		s->njob[c] = 1;
		s->next_inc[c] = 1;
	}
	s->npod = 1;
	s->next_pod = 1;
	s->b_admit = s->b_preempt = s->b_udelete = s->b_podfail = s->b_pods = s->b_tick = 200;
	/* scripts pick transitions by label: one of each perturbation is there
	 * to be picked (and b_crash keeps the component histories whole) */
	s->b_crash = s->b_lost = s->b_f404 = s->b_linger = s->b_fdel = s->b_edit = 1;
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
	s->b_edit = (uint8_t)b->edits;
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
			fprintf(stderr,
			        "model: seed script step %d \"%s\" not enabled in\n        %s\n", i,
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
		*tl +=
		    (size_t)snprintf(t + *tl, need, "  %4d. %s\n        %s\n", ++*no, p.label, d);
	}
	return 0;
}

/* Scripts (label prefixes). Each is a run of the model itself, so a state
 * reached from a milestone is reachable from the initial state. */
static const char *const to_suspended[] = {
    "reconcile",                        /* Empty: the finalizer */
    "AppWrapper cache +1", "reconcile", /* Empty -> Suspended: componentStatus */
    "AppWrapper cache +1", NULL,
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
    "Kueue preempts",      "AppWrapper cache +1",
    "reconcile",                        /* Running -> Suspending */
    "AppWrapper cache +1", "reconcile", /* DeletingResources, DELETE job#1 (the cache's copy) */
    "DELETE job#1 -> 200", "Job cache +1",
    "AppWrapper cache +1", "reconcile", /* the cache dropped job#1: gone */
    "reconcile",                        /* job-a CompononetDeleted; LIST */
    "LIST pods -> 0",      "AppWrapper cache +1",
    "reconcile", /* Suspending -> Suspended, QuotaReserved=False */
    "AppWrapper cache +1", NULL,
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

/* The same for an AppWrapper with a second component: both are created
 * in one step; the component caches and the pod cache catch up. */
static const char *const to_running_pod[] = {
    "Kueue admits",
    "AppWrapper cache +1",
    "reconcile", /* Suspended -> Resuming */
    "AppWrapper cache +1",
    "reconcile", /* Resuming: ComponentCreationInitiated, CREATE both */
    "CREATE job-a -> 201 job#1",
    "CREATE pod-b -> 201 pod#1",
    "AppWrapper cache +1",
    "reconcile", /* Resuming -> Running */
    "AppWrapper cache +1",
    "Job cache +1",
    "Pod component cache +1",
    "pod cache +1",
    NULL,
};

static const char *const to_running_deploy[] = {
    "Kueue admits",
    "AppWrapper cache +1",
    "reconcile", /* Suspended -> Resuming */
    "AppWrapper cache +1",
    "reconcile", /* Resuming: ComponentCreationInitiated, CREATE both */
    "CREATE job-a -> 201 job#1",
    "CREATE deploy-b -> 201 deploy#1",
    "AppWrapper cache +1",
    "reconcile", /* Resuming -> Running */
    "AppWrapper cache +1",
    "Job cache +1",
    "Deployment cache +1",
    NULL,
};

/* From Running with a Pod component: both do their work; no cache sees
 * it (the pod cache last showed pod-b Pending, the Job cache job#1 new). */
static const char *const to_done_pod[] = {
    "Job controller creates pod p2 of job#1",
    "pod p1 of pod#1 Pending->Running",
    "pod p2 of job#1 Pending->Running",
    "pod p1 of pod#1 Running->Succeeded",
    "pod p2 of job#1 Running->Succeeded",
    "Job controller: job#1 Complete=True",
    NULL,
};

/* From Running with a Deployment: the Job's work is done, the
 * Deployment's pod serves; the reconcile saw them ready. */
static const char *const to_serving_deploy[] = {
    "Job controller creates pod p1 of job#1",
    "Deployment controller creates pod p2 of deploy#1",
    "pod p1 of job#1 Pending->Running",
    "pod p2 of deploy#1 Pending->Running",
    "pod cache +4 versions",
    "reconcile", /* pods ready */
    "AppWrapper cache +1",
    "pod p1 of job#1 Running->Succeeded",
    "Job controller: job#1 Complete=True",
    NULL,
};

/* From Running with a Deployment, whose controller has made no pod yet
 * (slow, or its pods refused): a Job of completions 2 and parallelism 1
 * (one pod expected) runs its two pods to completion. */
static const char *const to_job_done_deploy[] = {
    "Job controller creates pod p1 of job#1", "pod p1 of job#1 Pending->Running",
    "pod p1 of job#1 Running->Succeeded",     "Job controller creates pod p2 of job#1",
    "pod p2 of job#1 Pending->Running",       "pod p2 of job#1 Running->Succeeded",
    "Job controller: job#1 Complete=True",    NULL,
};

/* From Running with a Pod component still Pending: a Job of completions
 * 2 and parallelism 1 (one pod expected) runs its two pods to
 * completion. */
static const char *const to_job_done_pod[] = {
    "Job controller creates pod p2 of job#1", "pod p2 of job#1 Pending->Running",
    "pod p2 of job#1 Running->Succeeded",     "Job controller creates pod p3 of job#1",
    "pod p3 of job#1 Pending->Running",       "pod p3 of job#1 Running->Succeeded",
    "Job controller: job#1 Complete=True",    NULL,
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
    {"Running with a Pod component (admitted, job#1 and pod#1 created, caches caught up)",
     {to_suspended, to_running_pod, NULL}},
    {"Running with a Deployment (admitted, job#1 and deploy#1 created, caches caught up)",
     {to_suspended, to_running_deploy, NULL}},
    {"Running with a Pod component, job#1 Complete and pod#1 Succeeded, no cache has seen it",
     {to_suspended, to_running_pod, to_done_pod, NULL}},
    {"Running with a Deployment serving, job#1 Complete",
     {to_suspended, to_running_deploy, to_serving_deploy, NULL}},
    {"Running with a Deployment that has made no pod, job#1 (2 completions, 1 at a time) "
     "Complete",
     {to_suspended, to_running_deploy, to_job_done_deploy, NULL}},
    {"Running with a Pod component still Pending, job#1 (2 completions, 1 at a time) Complete",
     {to_suspended, to_running_pod, to_job_done_pod, NULL}},
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
	scen_setup(sc);
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
	/* the scenario's user may raise the retry limit to 2 */
	int limit = scen_edits && B.retry_limit < 2 ? 2 : B.retry_limit;
	int t[] = {B.warmup_grace, B.failure_grace, B.forceful_grace,
	           B.success_ttl,  B.missing_grace, B.retry_pause << (limit > 0 ? limit : 0)};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i] > m)
			m = t[i];
	return m + 2;
}
