/*
 * config.c - operator configuration and per-AppWrapper fault-tolerance
 * settings (see awconfig.h).
 *
 * Steadfast reads the same operator config file as the upstream Go
 * controller and honours the same AppWrapper annotations, so this module
 * reproduces the Go behaviour those depend on: Go's durations and
 * strconv.Atoi (from goparse.c), and the controller's rules
 * for turning annotations into numbers (clamping to the grace period
 * ceiling, falling back to the config on malformed values, the successTTL
 * window, comma-split exit codes that silently drop junk).
 *
 * Where upstream is lax we are stricter on purpose, because a typo in the
 * config file should stop the operator at startup, not be ignored: unknown
 * keys and wrong types are errors naming the full dotted key path. The
 * config is parsed into a copy so a failed load leaves the caller's struct
 * untouched.
 */
#include "steadfast/buf.h"
#include "steadfast/awconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "steadfast/goparse.h"
#include "steadfast/yaml.h"

#define NS_PER_MS INT64_C(1000000)
#define MS_SEC INT64_C(1000)
#define MS_MIN (60 * MS_SEC)
#define MS_HOUR (60 * MS_MIN)

/* Largest config file we read: the real one is a few hundred bytes. */
#define CONFIG_FILE_MAX (1024 * 1024)

/* Milliseconds as a Go duration string, for messages. */
static const char *fmt_ms(int64_t ms, char buf[32])
{
	if (ms > INT64_MAX / NS_PER_MS || ms < INT64_MIN / NS_PER_MS)
		snprintf(buf, 32, "%lldms", (long long)ms);
	else
		sf_go_duration_format(ms * NS_PER_MS, buf, 32);
	return buf;
}

/* ---- defaults and validation ---- */

void sf_awcfg_defaults(sf_aw_config *c)
{
	memset(c, 0, sizeof(*c));
	c->ft.admission_grace_ms = 1 * MS_MIN;
	c->ft.warmup_grace_ms = 5 * MS_MIN;
	c->ft.failure_grace_ms = 1 * MS_MIN;
	c->ft.retry_pause_ms = 90 * MS_SEC;
	c->ft.retry_limit = 3;
	c->ft.deletion_grace_ms = 10 * MS_MIN;
	c->ft.grace_ceiling_ms = 24 * MS_HOUR;
	c->ft.success_ttl_ms = 7 * 24 * MS_HOUR;
	c->ft.missing_grace_ms = 5 * MS_SEC;
	c->ft.retry_pause_ceiling_ms = 1 * MS_HOUR;
	c->enable_kueue_integrations = 1;
	c->manage_jobs_without_queue_name = 0; /* v1.2.1 and Kueue: false */
	snprintf(c->metrics_bind, sizeof(c->metrics_bind), "%s", ":8080");
	c->metrics_secure = 1;
	snprintf(c->health_bind, sizeof(c->health_bind), "%s", ":8081");
	c->leader_election = 0;
	c->user_rbac_admission_check = 1;
	c->webhooks_enabled = 1;
	/* upstream's: GPUs on nodes Autopilot labels WARN, TESTING or EVICT */
	c->autopilot.inject_anti_affinities = 1;
	c->autopilot.monitor_nodes = 1;
	c->autopilot.prefer_weight = 50;
	static const struct {
		const char *value;
		sf_taint_effect effect;
	} gpu[] = {{"WARN", SF_TAINT_PREFER_NO_SCHEDULE},
	           {"TESTING", SF_TAINT_NO_SCHEDULE},
	           {"EVICT", SF_TAINT_NO_EXECUTE}};
	for (size_t i = 0; i < sizeof(gpu) / sizeof(gpu[0]); i++) {
		sf_aw_taint *t = &c->autopilot.taints[c->autopilot.ntaints++];
		snprintf(t->resource, sizeof(t->resource), "nvidia.com/gpu");
		snprintf(t->key, sizeof(t->key), "autopilot.ibm.com/gpuhealth");
		snprintf(t->value, sizeof(t->value), "%s", gpu[i].value);
		t->effect = gpu[i].effect;
	}
}

