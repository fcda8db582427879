/*
 * test_cli.c - the steadfast command line, through the real binary: every
 * command answers --help (usage on stdout, exit 0), every usage error
 * exits 64 with the problem and a hint on stderr, and the binary behaves
 * the same when invoked as the kubectl plugin kubectl-steadfast.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "steadfast/client.h"
#include "steadfast/time.h"
#include "tl.h"

TestSuite(cli, .timeout = 120);

static const char *bin(void)
{
	static char path[PATH_MAX];
	const char *b = getenv("STEADFAST_BIN") ? getenv("STEADFAST_BIN") : "build/steadfast";
	cr_assert(realpath(b, path), "no binary at %s", b);
	return path;
}

/* Runs "PROG ARGS" with stdout in out and stderr in err; returns the exit
 * code. */
static int run(const char *prog, const char *args, sf_buf *out, sf_buf *err)
{
	char errpath[] = "/tmp/sf-cli-err-XXXXXX";
	int fd = mkstemp(errpath);
	cr_assert(fd >= 0);
	close(fd);
	int st = tl_sh(out, "%s %s 2>%s </dev/null", prog, args, errpath);
	cr_assert(st >= 0, "%s %s did not exit", prog, args);
	FILE *f = fopen(errpath, "r");
	cr_assert(f);
	sf_buf_reset(err);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		cr_assert_eq(sf_buf_append(err, chunk, n), 0);
	if (!err->data)
		cr_assert_eq(sf_buf_puts(err, ""), 0);
	fclose(f);
	unlink(errpath);
	return st;
}

static const struct help_case {
	const char *args;
	const char *usage; /* the usage line names the command so */
	const char *flag;  /* a flag the text lists */
} helps[] = {
    {"--help", "Usage: steadfast [flags]", "--leader-elect-renew-deadline"},
    {"-h", "Usage: steadfast [flags]", "--kube-api-burst"},
    {"help", "Usage: steadfast [flags]", "--leader-election-id"},
    {"help lease status", "Usage: steadfast lease status", "--output"},
    {"help apply", "Usage: steadfast apply", "--filename"},
    {"lease status --help", "Usage: steadfast lease status", "--name"},
    {"lease status -h", "Usage: steadfast lease status", "--namespace"},
    {"lease --help", "Usage: steadfast lease", "status"},
    {"apply --help", "Usage: steadfast apply", "-f, --filename"},
    {"apply -f x.yaml --help", "Usage: steadfast apply", "--kubeconfig"},
    {"get --help", "Usage: steadfast get", "appwrappers"},
    {"get appwrappers --help", "Usage: steadfast get", "-n, --namespace"},
    {"cluster-info --help", "Usage: steadfast cluster-info", "--context"},
    {"version --help", "Usage: steadfast version", "--help"},
    {"help help", "Usage: steadfast help", "COMMAND"},
};

Test(cli, help_for_every_command)
{
	sf_buf out, err;
	sf_buf_init(&out, 0);
	sf_buf_init(&err, 0);
	for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++) {
		const struct help_case *h = &helps[i];
		int st = run(bin(), h->args, &out, &err);
		cr_expect_eq(st, 0, "steadfast %s: exit %d, stderr %s", h->args, st, err.data);
		cr_expect(strstr(out.data, h->usage), "steadfast %s: no \"%s\" in:\n%s", h->args,
		          h->usage, out.data);
		cr_expect(strstr(out.data, h->flag), "steadfast %s: no \"%s\" in:\n%s", h->args,
		          h->flag, out.data);
		cr_expect_eq(err.len, 0, "steadfast %s wrote to stderr: %s", h->args, err.data);
	}
	sf_buf_free(&out);
	sf_buf_free(&err);
}

