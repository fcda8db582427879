/*
 * get.c - `steadfast get appwrappers`: phase and the conditions that
 * matter of each AppWrapper in a namespace, one line each, with the
 * reason and message when it is Unhealthy. Exit 1 when the list fails.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "steadfast/awapi.h"
#include "steadfast/cli.h"

typedef struct get_ctx {
	int done, rc;
	const char *prog;
} get_ctx;

static void cond_of(sf_jv aw, const char *type, char *status, size_t sn, char *reason, size_t rn,
                    char *msg, size_t mn)
{
	sf_jv_iter it = sf_jv_iter_init(sf_jv_path(aw, "status.conditions"));
	sf_jv c;
	status[0] = 0;
	if (reason)
		reason[0] = 0;
	if (msg)
		msg[0] = 0;
	while (sf_jv_next(&it, NULL, &c))
		if (sf_jv_streq(sf_jv_get(c, "type"), type)) {
			sf_jv_str(sf_jv_get(c, "status"), status, sn);
			if (reason)
				sf_jv_str(sf_jv_get(c, "reason"), reason, rn);
			if (msg && sf_jv_str(sf_jv_get(c, "message"), msg, mn) == -ERANGE)
				snprintf(msg + mn - 4, 4, "...");
		}
}

static void on_aw_list(void *ud, const sf_kube_result *r)
{
	get_ctx *x = ud;
	x->done = 1;
	if (!sf_kube_ok(r) || !r->obj) {
		char buf[512];
		fprintf(stderr, "%s: %s\n", x->prog, sf_kube_result_str(r, buf, sizeof(buf)));
		x->rc = 1;
		return;
	}
	printf("%-24s %-12s %-9s %-9s %-9s %s\n", "NAME", "STATUS", "QUOTA", "DEPLOYED",
	       "UNHEALTHY", "REASON: MESSAGE");
	sf_jv_iter it = sf_jv_iter_init(sf_jv_get(sf_obj_root(r->obj), "items"));
	sf_jv aw;
	while (sf_jv_next(&it, NULL, &aw)) {
		char name[254] = "", phase[32] = "", q[16], d[16], u[16], reason[64], msg[160];
		sf_jv_str(sf_jv_path(aw, "metadata.name"), name, sizeof(name));
		sf_jv_str(sf_jv_path(aw, "status.phase"), phase, sizeof(phase));
		cond_of(aw, "QuotaReserved", q, sizeof(q), NULL, 0, NULL, 0);
		cond_of(aw, "ResourcesDeployed", d, sizeof(d), NULL, 0, NULL, 0);
		cond_of(aw, "Unhealthy", u, sizeof(u), reason, sizeof(reason), msg, sizeof(msg));
		int unhealthy = strcmp(u, "True") == 0;
		printf("%-24s %-12s %-9s %-9s %-9s %s%s%s\n", name, phase[0] ? phase : "-", q, d, u,
		       unhealthy ? reason : "", unhealthy && msg[0] ? ": " : "",
		       unhealthy ? msg : "");
	}
}

int sf_cli_get(const char *prog, int argc, char **argv)
{
	sf_flagset fs;
	sf_cli_kube_flags k;
	int code;
	sf_flag_init(&fs, prog, "get", "appwrappers [flags]",
	             "Lists the AppWrappers of a namespace (appwrappers, appwrapper or aw):\n"
	             "name, phase, the QuotaReserved, ResourcesDeployed and Unhealthy\n"
	             "conditions, and the reason and message of an Unhealthy one.");
	fs.max_args = 1;
	sf_cli_kube_flags_define(&fs, &k, 1);
	if (sf_cli_parse(&fs, argc, argv, &code))
		return code;
	if (fs.nargs == 0)
		return sf_cli_usage_error(prog, "get", "get needs a resource type: appwrappers");
	const char *what = fs.args[0];
	if (strcmp(what, "appwrappers") && strcmp(what, "appwrapper") && strcmp(what, "aw"))
		return sf_cli_usage_error(
		    prog, "get", "unknown resource type %s: get lists appwrappers (aw)", what);
	sf_cli_session s;
	if (sf_cli_open(&s, prog, &k))
		return 1;
	get_ctx x = {.prog = prog};
	sf_kube_req req = {.method = "GET",
	                   .gvr = &SF_GVR_APPWRAPPERS,
	                   .ns = k.ns ? k.ns : s.cfg->namespace,
	                   .timeout_ms = 10000};
	if (sf_cli_request(&s, &req, on_aw_list, &x, &x.done))
		x.rc = 1;
	sf_cli_close(&s);
	return x.rc;
}