int sf_awcfg_validate(const sf_aw_config *c, char *err, size_t errlen)
{
	const sf_aw_ft *ft = &c->ft;
	const struct {
		const char *key;
		int64_t ms;
	} graces[] = {
	    /* upstream's order, then ours */
	    {"deletionGracePeriod", ft->deletion_grace_ms},
	    {"resetPause", ft->retry_pause_ms},
	    {"failureGracePeriod", ft->failure_grace_ms},
	    {"admissionGracePeriod", ft->admission_grace_ms},
	    {"warmupGracePeriod", ft->warmup_grace_ms},
	    {"missingComponentGracePeriod", ft->missing_grace_ms},
	};
	char a[32], b[32];

	for (size_t i = 0; i < sizeof(graces) / sizeof(graces[0]); i++) {
		if (graces[i].ms > ft->grace_ceiling_ms) {
			sf_errf(err, errlen, "faultTolerance.%s %s exceeds gracePeriodCeiling %s",
			        graces[i].key, fmt_ms(graces[i].ms, a),
			        fmt_ms(ft->grace_ceiling_ms, b));
			return -EINVAL;
		}
	}
	if (ft->admission_grace_ms > ft->warmup_grace_ms) {
		sf_errf(err, errlen,
		        "faultTolerance.admissionGracePeriod %s exceeds warmupGracePeriod %s",
		        fmt_ms(ft->admission_grace_ms, a), fmt_ms(ft->warmup_grace_ms, b));
		return -EINVAL;
	}
	if (ft->success_ttl_ms <= 0) {
		sf_errf(err, errlen,
		        "faultTolerance.successTTLCeiling %s is not a positive duration",
		        fmt_ms(ft->success_ttl_ms, a));
		return -EINVAL;
	}
	if (ft->retry_limit < 0) {
		sf_errf(err, errlen, "faultTolerance.retryLimit %d is negative", ft->retry_limit);
		return -EINVAL;
	}
	if (ft->retry_pause_ms > ft->retry_pause_ceiling_ms) {
		sf_errf(err, errlen, "faultTolerance.resetPause %s exceeds resetPauseCeiling %s",
		        fmt_ms(ft->retry_pause_ms, a), fmt_ms(ft->retry_pause_ceiling_ms, b));
		return -EINVAL;
	}
	if (ft->retry_pause_ceiling_ms > ft->grace_ceiling_ms) {
		sf_errf(err, errlen,
		        "faultTolerance.resetPauseCeiling %s exceeds gracePeriodCeiling %s",
		        fmt_ms(ft->retry_pause_ceiling_ms, a), fmt_ms(ft->grace_ceiling_ms, b));
		return -EINVAL;
	}
	/* the weight of a preferred scheduling term (the API server's range) */
	if (c->autopilot.prefer_weight < 1 || c->autopilot.prefer_weight > 100) {
		sf_errf(err, errlen, "autopilot.preferNoScheduleWeight %d is outside 1-100",
		        c->autopilot.prefer_weight);
		return -EINVAL;
	}
	return 0;
}

/* ---- YAML loading ---- */

/* A string view decoded in full, with its length (a NUL inside stays
 * visible): into small when it fits, else into *heap, which the caller
 * frees (NULL if unused). Returns the length, or -2 when v is not a string
 * or memory ran out. */
static long jv_string(sf_jv v, char *small, size_t cap, char **heap, const char **out)
{
	*heap = NULL;
	int len = sf_jv_str(v, small, cap);
	if (len >= 0) {
		*out = small;
		return len;
	}
	if (len != -ERANGE)
		return -2;
	/* decoding never makes a string longer than its JSON text */
	*heap = malloc(v.n + 1);
	if (!*heap)
		return -2;
	len = sf_jv_str(v, *heap, v.n + 1);
	if (len < 0) {
		free(*heap);
		*heap = NULL;
		return -2;
	}
	*out = *heap;
	return len;
}

typedef enum {
	F_OBJ,      /* mapping with its own field table */
	F_OBJ_SEEN, /* the same, and sets an int member to 1 */
	F_DUR,      /* Go duration string or integer nanoseconds -> int64_t ms */
	F_INT32,    /* integer -> int */
	F_BOOL,     /* -> int 0/1 */
	F_STR,      /* -> char[cap] */
	/* upstream keys we accept, type-check and ignore */
	F_IGN_BOOL,
	F_IGN_STR,
	F_IGN_OBJ,
	F_IGN_ARR,
	F_TAINTS, /* autopilot.resourceTaints */
} field_kind;

typedef struct field {
	const char *key;
	field_kind kind;
	size_t off; /* into sf_aw_config */
	size_t cap; /* F_STR */
	const struct field *sub;
} field;

/* clang-format off */
#define FLD(k, kind, member) {k, kind, offsetof(sf_aw_config, member), 0, NULL}
#define STR(k, member) \
	{k, F_STR, offsetof(sf_aw_config, member), sizeof(((sf_aw_config *)0)->member), NULL}
