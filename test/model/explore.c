/*
 * explore.c - breadth-first search over the model's states (README.md).
 *
 * A state is visited once: its canonical bytes (m_pack) are hashed to 128
 * bits and kept in an open-addressing set, with the state it was first
 * reached from and which of that state's transitions led to it. Only the
 * frontier keeps states; a trace is rebuilt by replaying the recorded
 * transitions from the seed with labels on. Breadth-first, so the first
 * violation found has a shortest trace from the seeds.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model.h"
#include "steadfast/awphase.h"

#define NONE UINT32_MAX

typedef struct vslot {
	uint64_t h[2]; /* 0,0 = empty */
	uint32_t idx;
} vslot;

typedef struct arena {
	uint8_t *p;
	size_t n, cap;
} arena;

typedef struct search {
	m_emit e; /* first: the callback gets it */
	const m_bounds *b;
	const m_scen *sc;
	/* the visited set */
	vslot *slots;
	size_t nslots, nstates;
	uint32_t *parent;
	uint16_t *succ;
	size_t cap;
	/* the level being expanded and the next */
	arena cur, next;
	uint32_t cur_idx;
	const uint8_t *cur_bytes;
	size_t cur_len;
	int k; /* transitions emitted from the current state */
	uint64_t transitions;
	/* a violation: the transition (parent, k) and what it broke */
	int violated;
	uint32_t v_parent;
	int v_succ;
	char violation[512];
	int live_fail; /* the violation is a liveness verdict of state v_parent's successor */
	/* the unmutated machine: every distinct violation is reported (its
	 * shortest trace) and the search goes on */
	int collect;
	char seen[16][512];
	int nseen;
	uint64_t repeats;
	/* liveness verdicts by state hash (0 = ok, else an index into texts) */
	vslot *live;
	size_t nlive, live_slots;
	char **verdicts;
	size_t nverdicts;
	uint64_t live_checked;
} search;

/* STEADFAST_MODEL_IGNORE=text1|text2: violations whose message contains
 * one of these are counted and not reported, so that a search can look
 * past a known finding (never set by make) */
static uint64_t ignored;

static int ignore(const char *v)
{
	const char *list = getenv("STEADFAST_MODEL_IGNORE");
	if (!list || !list[0] || !v || !v[0])
		return 0;
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *save = NULL, *t = strtok_r(buf, "|", &save); t; t = strtok_r(NULL, "|", &save))
		if (strstr(v, t)) {
			ignored++;
			return 1;
		}
	return 0;
}

static void die(const char *what)
{
	fprintf(stderr, "model: %s\n", what);
	abort();
}

static void arena_put(arena *a, uint32_t idx, const uint8_t *bytes, size_t n)
{
	size_t need = n + 6;
	if (a->n + need > a->cap) {
		a->cap = (a->n + need) * 2;
		a->p = realloc(a->p, a->cap);
		if (!a->p)
			die("out of memory (frontier)");
	}
	memcpy(a->p + a->n, &idx, 4);
	uint16_t l = (uint16_t)n;
	memcpy(a->p + a->n + 4, &l, 2);
	memcpy(a->p + a->n + 6, bytes, n);
	a->n += need;
}

static void grow(search *S)
{
	size_t n = S->nslots ? S->nslots * 2 : 1 << 16;
	vslot *t = calloc(n, sizeof(*t));
	if (!t)
		die("out of memory (visited set)");
	for (size_t i = 0; i < S->nslots; i++) {
		vslot *v = &S->slots[i];
		if (!v->h[0] && !v->h[1])
			continue;
		size_t j = v->h[0] & (n - 1);
		while (t[j].h[0] || t[j].h[1])
			j = (j + 1) & (n - 1);
		t[j] = *v;
	}
	free(S->slots);
	S->slots = t;
	S->nslots = n;
}

