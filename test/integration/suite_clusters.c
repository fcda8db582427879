/*
 * suite_clusters.c - the control planes some integration suites run of
 * their own (test_kueue.c: KUEUE=true; test_node.c: KUBELET=true;
 * test_upgrade.c: KUEUE=true), one per
 * test run, not one per test.
 *
 * Criterion runs each test in a process of its own, so a suite cannot
 * keep a cluster in memory: before any test the runner names a state dir
 * per suite (/tmp/steadfast-<suite>.<runner pid>) in the suite's
 * environment variable, unless the caller set it (then the caller's
 * cluster is used and kept); the suite's first test starts it (up.sh does
 * nothing when it is up), and once the suite is done the runner stops
 * the one it named. The hooks live here, in one file, because criterion
 * names a hook after its line number: two files with hooks on the same
 * line would not link.
 */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
	const char *suite, *env;
} SUITES[] = {
    {"kueue", "STEADFAST_KUEUE_CLUSTER_DIR"},
    {"node", "STEADFAST_NODE_CLUSTER_DIR"},
    {"upgrade", "STEADFAST_UPGRADE_CLUSTER_DIR"},
};
#define NSUITES (sizeof(SUITES) / sizeof(SUITES[0]))

static char OWN[NSUITES][128]; /* in the runner: the directories it must stop */

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	(void)set;
	for (size_t i = 0; i < NSUITES; i++) {
		const char *d = getenv(SUITES[i].env);
		if (d && *d)
			continue;
		snprintf(OWN[i], sizeof(OWN[i]), "/tmp/steadfast-%s.%d", SUITES[i].suite,
		         (int)getpid());
		setenv(SUITES[i].env, OWN[i], 1);
	}
}

ReportHook(POST_SUITE)(struct criterion_suite_stats *st)
{
	for (size_t i = 0; i < NSUITES; i++) {
		struct stat sb;
		if (!OWN[i][0] || strcmp(st->suite->name, SUITES[i].suite) != 0 ||
		    stat(OWN[i], &sb) != 0)
			continue;
		char cmd[5200], src[4096];
		const char *down = "test/cluster/down.sh";
		if (access(down, X_OK) != 0 && getenv("STEADFAST_SRC_DIR")) {
			snprintf(src, sizeof(src), "%s/%s", getenv("STEADFAST_SRC_DIR"), down);
			down = src;
		}
		snprintf(cmd, sizeof(cmd), "'%s' '%s' >>'%s.log' 2>&1", down, OWN[i], OWN[i]);
		if (system(cmd) != 0)
			fprintf(stderr, "%s: %s failed: see %s.log\n", SUITES[i].suite, cmd,
			        OWN[i]);
	}
}
