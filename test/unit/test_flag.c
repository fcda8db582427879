/*
 * test_flag.c - the flag module every command parses with: Go flag syntax
 * and shorthands, "--", arguments between flags, typed values, the error
 * texts, -h/--help, and the generated usage text.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "steadfast/flag.h"

typedef struct vals {
	int verbose, dry;
	const char *ns, *file;
	long count;
	double qps;
	int64_t wait;
	int json;
} vals;

static int set_output(void *ud, const char *v, char *why, size_t n)
{
	if (strcmp(v, "json") && strcmp(v, "text")) {
		snprintf(why, n, "want text or json");
		return -EINVAL;
	}
	*(int *)ud = !strcmp(v, "json");
	return 0;
}

static void define(sf_flagset *fs, vals *v)
{
	memset(v, 0, sizeof(*v));
	v->count = 7;
	sf_flag_init(fs, "steadfast", "demo", "[flags] [ARG]", "Does nothing, well.");
	fs->max_args = 2;
	sf_flag_bool(fs, &v->verbose, "verbose", 'v', "say more");
	sf_flag_bool(fs, &v->dry, "dry-run", 0, "change nothing")->def = "false";
	sf_flag_string(fs, &v->ns, "namespace", 'n', "NS", "the namespace\nsecond line");
	sf_flag_string(fs, &v->file, "filename", 'f', "FILE", "a manifest");
	sf_flag_long(fs, &v->count, "count", 0, "N", 1, 100, "how many")->def = "7";
	sf_flag_double(fs, &v->qps, "qps", 0, "Q", "requests per second");
	sf_flag_duration(fs, &v->wait, "wait", 0, "D", "how long");
	sf_flag_func(fs, set_output, &v->json, "output", 'o', "FORMAT", "text or json");
}

static int parse(sf_flagset *fs, vals *v, char *err, size_t n, ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;
	va_start(ap, n);
	for (const char *a; (a = va_arg(ap, const char *));)
		argv[argc++] = (char *)a;
	va_end(ap);
	define(fs, v);
	err[0] = 0;
	return sf_flag_parse(fs, argc, argv, err, n);
}

Test(flag, every_spelling)
{
	sf_flagset fs;
	vals v;
	char err[256];
	cr_assert_eq(parse(&fs, &v, err, sizeof(err), "-verbose", "--namespace=a", "-f", "x.yaml",
	                   "--count", "42", "-qps=2.5", "--wait", "1m30s", "-o", "json", NULL),
	             0, "%s", err);
	cr_assert_eq(v.verbose, 1);
	cr_assert_str_eq(v.ns, "a");
	cr_assert_str_eq(v.file, "x.yaml");
	cr_assert_eq(v.count, 42);
	cr_assert_eq(v.qps, 2.5);
	cr_assert_eq(v.wait, 90 * (int64_t)1000000000);
	cr_assert_eq(v.json, 1);
	cr_assert_eq(fs.nargs, 0);
	cr_assert_eq(sf_flag_lookup(&fs, "namespace")->set, 1);
	cr_assert_eq(sf_flag_lookup(&fs, "dry-run")->set, 0);

	/* shorthands: -x V, -x=V; long names with one dash or two */
	cr_assert_eq(parse(&fs, &v, err, sizeof(err), "-n=b", "-v", "--output=text", "-namespace",
	                   "c", NULL),
	             0, "%s", err);
	cr_assert_str_eq(v.ns, "c", "the last one wins");
	cr_assert_eq(v.verbose, 1);
	cr_assert_eq(v.json, 0);
	cr_assert_eq(sf_flag_lookup(&fs, "namespace")->set, 2);

	/* booleans: bare is true, a value only after '=' */
	cr_assert_eq(parse(&fs, &v, err, sizeof(err), "--verbose=false", "--dry-run=T", NULL), 0,
	             "%s", err);
	cr_assert_eq(v.verbose, 0);
	cr_assert_eq(v.dry, 1);
	cr_assert_eq(parse(&fs, &v, err, sizeof(err), "--verbose", "false", NULL), 0, "%s", err);
	cr_assert_eq(v.verbose, 1);
	cr_assert_eq(fs.nargs, 1, "false after a bare boolean is an argument");
	cr_assert_str_eq(fs.args[0], "false");

	/* a value may start with a dash when it is the next argument */
	cr_assert_eq(parse(&fs, &v, err, sizeof(err), "-f", "-", "--namespace", "--x", NULL), 0,
	             "%s", err);
	cr_assert_str_eq(v.file, "-");
	cr_assert_str_eq(v.ns, "--x");
	cr_assert_eq(v.count, 7, "an absent flag keeps the caller's default");
}

