/*
 * flag.c - command-line flags (see flag.h).
 *
 * One parser for the controller and the one-shot commands, so that every
 * command spells flags, reports a bad one and prints its usage the same
 * way. Errors name the flag as the user typed it (-n, --namespace,
 * -namespace), since that is what they will look for on their line.
 */
#include "steadfast/flag.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/goparse.h"

void sf_flag_init(sf_flagset *fs, const char *prog, const char *cmd, const char *synopsis,
                  const char *about)
{
	memset(fs, 0, sizeof(*fs));
	fs->prog = prog;
	fs->cmd = cmd ? cmd : "";
	fs->synopsis = synopsis ? synopsis : "";
	fs->about = about;
	sf_flag_bool(fs, &fs->help, "help", 'h', "print this help and exit");
}

static sf_flag *add(sf_flagset *fs, sf_flag_type type, void *dst, const char *name, char shorthand,
                    const char *metavar, const char *usage)
{
	static sf_flag sink; /* what a definition past SF_FLAG_MAX amends */
	if (fs->nflags >= SF_FLAG_MAX) {
		fs->overflow = 1;
		return &sink;
	}
	sf_flag *f = &fs->flags[fs->nflags++];
	*f = (sf_flag){.name = name,
	               .shorthand = shorthand,
	               .type = type,
	               .metavar = metavar,
	               .usage = usage ? usage : "",
	               .dst = dst};
	return f;
}

sf_flag *sf_flag_bool(sf_flagset *fs, int *dst, const char *name, char shorthand, const char *usage)
{
	return add(fs, SF_FLAG_BOOL, dst, name, shorthand, NULL, usage);
}

sf_flag *sf_flag_string(sf_flagset *fs, const char **dst, const char *name, char shorthand,
                        const char *metavar, const char *usage)
{
	return add(fs, SF_FLAG_STRING, dst, name, shorthand, metavar, usage);
}

sf_flag *sf_flag_long(sf_flagset *fs, long *dst, const char *name, char shorthand,
                      const char *metavar, long min, long max, const char *usage)
{
	sf_flag *f = add(fs, SF_FLAG_LONG, dst, name, shorthand, metavar, usage);
	f->min = min;
	f->max = max;
	return f;
}

sf_flag *sf_flag_double(sf_flagset *fs, double *dst, const char *name, char shorthand,
                        const char *metavar, const char *usage)
{
	return add(fs, SF_FLAG_DOUBLE, dst, name, shorthand, metavar, usage);
}

sf_flag *sf_flag_duration(sf_flagset *fs, int64_t *dst, const char *name, char shorthand,
                          const char *metavar, const char *usage)
{
	return add(fs, SF_FLAG_DURATION, dst, name, shorthand, metavar, usage);
}

sf_flag *sf_flag_func(sf_flagset *fs, sf_flag_fn fn, void *ud, const char *name, char shorthand,
                      const char *metavar, const char *usage)
{
	sf_flag *f = add(fs, SF_FLAG_FUNC, ud, name, shorthand, metavar, usage);
	f->fn = fn;
	return f;
}

const sf_flag *sf_flag_lookup(const sf_flagset *fs, const char *name)
{
	for (int i = 0; i < fs->nflags; i++)
		if (strcmp(fs->flags[i].name, name) == 0)
			return &fs->flags[i];
	return NULL;
}

/* The flag "name" (nlen bytes) spelled with ndash dashes: a one-letter name
 * after one dash is a shorthand first, a long name else. */
static sf_flag *find(sf_flagset *fs, const char *name, size_t nlen, int ndash)
{
	if (ndash == 1 && nlen == 1)
		for (int i = 0; i < fs->nflags; i++)
			if (fs->flags[i].shorthand == name[0])
				return &fs->flags[i];
	for (int i = 0; i < fs->nflags; i++)
		if (strlen(fs->flags[i].name) == nlen &&
		    strncmp(fs->flags[i].name, name, nlen) == 0)
			return &fs->flags[i];
	return NULL;
}

/* Go's strconv.ParseBool. */
static int parse_bool(const char *v, int *out)
{
	static const char *const t[] = {"1", "t", "T", "true", "TRUE", "True"};
	static const char *const f[] = {"0", "f", "F", "false", "FALSE", "False"};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (strcmp(v, t[i]) == 0)
			return *out = 1, 0;
		if (strcmp(v, f[i]) == 0)
			return *out = 0, 0;
	}
	return -EINVAL;
}

/* Stores v in f's variable: 0, or -EINVAL with what was wanted in why. */
static int set_value(sf_flag *f, const char *v, char *why, size_t whylen)
{
	char *end;
	switch (f->type) {
	case SF_FLAG_BOOL:
		if (parse_bool(v, f->dst) == 0)
			return 0;
		snprintf(why, whylen, "want true or false");
		return -EINVAL;
	case SF_FLAG_STRING: *(const char **)f->dst = v; return 0;
	case SF_FLAG_LONG: {
		errno = 0;
		long n = strtol(v, &end, 10);
		if (end != v && !*end && !errno && n >= f->min && n <= f->max) {
			*(long *)f->dst = n;
			return 0;
		}
		snprintf(why, whylen, "want an integer from %ld to %ld", f->min, f->max);
		return -EINVAL;
	}
	case SF_FLAG_DOUBLE: {
		double d = strtod(v, &end);
		if (end != v && !*end) {
			*(double *)f->dst = d;
			return 0;
		}
		snprintf(why, whylen, "want a number");
		return -EINVAL;
	}
	case SF_FLAG_DURATION: {
		int64_t ns;
		if (sf_go_duration_parse(v, &ns) == 0 && ns > 0) {
			*(int64_t *)f->dst = ns;
			return 0;
		}
		snprintf(why, whylen, "want a positive duration such as 15s");
		return -EINVAL;
	}
	case SF_FLAG_FUNC:
		snprintf(why, whylen, "not accepted");
		return f->fn(f->dst, v, why, whylen);
	}
	return -EINVAL;
}

