/*
 * apply.c - `steadfast apply -f FILE`: server-side apply of every document
 * of a YAML manifest (the CRD, the samples), one line per object. Exit 1
 * when the file cannot be read or any object is refused.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "steadfast/apply.h"
#include "steadfast/cli.h"

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

/* The whole of path ("-": stdin) in text: 0, or -1 after printing why. */
static int read_all(const char *prog, const char *path, sf_buf *text)
{
	FILE *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (!fp) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return -1;
	}
	char chunk[65536];
	size_t n;
	int rc = 0;
	while (!rc && (n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		if (sf_buf_append(text, chunk, n) < 0) {
			fprintf(stderr, "%s: %s: too large\n", prog, path);
			rc = -1;
		}
	if (!rc && ferror(fp)) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		rc = -1;
	}
	if (fp != stdin)
		fclose(fp);
	return rc;
}

int sf_cli_apply(const char *prog, int argc, char **argv)
{
	sf_flagset fs;
	sf_cli_kube_flags k;
	const char *file = NULL;
	int code;
	sf_flag_init(&fs, prog, "apply", "-f FILE [flags]",
	             "Server-side apply (field manager steadfast-apply) of every document of a\n"
	             "YAML manifest; namespaced objects without a namespace go to -n. Exit 1 when\n"
	             "the file cannot be read or any object is refused.");
	sf_cli_kube_flags_define(&fs, &k, 1);
	sf_flag_string(&fs, &file, "filename", 'f', "FILE", "the manifest; - for stdin");
	if (sf_cli_parse(&fs, argc, argv, &code))
		return code;
	if (!file)
		return sf_cli_usage_error(prog, "apply", "apply needs -f FILE");
	sf_buf text;
	sf_buf_init(&text, 64u << 20);
	if (read_all(prog, file, &text)) {
		sf_buf_free(&text);
		return 1;
	}
	sf_cli_session s;
	if (sf_cli_open(&s, prog, &k)) {
		sf_buf_free(&text);
		return 1;
	}
	apply_ctx x = {0};
	char err[512];
	int rc = sf_apply_yaml(&s.loop, s.c, text.data ? text.data : "", text.len,
	                       k.ns ? k.ns : s.cfg->namespace, "steadfast-apply", on_applied_doc,
	                       on_applied, &x, err, sizeof(err));
	sf_buf_free(&text);
	if (rc < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, file, err);
		sf_cli_close(&s);
		return 1;
	}
	while (!x.done && uv_run(&s.loop, UV_RUN_ONCE))
		;
	sf_cli_close(&s);
	return x.failed ? 1 : 0;
}