/* Inserts h; returns the new state's index, or NONE if it was there. */
static uint32_t visit(search *S, const uint64_t h[2], uint32_t parent, int succ)
{
	if ((S->nstates + 1) * 2 > S->nslots)
		grow(S);
	size_t j = h[0] & (S->nslots - 1);
	while (S->slots[j].h[0] || S->slots[j].h[1]) {
		if (S->slots[j].h[0] == h[0] && S->slots[j].h[1] == h[1])
			return NONE;
		j = (j + 1) & (S->nslots - 1);
	}
	if (S->nstates == S->cap) {
		S->cap = S->cap ? S->cap * 2 : 1 << 16;
		S->parent = realloc(S->parent, S->cap * sizeof(*S->parent));
		S->succ = realloc(S->succ, S->cap * sizeof(*S->succ));
		if (!S->parent || !S->succ)
			die("out of memory (parents)");
	}
	uint32_t idx = (uint32_t)S->nstates++;
	S->slots[j].h[0] = h[0];
	S->slots[j].h[1] = h[1] | (h[0] || h[1] ? 0 : 1);
	S->slots[j].idx = idx;
	S->parent[idx] = parent;
	S->succ[idx] = (uint16_t)succ;
	return idx;
}

static void hash_state(const m_state *s, uint8_t *buf, size_t *n, uint64_t h[2])
{
	*n = m_pack(s, buf);
	m_hash128(buf, *n, h);
	if (!h[0] && !h[1])
		h[1] = 1;
}

/* ---- liveness: every reachable state can still end well ---- */

static int live_get(search *S, const uint64_t h[2], int *verdict)
{
	if (!S->live_slots)
		return 0;
	size_t j = h[0] & (S->live_slots - 1);
	while (S->live[j].h[0] || S->live[j].h[1]) {
		if (S->live[j].h[0] == h[0] && S->live[j].h[1] == h[1]) {
			*verdict = (int)S->live[j].idx;
			return 1;
		}
		j = (j + 1) & (S->live_slots - 1);
	}
	return 0;
}

static void live_put(search *S, const uint64_t h[2], int verdict)
{
	if ((S->nlive + 1) * 2 > S->live_slots) {
		size_t n = S->live_slots ? S->live_slots * 2 : 1 << 16;
		vslot *t = calloc(n, sizeof(*t));
		if (!t)
			die("out of memory (liveness)");
		for (size_t i = 0; i < S->live_slots; i++) {
			vslot *v = &S->live[i];
			if (!v->h[0] && !v->h[1])
				continue;
			size_t j = v->h[0] & (n - 1);
			while (t[j].h[0] || t[j].h[1])
				j = (j + 1) & (n - 1);
			t[j] = *v;
		}
		free(S->live);
		S->live = t;
		S->live_slots = n;
	}
	size_t j = h[0] & (S->live_slots - 1);
	while (S->live[j].h[0] || S->live[j].h[1]) {
		if (S->live[j].h[0] == h[0] && S->live[j].h[1] == h[1])
			return;
		j = (j + 1) & (S->live_slots - 1);
	}
	S->live[j].h[0] = h[0];
	S->live[j].h[1] = h[1];
	S->live[j].idx = (uint32_t)verdict;
	S->nlive++;
}

typedef struct first {
	m_emit e;
	const uint8_t *cur;
	size_t cur_len;
	int cur_tick;
	int found, tick_only;
	m_state got;
	char label[600];
} first;

static void first_fn(m_emit *e, const m_state *n, const char *label, const char *viol)
{
	first *f = (first *)e;
	(void)viol;
	if (f->found)
		return;
	uint8_t buf[M_PACK];
	size_t len = m_pack(n, buf);
	if (len == f->cur_len && memcmp(buf, f->cur, len) == 0)
		return; /* changes nothing */
	f->found = 1;
	e->stop = 1;
	f->tick_only = n->tick != f->cur_tick; /* only a tick moves the clock */
	f->got = *n;
	if (e->labels)
		snprintf(f->label, sizeof(f->label), "%s", label);
}

/* One step of a catch-up run: the first benign transition that changes s.
 * Returns 0 when none, 1 for a tick, 2 for anything else. */