Test(flag, arguments_and_double_dash)
{
	sf_flagset fs;
	vals v;
	char err[256];
	cr_assert_eq(parse(&fs, &v, err, sizeof(err), "first", "-n", "a", "-", NULL), 0, "%s", err);
	cr_assert_eq(fs.nargs, 2);
	cr_assert_str_eq(fs.args[0], "first");
	cr_assert_str_eq(fs.args[1], "-", "a lone dash is an argument");
	cr_assert_str_eq(v.ns, "a");
	cr_assert_eq(parse(&fs, &v, err, sizeof(err), "-v", "--", "--namespace=x", "-h", NULL), 0,
	             "%s", err);
	cr_assert_eq(fs.nargs, 2);
	cr_assert_str_eq(fs.args[0], "--namespace=x");
	cr_assert_str_eq(fs.args[1], "-h", "-h after -- is an argument, not help");
	cr_assert_null(v.ns);
	cr_assert_eq(fs.help, 0);
	cr_assert_eq(parse(&fs, &v, err, sizeof(err), "a", "b", "c", NULL), -EINVAL);
	cr_assert_str_eq(err, "unexpected argument: c");
}

Test(flag, errors_name_the_flag_as_typed)
{
	static const struct {
		const char *a, *b, *want;
	} cases[] = {
	    {"--bogus", NULL, "unknown flag: --bogus"},
	    {"-bogus=1", NULL, "unknown flag: -bogus"},
	    {"-x", NULL, "unknown flag: -x"},
	    {"--n", "a", "unknown flag: --n"}, /* shorthands take one dash */
	    {"---namespace", "a", "bad flag syntax: ---namespace"},
	    {"-=a", NULL, "bad flag syntax: -=a"},
	    {"-n", NULL, "flag needs an argument: -n"},
	    {"--namespace", NULL, "flag needs an argument: --namespace"},
	    {"--verbose=maybe", NULL, "invalid value \"maybe\" for --verbose: want true or false"},
	    {"--count=0", NULL, "invalid value \"0\" for --count: want an integer from 1 to 100"},
	    {"--count", "1e3", "invalid value \"1e3\" for --count: want an integer from 1 to 100"},
	    {"--qps", "fast", "invalid value \"fast\" for --qps: want a number"},
	    {"--wait=15", NULL,
	     "invalid value \"15\" for --wait: want a positive duration such as 15s"},
	    {"--wait=-1s", NULL,
	     "invalid value \"-1s\" for --wait: want a positive duration such as 15s"},
	    {"-o", "yaml", "invalid value \"yaml\" for -o: want text or json"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sf_flagset fs;
		vals v;
		char err[256];
		cr_expect_eq(parse(&fs, &v, err, sizeof(err), cases[i].a, cases[i].b, NULL),
		             -EINVAL, "%s", cases[i].a);
		cr_expect_str_eq(err, cases[i].want);
	}
}

Test(flag, help_stops_parsing)
{
	sf_flagset fs;
	vals v;
	char err[256];
	cr_assert_eq(parse(&fs, &v, err, sizeof(err), "--help", "--bogus", NULL), SF_FLAG_HELP);
	cr_assert_eq(fs.help, 1);
	cr_assert_eq(parse(&fs, &v, err, sizeof(err), "-n", "a", "-h", NULL), SF_FLAG_HELP);
	cr_assert_eq(parse(&fs, &v, err, sizeof(err), "-help", NULL), SF_FLAG_HELP);
	cr_assert_eq(parse(&fs, &v, err, sizeof(err), "--help=false", NULL), 0, "%s", err);
	cr_assert_eq(fs.help, 0);
	cr_assert_eq(parse(&fs, &v, err, sizeof(err), "--bogus", "--help", NULL), -EINVAL,
	             "an error before --help is reported");
}

Test(flag, usage_text)
{
	sf_flagset fs;
	vals v;
	define(&fs, &v);
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_assert_eq(sf_flag_usage(&fs, &b), 0);
	cr_assert_str_eq(b.data, "Usage: steadfast demo [flags] [ARG]\n"
	                         "\n"
	                         "Does nothing, well.\n"
	                         "\n"
	                         "Flags:\n"
	                         "      --count N         how many (default 7)\n"
	                         "      --dry-run         change nothing (default false)\n"
	                         "  -f, --filename FILE   a manifest\n"
	                         "  -h, --help            print this help and exit\n"
	                         "  -n, --namespace NS    the namespace\n"
	                         "                        second line\n"
	                         "  -o, --output FORMAT   text or json\n"
	                         "      --qps Q           requests per second\n"
	                         "  -v, --verbose         say more\n"
	                         "      --wait D          how long\n");
	sf_buf_reset(&b);
	sf_flag_init(&fs, "kubectl steadfast", "", "[flags]", NULL);
	cr_assert_eq(sf_flag_usage(&fs, &b), 0);
	cr_assert_str_eq(b.data, "Usage: kubectl steadfast [flags]\n"
	                         "\n"
	                         "Flags:\n"
	                         "  -h, --help   print this help and exit\n");
	sf_buf_free(&b);
}

Test(flag, too_many_flags)
{
	sf_flagset fs;
	int b[SF_FLAG_MAX + 1];
	char names[SF_FLAG_MAX + 1][16], err[128];
	sf_flag_init(&fs, "p", "", "", NULL);
	for (int i = 0; i < SF_FLAG_MAX + 1; i++) {
		snprintf(names[i], sizeof(names[i]), "f%d", i);
		cr_assert_not_null(sf_flag_bool(&fs, &b[i], names[i], 0, "x"));
	}
	cr_assert(fs.overflow);
	cr_assert_eq(sf_flag_parse(&fs, 0, NULL, err, sizeof(err)), -E2BIG);
}
