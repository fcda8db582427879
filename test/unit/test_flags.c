/*
 * test_flags.c - the controller's command line: controller-runtime's
 * spellings and Go flag syntax, durations, booleans, the operator config
 * file and its overrides, and clear errors for unknown flags and bad values.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "steadfast/manager.h"

static int parse(sf_mgr_opts *o, sf_mgr_flags *f, char *err, size_t n, const char *first, ...)
{
	char *argv[32] = {"steadfast"};
	int argc = 1;
	va_list ap;
	va_start(ap, first);
	for (const char *a = first; a; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	return sf_mgr_flags_parse(argc, argv, o, f, err, n);
}

Test(flags, defaults)
{
	sf_mgr_opts o;
	sf_mgr_flags f;
	char err[256];
	char *argv[] = {"steadfast"};
	cr_assert_eq(sf_mgr_flags_parse(1, argv, &o, &f, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(o.leader_elect, 1, "leader election is on by default");
	cr_assert_null(o.lease_name);
	cr_assert_eq(o.lease_ms, 0);
	cr_assert_str_eq(f.cfg.metrics_bind, ":8080");
	cr_assert_str_eq(f.cfg.health_bind, ":8081");
	cr_assert_eq(o.cfg, &f.cfg);
}

Test(flags, controller_runtime_spellings_and_go_syntax)
{
	sf_mgr_opts o;
	sf_mgr_flags f;
	char err[256];
	cr_assert_eq(parse(&o, &f, err, sizeof(err), "--kubeconfig=/k", "-leader-elect=false",
	                   "--leader-election-id", "my-lease", "--leader-election-namespace=ns1",
	                   "--leader-elect-lease-duration=20s", "--leader-elect-renew-deadline",
	                   "1m", "--leader-elect-retry-period=1500ms",
	                   "--metrics-bind-address=:9090", "--health-probe-bind-address", "0",
	                   "--zap-log-level=debug", "--namespace=team-a", NULL),
	             0, "%s", err);
	cr_assert_str_eq(o.kubeconfig, "/k");
	cr_assert_eq(o.leader_elect, 0);
	cr_assert_str_eq(o.lease_name, "my-lease");
	cr_assert_str_eq(o.lease_namespace, "ns1");
	cr_assert_eq(o.lease_ms, 20000);
	cr_assert_eq(o.renew_ms, 60000);
	cr_assert_eq(o.retry_ms, 1500);
	cr_assert_str_eq(f.cfg.metrics_bind, ":9090");
	cr_assert_str_eq(f.cfg.health_bind, "0");
	cr_assert(f.log_level_set);
	cr_assert_eq(f.log_level, 1);
	cr_assert_str_eq(o.watch_namespace, "team-a");
	cr_assert_eq(o.kube_api_qps, 0, "unset: the manager's default");
	cr_assert_eq(
	    parse(&o, &f, err, sizeof(err), "--kube-api-qps=200", "--kube-api-burst", "400", NULL),
	    0, "%s", err);
	cr_assert_eq(o.kube_api_qps, 200.0);
	cr_assert_eq(o.kube_api_burst, 400);
	cr_assert_eq(parse(&o, &f, err, sizeof(err), "--kube-api-qps=0", NULL), 0, "%s", err);
	cr_assert_lt(o.kube_api_qps, 0, "0 means no client-side limit");
}

Test(flags, concurrent_appwrapper_syncs)
{
	sf_mgr_opts o;
	sf_mgr_flags f;
	char err[256];
	cr_assert_eq(parse(&o, &f, err, sizeof(err), "--namespace=a", NULL), 0, "%s", err);
	cr_assert_eq(o.concurrent_syncs, 0, "unset: the controller's default");
	cr_assert_eq(parse(&o, &f, err, sizeof(err), "--concurrent-appwrapper-syncs=32", NULL), 0,
	             "%s", err);
	cr_assert_eq(o.concurrent_syncs, 32);
	cr_assert_eq(parse(&o, &f, err, sizeof(err), "-concurrent-appwrapper-syncs", "1", NULL), 0,
	             "%s", err);
	cr_assert_eq(o.concurrent_syncs, 1);
	const char *bad[] = {"--concurrent-appwrapper-syncs=0", "--concurrent-appwrapper-syncs=-4",
	                     "--concurrent-appwrapper-syncs=many",
	                     "--concurrent-appwrapper-syncs=1000000"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		cr_assert_lt(parse(&o, &f, err, sizeof(err), bad[i], NULL), 0, "%s", bad[i]);
		cr_assert(strstr(err, "concurrent-appwrapper-syncs"), "%s", err);
		cr_assert(strstr(err, "want an integer from 1"), "%s", err);
	}
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_assert_eq(sf_mgr_usage(&b), 0);
	cr_assert(strstr(b.data, "--concurrent-appwrapper-syncs"), "listed in --help");
	sf_buf_free(&b);
}

Test(flags, errors_name_the_flag)
{
	sf_mgr_opts o;
	sf_mgr_flags f;
	char err[256];
	cr_assert_lt(parse(&o, &f, err, sizeof(err), "--metrics-addr=:1", NULL), 0);
	cr_assert(strstr(err, "metrics-addr"), "%s", err);
	cr_assert_lt(parse(&o, &f, err, sizeof(err), "--leader-elect-lease-duration=15", NULL), 0);
	cr_assert(strstr(err, "leader-elect-lease-duration"), "%s", err);
	cr_assert_lt(parse(&o, &f, err, sizeof(err), "--leader-elect=maybe", NULL), 0);
	cr_assert(strstr(err, "leader-elect"), "%s", err);
	cr_assert_lt(parse(&o, &f, err, sizeof(err), "--kubeconfig", NULL), 0);
	cr_assert(strstr(err, "needs an argument"), "%s", err);
	cr_assert_lt(parse(&o, &f, err, sizeof(err), "--zap-log-level=loud", NULL), 0);
	cr_assert(strstr(err, "zap-log-level"), "%s", err);
	cr_assert_lt(parse(&o, &f, err, sizeof(err), "--kube-api-qps=fast", NULL), 0);
	cr_assert(strstr(err, "kube-api-qps"), "%s", err);
	cr_assert_lt(parse(&o, &f, err, sizeof(err), "--kube-api-burst=0", NULL), 0);
	cr_assert(strstr(err, "kube-api-burst"), "%s", err);
	cr_assert_lt(parse(&o, &f, err, sizeof(err), "stray", NULL), 0);
	cr_assert(strstr(err, "stray"), "%s", err);
}

Test(flags, help_and_version)
{
	sf_mgr_opts o;
	sf_mgr_flags f;
	char err[256];
	cr_assert_eq(parse(&o, &f, err, sizeof(err), "--help", NULL), 1);
	cr_assert(f.want_help);
	cr_assert_eq(parse(&o, &f, err, sizeof(err), "-version", NULL), 1);
	cr_assert(f.want_version);
	cr_assert_eq(parse(&o, &f, err, sizeof(err), "-h", NULL), 1);
	cr_assert(f.want_help);
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_assert_eq(sf_mgr_usage(&b), 0);
	cr_assert(strstr(b.data, "      --leader-elect-renew-deadline D "), "%s", b.data);
	cr_assert(strstr(b.data, "(default 10s)"), "%s", b.data);
	cr_assert(strstr(b.data, "  -h, --help "), "%s", b.data);
	sf_buf_free(&b);
}

static const char *write_tmp(const char *text)
{
	static char path[64];
	snprintf(path, sizeof(path), "/tmp/sf-flags-XXXXXX");
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

Test(flags, config_file_and_overrides)
{
	sf_mgr_opts o;
	sf_mgr_flags f;
	char err[512];
	const char *p = write_tmp("controllerManager:\n"
	                          "  health:\n    bindAddress: \":7081\"\n"
	                          "  metrics:\n    bindAddress: \":7443\"\n"
	                          "  leaderElection: false\n"
	                          "appwrapper:\n  faultTolerance:\n    retryLimit: 7\n");
	cr_assert_eq(parse(&o, &f, err, sizeof(err), "--config", p, NULL), 0, "%s", err);
	cr_assert_eq(o.leader_elect, 0, "the config file turned it off");
	cr_assert_str_eq(f.cfg.health_bind, ":7081");
	cr_assert_eq(f.cfg.ft.retry_limit, 7);
	/* flags win over the file */
	cr_assert_eq(parse(&o, &f, err, sizeof(err), "--config", p, "--leader-elect",
	                   "--metrics-bind-address=:1234", NULL),
	             0, "%s", err);
	cr_assert_eq(o.leader_elect, 1);
	cr_assert_str_eq(f.cfg.metrics_bind, ":1234");
	unlink(p);

	p = write_tmp("appwrapper:\n  faultTolerance:\n    admissionGracePeriod: 10m\n"
	              "    warmupGracePeriod: 5m\n");
	cr_assert_lt(parse(&o, &f, err, sizeof(err), "--config", p, NULL), 0);
	cr_assert(strstr(err, "operator config"), "%s", err);
	unlink(p);

	cr_assert_lt(parse(&o, &f, err, sizeof(err), "--config", "/nonexistent/cfg.yaml", NULL), 0);
	cr_assert(strstr(err, "/nonexistent/cfg.yaml"), "%s", err);
}