#define SUB(k, table) {k, F_OBJ, 0, 0, table}
#define SUB_SEEN(k, table, member) {k, F_OBJ_SEEN, offsetof(sf_aw_config, member), 0, table}
#define IGN(k, kind) {k, kind, 0, 0, NULL}
#define END {NULL, F_OBJ, 0, 0, NULL}
/* clang-format on */

static const field ft_fields[] = {
    FLD("admissionGracePeriod", F_DUR, ft.admission_grace_ms),
    FLD("warmupGracePeriod", F_DUR, ft.warmup_grace_ms),
    FLD("failureGracePeriod", F_DUR, ft.failure_grace_ms),
    FLD("resetPause", F_DUR, ft.retry_pause_ms),
    FLD("retryLimit", F_INT32, ft.retry_limit),
    FLD("deletionGracePeriod", F_DUR, ft.deletion_grace_ms),
    FLD("gracePeriodCeiling", F_DUR, ft.grace_ceiling_ms),
    FLD("successTTLCeiling", F_DUR, ft.success_ttl_ms),
    FLD("missingComponentGracePeriod", F_DUR, ft.missing_grace_ms),
    FLD("resetPauseCeiling", F_DUR, ft.retry_pause_ceiling_ms),
    END,
};

static const field kjr_fields[] = {
    FLD("manageJobsWithoutQueueName", F_BOOL, manage_jobs_without_queue_name),
    IGN("manageJobsNamespaceSelector", F_IGN_OBJ),
    IGN("waitForPodsReady", F_IGN_OBJ),
    IGN("labelKeysToCopy", F_IGN_ARR),
    END,
};

static const field autopilot_fields[] = {
    FLD("injectAntiAffinities", F_BOOL, autopilot.inject_anti_affinities),
    FLD("monitorNodes", F_BOOL, autopilot.monitor_nodes),
    FLD("resourceTaints", F_TAINTS, autopilot),
    FLD("preferNoScheduleWeight", F_INT32, autopilot.prefer_weight),
    END,
};

static const field aw_fields[] = {
    FLD("enableKueueIntegrations", F_BOOL, enable_kueue_integrations),
    SUB("kueueJobReconciller", kjr_fields),
    SUB("autopilot", autopilot_fields),
    FLD("userRBACAdmissionCheck", F_BOOL, user_rbac_admission_check),
    SUB("faultTolerance", ft_fields),
    STR("schedulerName", scheduler_name),
    STR("defaultQueueName", default_queue_name),
    STR("slackQueueName", slack_queue_name),
    END,
};

static const field metrics_fields[] = {
    STR("bindAddress", metrics_bind),
    FLD("secureServing", F_BOOL, metrics_secure),
    END,
};

static const field health_fields[] = {
    STR("bindAddress", health_bind),
    END,
};

static const field cm_fields[] = {
    SUB("metrics", metrics_fields),
    SUB("health", health_fields),
    FLD("leaderElection", F_BOOL, leader_election),
    IGN("enableHTTP2", F_IGN_BOOL),
    END,
};

/* upstream's CertManagementConfig; there is no webhook certificate to
 * manage on the admission-policy route (docs/admission.md) */
static const field cert_fields[] = {
    IGN("namespace", F_IGN_STR),
    IGN("certificateDir", F_IGN_STR),
    IGN("certificateName", F_IGN_STR),
    IGN("certificateOrg", F_IGN_STR), /* v1.2.1, v1.2.2 */
    IGN("certificateOrganization", F_IGN_STR),
    IGN("certificateDNSName", F_IGN_STR),
    IGN("mutatingWebhookConfigName", F_IGN_STR),
    IGN("validatingWebhookConfigName", F_IGN_STR),
    IGN("webhookServiceName", F_IGN_STR),
    IGN("webhookSecretName", F_IGN_STR),
    END,
};

static const field top_fields[] = {
    SUB("appwrapper", aw_fields),
    SUB_SEEN("certManagement", cert_fields, cert_management),
    SUB("controllerManager", cm_fields),
    FLD("webhooksEnabled", F_BOOL, webhooks_enabled),
    END,
};

typedef struct loader {
	sf_aw_config *c;
	char *err;
	size_t errlen;
	char path[256]; /* dotted key path of the value being read */
} loader;

static const char *type_name(sf_json_type t)
{
	switch (t) {
	case SF_JSON_NULL: return "null";
	case SF_JSON_FALSE:
	case SF_JSON_TRUE: return "a boolean";
	case SF_JSON_NUMBER: return "a number";
	case SF_JSON_STRING: return "a string";
	case SF_JSON_ARRAY: return "a sequence";
	case SF_JSON_OBJECT: return "a mapping";
	default: return "nothing";
	}
}