static const struct usage_case {
	const char *args;
	const char *problem; /* on stderr */
	const char *hint;    /* the command the hint names */
} usages[] = {
    {"--bogus", "--bogus", "steadfast"},
    {"--leader-elect-lease-duration=15", "leader-elect-lease-duration", "steadfast"},
    {"--kubeconfig", "--kubeconfig", "steadfast"},
    {"frobnicate", "frobnicate", "steadfast"},
    {"help frobnicate", "frobnicate", "steadfast"},
    {"lease status --bogus", "--bogus", "steadfast lease status"},
    {"lease status -n", "-n", "steadfast lease status"},
    {"lease status -o yaml", "yaml", "steadfast lease status"},
    {"lease status extra", "extra", "steadfast lease status"},
    {"lease", "status", "steadfast lease"},
    {"lease frobnicate", "frobnicate", "steadfast lease"},
    {"apply", "-f", "steadfast apply"},
    {"apply -f", "-f", "steadfast apply"},
    {"apply -f x.yaml --bogus", "--bogus", "steadfast apply"},
    {"get", "appwrappers", "steadfast get"},
    {"get pods", "pods", "steadfast get"},
    {"get aw --bogus", "--bogus", "steadfast get"},
    {"cluster-info --bogus", "--bogus", "steadfast cluster-info"},
    {"cluster-info --kubeconfig", "--kubeconfig", "steadfast cluster-info"},
    {"version --bogus", "--bogus", "steadfast version"},
};

Test(cli, usage_errors_exit_64_with_a_hint)
{
	sf_buf out, err;
	sf_buf_init(&out, 0);
	sf_buf_init(&err, 0);
	for (size_t i = 0; i < sizeof(usages) / sizeof(usages[0]); i++) {
		const struct usage_case *u = &usages[i];
		int st = run(bin(), u->args, &out, &err);
		char hint[128];
		snprintf(hint, sizeof(hint), "Run '%s --help' for usage.", u->hint);
		cr_expect_eq(st, 64, "steadfast %s: exit %d, stderr %s", u->args, st, err.data);
		cr_expect(strstr(err.data, u->problem), "steadfast %s: no \"%s\" in stderr: %s",
		          u->args, u->problem, err.data);
		cr_expect(strstr(err.data, hint), "steadfast %s: no \"%s\" in stderr: %s", u->args,
		          hint, err.data);
		cr_expect_eq(out.len, 0, "steadfast %s wrote to stdout: %s", u->args, out.data);
	}
	sf_buf_free(&out);
	sf_buf_free(&err);
}

Test(cli, version_and_go_flag_syntax)
{
	sf_buf out, err;
	sf_buf_init(&out, 0);
	sf_buf_init(&err, 0);
	cr_assert_eq(run(bin(), "version", &out, &err), 0, "%s", err.data);
	cr_assert(strstr(out.data, "steadfast " SF_VERSION), "%s", out.data);
	cr_assert_eq(run(bin(), "--version", &out, &err), 0, "%s", err.data);
	cr_assert(strstr(out.data, "steadfast " SF_VERSION), "%s", out.data);
	cr_assert_eq(run(bin(), "-version=true", &out, &err), 0, "%s", err.data);
	cr_assert(strstr(out.data, SF_VERSION), "%s", out.data);
	/* an unreadable kubeconfig is not a usage error: 1 (5 for lease status) */
	cr_assert_eq(run(bin(), "cluster-info --kubeconfig=/nonexistent/kubeconfig", &out, &err), 1,
	             "%s", err.data);
	cr_assert(strstr(err.data, "/nonexistent/kubeconfig"), "%s", err.data);
	sf_buf_free(&out);
	sf_buf_free(&err);
}

static void lease(tl_kube *k, const char *ns, const char *name, const char *holder)
{
	char now[40], body[768];
	sf_time_rfc3339micro(sf_wall_ns(), now, sizeof(now));
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
	         "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"holderIdentity\":\"%s\","
	         "\"leaseDurationSeconds\":15,\"acquireTime\":\"%s\",\"renewTime\":\"%s\"}}",
	         name, holder, now, now);
	tl_res r = {0};
	cr_assert_eq(sf_kube_create(k->client, &SF_GVR_LEASES, ns, body, tl_res_cb, &r, NULL), 0);
	tl_wait(&k->loop, &r, 30000);
	cr_assert_eq(r.http_status, 201, "%s", r.message);
	tl_res_clear(&r);
}

