/*
 * flag.h - command-line flags for every steadfast command: define the
 * flags of a command (name, one-letter shorthand, type, usage text),
 * parse argv, print the usage.
 *
 * The syntax is Go's flag package's, which controller-runtime based
 * controllers use, plus the kubectl-style shorthands:
 *   -flag, --flag               a boolean set to true; any other type takes
 *   -flag=V, --flag=V           the value after '=' or the next argument
 *   -flag V, --flag V
 *   --flag=false                booleans take a value only after '='
 *   -x, -x V, -x=V              the shorthand x (one dash only)
 *   --                          ends the flags: what follows is arguments
 *   -                           an argument (e.g. "-f -" for stdin)
 * Arguments may stand between flags (as kubectl allows). -h and --help are
 * defined by sf_flag_init.
 *
 * A flagset is a plain struct with room for SF_FLAG_MAX flags; it borrows
 * every string given to it (usually literals) and the variables flags are
 * bound to. A variable keeps its value when its flag is absent, so the
 * caller sets the defaults before parsing; `def` is only what the usage
 * text shows as the default.
 */
#ifndef STEADFAST_FLAG_H
#define STEADFAST_FLAG_H

#include <stddef.h>
#include <stdint.h>

#include "steadfast/buf.h"

#define SF_FLAG_MAX 32
#define SF_FLAG_MAX_ARGS 8
#define SF_FLAG_HELP 1 /* sf_flag_parse: -h or --help was given */

typedef enum sf_flag_type {
	SF_FLAG_BOOL,     /* int * (0 or 1) */
	SF_FLAG_STRING,   /* const char ** (points into argv) */
	SF_FLAG_LONG,     /* long *, within [min, max] */
	SF_FLAG_DOUBLE,   /* double * */
	SF_FLAG_DURATION, /* int64_t * nanoseconds, a positive Go duration (15s, 1m30s) */
	SF_FLAG_FUNC,     /* fn(ud, value): anything else */
} sf_flag_type;

/* Parses value for a SF_FLAG_FUNC flag: 0, or -EINVAL with what was
 * wanted in why ("want text or json"). */
typedef int (*sf_flag_fn)(void *ud, const char *value, char *why, size_t whylen);

typedef struct sf_flag {
	const char *name; /* long name, without dashes */
	char shorthand;   /* -x, or 0 */
	sf_flag_type type;
	const char *metavar; /* the value in the usage text ("PATH"); NULL for booleans */
	const char *usage;   /* one line or several ('\n') */
	const char *def;     /* the default as usage shows it; NULL: not shown */
	void *dst;           /* see sf_flag_type; the fn's ud for SF_FLAG_FUNC */
	sf_flag_fn fn;
	long min, max;
	int set; /* how many times the command line gave it */
} sf_flag;

typedef struct sf_flagset {
	const char *prog;     /* the name the user typed: "steadfast", "kubectl steadfast" */
	const char *cmd;      /* "lease status"; "" for the bare program */
	const char *synopsis; /* what follows "prog cmd" in the usage line: "[flags]" */
	const char *about;    /* a paragraph under the usage line, or NULL */
	sf_flag flags[SF_FLAG_MAX];
	int nflags;
	int overflow; /* more than SF_FLAG_MAX defined: sf_flag_parse fails */
	int help;
	int max_args;                       /* arguments allowed (0 .. SF_FLAG_MAX_ARGS) */
	const char *args[SF_FLAG_MAX_ARGS]; /* the arguments, in order (borrowed from argv) */
	int nargs;
} sf_flagset;

/* An empty flagset with -h/--help; max_args is 0. */
void sf_flag_init(sf_flagset *fs, const char *prog, const char *cmd, const char *synopsis,
                  const char *about);

/* Define a flag. The returned flag may be amended (->def); it stays valid
 * as long as fs. */
sf_flag *sf_flag_bool(sf_flagset *fs, int *dst, const char *name, char shorthand,
                      const char *usage);
sf_flag *sf_flag_string(sf_flagset *fs, const char **dst, const char *name, char shorthand,
                        const char *metavar, const char *usage);
sf_flag *sf_flag_long(sf_flagset *fs, long *dst, const char *name, char shorthand,
                      const char *metavar, long min, long max, const char *usage);
sf_flag *sf_flag_double(sf_flagset *fs, double *dst, const char *name, char shorthand,
                        const char *metavar, const char *usage);
sf_flag *sf_flag_duration(sf_flagset *fs, int64_t *dst, const char *name, char shorthand,
                          const char *metavar, const char *usage);
sf_flag *sf_flag_func(sf_flagset *fs, sf_flag_fn fn, void *ud, const char *name, char shorthand,
                      const char *metavar, const char *usage);

/* The flag called name (long name), or NULL. */
const sf_flag *sf_flag_lookup(const sf_flagset *fs, const char *name);

/* Parses argv[0..argc) (the arguments after the command's name). Returns
 * 0; SF_FLAG_HELP as soon as -h/--help is seen; or -EINVAL with err
 * naming the problem as the user typed it: "unknown flag: --bogus",
 * "flag needs an argument: -n", "invalid value \"yaml\" for -o: want text
 * or json", "unexpected argument: extra". */
int sf_flag_parse(sf_flagset *fs, int argc, char **argv, char *err, size_t errlen);

/* The whole usage text: "Usage: prog cmd synopsis", the about paragraph,
 * and "Flags:" with the flag table. */
int sf_flag_usage(const sf_flagset *fs, sf_buf *out);
/* The flag table alone: one entry per flag, "  -n, --namespace NS  usage
 * (default x)", usage columns aligned. */
int sf_flag_usage_flags(const sf_flagset *fs, sf_buf *out);

#endif
