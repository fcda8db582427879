/*
 * kueue_suite.h - what the kueue suite's set-up (test_kueue.c) hands to
 * the suite's tests in other files: its client and loop, its namespace
 * (cluster-scoped objects named "<ns>-cq", "<ns>-rf" are deleted by the
 * tear-down), nodes to delete at tear-down whatever the outcome, its
 * watch of the namespace, its queues and Workloads, and what its watches
 * saw each AppWrapper and its Workload go through.
 */
#ifndef STEADFAST_TEST_KUEUE_SUITE_H
#define STEADFAST_TEST_KUEUE_SUITE_H

#include "steadfast/cache.h"
#include "tl.h"
#include "tl_aw.h"

tl_kube *kueue_suite_kube(void);
const char *kueue_suite_ns(void);
/* The controller's operator config the suite runs it with (Kueue
 * integrations on, manageJobsWithoutQueueName false). */
const char *kueue_suite_config(void);
/* Node `name` is deleted by the tear-down (4 at most). */
void kueue_suite_delete_node_at_end(const char *name);

/* The suite's watch of its namespace (AppWrappers, pods, Jobs, Events). */
tl_aw_watch *kueue_suite_watch(void);

/* A ResourceFlavor "<ns>-rf" (rf_spec: more of its spec, YAML at 2 spaces
 * of indent, or ""), a ClusterQueue "<ns>-cq" with quota cpu/gpu on it and
 * preemption policy `preemption` (or ""), a LocalQueue "lq" in ns; waits
 * until the ClusterQueue is Active. */
void kueue_suite_queues(const char *rf_spec, int cpu, int gpu, const char *preemption);

/* The cached Workload Kueue made for AppWrapper aw (borrowed), or NULL. */
sf_obj *kueue_suite_workload(const char *aw);

/* Waits until the Workload of AppWrapper aw has condition type = status;
 * fails the test after ms. */
void kueue_suite_wait_wl_cond(const char *aw, const char *type, const char *status, long ms);

/* Waits until ClusterQueue "<ns>-cq" holds no quota and counts no
 * reserving or admitted Workload; fails the test after ms. */
void kueue_suite_wait_cq_empty(long ms);

/* What the suite's watches saw AppWrapper aw and its Workload go through,
 * on every change delivered. */
typedef struct kueue_suite_seen {
	int unsuspended; /* spec.suspend seen false or absent (admitted) */
	int resuspended; /* suspended again after that */
	int failed;      /* phase Failed */
	int resetting;   /* phase Resetting */
	int missing;     /* Unhealthy with reason MissingComponent */
	int wl_admitted; /* its Workload QuotaReserved and Admitted */
	int wl_lost;     /* then without either before Finished */
	int wl_finished; /* its Workload Finished */
} kueue_suite_seen;
kueue_suite_seen kueue_suite_seen_of(const char *aw);

#endif
