/*
 * awconfig.h - operator configuration and per-AppWrapper fault-tolerance
 * settings.
 *
 * The operator config is the upstream controller's YAML (top-level keys
 * `appwrapper` and `controllerManager`, same spelling and defaults), read by
 * sf_awcfg_load_* and overridable by flags. Each AppWrapper may tune its own
 * grace periods with annotations; sf_aw_settings_resolve turns config plus
 * annotations into the numbers the phase machine uses, with upstream's
 * rules: Go duration syntax, clamping to [0, gracePeriodCeiling], malformed
 * values falling back to the config's value.
 *
 * Durations are milliseconds on the monotonic/wall clock difference scale
 * (Go's nanoseconds truncated).
 */
#ifndef STEADFAST_AWCONFIG_H
#define STEADFAST_AWCONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "steadfast/awapi.h"
#include "steadfast/json.h"

/* appwrapper.faultTolerance; yaml keys in comments. */
typedef struct sf_aw_ft {
	int64_t admission_grace_ms; /* admissionGracePeriod, 1m */
	int64_t warmup_grace_ms;    /* warmupGracePeriod, 5m */
	int64_t failure_grace_ms;   /* failureGracePeriod, 1m */
	int64_t retry_pause_ms;     /* resetPause, 90s */
	int retry_limit;            /* retryLimit, 3 */
	int64_t deletion_grace_ms;  /* deletionGracePeriod, 10m (forceful deletion) */
	int64_t grace_ceiling_ms;   /* gracePeriodCeiling, 24h */
	int64_t success_ttl_ms;     /* successTTLCeiling, 7 days */
	/* Steadfast's own keys */
	int64_t missing_grace_ms;       /* missingComponentGracePeriod, 5s */
	int64_t retry_pause_ceiling_ms; /* resetPauseCeiling, 1h: cap of the doubling pause */
} sf_aw_ft;

/* An Autopilot health label that makes a resource unusable on a node:
 * upstream's resourceTaints entries (v1.Taint: key, value, effect). */
typedef enum {
	SF_TAINT_PREFER_NO_SCHEDULE = 1,
	SF_TAINT_NO_SCHEDULE,
	SF_TAINT_NO_EXECUTE,
} sf_taint_effect;

#define SF_AW_MAX_TAINTS 16

typedef struct sf_aw_taint {
	char resource[254]; /* e.g. nvidia.com/gpu */
	char key[318];      /* a node label key, e.g. autopilot.ibm.com/gpuhealth */
	char value[64];     /* a label value, e.g. EVICT */
	sf_taint_effect effect;
} sf_aw_taint;

/* appwrapper.autopilot (upstream's AutopilotConfig, defaults on). */
typedef struct sf_aw_autopilot {
	int inject_anti_affinities; /* injectAntiAffinities, 1 */
	int monitor_nodes;          /* monitorNodes, 1 */
	int prefer_weight;          /* preferNoScheduleWeight, 50 (1-100) */
	size_t ntaints;             /* resourceTaints, flattened in order */
	sf_aw_taint taints[SF_AW_MAX_TAINTS];
} sf_aw_autopilot;

typedef struct sf_aw_config {
	sf_aw_ft ft;
	char scheduler_name[254];     /* appwrapper.schedulerName, "" */
	char default_queue_name[254]; /* appwrapper.defaultQueueName, "" */
	/* Older upstream releases' keys, defaulted as v1.2.1 behaves: an
	 * AppWrapper with a queue name waits for Kueue (what Kueue's own
	 * webhook does), one without runs at once unless the operator says
	 * Kueue manages every AppWrapper (Kueue's manageJobsWithoutQueueName,
	 * also false by default). */
	int enable_kueue_integrations;      /* appwrapper.enableKueueIntegrations, 1 */
	int manage_jobs_without_queue_name; /* appwrapper.kueueJobReconciller.
	                                       manageJobsWithoutQueueName, 0 */
	char metrics_bind[128];             /* controllerManager.metrics.bindAddress, ":8080" */
	char health_bind[128];              /* controllerManager.health.bindAddress, ":8081" */
	/* controllerManager.metrics.secureServing, 1; --metrics-secure
	 * overrides it (the manager sets -1 = "not set" before loading) */
	int metrics_secure;
	int leader_election; /* controllerManager.leaderElection, 0 (flags default it on) */
	/* Admission is installed with the manifests (docs/admission.md); the
	 * controller checks once at start that what is installed agrees
	 * (admcheck.h). */
	int user_rbac_admission_check; /* appwrapper.userRBACAdmissionCheck, 1 */
	int webhooks_enabled;          /* webhooksEnabled, 1 */
	int cert_management;           /* 1 when certManagement is given (nothing to manage) */
	sf_aw_autopilot autopilot;     /* appwrapper.autopilot */
	char slack_queue_name[254];    /* appwrapper.slackQueueName, "" */
	/* The keys the last load accepted with nothing to do here (upstream's
	 * certManagement, enableHTTP2, ...), dotted and comma-separated, for
	 * the warning the manager logs at start; "" = none. */
	char ignored[512];
} sf_aw_config;

