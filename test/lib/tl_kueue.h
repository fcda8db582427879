/*
 * tl_kueue.h - objects of the kueue suite's control plane (Kueue,
 * kube-scheduler and kwok, KUEUE=true test/cluster/up.sh) for the tests
 * of more than one file: reads that tell absent from failed, kwok nodes
 * made Ready, deletes, and a pause for polling waits with deadlines.
 * Failures fail the calling test.
 */
#ifndef STEADFAST_TEST_TL_KUEUE_H
#define STEADFAST_TEST_TL_KUEUE_H

#include "steadfast/client.h"
#include "steadfast/json.h"
#include "tl.h"

/* GET of gvr/name (in ns when gvr is namespaced): the object (owned), or
 * NULL on 404; any other answer fails the test. */
sf_obj *tl_kueue_get(tl_kube *k, const sf_gvr *gvr, const char *ns, const char *name);

/* DELETE of gvr/name (cluster-scoped), whatever the answer. */
void tl_kueue_delete(tl_kube *k, const sf_gvr *gvr, const char *name);

/* Runs k's loop for ms: the poll interval of waits that check a state the
 * API server answers for and give up at a deadline. */
void tl_kueue_pause(tl_kube *k, long ms);

/* Creates Node `name` for kwok (its label, more `labels` as YAML flow
 * mapping members or "", `taints` as a YAML flow sequence) with cpu and
 * gpu (nvidia.com/gpu) capacity, and waits (30 s) until kwok made it Ready
 * and the node lifecycle controller lifted its not-ready taint. ns is the
 * namespace the manifest is applied for (nodes are cluster-scoped). */
void tl_kueue_create_node(tl_kube *k, const char *ns, const char *name, const char *labels,
                          const char *taints, int cpu, int gpu);

#endif