static int type_err(loader *ld, sf_jv v, const char *want)
{
	sf_errf(ld->err, ld->errlen, "%s: expected %s, got %s", ld->path, want,
	        type_name(sf_jv_type(v)));
	return -EINVAL;
}

static int load_obj(loader *ld, sf_jv obj, const field *fields);

static int load_duration(loader *ld, sf_jv v, int64_t *ms)
{
	int64_t ns;
	if (sf_jv_type(v) == SF_JSON_NUMBER) {
		int rc = sf_jv_int64(v, &ns);
		if (rc == -ERANGE) {
			sf_errf(ld->err, ld->errlen, "%s: %.*s nanoseconds is out of range",
			        ld->path, (int)(v.n > 40 ? 40 : v.n), v.p);
			return -EINVAL;
		}
		if (rc < 0)
			return type_err(
			    ld, v, "a duration (Go string like \"90s\" or integer nanoseconds)");
	} else if (sf_jv_type(v) == SF_JSON_STRING) {
		char small[128], *heap;
		const char *val = "";
		long len = jv_string(v, small, sizeof(small), &heap, &val);
		if (len < 0) {
			sf_errf(ld->err, ld->errlen, "%s: out of memory", ld->path);
			return -ENOMEM;
		}
		int rc = sf_go_duration_parse_n(val, (size_t)len, &ns);
		if (rc < 0)
			sf_errf(ld->err, ld->errlen, "%s: invalid duration \"%.*s\"%s", ld->path,
			        (int)(len > 64 ? 64 : len), val,
			        rc == -ERANGE ? " (out of range)" : "");
		free(heap);
		if (rc < 0)
			return -EINVAL;
	} else {
		return type_err(ld, v,
		                "a duration (Go string like \"90s\" or integer nanoseconds)");
	}
	*ms = ns / NS_PER_MS;
	return 0;
}

/* A label key: an optional DNS-subdomain prefix and '/', then a name of
 * at most 63 characters, alphanumeric at both ends, [-_.] inside. */
static int label_name_ok(const char *n, size_t len)
{
	if (len == 0 || len > 63)
		return 0;
	for (size_t i = 0; i < len; i++) {
		char ch = n[i];
		int alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		            (ch >= '0' && ch <= '9');
		if (!alnum && ((i == 0 || i == len - 1) || (ch != '-' && ch != '_' && ch != '.')))
			return 0;
	}
	return 1;
}

static int label_key_ok(const char *k)
{
	const char *slash = strchr(k, '/');
	if (!slash)
		return label_name_ok(k, strlen(k));
	size_t plen = (size_t)(slash - k);
	if (plen == 0 || plen > 253)
		return 0;
	for (size_t i = 0; i < plen; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '-' ||
		      k[i] == '.'))
			return 0;
	return label_name_ok(slash + 1, strlen(slash + 1));
}

static int label_value_ok(const char *v)
{
	return *v == 0 || label_name_ok(v, strlen(v));
}

/* One taint {key, value, effect[, timeAdded]} of resource res into t. */
static int load_taint(loader *ld, sf_jv v, const char *res, sf_aw_taint *t)
{
	if (sf_jv_type(v) != SF_JSON_OBJECT)
		return type_err(ld, v, "a mapping (key, value, effect)");
	memset(t, 0, sizeof(*t));
	snprintf(t->resource, sizeof(t->resource), "%s", res);
	size_t plen = strlen(ld->path);
	sf_jv_iter it = sf_jv_iter_init(v);
	sf_jv k, x;
	while (sf_jv_next(&it, &k, &x)) {
		char key[64], val[400];
		if (sf_jv_str(k, key, sizeof(key)) < 0)
			snprintf(key, sizeof(key), "?");
		snprintf(ld->path + plen, sizeof(ld->path) - plen, ".%s", key);
		int known = !strcmp(key, "key") || !strcmp(key, "value") ||
		            !strcmp(key, "effect") || !strcmp(key, "timeAdded");
		if (!known) {
			sf_errf(ld->err, ld->errlen, "%s: unknown key", ld->path);
			return -EINVAL;
		}
		if (sf_jv_type(x) == SF_JSON_NULL) {
			ld->path[plen] = 0;
			continue;
		}
		if (sf_jv_type(x) != SF_JSON_STRING)
			return type_err(ld, x, "a string");
		if (sf_jv_str(x, val, sizeof(val)) < 0)
			val[0] = 1; /* too long: refused below */
		if (!strcmp(key, "key")) {
			if (!label_key_ok(val)) {
				sf_errf(ld->err, ld->errlen, "%s: not a node label key", ld->path);
				return -EINVAL;
			}
			snprintf(t->key, sizeof(t->key), "%s", val);
		} else if (!strcmp(key, "value")) {
			if (!label_value_ok(val)) {
				sf_errf(ld->err, ld->errlen, "%s: not a label value", ld->path);
				return -EINVAL;
			}
			snprintf(t->value, sizeof(t->value), "%s", val);
		} else if (!strcmp(key, "effect")) {
			t->effect = !strcmp(val, "PreferNoSchedule") ? SF_TAINT_PREFER_NO_SCHEDULE
			            : !strcmp(val, "NoSchedule")     ? SF_TAINT_NO_SCHEDULE
			            : !strcmp(val, "NoExecute")      ? SF_TAINT_NO_EXECUTE
			                                             : 0;
			if (!t->effect) {
				sf_errf(ld->err, ld->errlen,
				        "%s: want PreferNoSchedule, NoSchedule or NoExecute",
				        ld->path);
				return -EINVAL;
			}
		}
		ld->path[plen] = 0;
	}
	if (!t->key[0] || !t->effect) {
		sf_errf(ld->err, ld->errlen, "%s: needs a key and an effect", ld->path);
		return -EINVAL;
	}
	return 0;
}