/* Records an argument; -EINVAL when the command takes no more. */
static int add_arg(sf_flagset *fs, const char *a, char *err, size_t errlen)
{
	if (fs->nargs >= fs->max_args || fs->nargs >= SF_FLAG_MAX_ARGS) {
		snprintf(err, errlen, "unexpected argument: %s", a);
		return -EINVAL;
	}
	fs->args[fs->nargs++] = a;
	return 0;
}

int sf_flag_parse(sf_flagset *fs, int argc, char **argv, char *err, size_t errlen)
{
	if (fs->overflow) {
		snprintf(err, errlen, "more than %d flags defined", SF_FLAG_MAX);
		return -E2BIG;
	}
	fs->nargs = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] != '-' || a[1] == 0) {
			if (add_arg(fs, a, err, errlen))
				return -EINVAL;
			continue;
		}
		if (strcmp(a, "--") == 0) {
			while (++i < argc)
				if (add_arg(fs, argv[i], err, errlen))
					return -EINVAL;
			break;
		}
		int ndash = a[1] == '-' ? 2 : 1;
		const char *name = a + ndash;
		const char *eq = strchr(name, '=');
		size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
		if (nlen == 0 || name[0] == '-') {
			snprintf(err, errlen, "bad flag syntax: %s", a);
			return -EINVAL;
		}
		int typed = (int)(nlen + (size_t)ndash); /* the flag as typed, without "=..." */
		sf_flag *f = find(fs, name, nlen, ndash);
		if (!f) {
			snprintf(err, errlen, "unknown flag: %.*s", typed, a);
			return -EINVAL;
		}
		const char *v = eq ? eq + 1 : NULL;
		if (!v && f->type == SF_FLAG_BOOL)
			v = "true";
		if (!v) {
			if (i + 1 >= argc) {
				snprintf(err, errlen, "flag needs an argument: %.*s", typed, a);
				return -EINVAL;
			}
			v = argv[++i];
		}
		char why[160];
		if (set_value(f, v, why, sizeof(why)) != 0) {
			snprintf(err, errlen, "invalid value \"%s\" for %.*s: %s", v, typed, a,
			         why);
			return -EINVAL;
		}
		f->set++;
		if (f->dst == &fs->help && fs->help)
			return SF_FLAG_HELP;
	}
	return 0;
}

/* "  -n, --namespace NS" or "      --count N" */
static int left_column(const sf_flag *f, char *buf, size_t n)
{
	char sh[8] = "    ";
	if (f->shorthand)
		snprintf(sh, sizeof(sh), "-%c, ", f->shorthand);
	return snprintf(buf, n, "  %s--%s%s%s", sh, f->name, f->metavar ? " " : "",
	                f->metavar ? f->metavar : "");
}

int sf_flag_usage_flags(const sf_flagset *fs, sf_buf *out)
{
	/* sorted by name, as Go's and kubectl's usage texts are */
	const sf_flag *order[SF_FLAG_MAX];
	int n = fs->nflags, width = 0;
	for (int i = 0; i < n; i++) {
		int j = i;
		while (j > 0 && strcmp(order[j - 1]->name, fs->flags[i].name) > 0) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = &fs->flags[i];
		char left[128];
		int w = left_column(&fs->flags[i], left, sizeof(left));
		if (w > width)
			width = w;
	}
	int rc = 0;
	for (int i = 0; i < n && !rc; i++) {
		const sf_flag *f = order[i];
		char left[128];
		left_column(f, left, sizeof(left));
		rc = sf_buf_printf(out, "%-*s   ", width, left);
		const char *u = f->usage;
		for (const char *nl; !rc && (nl = strchr(u, '\n')); u = nl + 1)
			rc = sf_buf_printf(out, "%.*s\n%*s", (int)(nl - u), u, width + 3, "");
		if (!rc)
			rc = sf_buf_printf(out, "%s%s%s%s\n", u, f->def ? " (default " : "",
			                   f->def ? f->def : "", f->def ? ")" : "");
	}
	return rc;
}

int sf_flag_usage(const sf_flagset *fs, sf_buf *out)
{
	int rc = sf_buf_printf(out, "Usage: %s%s%s%s%s\n", fs->prog, fs->cmd[0] ? " " : "", fs->cmd,
	                       fs->synopsis[0] ? " " : "", fs->synopsis);
	if (!rc && fs->about)
		rc = sf_buf_printf(out, "\n%s%s", fs->about,
		                   fs->about[0] && fs->about[strlen(fs->about) - 1] == '\n' ? ""
		                                                                            : "\n");
	if (!rc)
		rc = sf_buf_puts(out, "\nFlags:\n");
	if (!rc)
		rc = sf_flag_usage_flags(fs, out);
	return rc;
}
