/*
 * cli.c - what the one-shot commands share (see cli.h): usage errors with
 * their hint, parsing with --help, the kubeconfig flags, and one
 * connection to the API server run until an answer has arrived.
 */
#include "steadfast/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int sf_cli_usage_error(const char *prog, const char *cmd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\nRun '%s%s%s --help' for usage.\n", prog, msg, prog,
	        cmd && cmd[0] ? " " : "", cmd ? cmd : "");
	return SF_CLI_EX_USAGE;
}

void sf_cli_print_usage(const sf_flagset *fs)
{
	sf_buf b;
	sf_buf_init(&b, 0);
	if (sf_flag_usage(fs, &b) == 0 && b.data)
		fputs(b.data, stdout);
	sf_buf_free(&b);
}

int sf_cli_parse(sf_flagset *fs, int argc, char **argv, int *code)
{
	char err[512];
	int rc = sf_flag_parse(fs, argc, argv, err, sizeof(err));
	if (rc == SF_FLAG_HELP) {
		sf_cli_print_usage(fs);
		*code = 0;
		return 1;
	}
	if (rc < 0) {
		*code = sf_cli_usage_error(fs->prog, fs->cmd, "%s", err);
		return 1;
	}
	return 0;
}

void sf_cli_kube_flags_define(sf_flagset *fs, sf_cli_kube_flags *k, int with_ns)
{
	memset(k, 0, sizeof(*k));
	sf_flag_string(fs, &k->kubeconfig, "kubeconfig", 0, "PATH",
	               "kubeconfig; default $KUBECONFIG, else in-cluster,\n"
	               "else ~/.kube/config");
	sf_flag_string(fs, &k->context, "context", 0, "NAME", "kubeconfig context")->def =
	    "the current context";
	if (with_ns)
		sf_flag_string(fs, &k->ns, "namespace", 'n', "NS", "namespace")->def =
		    "the context's namespace";
}

static void on_closed(void *ud)
{
	(void)ud;
}

int sf_cli_open(sf_cli_session *s, const char *prog, const sf_cli_kube_flags *k)
{
	char err[1024];
	s->prog = prog;
	if (sf_kube_config_load(k->kubeconfig, k->context, &s->cfg, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return -1;
	}
	uv_loop_init(&s->loop);
	int rc = sf_kube_client_new(&s->loop, s->cfg, NULL, &s->c);
	if (rc) {
		fprintf(stderr, "%s: client: %s\n", prog, strerror(-rc));
		uv_loop_close(&s->loop);
		sf_kube_config_free(s->cfg);
		return -1;
	}
	return 0;
}

int sf_cli_request(sf_cli_session *s, const sf_kube_req *req, sf_kube_cb cb, void *ud,
                   const int *done)
{
	int rc = sf_kube_do(s->c, req, cb, ud, NULL);
	if (rc) {
		fprintf(stderr, "%s: request: %s\n", s->prog, strerror(-rc));
		return -1;
	}
	while (!*done && uv_run(&s->loop, UV_RUN_ONCE))
		;
	return 0;
}

void sf_cli_close(sf_cli_session *s)
{
	sf_kube_client_close(s->c, on_closed, NULL);
	uv_run(&s->loop, UV_RUN_DEFAULT);
	uv_loop_close(&s->loop);
	sf_kube_config_free(s->cfg);
}
