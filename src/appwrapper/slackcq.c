/*
 * slackcq.c - the slack ClusterQueue's lendingLimits kept in step with
 * the nodes' health by the leader (slackcq.h).
 *
 * A pass sums what every Node of the cache takes out of scheduling
 * (sf_awn_classify, the rules the evacuation also uses), GETs the
 * ClusterQueue, and, only when its limits say something else, sends one
 * JSON Patch. The decisions are pure functions, unit-tested from
 * documents; the pass only moves bytes and logs, and the timer, pause
 * and close around it are the shared syncer's (syncer.h). Kueue serves
 * kueue.x-k8s.io v1beta2 since v0.15 and v1beta1 before (and alongside):
 * the GET tries v1beta2 and falls back to v1beta1 when that version is
 * not served (a 404 that is not about the object), with the same paths.
 */
#include "steadfast/slackcq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/log.h"
#include "steadfast/quantity.h"

#define LOGGER "slackqueue"
#define INTERVAL_MS 30000
#define KICK_MS 500
#define RETRY_MS 1000     /* first backoff after an error, doubled up to the interval */
#define SYNC_WAIT_MS 1000 /* checks of the node cache before its first sync */
#define MAX_RETRIES 3     /* conflicts in a row re-run at once, then as an error */

static const sf_gvr CQ_GVRS[] = {
    {"kueue.x-k8s.io", "v1beta2", "clusterqueues", 0},
    {"kueue.x-k8s.io", "v1beta1", "clusterqueues", 0},
};

/* ---- decisions ---- */

void sf_slackcq_unusable_init(sf_slackcq_unusable *u)
{
	memset(u, 0, sizeof(*u));
}

static sf_slackcq_amount *amount_of(sf_slackcq_unusable *u, const char *res, int make)
{
	for (size_t i = 0; i < u->n; i++)
		if (strcmp(u->r[i].resource, res) == 0)
			return &u->r[i];
	if (!make || u->n == SF_SLACKCQ_MAX_RESOURCES)
		return NULL;
	sf_slackcq_amount *a = &u->r[u->n++];
	snprintf(a->resource, sizeof(a->resource), "%s", res);
	a->milli = 0;
	return a;
}

size_t sf_slackcq_unusable_add(sf_slackcq_unusable *u, const sf_awn_health *h)
{
	size_t skipped = 0;
	for (size_t i = 0; i < h->nnosched; i++) {
		int64_t q;
		if (sf_qty_parse(h->nosched[i].quantity, &q) < 0 || q < 0) {
			skipped++;
			continue;
		}
		if (q == 0)
			continue;
		sf_slackcq_amount *a = amount_of(u, h->nosched[i].resource, 1);
		if (!a || sf_qty_add(a->milli, q, &a->milli) < 0)
			skipped++;
	}
	u->skipped += skipped;
	return skipped;
}

int64_t sf_slackcq_unusable_get(const sf_slackcq_unusable *u, const char *resource)
{
	for (size_t i = 0; i < u->n; i++)
		if (strcmp(u->r[i].resource, resource) == 0)
			return u->r[i].milli;
	return 0;
}

static int same_nosched(const sf_awn_health *a, const sf_awn_health *b)
{
	if (a->nnosched != b->nnosched)
		return 0;
	for (size_t i = 0; i < a->nnosched; i++) {
		size_t j = 0;
		while (j < b->nnosched &&
		       strcmp(a->nosched[i].resource, b->nosched[j].resource) != 0)
			j++;
		if (j == b->nnosched || strcmp(a->nosched[i].quantity, b->nosched[j].quantity) != 0)
			return 0;
	}
	return 1;
}

int sf_slackcq_node_changed(const sf_obj *old, const sf_obj *new_obj, const sf_aw_autopilot *ap)
{
	sf_awn_health a, b;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (old)
		sf_awn_classify(sf_obj_root(old), ap, &a);
	if (new_obj)
		sf_awn_classify(sf_obj_root(new_obj), ap, &b);
	return !same_nosched(&a, &b);
}

void sf_slackcq_plan_init(sf_slackcq_plan *p)
{
	memset(p, 0, sizeof(*p));
	sf_buf_init(&p->body, 0);
}

void sf_slackcq_plan_free(sf_slackcq_plan *p)
{
	sf_buf_free(&p->body);
}

/* A quantity as the API server writes it (a string) or as a client may
 * have (a JSON number): 0, -EINVAL, -ERANGE. */