/* resourceTaints: resource -> sequence of taints. A resource named here
 * replaces its taints; the others keep theirs (encoding/json into the
 * default map, as upstream loads it). */
static int load_taints(loader *ld, sf_jv v, sf_aw_autopilot *ap)
{
	if (sf_jv_type(v) != SF_JSON_OBJECT)
		return type_err(ld, v, "a mapping of resource names to taints");
	size_t plen = strlen(ld->path);
	sf_jv_iter it = sf_jv_iter_init(v);
	sf_jv k, list;
	while (sf_jv_next(&it, &k, &list)) {
		char res[254];
		if (sf_jv_str(k, res, sizeof(res)) <= 0 || !label_key_ok(res)) {
			snprintf(ld->path + plen, sizeof(ld->path) - plen, ".%.*s",
			         (int)(k.n > 80 ? 80 : k.n), k.p);
			sf_errf(ld->err, ld->errlen, "%s: not a resource name", ld->path);
			return -EINVAL;
		}
		snprintf(ld->path + plen, sizeof(ld->path) - plen, ".%s", res);
		if (sf_jv_type(list) != SF_JSON_ARRAY && sf_jv_type(list) != SF_JSON_NULL)
			return type_err(ld, list, "a sequence of taints");
		/* drop this resource's entries, keep the others' order */
		size_t w = 0;
		for (size_t i = 0; i < ap->ntaints; i++)
			if (strcmp(ap->taints[i].resource, res) != 0)
				ap->taints[w++] = ap->taints[i];
		ap->ntaints = w;
		memset(&ap->taints[w], 0, (SF_AW_MAX_TAINTS - w) * sizeof(ap->taints[0]));
		size_t rplen = strlen(ld->path);
		sf_jv_iter ti = sf_jv_iter_init(list);
		sf_jv t;
		size_t idx = 0;
		while (sf_jv_next(&ti, NULL, &t)) {
			snprintf(ld->path + rplen, sizeof(ld->path) - rplen, "[%zu]", idx++);
			if (ap->ntaints == SF_AW_MAX_TAINTS) {
				sf_errf(ld->err, ld->errlen, "%s: more than %d taints in all",
				        ld->path, SF_AW_MAX_TAINTS);
				return -EINVAL;
			}
			int rc = load_taint(ld, t, res, &ap->taints[ap->ntaints]);
			if (rc < 0)
				return rc;
			ap->ntaints++;
		}
		ld->path[plen] = 0;
	}
	return 0;
}

/* A key accepted with nothing to do here: named in c->ignored (cut, with
 * "...", when they do not fit). Returns 0. */
static int note_ignored(loader *ld)
{
	char *b = ld->c->ignored;
	size_t cap = sizeof(ld->c->ignored), len = strlen(b);
	if (strstr(b, "..."))
		return 0;
	if (len + strlen(ld->path) + 3 >= cap) {
		if (len + 5 < cap)
			snprintf(b + len, cap - len, "%s...", len ? ", " : "");
		return 0;
	}
	snprintf(b + len, cap - len, "%s%s", len ? ", " : "", ld->path);
	return 0;
}