static int catchup_step(m_state *s, int labels, char *label, size_t ln)
{
	uint8_t buf[M_PACK];
	first f;
	memset(&f, 0, sizeof(f));
	f.e.fn = first_fn;
	f.e.benign = 1;
	f.e.labels = labels;
	f.cur_tick = s->tick;
	f.cur_len = m_pack(s, buf);
	f.cur = buf;
	m_successors(s, &f.e);
	if (f.e.broken)
		die(f.e.why_broken);
	if (!f.found)
		return 0;
	if (label)
		snprintf(label, ln, "%s", f.label);
	uint8_t nb[M_PACK];
	size_t n = m_pack(&f.got, nb);
	m_unpack(nb, n, s);
	return f.tick_only ? 1 : 2;
}

#define CATCHUP_MAX 400

/* The states a catch-up run went through since the clock last moved. A
 * run that comes back to one of them is going round in a circle (a
 * controller that asks a live read, cannot act on its answer yet, and
 * asks again): in the cluster the clock runs meanwhile, so a second
 * passes there. */
typedef struct loopset {
	uint64_t h[CATCHUP_MAX + 1][2];
	int n;
} loopset;

/* catchup_step, from s whose hash is h, with time passing in a circle:
 * 3 for such a second (*label says so). */
static int catchup_next(loopset *ls, m_state *s, const uint64_t h[2], int labels, char *label,
                        size_t ln)
{
	for (int i = 0; i < ls->n; i++)
		if (ls->h[i][0] == h[0] && ls->h[i][1] == h[1]) {
			ls->n = 0;
			if (!m_pass_second(s))
				return 0;
			if (label)
				snprintf(label, ln,
				         "1 s passes while the controller goes round (t=%d)",
				         s->tick);
			return 3;
		}
	if (ls->n <= CATCHUP_MAX) {
		ls->h[ls->n][0] = h[0], ls->h[ls->n][1] = h[1];
		ls->n++;
	}
	int r = catchup_step(s, labels, label, ln);
	if (r == 1)
		ls->n = 0;
	return r;
}

static int verdict_id(search *S, const char *v)
{
	if (!v[0])
		return 0;
	for (size_t i = 0; i < S->nverdicts; i++)
		if (strcmp(S->verdicts[i], v) == 0)
			return (int)i + 1;
	S->verdicts = realloc(S->verdicts, (S->nverdicts + 1) * sizeof(char *));
	if (!S->verdicts || !(S->verdicts[S->nverdicts] = strdup(v)))
		die("out of memory");
	S->nverdicts++;
	return (int)S->nverdicts;
}

/* The verdict of state s: run the catch-up (all caches catch up, requests
 * are answered, no perturbation, pods succeed, no new decisions by Kueue or
 * the user; time passes when nothing else happens, or when the run goes
 * round in a circle) until nothing happens for longer than the longest
 * timer, and judge where it ended. */
static int liveness(search *S, const m_state *s0)
{
	static loopset ls;
	uint64_t path[CATCHUP_MAX + 1][2];
	int np = 0, verdict = -1, idle = 0;
	ls.n = 0;
	int idle_max = m_longest_timer() + 2;
	m_state s = *s0;
	uint8_t buf[M_PACK];
	size_t n;
	S->live_checked++;
	for (int step = 0; step <= CATCHUP_MAX; step++) {
		uint64_t h[2];
		hash_state(&s, buf, &n, h);
		if (idle == 0 && live_get(S, h, &verdict))
			break;
		if (idle == 0) {
			path[np][0] = h[0], path[np][1] = h[1];
			np++;
		}
		int r = catchup_next(&ls, &s, h, 0, NULL, 0);
		if (r == 0 || (r == 1 && ++idle > idle_max)) {
			verdict = verdict_id(S, m_check_final(&s));
			break;
		}
		if (r >= 2)
			idle = 0;
	}
	if (verdict < 0)
		verdict = verdict_id(S, "liveness: the catch-up run never settles");
	for (int i = 0; i < np; i++)
		live_put(S, path[i], verdict);
	return verdict;
}

