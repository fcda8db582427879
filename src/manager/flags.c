/*
 * flags.c - the manager's command line (see manager.h).
 *
 * Flags are spelled as controller-runtime based controllers spell them, so
 * a Deployment written for the upstream controller keeps working; values
 * are checked here so a typo is a clear start-up error naming the flag,
 * never a silently ignored setting.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/log.h"
#include "steadfast/manager.h"

enum {
	F_KUBECONFIG = 1,
	F_CONTEXT,
	F_LEADER_ELECT,
	F_LEASE_ID,
	F_LEASE_NS,
	F_LEASE_DURATION,
	F_RENEW_DEADLINE,
	F_RETRY_PERIOD,
	F_METRICS,
	F_HEALTH,
	F_CONFIG,
	F_LOG_LEVEL,
	F_NAMESPACE,
	F_IDENTITY,
	F_QPS,
	F_BURST,
	F_HELP,
	F_VERSION,
};

static const struct flag {
	const char *name;
	int id;
	int is_bool;
} flags[] = {
    {"kubeconfig", F_KUBECONFIG, 0},
    {"context", F_CONTEXT, 0},
    {"leader-elect", F_LEADER_ELECT, 1},
    {"leader-election-id", F_LEASE_ID, 0},
    {"leader-election-namespace", F_LEASE_NS, 0},
    {"leader-elect-lease-duration", F_LEASE_DURATION, 0},
    {"leader-elect-renew-deadline", F_RENEW_DEADLINE, 0},
    {"leader-elect-retry-period", F_RETRY_PERIOD, 0},
    {"metrics-bind-address", F_METRICS, 0},
    {"health-probe-bind-address", F_HEALTH, 0},
    {"config", F_CONFIG, 0},
    {"zap-log-level", F_LOG_LEVEL, 0},
    {"namespace", F_NAMESPACE, 0},
    {"identity", F_IDENTITY, 0},
    {"kube-api-qps", F_QPS, 0},
    {"kube-api-burst", F_BURST, 0},
    {"help", F_HELP, 1},
    {"h", F_HELP, 1},
    {"version", F_VERSION, 1},
};

const char *sf_mgr_usage(void)
{
	return "usage: steadfast [flags]            run the AppWrapper controller\n"
	       "       steadfast apply -f FILE [-n NAMESPACE]   server-side apply of a manifest\n"
	       "       steadfast get appwrappers [-n NAMESPACE]\n"
	       "       steadfast cluster-info [--kubeconfig PATH] [--context NAME]\n"
	       "       steadfast lease status [-n NAMESPACE] [--name LEASE] [-o text|json]\n"
	       "\n"
	       "flags:\n"
	       "  --kubeconfig PATH                  kubeconfig (default $KUBECONFIG, "
	       "~/.kube/config,\n"
	       "                                     in-cluster)\n"
	       "  --context NAME                     kubeconfig context\n"
	       "  --config FILE                      operator config (upstream's YAML keys)\n"
	       "  --leader-elect[=true|false]        campaign for the Lease (default true)\n"
	       "  --leader-election-id NAME          Lease name (default f134c674.codeflare.dev)\n"
	       "  --leader-election-namespace NS     Lease namespace (default $POD_NAMESPACE)\n"
	       "  --leader-elect-lease-duration D    default 15s\n"
	       "  --leader-elect-renew-deadline D    default 10s\n"
	       "  --leader-elect-retry-period D      default 2s\n"
	       "  --metrics-bind-address ADDR        default from the config, :8080\n"
	       "  --health-probe-bind-address ADDR   default from the config, :8081\n"
	       "  --zap-log-level LEVEL              debug, info, error, or a number (default "
	       "info)\n"
	       "  --namespace NS                     watch only this namespace\n"
	       "  --identity ID                      election identity (default <pod>_<random>)\n"
	       "  --kube-api-qps N                   API client rate limit, requests/s (default "
	       "50;\n"
	       "                                     0 or less: no client-side limit)\n"
	       "  --kube-api-burst N                 API client burst (default 100)\n"
	       "  --version, --help\n";
}

static int parse_bool(const char *v, int *out)
{
	static const char *const t[] = {"1", "t", "T", "true", "TRUE", "True"};
	static const char *const f[] = {"0", "f", "F", "false", "FALSE", "False"};
	for (size_t i = 0; i < 6; i++) {
		if (strcmp(v, t[i]) == 0)
			return *out = 1, 0;
		if (strcmp(v, f[i]) == 0)
			return *out = 0, 0;
	}
	return -EINVAL;
}

static int parse_dur_ms(const char *v, long *out)
{
	int64_t ns;
	if (sf_go_duration_parse(v, &ns) != 0 || ns <= 0)
		return -EINVAL;
	*out = (long)(ns / 1000000);
	return *out > 0 ? 0 : -EINVAL;
}

int sf_mgr_flags_parse(int argc, char **argv, sf_mgr_opts *o, sf_mgr_flags *st, char *err,
                       size_t errlen)
{
	const char *config = NULL, *metrics = NULL, *health = NULL;
	int leader_elect = -1;
	memset(o, 0, sizeof(*o));
	memset(st, 0, sizeof(*st));
	sf_awcfg_defaults(&st->cfg);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] != '-' || a[1] == 0) {
			snprintf(err, errlen, "unexpected argument %s", a);
			return -EINVAL;
		}
		const char *name = a + (a[1] == '-' ? 2 : 1);
		const char *eq = strchr(name, '=');
		size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
		const struct flag *f = NULL;
		for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++)
			if (strlen(flags[k].name) == nlen &&
			    strncmp(flags[k].name, name, nlen) == 0)
				f = &flags[k];
		if (!f) {
			snprintf(err, errlen, "flag provided but not defined: -%.*s", (int)nlen,
			         name);
			return -EINVAL;
		}
		const char *v = eq ? eq + 1 : NULL;
		if (!v && !f->is_bool) {
			if (i + 1 >= argc) {
				snprintf(err, errlen, "flag needs an argument: -%s", f->name);
				return -EINVAL;
			}
			v = argv[++i];
		}
		int b = 1;
		if (f->is_bool && v && parse_bool(v, &b) != 0) {
			snprintf(err, errlen, "invalid boolean value \"%s\" for -%s", v, f->name);
			return -EINVAL;
		}
		long ms = 0;
		switch (f->id) {
		case F_KUBECONFIG: o->kubeconfig = v; break;
		case F_CONTEXT: o->context = v; break;
		case F_LEADER_ELECT: leader_elect = b; break;
		case F_LEASE_ID: o->lease_name = v; break;
		case F_LEASE_NS: o->lease_namespace = v; break;
		case F_LEASE_DURATION:
		case F_RENEW_DEADLINE:
		case F_RETRY_PERIOD:
			if (parse_dur_ms(v, &ms) != 0) {
				snprintf(err, errlen,
				         "invalid value \"%s\" for -%s: want a positive duration "
				         "such as 15s",
				         v, f->name);
				return -EINVAL;
			}
			if (f->id == F_LEASE_DURATION)
				o->lease_ms = ms;
			else if (f->id == F_RENEW_DEADLINE)
				o->renew_ms = ms;
			else
				o->retry_ms = ms;
			break;
		case F_METRICS: metrics = v; break;
		case F_HEALTH: health = v; break;
		case F_CONFIG: config = v; break;
		case F_LOG_LEVEL:
			if (sf_log_parse_level(v, &st->log_level) != 0) {
				snprintf(err, errlen, "invalid value \"%s\" for -zap-log-level", v);
				return -EINVAL;
			}
			st->log_level_set = 1;
			break;
		case F_NAMESPACE: o->watch_namespace = v; break;
		case F_IDENTITY: o->identity = v; break;
		case F_QPS: {
			char *end;
			double q = strtod(v, &end);
			if (end == v || *end) {
				snprintf(err, errlen, "invalid value \"%s\" for -kube-api-qps", v);
				return -EINVAL;
			}
			o->kube_api_qps = q > 0 ? q : -1;
			break;
		}
		case F_BURST: {
			char *end;
			long nb = strtol(v, &end, 10);
			if (end == v || *end || nb < 1 || nb > 100000) {
				snprintf(err, errlen,
				         "invalid value \"%s\" for -kube-api-burst: want 1..100000",
				         v);
				return -EINVAL;
			}
			o->kube_api_burst = (int)nb;
			break;
		}
		case F_HELP: st->want_help = b; break;
		case F_VERSION: st->want_version = b; break;
		}
	}
	if (st->want_help || st->want_version)
		return 1;
	st->cfg.leader_election = -1; /* "not set": the flag's default (on) applies */
	if (config) {
		char cerr[400];
		if (sf_awcfg_load_file(&st->cfg, config, cerr, sizeof(cerr)) != 0) {
			snprintf(err, errlen, "--config %s: %s", config, cerr);
			return -EINVAL;
		}
	}
	if (metrics)
		snprintf(st->cfg.metrics_bind, sizeof(st->cfg.metrics_bind), "%s", metrics);
	if (health)
		snprintf(st->cfg.health_bind, sizeof(st->cfg.health_bind), "%s", health);
	char verr[400];
	if (sf_awcfg_validate(&st->cfg, verr, sizeof(verr)) != 0) {
		snprintf(err, errlen, "operator config: %s", verr);
		return -EINVAL;
	}
	if (leader_elect >= 0)
		o->leader_elect = leader_elect;
	else
		o->leader_elect = st->cfg.leader_election != 0; /* unset (-1) = on */
	o->cfg = &st->cfg;
	return 0;
}
