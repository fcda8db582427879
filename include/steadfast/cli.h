/*
 * cli.h - the steadfast program's commands (src/cli/), apart from the
 * controller they share a binary with.
 *
 *   steadfast [flags]              the controller (manager.h)
 *   steadfast apply -f FILE        server-side apply of a manifest
 *   steadfast get appwrappers      phases and conditions
 *   steadfast cluster-info         where the API server is, who we are
 *   steadfast lease status         the election Lease, with a verdict
 *   steadfast version | help [COMMAND]
 *
 * Every command parses with the flag module (flag.h), answers -h/--help
 * with its usage on stdout and exit 0, and reports a usage error on
 * stderr, with a hint naming its --help, and exit SF_CLI_EX_USAGE (a code
 * no command uses for anything else: lease status's verdicts are 0-5).
 *
 * prog is the name the user typed: "steadfast", or "kubectl steadfast"
 * when the binary runs as the kubectl plugin kubectl-steadfast; usage
 * texts and hints use it.
 */
#ifndef STEADFAST_CLI_H
#define STEADFAST_CLI_H

#include <uv.h>

#include "steadfast/client.h"
#include "steadfast/config.h"
#include "steadfast/flag.h"

#define SF_CLI_EX_USAGE 64 /* sysexits.h's EX_USAGE */

/* A command: argv holds what follows its name; returns the exit code. */
typedef int (*sf_cli_cmd)(const char *prog, int argc, char **argv);
int sf_cli_apply(const char *prog, int argc, char **argv);
int sf_cli_get(const char *prog, int argc, char **argv);
int sf_cli_cluster_info(const char *prog, int argc, char **argv);
int sf_cli_lease(const char *prog, int argc, char **argv);

/* Prints "<prog>: <problem>" and "Run '<prog>[ cmd] --help' for usage."
 * on stderr; returns SF_CLI_EX_USAGE. */
int sf_cli_usage_error(const char *prog, const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prints fs's usage text on stdout. */
void sf_cli_print_usage(const sf_flagset *fs);
/* Parses argv into fs. 0: go on. 1: the command is done, exit with *code
 * (0 after printing the usage for --help, SF_CLI_EX_USAGE after a usage
 * error). */
int sf_cli_parse(sf_flagset *fs, int argc, char **argv, int *code);

/* --kubeconfig, --context, and with_ns -n/--namespace. */
typedef struct sf_cli_kube_flags {
	const char *kubeconfig, *context, *ns; /* NULL: not given */
} sf_cli_kube_flags;
void sf_cli_kube_flags_define(sf_flagset *fs, sf_cli_kube_flags *k, int with_ns);

/* One command's connection to the configured API server: open (config,
 * loop, client), requests, close. Errors are printed on stderr; open and
 * request return 0 or -1. */
typedef struct sf_cli_session {
	const char *prog;
	sf_kube_config *cfg;
	uv_loop_t loop;
	sf_kube_client *c;
} sf_cli_session;
int sf_cli_open(sf_cli_session *s, const char *prog, const sf_cli_kube_flags *k);
/* Sends req and runs the loop until *done is set (by cb). */
int sf_cli_request(sf_cli_session *s, const sf_kube_req *req, sf_kube_cb cb, void *ud,
                   const int *done);
void sf_cli_close(sf_cli_session *s);

#endif
