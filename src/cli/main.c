/*
 * main.c - the steadfast program: the controller when the first argument
 * is a flag (or there is none), else one of the commands of cli.h.
 *
 * Installed as kubectl-steadfast too (a symlink), it is a kubectl plugin:
 * kubectl runs `kubectl steadfast lease status` as `kubectl-steadfast
 * lease status`. It behaves the same under either name; usage texts and
 * hints say "kubectl steadfast" then, as the user typed it.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "steadfast/cli.h"
#include "steadfast/client.h"
#include "steadfast/log.h"
#include "steadfast/manager.h"

static int cmd_version(const char *prog, int argc, char **argv);
static int cmd_help(const char *prog, int argc, char **argv);

static const struct command {
	const char *name;
	const char *synopsis; /* what follows prog in the usage */
	const char *summary;
	sf_cli_cmd run;
} commands[] = {
    {"apply", "apply -f FILE [flags]", "server-side apply of a YAML manifest", sf_cli_apply},
    {"get", "get appwrappers [flags]", "phase and conditions of each AppWrapper", sf_cli_get},
    {"cluster-info", "cluster-info [flags]", "the API server's address and version",
     sf_cli_cluster_info},
    {"lease", "lease status [flags]", "the election Lease, with a verdict as exit code",
     sf_cli_lease},
    {"version", "version", "print the version", cmd_version},
    {"help", "help [COMMAND]", "print a command's usage", cmd_help},
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* `steadfast --help`: the commands, then the controller's flags. */
static void usage(const char *prog)
{
	int w = (int)strlen("[flags]");
	for (size_t i = 0; i < NCOMMANDS; i++)
		if ((int)strlen(commands[i].synopsis) > w)
			w = (int)strlen(commands[i].synopsis);
	printf("Usage: %s %-*s   run the AppWrapper controller\n", prog, w, "[flags]");
	for (size_t i = 0; i < NCOMMANDS; i++)
		printf("       %s %-*s   %s\n", prog, w, commands[i].synopsis, commands[i].summary);
	printf("\nThe controller's flags:\n");
	sf_buf b;
	sf_buf_init(&b, 0);
	if (sf_mgr_usage(&b) == 0 && b.data)
		fputs(b.data, stdout);
	sf_buf_free(&b);
	printf("\nExit codes: 0 success, 1 failure, 64 usage error (lease status: its verdict).\n"
	       "Run '%s COMMAND --help' for a command's flags.\n",
	       prog);
}

/* No command: the controller. */
static int cmd_run(const char *prog, int argc, char **argv)
{
	sf_mgr_opts o;
	static sf_mgr_flags st; /* o points into it for the whole run */
	char err[600];
	int rc = sf_mgr_flags_parse(argc, argv, &o, &st, err, sizeof(err));
	if (rc < 0)
		return sf_cli_usage_error(prog, "", "%s", err);
	if (st.want_help) {
		usage(prog);
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

static int cmd_version(const char *prog, int argc, char **argv)
{
	sf_flagset fs;
	int code;
	sf_flag_init(&fs, prog, "version", "", "Prints the version of steadfast.");
	if (sf_cli_parse(&fs, argc, argv, &code))
		return code;
	printf("steadfast %s\n", SF_VERSION);
	return 0;
}

/* `help CMD ARGS...` is `CMD ARGS... --help`. */
static int cmd_help(const char *prog, int argc, char **argv)
{
	sf_flagset fs;
	int code;
	sf_flag_init(&fs, prog, "help", "[COMMAND [SUBCOMMAND]]",
	             "Prints the usage of COMMAND, or of the program.");
	fs.max_args = 2;
	if (sf_cli_parse(&fs, argc, argv, &code))
		return code;
	if (fs.nargs == 0) {
		usage(prog);
		return 0;
	}
	const struct command *c = find_command(fs.args[0]);
	if (!c)
		return sf_cli_usage_error(prog, "", "unknown command: %s", fs.args[0]);
	char *sub[3] = {(char *)fs.args[1], "--help", NULL};
	return fs.nargs > 1 ? c->run(prog, 2, sub) : c->run(prog, 1, sub + 1);
}

/* The name the user typed: the basename of argv[0], and for a kubectl
 * plugin (kubectl-NAME) "kubectl NAME". */
static const char *invoked_name(const char *argv0, char *buf, size_t n)
{
	const char *base = argv0 ? strrchr(argv0, '/') : NULL;
	base = base ? base + 1 : argv0;
	if (!base || !base[0])
		return "steadfast";
	if (strncmp(base, "kubectl-", 8) == 0 && base[8]) {
		snprintf(buf, n, "kubectl %s", base + 8);
		return buf;
	}
	return base;
}

int main(int argc, char **argv)
{
	/* a peer that closed its socket must be an EPIPE error, not a kill */
	signal(SIGPIPE, SIG_IGN);
	char buf[128];
	const char *prog = invoked_name(argc > 0 ? argv[0] : NULL, buf, sizeof(buf));
	if (argc < 2 || argv[1][0] == '-')
		return cmd_run(prog, argc, argv); /* flags only: the controller */
	const struct command *c = find_command(argv[1]);
	if (!c)
		return sf_cli_usage_error(prog, "", "unknown command: %s", argv[1]);
	return c->run(prog, argc - 2, argv + 2);
}