static int load_value(loader *ld, sf_jv v, const field *f)
{
	sf_json_type t = sf_jv_type(v);
	char *base = (char *)ld->c + f->off;

	/* null (an empty YAML value) leaves the setting as it was, as
	 * encoding/json does for non-pointer fields */
	if (t == SF_JSON_NULL)
		return 0;
	switch (f->kind) {
	case F_OBJ:
	case F_OBJ_SEEN:
		if (t != SF_JSON_OBJECT)
			return type_err(ld, v, "a mapping");
		if (f->kind == F_OBJ_SEEN)
			*(int *)(void *)base = 1;
		return load_obj(ld, v, f->sub);
	case F_DUR: return load_duration(ld, v, (int64_t *)(void *)base);
	case F_INT32: {
		int64_t x;
		int rc = sf_jv_int64(v, &x);
		if (rc == -EINVAL)
			return type_err(ld, v, "an integer");
		if (rc < 0 || x < INT32_MIN || x > INT32_MAX) {
			sf_errf(ld->err, ld->errlen,
			        "%s: %.*s is out of range for a 32-bit integer", ld->path,
			        (int)(v.n > 40 ? 40 : v.n), v.p);
			return -EINVAL;
		}
		*(int *)(void *)base = (int)x;
		return 0;
	}
	case F_BOOL:
		if (sf_jv_bool(v, (int *)(void *)base) < 0)
			return type_err(ld, v, "a boolean");
		return 0;
	case F_STR: {
		if (t != SF_JSON_STRING)
			return type_err(ld, v, "a string");
		char tmp[256];
		int len = sf_jv_str(v, tmp, sizeof(tmp));
		if (len < 0 || (size_t)len >= f->cap) {
			sf_errf(ld->err, ld->errlen, "%s: longer than %zu bytes", ld->path,
			        f->cap - 1);
			return -EINVAL;
		}
		memcpy(base, tmp, (size_t)len + 1);
		return 0;
	}
	case F_IGN_BOOL:
		return t == SF_JSON_TRUE || t == SF_JSON_FALSE ? note_ignored(ld)
		                                               : type_err(ld, v, "a boolean");
	case F_IGN_STR: return t == SF_JSON_STRING ? note_ignored(ld) : type_err(ld, v, "a string");
	case F_IGN_OBJ:
		return t == SF_JSON_OBJECT ? note_ignored(ld) : type_err(ld, v, "a mapping");
	case F_IGN_ARR:
		return t == SF_JSON_ARRAY ? note_ignored(ld) : type_err(ld, v, "a sequence");
	case F_TAINTS: return load_taints(ld, v, (sf_aw_autopilot *)(void *)base);
	}
	return -EINVAL;
}

static int load_obj(loader *ld, sf_jv obj, const field *fields)
{
	size_t plen = strlen(ld->path);
	sf_jv_iter it = sf_jv_iter_init(obj);
	sf_jv k, v;

	while (sf_jv_next(&it, &k, &v)) {
		const field *f = fields;
		while (f->key && !sf_jv_streq(k, f->key))
			f++;
		/* extend the path with this key, decoded (and cut if huge) */
		char key[128];
		if (sf_jv_str(k, key, sizeof(key)) == -EINVAL) /* -ERANGE: cut to fit */
			snprintf(key, sizeof(key), "?");
		snprintf(ld->path + plen, sizeof(ld->path) - plen, "%s%s", plen ? "." : "", key);
		if (!f->key) {
			sf_errf(ld->err, ld->errlen, "%s: unknown key", ld->path);
			return -EINVAL;
		}
		int rc = load_value(ld, v, f);
		if (rc < 0)
			return rc;
		ld->path[plen] = '\0';
	}
	return 0;
}

typedef struct first_doc {
	char *json;
	size_t len;
} first_doc;

static int take_first_doc(void *ud, size_t index, const char *json, size_t len)
{
	first_doc *d = ud;
	(void)index;
	d->json = malloc(len + 1);
	if (!d->json)
		return -ENOMEM;
	memcpy(d->json, json, len);
	d->json[len] = '\0';
	d->len = len;
	return 1; /* stop: like upstream, only the first document counts */
}

