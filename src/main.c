/*
 * main.c - the steadfast command: a thin layer of flags over the library.
 *
 *   steadfast [flags]
 *       runs the AppWrapper controller (see manager.h for the flags);
 *       --version and --help print and exit.
 *   steadfast cluster-info [--kubeconfig PATH] [--context NAME]
 *       connects with the configured credentials and prints the API
 *       server's address and version (used by `make demo`).
 *   steadfast lease status [--kubeconfig PATH] [--context NAME]
 *                          [-n NAMESPACE] [--name LEASE] [-o text|json]
 *       prints the election Lease as an operator needs it; the exit code
 *       is 0 when it looks healthy, 1 expired, 2 held by nobody, 3 absent,
 *       4 invalid, 5 when it could not be read.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "steadfast/client.h"
#include "steadfast/config.h"
#include "steadfast/election.h"
#include "steadfast/time.h"
#include "steadfast/log.h"
#include "steadfast/manager.h"

static void usage(FILE *f)
{
	fputs(sf_mgr_usage(), f);
}

/* No subcommand: run the controller. */
static int cmd_run(int argc, char **argv)
{
	sf_mgr_opts o;
	static sf_mgr_flags st; /* o points into it for the whole run */
	char err[600];
	int rc = sf_mgr_flags_parse(argc, argv, &o, &st, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "steadfast: %s (see steadfast --help)\n", err);
		return 2;
	}
	if (st.want_help) {
		usage(stdout);
		return 0;
	}
	if (st.want_version) {
		printf("steadfast %s\n", SF_VERSION);
		return 0;
	}
	if (st.log_level_set)
		sf_log_set_level(st.log_level);
	return sf_mgr_run(&o);
}

/* One request against the configured API server, for the one-shot
 * commands: open (config + loop + client), run until the callback has set
 * *done, close. Errors are printed; open and run return 0 or -1. */
typedef struct oneshot {
	sf_kube_config *cfg;
	uv_loop_t loop;
	sf_kube_client *c;
} oneshot;

static void on_closed(void *ud)
{
	(void)ud;
}

static int oneshot_open(oneshot *o, const char *kubeconfig, const char *context)
{
	char err[1024];
	if (sf_kube_config_load(kubeconfig, context, &o->cfg, err, sizeof(err))) {
		fprintf(stderr, "steadfast: %s\n", err);
		return -1;
	}
	uv_loop_init(&o->loop);
	int rc = sf_kube_client_new(&o->loop, o->cfg, NULL, &o->c);
	if (rc) {
		fprintf(stderr, "steadfast: client: %s\n", strerror(-rc));
		uv_loop_close(&o->loop);
		sf_kube_config_free(o->cfg);
		return -1;
	}
	return 0;
}

static int oneshot_run(oneshot *o, const sf_kube_req *req, sf_kube_cb cb, void *ud, const int *done)
{
	int rc = sf_kube_do(o->c, req, cb, ud, NULL);
	if (rc) {
		fprintf(stderr, "steadfast: request: %s\n", strerror(-rc));
		return -1;
	}
	while (!*done && uv_run(&o->loop, UV_RUN_ONCE))
		;
	return 0;
}

static void oneshot_close(oneshot *o)
{
	sf_kube_client_close(o->c, on_closed, NULL);
	uv_run(&o->loop, UV_RUN_DEFAULT);
	uv_loop_close(&o->loop);
	sf_kube_config_free(o->cfg);
}

typedef struct info_ctx {
	int done;
	int rc;
	const sf_kube_config *cfg;
} info_ctx;

static void on_version(void *ud, const sf_kube_result *r)
{
	info_ctx *x = ud;
	x->done = 1;
	if (!sf_kube_ok(r) || !r->obj) {
		char buf[512];
		fprintf(stderr, "steadfast: GET %s/version: %s\n", x->cfg->server,
		        sf_kube_result_str(r, buf, sizeof(buf)));
		x->rc = 1;
		return;
	}
	char ver[64] = "", plat[64] = "";
	sf_jv_str(sf_jv_get(sf_obj_root(r->obj), "gitVersion"), ver, sizeof(ver));
	sf_jv_str(sf_jv_get(sf_obj_root(r->obj), "platform"), plat, sizeof(plat));
	printf("Kubernetes control plane is running at %s\n", x->cfg->server);
	printf("Server version: %s (%s)\n", ver, plat);
	printf("Credentials: %s (context %s, namespace %s)\n", x->cfg->source,
	       x->cfg->context && *x->cfg->context ? x->cfg->context : "-", x->cfg->namespace);
}