void sf_awcfg_defaults(sf_aw_config *c);
/* Reads YAML over c (keys absent keep their value). Keys upstream accepts
 * but Steadfast does not use (kueueJobReconciller's waitForPodsReady, ...)
 * are accepted, type-checked at their top and ignored; autopilot's keys
 * are read and checked one by one (a resource under resourceTaints
 * replaces its default taints, others keep theirs, as encoding/json fills
 * upstream's default map), though only read so far (README.md); certManagement's keys
 * are type-checked one by one (upstream's, all strings); anything else is an error naming the full
 * dotted key path
 * ("appwrapper.faultTolerance.foo: unknown key"), as are wrong types and
 * malformed durations. Durations may be Go duration strings ("90s") or
 * integers (nanoseconds, as encoding/json writes time.Duration; so `90`
 * is 90ns). A null value (an empty YAML value) leaves the setting as it
 * was; an empty stream changes nothing; only the first document is read.
 * Returns 0, -EINVAL with err set (-ENOMEM out of memory); on error c is
 * unchanged. */
int sf_awcfg_load_yaml(sf_aw_config *c, const char *yaml, size_t len, char *err, size_t errlen);
/* The same from a file (at most 1 MiB); err starts with the path. Also
 * returns -errno when the file cannot be read, -EFBIG when too large. */
int sf_awcfg_load_file(sf_aw_config *c, const char *path, char *err, size_t errlen);
/* upstream's rules plus ours: every grace period <= gracePeriodCeiling,
 * admission <= warmup, successTTL > 0, retryLimit >= 0,
 * resetPause <= resetPauseCeiling <= gracePeriodCeiling. 0 or -EINVAL. */
int sf_awcfg_validate(const sf_aw_config *c, char *err, size_t errlen);

#define SF_AW_MAX_EXIT_CODES 32

/* What one AppWrapper gets after its annotations are applied. Durations
 * are in [0, gracePeriodCeiling] except success_ttl_ms (an annotation is
 * used only when 0 < d < successTTLCeiling, else the config value; a
 * positive annotation below 1ms truncates to 0). retry_limit is the
 * annotation as Go's strconv.Atoi reads it, truncated to int32 like
 * upstream ("4294967296" gives 0) and possibly negative (no retries).
 * Exit codes: comma-separated, entries strconv.Atoi rejects (" 2", "")
 * or outside int32 are skipped; only the first SF_AW_MAX_EXIT_CODES kept. */
typedef struct sf_aw_settings {
	int64_t admission_grace_ms;
	int64_t warmup_grace_ms;
	int64_t failure_grace_ms;
	int64_t retry_pause_ms;
	int retry_limit;
	int64_t forceful_deletion_grace_ms;
	int64_t deletion_on_failure_grace_ms;
	int64_t success_ttl_ms;
	int64_t missing_grace_ms;
	int n_terminal, n_retryable;
	int terminal_codes[SF_AW_MAX_EXIT_CODES];  /* terminalExitCodes */
	int retryable_codes[SF_AW_MAX_EXIT_CODES]; /* retryableExitCodes */
	/* first malformed annotation or skipped exit code, for a log line
	 * ("" if none) */
	char warning[256];
} sf_aw_settings;

/* annotations: the AppWrapper's metadata.annotations view (may be absent). */
void sf_aw_settings_resolve(const sf_aw_config *c, sf_jv annotations, sf_aw_settings *out);

/* The pause before re-creation after `resets` resets already done:
 * retry_pause << resets, capped by resetPauseCeiling (and never negative;
 * 0 stays 0). A base an annotation set above the ceiling is not shortened:
 * the cap is then the base itself. */
int64_t sf_aw_retry_pause_ms(const sf_aw_settings *s, const sf_aw_config *c, int resets);

#endif
