/*
 * manager.h - the controller process: client, election, AppWrapper
 * controller, signals, wired on one libuv loop.
 *
 * Every replica starts the informers at once (a warm standby); the
 * election's ready hook runs the controller's freshness barrier; leading
 * starts reconciling; losing the lease stops it without exiting. SIGTERM
 * or SIGINT stop leader work, release the Lease if this replica still holds
 * it at the version it last wrote, and exit 0. Nothing here exits because
 * the API server is unreachable: informers and the election retry with
 * backoff.
 *
 * Fault point WATCH_DELAY_MS (test build only, see fault.h) makes the
 * controller's component and pod informers apply watch events up to that
 * many ms late, to reproduce a cache that has not seen its own creates.
 */
#ifndef STEADFAST_MANAGER_H
#define STEADFAST_MANAGER_H

#include <stddef.h>

#include "steadfast/awconfig.h"
#include "steadfast/buf.h"

#define SF_MGR_DEFAULT_LEASE "f134c674.codeflare.dev"

typedef struct sf_mgr_opts {
	const char *kubeconfig; /* NULL: $KUBECONFIG, ~/.kube/config, in-cluster */
	const char *context;
	int leader_elect;                  /* 0 = act at once (a single replica) */
	const char *lease_name;            /* NULL = SF_MGR_DEFAULT_LEASE */
	const char *lease_namespace;       /* NULL = $POD_NAMESPACE or the in-cluster namespace */
	long lease_ms, renew_ms, retry_ms; /* 0 = client-go's defaults */
	const char *identity;              /* NULL = <$POD_NAME or hostname>_<random> */
	const char *watch_namespace;       /* NULL = all */
	double kube_api_qps;               /* client rate limit; 0 = 50, < 0 = none */
	int kube_api_burst;                /* 0 = 100 */
	unsigned concurrent_syncs;         /* AppWrappers reconciled at once; 0 = 16 */
	const sf_aw_config *cfg;           /* borrowed */
	/* /metrics over HTTPS with TokenReview/SubjectAccessReview (as
	 * controller-runtime's secure serving); 0 = plain HTTP to anyone */
	int metrics_secure;
	const char *metrics_cert_path; /* NULL = self-signed at start */
	const char *metrics_cert_name; /* NULL = "tls.crt" */
	const char *metrics_cert_key;  /* NULL = "tls.key" */
	/* "[NS/]NAME" of the admission parameters (admparams.h): NULL =
	 * SF_ADMPARAMS_NAME, "" = none; NS defaults to the Lease namespace */
	const char *admission_params;
	long admission_params_interval_ms; /* 0 = 60 s */
} sf_mgr_opts;

/* The command line, in controller-runtime's spelling (Go flag syntax as
 * flag.h parses it: -flag or --flag, "=value" or the next argument;
 * booleans take only "=value"). argv[0] is the program's name. What it
 * fills points into argv or into *store.
 *   --kubeconfig --context --leader-elect[=bool] --leader-election-id
 *   --leader-election-namespace --leader-elect-lease-duration
 *   --leader-elect-renew-deadline --leader-elect-retry-period (Go durations)
 *   --metrics-bind-address --health-probe-bind-address --config
 *   --metrics-secure[=bool] (default true) --metrics-cert-path
 *   --metrics-cert-name --metrics-cert-key (the kubebuilder scaffold's)
 *   --zap-log-level --namespace (watch only this one) --identity
 *   --kube-api-qps --kube-api-burst --concurrent-appwrapper-syncs
 *   (kube-controller-manager's names)
 *   --admission-params --admission-params-interval
 * The operator config (--config) is loaded and validated into store->cfg;
 * bind-address flags override its controllerManager keys, and
 * --leader-elect overrides its leaderElection (default on).
 * Returns 0, 1 for -h/--help/--version (printed to stdout by the caller,
 * the flags with sf_mgr_usage), or -EINVAL with a message naming the flag
 * in err. */
typedef struct sf_mgr_flags {
	sf_aw_config cfg;
	int want_help, want_version;
	int log_level;
	int log_level_set;
} sf_mgr_flags;
int sf_mgr_flags_parse(int argc, char **argv, sf_mgr_opts *opts, sf_mgr_flags *store, char *err,
                       size_t errlen);
/* Appends the flag table (one line per flag, with its default) to out. */
int sf_mgr_usage(sf_buf *out);

/* Runs until SIGTERM/SIGINT. Returns the process exit code (0 after a
 * clean shutdown; 1 when it cannot start, with the reason logged). */
int sf_mgr_run(const sf_mgr_opts *opts);

#endif