static int jv_quantity(sf_jv v, int64_t *milli)
{
	char s[128];
	sf_json_type t = sf_jv_type(v);
	if (t == SF_JSON_NUMBER)
		return sf_qty_parse_n(v.p, v.n, milli);
	if (t != SF_JSON_STRING)
		return -EINVAL;
	if (sf_jv_str(v, s, sizeof(s)) < 0)
		return -EINVAL;
	return sf_qty_parse(s, milli);
}

#define RES_PATH "spec.resourceGroups[0].flavors[0].resources"
#define RES_PTR "/spec/resourceGroups/0/flavors/0/resources"

static int put_test(sf_buf *b, const char *path, const char *value)
{
	int rc = sf_buf_printf(b, ",{\"op\":\"test\",\"path\":\"%s\",\"value\":", path);
	if (rc == 0)
		rc = sf_buf_put_json_str(b, value, strlen(value));
	if (rc == 0)
		rc = sf_buf_putc(b, '}');
	return rc;
}

static int write_patch(sf_slackcq_plan *p, const char *rv)
{
	sf_buf *b = &p->body;
	char path[128], q[SF_QTY_STRLEN];
	sf_buf_reset(b);
	int rc =
	    sf_buf_puts(b, "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":");
	if (rc == 0)
		rc = sf_buf_put_json_str(b, rv, strlen(rv));
	if (rc == 0)
		rc = sf_buf_putc(b, '}');
	for (size_t i = 0; rc == 0 && i < p->nch; i++) {
		const sf_slackcq_change *c = &p->ch[i];
		snprintf(path, sizeof(path), RES_PTR "/%zu/name", c->index);
		rc = put_test(b, path, c->resource);
		if (rc == 0 && c->has)
			rc = sf_buf_printf(b,
			                   ",{\"op\":\"add\",\"path\":\"" RES_PTR
			                   "/%zu/lendingLimit\",\"value\":\"%s\"}",
			                   c->index, sf_qty_format(c->new_milli, q, sizeof(q)));
		else if (rc == 0)
			rc = sf_buf_printf(
			    b, ",{\"op\":\"remove\",\"path\":\"" RES_PTR "/%zu/lendingLimit\"}",
			    c->index);
	}
	if (rc == 0)
		rc = sf_buf_putc(b, ']');
	return rc;
}

int sf_slackcq_plan_make(sf_slackcq_plan *p, sf_jv cq, const sf_slackcq_unusable *u, char *err,
                         size_t errlen)
{
	char rv[64];
	p->nch = 0;
	p->flavor[0] = 0;
	sf_buf_reset(&p->body);
	if (sf_jv_type(cq) != SF_JSON_OBJECT) {
		sf_errf(err, errlen, "not an object");
		return -EINVAL;
	}
	if (sf_jv_str(sf_jv_path(cq, "metadata.resourceVersion"), rv, sizeof(rv)) <= 0) {
		sf_errf(err, errlen, "no metadata.resourceVersion");
		return -EINVAL;
	}
	if (sf_jv_type(sf_jv_path(cq, "spec.resourceGroups[0]")) != SF_JSON_OBJECT) {
		sf_errf(err, errlen, "no spec.resourceGroups[0]");
		return -EINVAL;
	}
	sf_jv flavor = sf_jv_path(cq, "spec.resourceGroups[0].flavors[0]");
	if (sf_jv_type(flavor) != SF_JSON_OBJECT) {
		sf_errf(err, errlen, "no spec.resourceGroups[0].flavors[0]");
		return -EINVAL;
	}
	if (sf_jv_str(sf_jv_get(flavor, "name"), p->flavor, sizeof(p->flavor)) < 0)
		p->flavor[0] = 0;
	sf_jv res = sf_jv_get(flavor, "resources");
	if (sf_jv_type(res) != SF_JSON_ARRAY) {
		sf_errf(err, errlen, "no " RES_PATH);
		return -EINVAL;
	}
	if (sf_jv_len(res) > SF_SLACKCQ_MAX_RESOURCES) {
		sf_errf(err, errlen, RES_PATH " has more than %d entries",
		        SF_SLACKCQ_MAX_RESOURCES);
		return -EINVAL;
	}
	sf_jv_iter it = sf_jv_iter_init(res);
	sf_jv r;
	for (size_t i = 0; sf_jv_next(&it, NULL, &r); i++) {
		sf_slackcq_change c;
		memset(&c, 0, sizeof(c));
		c.index = i;
		if (sf_jv_str(sf_jv_get(r, "name"), c.resource, sizeof(c.resource)) <= 0) {
			sf_errf(err, errlen, RES_PATH "[%zu].name: not a resource name", i);
			return -EINVAL;
		}
		int rc = jv_quantity(sf_jv_get(r, "nominalQuota"), &c.nominal_milli);
		if (rc < 0) {
			sf_errf(err, errlen, RES_PATH "[%zu].nominalQuota (%s): %s", i, c.resource,
			        rc == -ERANGE ? "out of range" : "not a quantity");
			return -EINVAL;
		}
		sf_jv ll = sf_jv_get(r, "lendingLimit");
		if (sf_jv_ok(ll) && sf_jv_type(ll) != SF_JSON_NULL) {
			if ((rc = jv_quantity(ll, &c.old_milli)) < 0) {
				sf_errf(err, errlen, RES_PATH "[%zu].lendingLimit (%s): %s", i,
				        c.resource,
				        rc == -ERANGE ? "out of range" : "not a quantity");
				return -EINVAL;
			}
			c.had = 1;
		}
		int64_t off = sf_slackcq_unusable_get(u, c.resource);
		if (off > 0) {
			c.has = 1;
			c.new_milli = c.nominal_milli > off ? c.nominal_milli - off : 0;
		}
		if (c.had != c.has || (c.had && c.old_milli != c.new_milli))
			p->ch[p->nch++] = c;
	}
	if (p->nch == 0)
		return 0;
	if (write_patch(p, rv) < 0) {
		sf_errf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 1;
}

const char *sf_slackcq_plan_str(const sf_slackcq_plan *p, char *buf, size_t n)
{
	size_t off = 0;
	buf[0] = 0;
	for (size_t i = 0; i < p->nch && off < n; i++) {
		const sf_slackcq_change *c = &p->ch[i];
		char a[SF_QTY_STRLEN] = "none", b[SF_QTY_STRLEN] = "none";
		if (c->had)
			sf_qty_format(c->old_milli, a, sizeof(a));
		if (c->has)
			sf_qty_format(c->new_milli, b, sizeof(b));
		int w =
		    snprintf(buf + off, n - off, "%s%s %s->%s", i ? ", " : "", c->resource, a, b);
		if (w < 0)
			break;
		off += (size_t)w;
	}
	return buf;
}

/* ---- passes ---- */

enum { IDLE, READ, WRITE };
enum { O_NONE, O_OK, O_ABSENT, O_ERROR, O_INVALID };

struct sf_slackcq {
	sf_syncer sync; /* the timer, the call in flight, the stats */
	sf_kube_client *client;
	const sf_aw_autopilot *ap;
	sf_store *nodes;
	int (*nodes_synced)(void *ud);
	void *nodes_ud;
	char *name;
	long interval_ms, kick_ms, backoff_ms;
	size_t gvr;    /* index in CQ_GVRS that answered last */
	int kicked;    /* a kick came during a pass: the next one runs soon */
	int conflicts; /* in a row */
	int last;      /* outcome of the previous pass (log once per change) */
	sf_slackcq_unusable unusable;
	sf_slackcq_plan plan;
};

/* The next pass after one ended: soon when kicked meanwhile. */
static void schedule_next(sf_slackcq *s, long ms)
{
	if (s->kicked && ms > s->kick_ms)
		ms = s->kick_ms;
	s->kicked = 0;
	sf_syncer_schedule(&s->sync, ms);
}

static void pass_failed(sf_slackcq *s, int outcome, const char *step, const char *error)
{
	s->sync.st.errors++;
	s->sync.step = IDLE;
	s->conflicts = 0;
	sf_log(s->last == outcome ? SF_LOG_DEBUG : SF_LOG_WARN, LOGGER,
	       "cannot bring the slack ClusterQueue's lendingLimits up to date; Kueue may lend "
	       "capacity that unhealthy nodes do not have",
	       "clusterQueue", s->name, "step", step, "error", error, NULL);
	s->last = outcome;
	long ms = s->backoff_ms;
	s->backoff_ms = s->backoff_ms * 2 > s->interval_ms ? s->interval_ms : s->backoff_ms * 2;
	schedule_next(s, ms);
}

static void pass_done(sf_slackcq *s, int outcome)
{
	s->sync.step = IDLE;
	s->conflicts = 0;
	s->backoff_ms = RETRY_MS;
	s->last = outcome;
	schedule_next(s, s->interval_ms);
}

/* A write refused because the ClusterQueue changed since it was read:
 * 409, or 422 from a failed `test` operation. */
static int changed_meanwhile(const sf_kube_result *res)
{
	if (sf_kube_is_conflict(res))
		return 1;
	const char *m = res->status ? res->status->message : NULL;
	return sf_kube_is_invalid(res) && m &&
	       (strstr(m, "test failed") || strstr(m, "testing value"));
}

static void read_cq(sf_slackcq *s);

static void on_written(void *ud, const sf_kube_result *res)
{
	sf_slackcq *s = ud;
	if (!sf_syncer_answer(&s->sync, res))
		return;
	char buf[512];
	if (changed_meanwhile(res) && s->conflicts < MAX_RETRIES) {
		s->conflicts++;
		read_cq(s);
		return;
	}
	if (!sf_kube_ok(res)) {
		pass_failed(s, O_ERROR, "patch", sf_kube_result_str(res, buf, sizeof(buf)));
		return;
	}
	s->sync.st.updated++;
	char changes[1024];
	sf_log_info(LOGGER, "slack ClusterQueue lendingLimits updated from the nodes' health",
	            "clusterQueue", s->name, "flavor", s->plan.flavor, "changes",
	            sf_slackcq_plan_str(&s->plan, changes, sizeof(changes)), NULL);
	pass_done(s, O_OK);
}

static void on_read(void *ud, const sf_kube_result *res)
{
	sf_slackcq *s = ud;
	if (!sf_syncer_answer(&s->sync, res))
		return;
	char buf[512];
	if (sf_kube_is_not_found(res) && !sf_kube_is_absent(res, s->name) &&
	    s->gvr + 1 < sizeof(CQ_GVRS) / sizeof(CQ_GVRS[0])) {
		/* that version is not served: the older one */
		s->gvr++;
		read_cq(s);
		return;
	}
	if (sf_kube_is_absent(res, s->name)) {
		s->sync.st.absent++;
		if (s->last != O_ABSENT)
			sf_log_info(LOGGER,
			            "slack ClusterQueue not found: no lendingLimit kept until it "
			            "exists",
			            "clusterQueue", s->name, NULL);
		pass_done(s, O_ABSENT);
		return;
	}
	if (!sf_kube_ok(res) || !res->obj) {
		if (sf_kube_is_not_found(res))
			s->gvr = 0; /* no version served (Kueue absent): ask both again next time */
		pass_failed(s, O_ERROR, "read", sf_kube_result_str(res, buf, sizeof(buf)));
		return;
	}
	int rc =
	    sf_slackcq_plan_make(&s->plan, sf_obj_root(res->obj), &s->unusable, buf, sizeof(buf));
	if (rc < 0) {
		pass_failed(s, rc == -ENOMEM ? O_ERROR : O_INVALID, "plan", buf);
		return;
	}
	if (rc == 0) {
		s->sync.st.unchanged++;
		if (s->last != O_OK)
			sf_log_info(LOGGER,
			            "slack ClusterQueue lendingLimits agree with the nodes' health",
			            "clusterQueue", s->name, NULL);
		pass_done(s, O_OK);
		return;
	}
	sf_kube_req r = {.method = "PATCH",
	                 .gvr = &CQ_GVRS[s->gvr],
	                 .name = s->name,
	                 .body = s->plan.body.data,
	                 .body_len = s->plan.body.len,
	                 .content_type = "application/json-patch+json"};
	s->sync.step = WRITE;
	if ((rc = sf_kube_do(s->client, &r, on_written, s, &s->sync.call)) < 0)
		pass_failed(s, O_ERROR, "patch", strerror(-rc));
}

static void read_cq(sf_slackcq *s)
{
	s->sync.step = READ;
	int rc = sf_kube_get(s->client, &CQ_GVRS[s->gvr], NULL, s->name, on_read, s, &s->sync.call);
	if (rc < 0)
		pass_failed(s, O_ERROR, "read", strerror(-rc));
}

typedef struct sum_ctx {
	sf_slackcq *s;
	size_t nodes, skipped;
	char first_skipped[254];
} sum_ctx;

static int sum_visit(void *ud, sf_obj *o)
{
	sum_ctx *c = ud;
	sf_awn_health h;
	if (sf_awn_classify(sf_obj_root(o), c->s->ap, &h) < 0)
		return 0;
	c->nodes++;
	if (sf_slackcq_unusable_add(&c->s->unusable, &h) > 0) {
		if (!c->skipped)
			snprintf(c->first_skipped, sizeof(c->first_skipped), "%s", o->name);
		c->skipped++;
	}
	return 0;
}

/* The syncer's pass: running, and no pass under way. */
static void pass(void *ud)
{
	sf_slackcq *s = ud;
	if (s->nodes_synced && !s->nodes_synced(s->nodes_ud)) {
		sf_syncer_schedule(&s->sync, SYNC_WAIT_MS);
		return;
	}
	s->kicked = 0;
	sf_slackcq_unusable_init(&s->unusable);
	sum_ctx c = {.s = s};
	sf_store_each(s->nodes, sum_visit, &c);
	if (c.skipped) {
		char n[24];
		sf_log_warn(LOGGER,
		            "node capacities that are not quantities (or too many resources) are "
		            "left out of the slack ClusterQueue's unusable capacity",
		            "clusterQueue", s->name, "nodes", sf_log_int(n, (long long)c.skipped),
		            "node", c.first_skipped, NULL);
	}
	read_cq(s);
}

/* The syncer's release: closed, nothing in flight. */
static void release(void *ud)
{
	sf_slackcq *s = ud;
	sf_slackcq_plan_free(&s->plan);
	free(s->name);
	free(s);
}

int sf_slackcq_new(uv_loop_t *loop, sf_kube_client *client, const sf_slackcq_opts *o,
                   sf_slackcq **out)
{
	if (!o || !o->name || !*o->name || !o->autopilot || !o->nodes)
		return -EINVAL;
	sf_slackcq *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->client = client;
	s->ap = o->autopilot;
	s->nodes = o->nodes;
	s->nodes_synced = o->nodes_synced;
	s->nodes_ud = o->nodes_ud;
	s->interval_ms = o->interval_ms > 0 ? o->interval_ms : INTERVAL_MS;
	s->kick_ms = o->kick_ms > 0 ? o->kick_ms : KICK_MS;
	s->backoff_ms = RETRY_MS < s->interval_ms ? RETRY_MS : s->interval_ms;
	s->name = strdup(o->name);
	sf_slackcq_plan_init(&s->plan);
	if (!s->name) {
		free(s);
		return -ENOMEM;
	}
	sf_syncer_init(loop, &s->sync, pass, release, s);
	*out = s;
	return 0;
}

void sf_slackcq_run(sf_slackcq *s)
{
	if (s && sf_syncer_run(&s->sync)) {
		s->conflicts = 0;
		s->kicked = 0;
	}
}

void sf_slackcq_kick(sf_slackcq *s)
{
	if (!s || !s->sync.running || s->sync.closing)
		return;
	if (s->sync.step != IDLE) {
		s->kicked = 1;
		return;
	}
	sf_syncer_within(&s->sync, s->kick_ms);
}

/* The slack queue's limits follow what nodes take out of scheduling. */
static void node_kick(sf_slackcq *s, const sf_obj *old, const sf_obj *new_obj)
{
	if (sf_slackcq_node_changed(old, new_obj, s->ap))
		sf_slackcq_kick(s);
}

static void node_add(void *ud, sf_obj *obj)
{
	node_kick(ud, NULL, obj);
}

static void node_update(void *ud, sf_obj *old, sf_obj *new_obj)
{
	node_kick(ud, old, new_obj);
}

static void node_delete(void *ud, sf_obj *obj)
{
	node_kick(ud, obj, NULL);
}

static int synced_visit(void *ud, sf_obj *obj)
{
	node_add(ud, obj);
	return 0;
}

/* After each (re)list: every node is looked at again, as if added. */
static void nodes_synced(void *ud)
{
	sf_slackcq *s = ud;
	if (s->sync.running && !s->sync.closing)
		sf_store_each(s->nodes, synced_visit, s);
}

int sf_slackcq_watch(sf_slackcq *s, sf_informer *nodes)
{
	sf_informer_handler h = {.on_add = node_add,
	                         .on_update = node_update,
	                         .on_delete = node_delete,
	                         .on_synced = nodes_synced};
	return sf_informer_add_handler(nodes, &h, s);
}

void sf_slackcq_pause(sf_slackcq *s)
{
	if (s)
		sf_syncer_pause(&s->sync);
}

void sf_slackcq_close(sf_slackcq *s, void (*cb)(void *ud), void *ud)
{
	if (!s) {
		if (cb)
			cb(ud);
		return;
	}
	sf_syncer_close(&s->sync, cb, ud);
}

void sf_slackcq_stats_get(const sf_slackcq *s, sf_slackcq_stats *out)
{
	if (s)
		*out = s->sync.st;
	else
		memset(out, 0, sizeof(*out));
}

int sf_slackcq_metrics_write(const sf_slackcq *s, sf_prom *prom)
{
	return sf_syncer_metrics_write(s ? &s->sync.st : NULL, prom,
	                               "steadfast_slack_queue_syncs_total",
	                               "Passes over the slack ClusterQueue's lendingLimits by "
	                               "outcome: unchanged, updated (one "
	                               "patch), absent (no such ClusterQueue), error");
}