Test(flags, secure_metrics)
{
	sf_mgr_opts o;
	sf_mgr_flags f;
	char err[256];
	cr_assert_eq(parse(&o, &f, err, sizeof(err), NULL), 0, "%s", err);
	cr_assert_eq(o.metrics_secure, 1, "secure metrics are on by default");
	cr_assert_null(o.metrics_cert_path, "self-signed by default");
	cr_assert_eq(parse(&o, &f, err, sizeof(err), "--metrics-secure=false", NULL), 0, "%s", err);
	cr_assert_eq(o.metrics_secure, 0);
	cr_assert_eq(parse(&o, &f, err, sizeof(err), "--metrics-cert-path", "/certs",
	                   "--metrics-cert-name=c.pem", "-metrics-cert-key=k.pem", NULL),
	             0, "%s", err);
	cr_assert_eq(o.metrics_secure, 1);
	cr_assert_str_eq(o.metrics_cert_path, "/certs");
	cr_assert_str_eq(o.metrics_cert_name, "c.pem");
	cr_assert_str_eq(o.metrics_cert_key, "k.pem");
	cr_assert_lt(parse(&o, &f, err, sizeof(err), "--metrics-secure=maybe", NULL), 0);
	cr_assert(strstr(err, "metrics-secure"), "%s", err);
	/* the operator config's secureServing, which the flag overrides */
	const char *p = write_tmp("controllerManager:\n  metrics:\n    secureServing: false\n");
	cr_assert_eq(parse(&o, &f, err, sizeof(err), "--config", p, NULL), 0, "%s", err);
	cr_assert_eq(o.metrics_secure, 0, "secureServing: false was ignored");
	cr_assert_eq(parse(&o, &f, err, sizeof(err), "--config", p, "--metrics-secure", NULL), 0,
	             "%s", err);
	cr_assert_eq(o.metrics_secure, 1, "the flag did not override the config");
	unlink(p);
}
