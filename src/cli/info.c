/*
 * info.c - `steadfast cluster-info`: connects with the configured
 * credentials and prints the API server's address and version and where
 * the credentials came from (`make demo` runs it; so can a person
 * checking a kubeconfig). Exit 1 when the server cannot be reached.
 */
#include <stdio.h>

#include "steadfast/cli.h"

typedef struct info_ctx {
	int done;
	int rc;
	const char *prog;
	const sf_kube_config *cfg;
} info_ctx;

static void on_version(void *ud, const sf_kube_result *r)
{
	info_ctx *x = ud;
	x->done = 1;
	if (!sf_kube_ok(r) || !r->obj) {
		char buf[512];
		fprintf(stderr, "%s: GET %s/version: %s\n", x->prog, x->cfg->server,
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

int sf_cli_cluster_info(const char *prog, int argc, char **argv)
{
	sf_flagset fs;
	sf_cli_kube_flags k;
	int code;
	sf_flag_init(&fs, prog, "cluster-info", "[flags]",
	             "Connects with the configured credentials and prints the API server's\n"
	             "address and version, and which credentials were used. Exit 1 when the\n"
	             "kubeconfig cannot be read or the server does not answer.");
	sf_cli_kube_flags_define(&fs, &k, 0);
	if (sf_cli_parse(&fs, argc, argv, &code))
		return code;
	sf_cli_session s;
	if (sf_cli_open(&s, prog, &k))
		return 1;
	info_ctx x = {.prog = prog, .cfg = s.cfg};
	sf_kube_req req = {.method = "GET", .path = "/version", .timeout_ms = 10000};
	if (sf_cli_request(&s, &req, on_version, &x, &x.done))
		x.rc = 1;
	sf_cli_close(&s);
	return x.rc;
}