int sf_awcfg_load_yaml(sf_aw_config *c, const char *yaml, size_t len, char *err, size_t errlen)
{
	first_doc doc = {NULL, 0};
	char yerr[256] = "";
	int rc = sf_yaml_to_json(yaml, len, 0, take_first_doc, &doc, yerr, sizeof(yerr));
	if (rc < 0) {
		free(doc.json);
		if (rc == -ENOMEM && !yerr[0])
			sf_errf(err, errlen, "out of memory");
		else
			sf_errf(err, errlen, "%s", yerr);
		return rc == -ENOMEM ? -ENOMEM : -EINVAL;
	}
	if (!doc.json)
		return 0; /* no document: nothing to change */

	sf_aw_config copy = *c;
	copy.ignored[0] = '\0'; /* this load's */
	loader ld = {&copy, err, errlen, ""};
	sf_jv root = sf_jv_root(doc.json, doc.len);
	switch (sf_jv_type(root)) {
	case SF_JSON_NULL: rc = 0; break;
	case SF_JSON_OBJECT: rc = load_obj(&ld, root, top_fields); break;
	default:
		sf_errf(err, errlen, "top level: expected a mapping, got %s",
		        type_name(sf_jv_type(root)));
		rc = -EINVAL;
	}
	free(doc.json);
	if (rc == 0)
		*c = copy;
	return rc;
}