/* ---- the search ---- */

static int shared_with_unmutated(search *S, uint32_t parent, int succ);
static void print_trace(search *S, uint32_t last_parent, int last_succ, int liveness_tail);

/* A violation at transition succ of state parent (liveness: of state
 * parent itself). Returns 1 when the search must stop. */
static int found(search *S, uint32_t parent, int succ, int live, const char *msg)
{
	if (!S->collect) {
		S->violated = 1;
		S->live_fail = live;
		S->v_parent = parent;
		S->v_succ = succ;
		snprintf(S->violation, sizeof(S->violation), "%s", msg);
		return 1;
	}
	for (int i = 0; i < S->nseen; i++)
		if (strcmp(S->seen[i], msg) == 0) {
			S->repeats++;
			return 0;
		}
	if (S->nseen < 16)
		snprintf(S->seen[S->nseen++], sizeof(S->seen[0]), "%s", msg);
	if (!S->violated)
		snprintf(S->violation, sizeof(S->violation), "%s", msg);
	S->violated = 1;
	fprintf(stderr, "model [%s/%s]: VIOLATION %s\n", S->b->name, S->sc->name, msg);
	print_trace(S, parent, succ, live);
	return 0;
}

static void on_succ(m_emit *e, const m_state *next, const char *label, const char *viol)
{
	search *S = (search *)e;
	int k = S->k++;
	(void)label;
	S->transitions++;
	if (S->violated && !S->collect)
		return;
	if (viol && !ignore(viol) && !shared_with_unmutated(S, S->cur_idx, k) &&
	    found(S, S->cur_idx, k, 0, viol))
		return;
	uint8_t buf[M_PACK];
	size_t n;
	uint64_t h[2];
	hash_state(next, buf, &n, h);
	if (n == S->cur_len && memcmp(buf, S->cur_bytes, n) == 0)
		return;
	uint32_t idx = visit(S, h, S->cur_idx, k);
	if (idx == NONE)
		return;
	m_state u;
	m_unpack(buf, n, &u);
	const char *sv = m_check_state(&u);
	if (sv[0] && !ignore(sv) && !shared_with_unmutated(S, S->cur_idx, k) &&
	    found(S, S->cur_idx, k, 0, sv))
		return;
	arena_put(&S->next, idx, buf, n);
}

typedef struct nth {
	m_emit e;
	int want, k;
	m_state got;
	char label[600];
	char viol[512];
} nth;

static void nth_fn(m_emit *e, const m_state *n, const char *label, const char *viol)
{
	nth *t = (nth *)e;
	if (t->k++ != t->want)
		return;
	t->got = *n;
	snprintf(t->label, sizeof(t->label), "%s", label);
	snprintf(t->viol, sizeof(t->viol), "%s", viol ? viol : "");
}

