/*
 * flags.c - the manager's command line (see manager.h).
 *
 * Flags are spelled as controller-runtime based controllers spell them, so
 * a Deployment written for the upstream controller keeps working; values
 * are checked here so a typo is a clear start-up error naming the flag,
 * never a silently ignored setting. The syntax is the flag module's
 * (flag.h), which every steadfast command shares.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/admparams.h"
#include "steadfast/flag.h"
#include "steadfast/log.h"
#include "steadfast/manager.h"

/* What the flags set before it is checked and combined into opts and
 * the operator config. */
typedef struct raw {
	const char *config, *metrics, *health;
	int leader_elect, metrics_secure;
	int64_t lease_ns, renew_ns, retry_ns, admparams_ns;
	double qps;
	long burst, syncs;
} raw;

static int set_log_level(void *ud, const char *v, char *why, size_t whylen)
{
	sf_mgr_flags *st = ud;
	if (sf_log_parse_level(v, &st->log_level) != 0) {
		snprintf(why, whylen, "want debug, info, warn, error or a number 0-10");
		return -EINVAL;
	}
	st->log_level_set = 1;
	return 0;
}

static void define(sf_flagset *fs, sf_mgr_opts *o, raw *r, sf_mgr_flags *st)
{
	sf_flag_init(fs, "steadfast", "", "[flags]", NULL);
	sf_flag_string(fs, &o->kubeconfig, "kubeconfig", 0, "PATH",
	               "kubeconfig; default $KUBECONFIG, else in-cluster,\n"
	               "else ~/.kube/config");
	sf_flag_string(fs, &o->context, "context", 0, "NAME", "kubeconfig context");
	sf_flag_string(fs, &r->config, "config", 0, "FILE",
	               "operator config (upstream's YAML keys)");
	sf_flag_bool(fs, &r->leader_elect, "leader-elect", 0,
	             "campaign for the Lease; =false: reconcile at once, with\n"
	             "no election (a single replica only)")
	    ->def = "true";
	sf_flag_string(fs, &o->lease_name, "leader-election-id", 0, "NAME", "Lease name")->def =
	    SF_MGR_DEFAULT_LEASE;
	sf_flag_string(fs, &o->lease_namespace, "leader-election-namespace", 0, "NS",
	               "Lease namespace")
	    ->def = "$POD_NAMESPACE";
	sf_flag_duration(fs, &r->lease_ns, "leader-elect-lease-duration", 0, "D",
	                 "how long a Lease not renewed stays held")
	    ->def = "15s";
	sf_flag_duration(fs, &r->renew_ns, "leader-elect-renew-deadline", 0, "D",
	                 "the leader stops writing this long after its\n"
	                 "last renew")
	    ->def = "10s";
	sf_flag_duration(fs, &r->retry_ns, "leader-elect-retry-period", 0, "D",
	                 "renew and poll interval")
	    ->def = "2s";
	sf_flag_string(fs, &r->metrics, "metrics-bind-address", 0, "ADDR", "/metrics; 0: off")
	    ->def = "the config's, :8080";
	sf_flag_bool(fs, &r->metrics_secure, "metrics-secure", 0,
	             "serve /metrics over HTTPS to callers that the API\n"
	             "server authenticates and allows get on /metrics;\n"
	             "=false: plain HTTP to anyone")
	    ->def = "true";
	sf_flag_string(fs, &o->metrics_cert_path, "metrics-cert-path", 0, "DIR",
	               "directory with the metrics certificate and key,\n"
	               "reloaded when they change; default self-signed");
	sf_flag_string(fs, &o->metrics_cert_name, "metrics-cert-name", 0, "FILE",
	               "certificate file in --metrics-cert-path")
	    ->def = "tls.crt";
	sf_flag_string(fs, &o->metrics_cert_key, "metrics-cert-key", 0, "FILE",
	               "key file in --metrics-cert-path")
	    ->def = "tls.key";
	sf_flag_string(fs, &r->health, "health-probe-bind-address", 0, "ADDR",
	               "/healthz and /readyz; 0: off")
	    ->def = "the config's, :8081";
	sf_flag_func(fs, set_log_level, st, "zap-log-level", 0, "LEVEL",
	             "debug, info, warn, error, or a number")
	    ->def = "info";
	sf_flag_string(fs, &o->watch_namespace, "namespace", 0, "NS",
	               "reconcile only this namespace's AppWrappers");
	sf_flag_string(fs, &o->identity, "identity", 0, "ID",
	               "election identity; default <$POD_NAME or hostname>_<random>");
	sf_flag_double(fs, &r->qps, "kube-api-qps", 0, "N",
	               "API client rate limit, requests/s; 0 or less:\n"
	               "no client-side limit")
	    ->def = "50";
	sf_flag_long(fs, &r->burst, "kube-api-burst", 0, "N", 1, 100000, "API client burst")->def =
	    "100";
	sf_flag_long(fs, &r->syncs, "concurrent-appwrapper-syncs", 0, "N", 1, 10000,
	             "AppWrappers reconciled at once")
	    ->def = "16";
	sf_flag_string(fs, &o->admission_params, "admission-params", 0, "[NS/]NAME",
	               "admission parameters ConfigMap the leader keeps in\n"
	               "step with discovery and the config (NS: the Lease's);\n"
	               "\"\": none (docs/admission.md)")
	    ->def = SF_ADMPARAMS_NAME;
	sf_flag_duration(fs, &r->admparams_ns, "admission-params-interval", 0, "D",
	                 "time between the leader's passes over it")
	    ->def = "1m";
	sf_flag_bool(fs, &st->want_version, "version", 0, "print the version and exit");
}