static int cmd_cluster_info(int argc, char **argv)
{
	const char *kubeconfig = NULL, *context = NULL;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char *v = NULL;
		if (strncmp(a, "--kubeconfig=", 13) == 0) {
			kubeconfig = a + 13;
		} else if (strncmp(a, "--context=", 10) == 0) {
			context = a + 10;
		} else if ((strcmp(a, "--kubeconfig") == 0 || strcmp(a, "--context") == 0)) {
			if (i + 1 >= argc) {
				fprintf(stderr, "steadfast: flag %s needs a value\n", a);
				return 2;
			}
			v = argv[++i];
			if (a[2] == 'k')
				kubeconfig = v;
			else
				context = v;
		} else {
			fprintf(stderr, "steadfast: unknown flag %s\n", a);
			usage(stderr);
			return 2;
		}
	}
	oneshot o;
	if (oneshot_open(&o, kubeconfig, context))
		return 1;
	info_ctx x = {.cfg = o.cfg};
	sf_kube_req req = {.method = "GET", .path = "/version", .timeout_ms = 10000};
	if (oneshot_run(&o, &req, on_version, &x, &x.done))
		x.rc = 1;
	oneshot_close(&o);
	return x.rc;
}

#define DEFAULT_LEASE_NAME "f134c674.codeflare.dev"

typedef struct lease_ctx {
	int done;
	int rc;
	const char *ns, *name;
	int json;
} lease_ctx;

static void on_lease(void *ud, const sf_kube_result *r)
{
	lease_ctx *x = ud;
	x->done = 1;
	if (!sf_kube_ok(r) && !sf_kube_is_not_found(r)) {
		char buf[512];
		fprintf(stderr, "steadfast: reading lease %s/%s: %s\n", x->ns, x->name,
		        sf_kube_result_str(r, buf, sizeof(buf)));
		x->rc = 5;
		return;
	}
	sf_buf out;
	sf_buf_init(&out, 0);
	int v = sf_elect_status_format(x->ns, x->name, sf_kube_ok(r) ? r->obj : NULL, sf_wall_ns(),
	                               x->json, &out);
	if (v < 0) {
		fprintf(stderr, "steadfast: %s\n", strerror(-v));
		x->rc = 5;
	} else {
		fputs(out.data ? out.data : "", stdout);
		if (out.len && out.data[out.len - 1] != '\n')
			fputc('\n', stdout);
		x->rc = v;
	}
	sf_buf_free(&out);
}

static int cmd_lease_status(int argc, char **argv)
{
	const char *kubeconfig = NULL, *context = NULL, *ns = NULL, *name = DEFAULT_LEASE_NAME;
	int json = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char **dst = NULL;
		if (!strcmp(a, "--kubeconfig"))
			dst = &kubeconfig;
		else if (!strcmp(a, "--context"))
			dst = &context;
		else if (!strcmp(a, "-n") || !strcmp(a, "--namespace"))
			dst = &ns;
		else if (!strcmp(a, "--name"))
			dst = &name;
		else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			if (i + 1 >= argc ||
			    (strcmp(argv[i + 1], "json") && strcmp(argv[i + 1], "text"))) {
				fprintf(stderr, "steadfast: %s takes text or json\n", a);
				return 2;
			}
			json = !strcmp(argv[++i], "json");
			continue;
		} else {
			fprintf(stderr, "steadfast: unknown flag %s\n", a);
			usage(stderr);
			return 2;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "steadfast: flag %s needs a value\n", a);
			return 2;
		}
		*dst = argv[++i];
	}
	oneshot o;
	if (oneshot_open(&o, kubeconfig, context))
		return 5;
	lease_ctx x = {.ns = ns ? ns : o.cfg->namespace, .name = name, .json = json};
	sf_kube_req req = {
	    .method = "GET", .gvr = &SF_GVR_LEASES, .ns = x.ns, .name = name, .timeout_ms = 10000};
	if (oneshot_run(&o, &req, on_lease, &x, &x.done))
		x.rc = 5;
	oneshot_close(&o);
	return x.rc;
}

int main(int argc, char **argv)
{
	/* a peer that closed its socket must be an EPIPE error, not a kill */
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2 || argv[1][0] == '-')
		return cmd_run(argc, argv); /* flags only: the controller (or --help, --version) */
	if (strcmp(argv[1], "version") == 0) {
		printf("steadfast %s\n", SF_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "cluster-info") == 0)
		return cmd_cluster_info(argc - 2, argv + 2);
	if (strcmp(argv[1], "lease") == 0 && argc >= 3 && strcmp(argv[2], "status") == 0)
		return cmd_lease_status(argc - 3, argv + 3);
	fprintf(stderr, "steadfast: unknown command %s\n", argv[1]);
	usage(stderr);
	return 2;
}