static void print_trace(search *S, uint32_t last_parent, int last_succ, int liveness_tail)
{
	/* the chain of (state, transition) from the seed */
	size_t len = 0;
	for (uint32_t i = last_parent; S->parent[i] != NONE; i = S->parent[i])
		len++;
	uint32_t *chain = calloc(len + 1, sizeof(*chain));
	if (!chain)
		die("out of memory");
	size_t at = len;
	for (uint32_t i = last_parent; S->parent[i] != NONE; i = S->parent[i])
		chain[--at] = i;
	int pre = 0;
	char *tr = NULL;
	m_state s;
	if (m_seed(S->sc, &s, &tr, &pre) < 0)
		die("a seed script failed while printing a trace");
	fprintf(stderr, "  trace: %d scripted transitions to the seed \"%s\", then %zu explored:\n",
	        pre, m_seed_name(S->sc->seed), len + (liveness_tail ? 0 : 1));
	char d[4096];
	fprintf(stderr, "     0. a new AppWrapper\n");
	if (tr)
		fputs(tr, stderr);
	free(tr);
	fprintf(stderr, "        ---- seed (the scenario's budgets apply from here) ----\n");
	int no = pre;
	for (size_t i = 0; i <= len; i++) {
		int want = i < len ? S->succ[chain[i]] : last_succ;
		if (i == len && liveness_tail)
			break;
		nth t;
		memset(&t, 0, sizeof(t));
		t.e.fn = nth_fn;
		t.e.labels = 1;
		t.want = want;
		m_successors(&s, &t.e);
		uint8_t buf[M_PACK];
		size_t n = m_pack(&t.got, buf);
		m_unpack(buf, n, &s);
		m_describe(&s, d, sizeof(d));
		const char *v = i == len ? (t.viol[0] ? t.viol : m_check_state(&s)) : "";
		fprintf(stderr, "  %4d. %s%s%s\n        %s\n", ++no, t.label,
		        i == len ? "   <== VIOLATION: " : "", v, d);
	}
	if (liveness_tail) {
		fprintf(stderr, "  catch-up run from the last state:\n");
		static loopset ls;
		int idle = 0, idle_max = m_longest_timer() + 2;
		ls.n = 0;
		for (int step = 0; step < CATCHUP_MAX; step++) {
			char label[600];
			uint64_t h[2];
			uint8_t hb[M_PACK];
			size_t hn;
			hash_state(&s, hb, &hn, h);
			int r = catchup_next(&ls, &s, h, 1, label, sizeof(label));
			if (r == 0 || (r == 1 && ++idle > idle_max))
				break;
			if (r >= 2)
				idle = 0;
			if (r == 1 && idle > 1)
				continue;
			m_describe(&s, d, sizeof(d));
			fprintf(stderr, "     c%d. %s\n        %s\n", step + 1, label, d);
		}
		fprintf(stderr, "  (nothing happens any more: it ends here)\n");
	}
	free(chain);
}

/* The labels of the transitions from the seed to (parent, succ), replayed
 * with the machine as it is now; returns how many (malloc'd array). */
static char **trace_labels(search *S, uint32_t parent, int succ, size_t *nl)
{
	size_t len = 0;
	for (uint32_t i = parent; S->parent[i] != NONE; i = S->parent[i])
		len++;
	uint32_t *chain = calloc(len + 1, sizeof(*chain));
	char **labels = calloc(len + 1, sizeof(*labels));
	if (!chain || !labels)
		die("out of memory");
	size_t at = len;
	for (uint32_t i = parent; S->parent[i] != NONE; i = S->parent[i])
		chain[--at] = i;
	m_state s;
	if (m_seed(S->sc, &s, NULL, NULL) < 0)
		die("a seed script failed");
	for (size_t i = 0; i <= len; i++) {
		nth t;
		memset(&t, 0, sizeof(t));
		t.e.fn = nth_fn;
		t.e.labels = 1;
		t.want = i < len ? S->succ[chain[i]] : succ;
		m_successors(&s, &t.e);
		if (!(labels[i] = strdup(t.label)))
			die("out of memory");
		uint8_t buf[M_PACK];
		size_t n = m_pack(&t.got, buf);
		m_unpack(buf, n, &s);
	}
	free(chain);
	*nl = len + 1;
	return labels;
}

typedef struct same {
	m_emit e;
	const char *want;
	int found;
	m_state got;
	char viol[512];
} same;

static void same_fn(m_emit *e, const m_state *n, const char *label, const char *viol)
{
	same *t = (same *)e;
	if (t->found || strcmp(label, t->want) != 0)
		return;
	t->found = 1;
	t->got = *n;
	snprintf(t->viol, sizeof(t->viol), "%s", viol ? viol : "");
}

/* The differential oracle of a mutant's violation: the same events (the
 * same transition labels, plans included) fed to the unmutated machine.
 * 1 when they break an invariant there too: the violation then says
 * nothing about the mutant, and the search goes on past it. */
static uint64_t shared;