int sf_awcfg_load_file(sf_aw_config *c, const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		sf_errf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	char *data = NULL;
	size_t len = 0, cap = 0;
	int rc = 0;
	for (;;) {
		if (len == cap) {
			if (cap >= CONFIG_FILE_MAX) {
				sf_errf(err, errlen, "%s: larger than %d bytes", path,
				        CONFIG_FILE_MAX);
				rc = -EFBIG;
				break;
			}
			cap = cap ? cap * 2 : 4096;
			char *nd = realloc(data, cap);
			if (!nd) {
				sf_errf(err, errlen, "%s: out of memory", path);
				rc = -ENOMEM;
				break;
			}
			data = nd;
		}
		ssize_t r = read(fd, data + len, cap - len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			sf_errf(err, errlen, "%s: %s", path, strerror(-rc));
			break;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (rc == 0) {
		char msg[512] = "";
		rc = sf_awcfg_load_yaml(c, data ? data : "", len, msg, sizeof(msg));
		if (rc < 0)
			sf_errf(err, errlen, "%s: %s", path, msg);
	}
	free(data);
	return rc;
}

/* ---- annotations ---- */

/* An annotation's value, decoded (see jv_string). -1 when absent. */
static long annot_value(sf_jv ann, const char *name, char *small, size_t cap, char **heap,
                        const char **out)
{
	char key[128];
	snprintf(key, sizeof(key), "%s%s", SF_AW_ANNOT_PREFIX, name);
	sf_jv v = sf_jv_get(ann, key);
	*heap = NULL;
	if (!sf_jv_ok(v))
		return -1;
	return jv_string(v, small, cap, heap, out);
}

static void warn(sf_aw_settings *out, const char *name, const char *val, long len, const char *what)
{
	if (out->warning[0])
		return;
	if (len < 0)
		snprintf(out->warning, sizeof(out->warning), "%s%s: %s", SF_AW_ANNOT_PREFIX, name,
		         what);
	else
		snprintf(out->warning, sizeof(out->warning), "%s%s: %s \"%.*s\"",
		         SF_AW_ANNOT_PREFIX, name, what, (int)(len > 64 ? 64 : len), val);
}

/* Upstream's limitDuration on milliseconds: below 0 -> 0, above the
 * ceiling -> the ceiling (and never negative, even with a negative
 * ceiling). Truncating ns to ms before clamping gives the same result as
 * clamping first. */
static int64_t limit_ms(const sf_aw_config *c, int64_t ms)
{
	if (ms < 0)
		return 0;
	if (ms > c->ft.grace_ceiling_ms)
		return c->ft.grace_ceiling_ms < 0 ? 0 : c->ft.grace_ceiling_ms;
	return ms;
}

/* Parses a duration annotation: 1 and *ns if present and valid, 0 if
 * absent or malformed (warning set). */
static int annot_duration(sf_jv ann, const char *name, sf_aw_settings *out, int64_t *ns)
{
	char small[128], *heap;
	const char *val = NULL;
	long len = annot_value(ann, name, small, sizeof(small), &heap, &val);
	int ok = 0;
	if (len == -2) {
		warn(out, name, NULL, -1, "not a string; using default");
	} else if (len >= 0) {
		int rc = sf_go_duration_parse_n(val, (size_t)len, ns);
		if (rc == 0)
			ok = 1;
		else
			warn(out, name, val, len,
			     rc == -ERANGE ? "duration out of range; using default"
			                   : "malformed duration; using default");
	}
	free(heap);
	return ok;
}

static int64_t grace(const sf_aw_config *c, sf_jv ann, const char *name, int64_t dflt_ms,
                     sf_aw_settings *out)
{
	int64_t ns;
	if (annot_duration(ann, name, out, &ns))
		return limit_ms(c, ns / NS_PER_MS);
	return limit_ms(c, dflt_ms);
}

/* Go's int(x) -> int32(x): keeps the low 32 bits, two's complement. */
static int wrap_int32(int64_t x)
{
	uint32_t u = (uint32_t)(uint64_t)x;
	return u <= INT32_MAX ? (int)u : -(int)(UINT32_MAX - u) - 1;
}

static void exit_codes(sf_jv ann, const char *name, int *codes, int *n, sf_aw_settings *out)
{
	char small[256], *heap;
	const char *val = NULL;
	long len = annot_value(ann, name, small, sizeof(small), &heap, &val);
	*n = 0;
	if (len == -2)
		warn(out, name, NULL, -1, "not a string; ignored");
	if (len < 0)
		return;
	/* strings.Split(val, ","): n commas give n+1 entries, "" gives one */
	const char *p = val, *end = val + len;
	for (;;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *e = comma ? comma : end;
		int64_t x;
		if (sf_go_atoi(p, (size_t)(e - p), &x) < 0 || x < INT32_MIN || x > INT32_MAX) {
			/* upstream drops these silently; an exit code beyond
			 * int32 could never match a container's anyway */
			warn(out, name, p, e - p, "entry ignored:");
		} else if (*n >= SF_AW_MAX_EXIT_CODES) {
			warn(out, name, NULL, -1, "more than 32 exit codes; the rest are ignored");
		} else {
			codes[(*n)++] = (int)x;
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	free(heap);
}

void sf_aw_settings_resolve(const sf_aw_config *c, sf_jv annotations, sf_aw_settings *out)
{
	const sf_aw_ft *ft = &c->ft;
	sf_jv ann = annotations;
	int64_t ns;

	memset(out, 0, sizeof(*out));
	out->admission_grace_ms =
	    grace(c, ann, "admissionGracePeriodDuration", ft->admission_grace_ms, out);
	out->warmup_grace_ms = grace(c, ann, "warmupGracePeriodDuration", ft->warmup_grace_ms, out);
	out->failure_grace_ms =
	    grace(c, ann, "failureGracePeriodDuration", ft->failure_grace_ms, out);
	out->retry_pause_ms = grace(c, ann, "retryPausePeriodDuration", ft->retry_pause_ms, out);

	out->retry_limit = ft->retry_limit;
	{
		char small[64], *heap;
		const char *val = NULL;
		long len = annot_value(ann, "retryLimit", small, sizeof(small), &heap, &val);
		int64_t x;
		if (len == -2) {
			warn(out, "retryLimit", NULL, -1, "not a string; using default");
		} else if (len >= 0) {
			if (sf_go_atoi(val, (size_t)len, &x) == 0)
				out->retry_limit = wrap_int32(x);
			else
				warn(out, "retryLimit", val, len,
				     "malformed integer; using default");
		}
		free(heap);
	}

	out->forceful_deletion_grace_ms =
	    grace(c, ann, "forcefulDeletionGracePeriodDuration", ft->deletion_grace_ms, out);
	/* no config key: the default is 0 (delete at once) */
	out->deletion_on_failure_grace_ms =
	    grace(c, ann, "deletionOnFailureGracePeriodDuration", 0, out);

	/* successTTL: only a positive value below the ceiling is honoured,
	 * anything else (including values that parse) is the config's */
	out->success_ttl_ms = ft->success_ttl_ms;
	if (annot_duration(ann, "successTTLDuration", out, &ns) && ns > 0 &&
	    ns / NS_PER_MS < ft->success_ttl_ms)
		out->success_ttl_ms = ns / NS_PER_MS;

	out->missing_grace_ms =
	    grace(c, ann, "missingComponentGracePeriodDuration", ft->missing_grace_ms, out);

	exit_codes(ann, "terminalExitCodes", out->terminal_codes, &out->n_terminal, out);
	exit_codes(ann, "retryableExitCodes", out->retryable_codes, &out->n_retryable, out);
}

int64_t sf_aw_retry_pause_ms(const sf_aw_settings *s, const sf_aw_config *c, int resets)
{
	int64_t base = s->retry_pause_ms;
	int64_t cap = c->ft.retry_pause_ceiling_ms;
	if (base <= 0)
		return 0;
	/* the doubling never shrinks a pause an annotation set above the ceiling */
	if (cap < base)
		cap = base;
	int64_t p = base;
	for (int i = 0; i < resets && p < cap; i++)
		p = p > cap / 2 ? cap : p * 2;
	return p > cap ? cap : p;
}
