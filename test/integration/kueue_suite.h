/*
 * kueue_suite.h - what the kueue suite's set-up (test_kueue.c) hands to
 * the suite's tests in other files: its client and loop, its namespace
 * (cluster-scoped objects named "<ns>-cq", "<ns>-rf" are deleted by the
 * tear-down), and nodes to delete at tear-down whatever the outcome.
 */
#ifndef STEADFAST_TEST_KUEUE_SUITE_H
#define STEADFAST_TEST_KUEUE_SUITE_H

#include "tl.h"

tl_kube *kueue_suite_kube(void);
const char *kueue_suite_ns(void);
/* Node `name` is deleted by the tear-down (4 at most). */
void kueue_suite_delete_node_at_end(const char *name);

#endif