static int shared_with_unmutated(search *S, uint32_t parent, int succ)
{
#ifdef SF_AWP_MUTANTS
	sf_awp_mutant mut = sf_awp_mutation;
	if (mut == SF_AWP_MUT_NONE)
		return 0;
	size_t nl;
	char **labels = trace_labels(S, parent, succ, &nl);
	sf_awp_mutation = SF_AWP_MUT_NONE;
	m_state s;
	int rc = 0;
	if (m_seed(S->sc, &s, NULL, NULL) < 0)
		die("a seed script failed");
	for (size_t i = 0; i < nl; i++) {
		same t;
		memset(&t, 0, sizeof(t));
		t.e.fn = same_fn;
		t.e.labels = 1;
		t.want = labels[i];
		m_successors(&s, &t.e);
		if (!t.found)
			break; /* the unmutated machine acts otherwise: the mutant's doing */
		uint8_t buf[M_PACK];
		size_t n = m_pack(&t.got, buf);
		m_unpack(buf, n, &s);
		if (i == nl - 1)
			rc = t.viol[0] || m_check_state(&s)[0];
	}
	sf_awp_mutation = mut;
	for (size_t i = 0; i < nl; i++)
		free(labels[i]);
	free(labels);
	shared += rc;
	return rc;
#else
	(void)S, (void)parent, (void)succ;
	return 0;
#endif
}

static void search_free(search *S)
{
	free(S->slots);
	free(S->parent);
	free(S->succ);
	free(S->cur.p);
	free(S->next.p);
	free(S->live);
	for (size_t i = 0; i < S->nverdicts; i++)
		free(S->verdicts[i]);
	free(S->verdicts);
	free(S);
}

/* Checks state s (index idx) for liveness; 1 on a violation (recorded). */
static int check_live(search *S, const m_state *s, uint32_t idx)
{
	int v = liveness(S, s);
	if (!v || ignore(S->verdicts[v - 1]))
		return 0;
	return found(S, idx, 0, 1, S->verdicts[v - 1]);
}

static int explore_one(const m_bounds *b, const m_scen *sc, m_result *r)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	uint64_t steps0 = m_steps_run();
	search *S = calloc(1, sizeof(*S));
	if (!S)
		die("out of memory");
	S->b = b;
	S->sc = sc;
	S->e.fn = on_succ;
#ifdef SF_AWP_MUTANTS
	S->collect = sf_awp_mutation == SF_AWP_MUT_NONE;
#else
	S->collect = 1;