/* kubectl runs a plugin kubectl-NAME found on PATH with argv[0] its path
 * and the rest of its command line: `kubectl steadfast lease status -n NS`
 * is `kubectl-steadfast lease status -n NS`. */
Test(cli, kubectl_plugin_symlink)
{
	char dir[] = "/tmp/sf-cli-plugin-XXXXXX", link[PATH_MAX], prog[PATH_MAX + 64];
	cr_assert(mkdtemp(dir));
	snprintf(link, sizeof(link), "%s/kubectl-steadfast", dir);
	cr_assert_eq(symlink(bin(), link), 0);
	snprintf(prog, sizeof(prog), "PATH='%s':\"$PATH\" kubectl-steadfast", dir);

	sf_buf out, err;
	sf_buf_init(&out, 0);
	sf_buf_init(&err, 0);
	cr_assert_eq(run(prog, "lease status --help", &out, &err), 0, "%s", err.data);
	cr_assert(strstr(out.data, "Usage: kubectl steadfast lease status"), "%s", out.data);
	cr_assert_eq(run(prog, "--help", &out, &err), 0, "%s", err.data);
	cr_assert(strstr(out.data, "Usage: kubectl steadfast [flags]"), "%s", out.data);
	cr_assert(strstr(out.data, "kubectl steadfast lease status"), "%s", out.data);
	cr_assert_eq(run(prog, "lease status --bogus", &out, &err), 64, "%s", err.data);
	cr_assert(strstr(err.data, "Run 'kubectl steadfast lease status --help' for usage."), "%s",
	          err.data);
	cr_assert_eq(run(prog, "version", &out, &err), 0, "%s", err.data);
	cr_assert(strstr(out.data, SF_VERSION), "%s", out.data);

	tl_kube k;
	tl_kube_open(&k, NULL, NULL);
	char ns[64], args[1024];
	tl_namespace(&k, "it-cli", ns, sizeof(ns));
	lease(&k, ns, "held", "pod-p_42");
	snprintf(args, sizeof(args), "lease status --kubeconfig='%s' --namespace %s --name=held",
	         tl_env("KUBECONFIG"), ns);
	cr_assert_eq(run(prog, args, &out, &err), 0, "%s%s", out.data, err.data);
	cr_assert(strstr(out.data, "pod-p_42"), "%s", out.data);
	snprintf(args, sizeof(args), "lease status --kubeconfig '%s' -n=%s --name absent -o json",
	         tl_env("KUBECONFIG"), ns);
	cr_assert_eq(run(prog, args, &out, &err), 3, "%s%s", out.data, err.data);
	cr_assert(strstr(out.data, "\"exists\":false"), "%s", out.data);

	/* and through kubectl itself, where one is installed */
	if (tl_sh(NULL, "command -v kubectl >/dev/null") == 0) {
		snprintf(prog, sizeof(prog), "PATH='%s':\"$PATH\" kubectl steadfast", dir);
		snprintf(args, sizeof(args), "lease status --kubeconfig '%s' -n %s --name held",
		         tl_env("KUBECONFIG"), ns);
		cr_assert_eq(run(prog, args, &out, &err), 0, "%s%s", out.data, err.data);
		cr_assert(strstr(out.data, "pod-p_42"), "%s", out.data);
		cr_assert_eq(run(prog, "lease status --help", &out, &err), 0, "%s", err.data);
		cr_assert(strstr(out.data, "Usage: kubectl steadfast lease status"), "%s",
		          out.data);
	} else {
		cr_log_info("no kubectl on PATH: the plugin was run by its name only");
	}
	tl_namespace_delete(&k, ns);
	tl_kube_close(&k);

	sf_buf_free(&out);
	sf_buf_free(&err);
	unlink(link);
	rmdir(dir);
}
