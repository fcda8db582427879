/*
 * main.c - the steadfast command: a thin layer of flags over the library.
 *
 *   steadfast [flags]
 *       runs the AppWrapper controller (see manager.h for the flags);
 *       --version and --help print and exit.
 *   steadfast apply -f FILE [-n NS] [--kubeconfig PATH]
 *       server-side apply of a YAML manifest (CRDs, samples).
 *   steadfast get appwrappers [-n NS] [--kubeconfig PATH]
 *       phases and conditions of the AppWrappers in a namespace.
 *   steadfast cluster-info [--kubeconfig PATH] [--context NAME]
 *       connects with the configured credentials and prints the API
 *       server's address and version (used by `make demo`).
 *   steadfast lease status [--kubeconfig PATH] [--context NAME]
 *                          [-n NAMESPACE] [--name LEASE] [-o text|json]
 *       prints the election Lease as an operator needs it; the exit code
 *       is 0 when it looks healthy, 1 expired, 2 held by nobody, 3 absent,
 *       4 invalid, 5 when it could not be read, 64 for a usage error.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "steadfast/apply.h"
#include "steadfast/client.h"
#include "steadfast/config.h"
#include "steadfast/election.h"
#include "steadfast/time.h"
#include "steadfast/log.h"
#include "steadfast/controller.h"
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
				return 64; /* usage (2 is a verdict) */
			}
			json = !strcmp(argv[++i], "json");
			continue;
		} else {
			fprintf(stderr, "steadfast: unknown flag %s\n", a);
			usage(stderr);
			return 64; /* usage (2 is a verdict) */
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "steadfast: flag %s needs a value\n", a);
			return 64; /* usage (2 is a verdict) */
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

/* Common flags of the one-shot commands: --kubeconfig, --context, -n. */
typedef struct common_flags {
	const char *kubeconfig, *context, *ns, *file;
} common_flags;

static int parse_common(int argc, char **argv, common_flags *f, int want_file)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char **dst = NULL;
		if (!strcmp(a, "--kubeconfig"))
			dst = &f->kubeconfig;
		else if (!strcmp(a, "--context"))
			dst = &f->context;
		else if (!strcmp(a, "-n") || !strcmp(a, "--namespace"))
			dst = &f->ns;
		else if (want_file && (!strcmp(a, "-f") || !strcmp(a, "--filename")))
			dst = &f->file;
		if (!dst) {
			fprintf(stderr, "steadfast: unknown flag %s (see steadfast --help)\n", a);
			return 2;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "steadfast: flag %s needs a value\n", a);
			return 2;
		}
		*dst = argv[++i];
	}
	if (want_file && !f->file) {
		fprintf(stderr, "steadfast: apply needs -f FILE\n");
		return 2;
	}
	return 0;
}

typedef struct apply_ctx {
	int done;
	int failed;
} apply_ctx;

static void on_applied_doc(void *ud, const sf_apply_result *r)
{
	(void)ud;
	if (r->err)
		fprintf(stderr, "%s/%s: %s\n", r->kind, r->name, r->message);
	else
		printf("%s/%s %s%s%s\n", r->kind, r->name,
		       r->http_status == 201 ? "created" : "applied",
		       r->ns[0] ? " in namespace " : "", r->ns);
}

static void on_applied(void *ud, int failed)
{
	apply_ctx *x = ud;
	x->done = 1;
	x->failed = failed;
}

/* steadfast apply -f FILE: server-side apply of every document. */
static int cmd_apply(int argc, char **argv)
{
	common_flags f = {0};
	int rc = parse_common(argc, argv, &f, 1);
	if (rc)
		return rc;
	FILE *fp = strcmp(f.file, "-") == 0 ? stdin : fopen(f.file, "r");
	if (!fp) {
		fprintf(stderr, "steadfast: %s: %s\n", f.file, strerror(errno));
		return 1;
	}
	sf_buf text;
	sf_buf_init(&text, 64u << 20);
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		if (sf_buf_append(&text, chunk, n) < 0) {
			fprintf(stderr, "steadfast: %s: too large\n", f.file);
			return 1;
		}
	if (fp != stdin)
		fclose(fp);
	oneshot o;
	if (oneshot_open(&o, f.kubeconfig, f.context)) {
		sf_buf_free(&text);
		return 1;
	}
	apply_ctx x = {0};
	char err[512];
	rc = sf_apply_yaml(&o.loop, o.c, text.data ? text.data : "", text.len,
	                   f.ns ? f.ns : o.cfg->namespace, "steadfast-apply", on_applied_doc,
	                   on_applied, &x, err, sizeof(err));
	sf_buf_free(&text);
	if (rc < 0) {
		fprintf(stderr, "steadfast: %s: %s\n", f.file, err);
		oneshot_close(&o);
		return 1;
	}
	while (!x.done && uv_run(&o.loop, UV_RUN_ONCE))
		;
	oneshot_close(&o);
	return x.failed ? 1 : 0;
}

typedef struct get_ctx {
	int done, rc;
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
		fprintf(stderr, "steadfast: %s\n", sf_kube_result_str(r, buf, sizeof(buf)));
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
		printf("%-24s %-12s %-9s %-9s %-9s %s%s%s\n", name, phase[0] ? phase : "-", q, d, u,
		       strcmp(u, "True") == 0 ? reason : "",
		       strcmp(u, "True") == 0 && msg[0] ? ": " : "",
		       strcmp(u, "True") == 0 ? msg : "");
	}
}

/* steadfast get appwrappers [-n NS]: phases and conditions at a glance. */
static int cmd_get(int argc, char **argv)
{
	if (argc < 1 || (strcmp(argv[0], "appwrappers") && strcmp(argv[0], "aw") &&
	                 strcmp(argv[0], "appwrapper"))) {
		fprintf(stderr, "steadfast: get supports appwrappers (aw)\n");
		return 2;
	}
	common_flags f = {0};
	int rc = parse_common(argc - 1, argv + 1, &f, 0);
	if (rc)
		return rc;
	oneshot o;
	if (oneshot_open(&o, f.kubeconfig, f.context))
		return 1;
	get_ctx x = {0};
	sf_kube_req req = {.method = "GET",
	                   .gvr = &SF_GVR_APPWRAPPERS,
	                   .ns = f.ns ? f.ns : o.cfg->namespace,
	                   .timeout_ms = 10000};
	if (oneshot_run(&o, &req, on_aw_list, &x, &x.done))
		x.rc = 1;
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
	if (strcmp(argv[1], "apply") == 0)
		return cmd_apply(argc - 2, argv + 2);
	if (strcmp(argv[1], "get") == 0)
		return cmd_get(argc - 2, argv + 2);
	if (strcmp(argv[1], "cluster-info") == 0)
		return cmd_cluster_info(argc - 2, argv + 2);
	if (strcmp(argv[1], "lease") == 0 && argc >= 3 && strcmp(argv[2], "status") == 0)
		return cmd_lease_status(argc - 3, argv + 3);
	fprintf(stderr, "steadfast: unknown command %s\n", argv[1]);
	usage(stderr);
	return 2;
}