int sf_mgr_usage(sf_buf *out)
{
	sf_flagset fs;
	sf_mgr_opts o;
	raw r;
	sf_mgr_flags st;
	define(&fs, &o, &r, &st);
	return sf_flag_usage_flags(&fs, out);
}

/* A duration flag in whole milliseconds: 0, or -EINVAL below 1 ms. */
static int to_ms(const sf_flagset *fs, const char *name, int64_t ns, long *ms, char *err,
                 size_t errlen)
{
	if (!sf_flag_lookup(fs, name)->set)
		return 0;
	*ms = (long)(ns / 1000000);
	if (*ms > 0)
		return 0;
	snprintf(err, errlen, "invalid value for --%s: want at least 1ms", name);
	return -EINVAL;
}

int sf_mgr_flags_parse(int argc, char **argv, sf_mgr_opts *o, sf_mgr_flags *st, char *err,
                       size_t errlen)
{
	sf_flagset fs;
	raw r = {0};
	memset(o, 0, sizeof(*o));
	memset(st, 0, sizeof(*st));
	sf_awcfg_defaults(&st->cfg);
	define(&fs, o, &r, st);
	int rc = sf_flag_parse(&fs, argc > 0 ? argc - 1 : 0, argv + (argc > 0), err, errlen);
	st->want_help = fs.help;
	if (rc < 0)
		return rc;
	if (st->want_help || st->want_version)
		return 1;
	if (to_ms(&fs, "leader-elect-lease-duration", r.lease_ns, &o->lease_ms, err, errlen) ||
	    to_ms(&fs, "leader-elect-renew-deadline", r.renew_ns, &o->renew_ms, err, errlen) ||
	    to_ms(&fs, "leader-elect-retry-period", r.retry_ns, &o->retry_ms, err, errlen) ||
	    to_ms(&fs, "admission-params-interval", r.admparams_ns,
	          &o->admission_params_interval_ms, err, errlen))
		return -EINVAL;
	if (sf_flag_lookup(&fs, "kube-api-qps")->set)
		o->kube_api_qps = r.qps > 0 ? r.qps : -1;
	if (sf_flag_lookup(&fs, "kube-api-burst")->set)
		o->kube_api_burst = (int)r.burst;
	if (sf_flag_lookup(&fs, "concurrent-appwrapper-syncs")->set)
		o->concurrent_syncs = (unsigned)r.syncs;
	st->cfg.leader_election = -1; /* "not set": the flag's default (on) applies */
	st->cfg.metrics_secure = -1;  /* likewise */
	if (r.config) {
		char cerr[400];
		if (sf_awcfg_load_file(&st->cfg, r.config, cerr, sizeof(cerr)) != 0) {
			snprintf(err, errlen, "--config %s: %s", r.config, cerr);
			return -EINVAL;
		}
	}
	/* --metrics-secure, else the config's secureServing, else on */
	if (sf_flag_lookup(&fs, "metrics-secure")->set)
		st->cfg.metrics_secure = r.metrics_secure;
	else if (st->cfg.metrics_secure < 0)
		st->cfg.metrics_secure = 1;
	o->metrics_secure = st->cfg.metrics_secure;
	if (r.metrics)
		snprintf(st->cfg.metrics_bind, sizeof(st->cfg.metrics_bind), "%s", r.metrics);
	if (r.health)
		snprintf(st->cfg.health_bind, sizeof(st->cfg.health_bind), "%s", r.health);
	char verr[400];
	if (sf_awcfg_validate(&st->cfg, verr, sizeof(verr)) != 0) {
		snprintf(err, errlen, "operator config: %s", verr);
		return -EINVAL;
	}
	if (sf_flag_lookup(&fs, "leader-elect")->set)
		o->leader_elect = r.leader_elect;
	else
		o->leader_elect = st->cfg.leader_election != 0; /* unset (-1) = on */
	o->cfg = &st->cfg;
	return 0;
}
