/*
 * lease.c - `steadfast lease status`: the election Lease as an operator
 * needs it (election/status.c formats it and gives the verdict), for a
 * person or a script. The exit code is the verdict: 0 healthy, 1 expired,
 * 2 unheld, 3 absent, 4 invalid, 5 when the Lease could not be read;
 * usage errors exit SF_CLI_EX_USAGE, which no verdict shares.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "steadfast/cli.h"
#include "steadfast/election.h"
#include "steadfast/manager.h"
#include "steadfast/time.h"

#define EXIT_UNREADABLE 5

typedef struct lease_ctx {
	int done;
	int rc;
	const char *prog, *ns, *name;
	int json;
} lease_ctx;

static void on_lease(void *ud, const sf_kube_result *r)
{
	lease_ctx *x = ud;
	x->done = 1;
	if (!sf_kube_ok(r) && !sf_kube_is_not_found(r)) {
		char buf[512];
		fprintf(stderr, "%s: reading lease %s/%s: %s\n", x->prog, x->ns, x->name,
		        sf_kube_result_str(r, buf, sizeof(buf)));
		x->rc = EXIT_UNREADABLE;
		return;
	}
	sf_buf out;
	sf_buf_init(&out, 0);
	int v = sf_elect_status_format(x->ns, x->name, sf_kube_ok(r) ? r->obj : NULL, sf_wall_ns(),
	                               x->json, &out);
	if (v < 0) {
		fprintf(stderr, "%s: %s\n", x->prog, strerror(-v));
		x->rc = EXIT_UNREADABLE;
	} else {
		fputs(out.data ? out.data : "", stdout);
		if (out.len && out.data[out.len - 1] != '\n')
			fputc('\n', stdout);
		x->rc = v;
	}
	sf_buf_free(&out);
}

static int set_output(void *ud, const char *v, char *why, size_t whylen)
{
	if (strcmp(v, "json") && strcmp(v, "text")) {
		snprintf(why, whylen, "want text or json");
		return -EINVAL;
	}
	*(int *)ud = strcmp(v, "json") == 0;
	return 0;
}

static const char status_about[] =
    "Reads the election Lease once and prints its holder, when it was acquired and\n"
    "renewed, and when it expires (judged with this machine's clock), then a verdict,\n"
    "which is also the exit code:\n"
    "  0 healthy   held, and renewed within its lease duration\n"
    "  1 expired   held, but not renewed within its lease duration\n"
    "  2 unheld    held by nobody (released, or never taken)\n"
    "  3 absent    no such Lease\n"
    "  4 invalid   the Lease lacks a usable spec, renewTime or leaseDurationSeconds\n"
    "  5           the Lease could not be read (the reason is on stderr)\n"
    "A usage error exits 64.";

static int lease_status(const char *prog, int argc, char **argv)
{
	sf_flagset fs;
	sf_cli_kube_flags k;
	const char *name = SF_MGR_DEFAULT_LEASE;
	int json = 0, code;
	sf_flag_init(&fs, prog, "lease status", "[flags]", status_about);
	sf_cli_kube_flags_define(&fs, &k, 1);
	sf_flag_string(&fs, &name, "name", 0, "LEASE", "Lease name")->def = SF_MGR_DEFAULT_LEASE;
	sf_flag_func(&fs, set_output, &json, "output", 'o', "FORMAT", "text or json")->def = "text";
	if (sf_cli_parse(&fs, argc, argv, &code))
		return code;
	sf_cli_session s;
	if (sf_cli_open(&s, prog, &k))
		return EXIT_UNREADABLE;
	lease_ctx x = {
	    .prog = prog, .ns = k.ns ? k.ns : s.cfg->namespace, .name = name, .json = json};
	sf_kube_req req = {
	    .method = "GET", .gvr = &SF_GVR_LEASES, .ns = x.ns, .name = name, .timeout_ms = 10000};
	if (sf_cli_request(&s, &req, on_lease, &x, &x.done))
		x.rc = EXIT_UNREADABLE;
	sf_cli_close(&s);
	return x.rc;
}

/* `steadfast lease COMMAND`: only status, so far. */
int sf_cli_lease(const char *prog, int argc, char **argv)
{
	if (argc > 0 && strcmp(argv[0], "status") == 0)
		return lease_status(prog, argc - 1, argv + 1);
	sf_flagset fs;
	int code;
	char about[256];
	snprintf(about, sizeof(about),
	         "Commands:\n"
	         "  status   the election Lease, with a verdict as exit code\n"
	         "\n"
	         "Run '%s lease status --help' for its flags.",
	         prog);
	sf_flag_init(&fs, prog, "lease", "COMMAND [flags]", about);
	fs.max_args = 1;
	if (sf_cli_parse(&fs, argc, argv, &code))
		return code;
	if (fs.nargs == 0)
		return sf_cli_usage_error(prog, "lease", "lease needs a command: status");
	return sf_cli_usage_error(prog, "lease", "unknown lease command: %s", fs.args[0]);
}
