/*
 * fuzz_kubeconfig.c - libFuzzer target for the kubeconfig parser.
 *
 * Parses the input as a kubeconfig (relative paths resolve in an empty temp
 * directory made once), asks for the token when that worked, frees the
 * result, and aborts if any file descriptor (e.g. a memfd for inline
 * certificate data) is left open afterwards. An exec plugin the input
 * describes is never run (the input would choose the command); the input
 * is parsed as the plugin's ExecCredential output instead, which is the
 * other untrusted text this module reads.
 */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/config.h"
#include "steadfast/credentials.h"
#include "steadfast/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base_dir[64];

static void quiet(sf_log_level level, const char *line, void *ud)
{
	(void)level;
	(void)line;
	(void)ud;
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		abort();
	int n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!base_dir[0]) {
		snprintf(base_dir, sizeof(base_dir), "/tmp/fuzz-kubeconfig-XXXXXX");
		if (!mkdtemp(base_dir))
			abort();
		sf_log_set_sink(quiet, NULL);
	}
	int before = open_fds();
	sf_kube_config *c = NULL;
	char err[512];
	err[0] = '\0';
	const char *ctx = size && data[0] == '#' ? "fuzz" : NULL;
	int rc = sf_kube_config_parse((const char *)data, size, "fuzz", base_dir, ctx, &c, err,
	                              sizeof(err));
	if (rc == 0) {
		if (!c || !c->server || !c->namespace || !c->context || !c->source)
			abort();
		if (!c->exec) {
			int e;
			(void)sf_kube_config_token(c, &e);
		}
		sf_kube_config_free(c);
	} else if (c || rc > 0 || !memchr(err, '\0', sizeof(err)) || !err[0]) {
		abort();
	}
	sf_cred_exec *x = sf_cred_exec_new();
	if (!x || !(x->api_version = strdup("client.authentication.k8s.io/v1")))
		abort();
	err[0] = '\0';
	rc = sf_cred_exec_parse(x, (const char *)data, size, err, sizeof(err));
	if (rc == 0 ? !x->valid || (!x->token && !x->cert_path) : rc > 0 || !err[0])
		abort();
	sf_cred_exec_free(x);
	if (open_fds() != before)
		abort();
	return 0;
}