#endif
	ignored = 0;
	shared = 0;
	m_state seed;
	int rc = 0;
	if (m_seed(sc, &seed, NULL, NULL) < 0) {
		search_free(S);
		return -1;
	}
	{
		uint8_t buf[M_PACK];
		size_t n;
		uint64_t h[2];
		hash_state(&seed, buf, &n, h);
		uint32_t idx = visit(S, h, NONE, 0);
		arena_put(&S->cur, idx, buf, n);
	}
	int depth = 0;
	for (;;) {
		size_t off = 0;
		while (off < S->cur.n && !(S->violated && !S->collect)) {
			uint32_t idx;
			uint16_t len;
			memcpy(&idx, S->cur.p + off, 4);
			memcpy(&len, S->cur.p + off + 4, 2);
			const uint8_t *bytes = S->cur.p + off + 6;
			off += 6u + len;
			m_state s;
			m_unpack(bytes, len, &s);
			if (b->liveness && check_live(S, &s, idx))
				break;
			if (depth == sc->depth)
				continue; /* the bound: checked, not expanded */
			S->cur_idx = idx;
			S->cur_bytes = bytes;
			S->cur_len = len;
			S->k = 0;
			m_successors(&s, &S->e);
			if (S->e.broken) {
				fprintf(stderr, "model: %s\n", S->e.why_broken);
				rc = -1;
				break;
			}
		}
		if ((S->violated && !S->collect) || rc || depth == sc->depth || !S->next.n)
			break;
		arena t = S->cur;
		S->cur = S->next;
		S->next = t;
		S->next.n = 0;
		depth++;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (ignored)
		fprintf(stderr, "model: %" PRIu64 " violations ignored (STEADFAST_MODEL_IGNORE)\n",
		        ignored);
	if (shared)
		fprintf(stderr,
		        "model: %" PRIu64
		        " violations the unmutated machine shares on the same events "
		        "(not the mutant's: passed over)\n",
		        shared);
	r->states = S->nstates;
	r->transitions = S->transitions;
	r->steps = m_steps_run() - steps0;
	r->live_checked = S->live_checked;
	m_mutant_diffs(&r->mut_diffs, &r->mut_diffs_ending);
	r->depth = S->violated && !S->live_fail && !S->collect ? depth + 1 : depth;
	r->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	r->violated = S->violated;
	r->distinct = S->collect ? S->nseen : S->violated;
	snprintf(r->violation, sizeof(r->violation), "%s", S->violation);
#ifdef SF_AWP_MUTANTS
	const char *mut = sf_awp_mutant_name(sf_awp_mutation);
#else
	const char *mut = "none";
#endif
	char diffs[96] = "";
	if (strcmp(mut, "none") != 0)
		snprintf(diffs, sizeof(diffs),
		         ", %" PRIu64 " decisions changed by the mutation (%" PRIu64
		         " end a deletion)",
		         r->mut_diffs, r->mut_diffs_ending);
	fprintf(stderr,
	        "model [%s/%s] mutant %s: %" PRIu64 " states, %" PRIu64 " transitions, depth %d, "
	        "%" PRIu64 " phase-machine steps, %" PRIu64 " liveness runs%s, %.1f s%s%s\n",
	        b->name, sc->name, mut, r->states, r->transitions, r->depth, r->steps,
	        r->live_checked, diffs, r->seconds,
	        S->violated ? (S->collect ? ": violations (above), the first: " : ": VIOLATION ")
	                    : ": no violation",
	        S->violated ? S->violation : "");
	if (S->collect && S->nseen)
		fprintf(
		    stderr,
		    "model [%s/%s]: %d distinct violations (shortest trace of each above), %" PRIu64
		    " more reached again\n",
		    b->name, sc->name, S->nseen, S->repeats);
	if (S->violated && !S->collect) {
		if (S->live_fail)
			print_trace(S, S->v_parent, 0, 1);
		else
			print_trace(S, S->v_parent, S->v_succ, 0);
	}
	search_free(S);
	return rc;
}

int m_explore(const m_bounds *b, m_result *r)
{
	memset(r, 0, sizeof(*r));
	m_world_init(b);
	int rc = 0;
	for (int i = 0; i < b->nscen && !rc; i++) {
		m_result one;
		memset(&one, 0, sizeof(one));
		rc = explore_one(b, &b->scen[i], &one);
		r->states += one.states;
		r->transitions += one.transitions;
		r->steps += one.steps;
		r->live_checked += one.live_checked;
		r->distinct += one.distinct;
		r->mut_diffs = one.mut_diffs; /* m_world_init resets them once */
		r->mut_diffs_ending = one.mut_diffs_ending;
		r->seconds += one.seconds;
		if (one.depth > r->depth)
			r->depth = one.depth;
		if (one.violated && !r->violated) {
			r->violated = 1;
			r->scen = i;
			snprintf(r->violation, sizeof(r->violation), "%s", one.violation);
		}
#ifdef SF_AWP_MUTANTS
		if (one.violated && sf_awp_mutation != SF_AWP_MUT_NONE) {
			r->depth = one.depth;
			break; /* a mutant is caught: its shortest trace is printed */
		}
#endif
	}
#ifdef SF_AWP_MUTANTS
	const char *mut = sf_awp_mutant_name(sf_awp_mutation);
#else
	const char *mut = "none";
#endif
	fprintf(stderr,
	        "model [%s] mutant %s: TOTAL %" PRIu64 " states, max depth %d, %.1f s: %s%s%s\n",
	        b->name, mut, r->states, r->depth, r->seconds,
	        r->violated ? "violation in scenario " : "no violation",
	        r->violated ? b->scen[r->scen].name : "", r->violated ? "" : "");
	m_world_free();
	return rc;
}
