/*
 * fuzz_appwrapper.c - libFuzzer target for the AppWrapper logic that reads
 * untrusted objects: the phase machine (sf_awp_step), component status
 * initialisation, pod-set inference and the component builder, pod
 * summaries and annotation resolution.
 *
 * The input's first byte seeds the observations (component states, create
 * outcomes, live reads, pod counts); the rest is an AppWrapper as JSON.
 * Whatever the object says, nothing may crash, leak or read out of
 * bounds, and a plan must be internally consistent: a metadata patch comes
 * alone, actions name existing components, Running never deletes, and a
 * component whose kind is unresolved is never deleted or verified.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/awcomp.h"
#include "steadfast/awconfig.h"
#include "steadfast/awphase.h"
#include "steadfast/buf.h"
#include "steadfast/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t seed = data[0];
	uint32_t mix = seed * 2654435761u; /* more bits from the same byte */
	sf_buf m;
	char err[256];
	sf_buf_init(&m, 1 << 22);
	if (sf_json_minify((const char *)data + 1, size - 1, &m, err, sizeof(err)) != 0 ||
	    m.len == 0) {
		sf_buf_free(&m);
		return 0;
	}
	sf_jv aw = sf_jv_root(m.data, m.len);
	sf_aw_config cfg;
	sf_aw_settings s;
	sf_awcfg_defaults(&cfg);
	sf_aw_settings_resolve(&cfg, sf_jv_path(aw, "metadata.annotations"), &s);

	size_t ncomp = sf_jv_len(sf_jv_path(aw, "status.componentStatus"));
	if (ncomp > 64)
		ncomp = 64;
	sf_awp_comp comps[64];
	memset(comps, 0, sizeof(comps));
	for (size_t i = 0; i < ncomp; i++) {
		comps[i].cached.state = (sf_awp_comp_state)((seed + i) % 3);
		comps[i].create = (sf_awp_create_outcome)((seed >> 2) % 4);
		comps[i].create_msg = "fuzz";
		comps[i].live.found = (sf_awp_live)((seed >> 4) % 3);
		comps[i].live.failed = (mix >> 8) & 1;
		comps[i].live.complete = (mix >> 9) & 1;
		comps[i].delete_gone = (seed >> 6) & 1;
		comps[i].cached.failed = (seed >> 7) & 1;
		comps[i].unresolved = (seed + 3 * i) % 5 == 0;
		comps[i].unresolved_msg = comps[i].unresolved ? "fuzz: not served" : NULL;
		comps[i].completion_known = (seed >> 3) & 1;
		comps[i].cached.complete = (seed >> 5) & 1;
	}
	sf_awp_pods pods = {0};
	sf_jv_iter it = sf_jv_iter_init(sf_jv_get(aw, "pods")); /* optional test pods */
	sf_jv pod;
	while (sf_jv_next(&it, NULL, &pod))
		sf_awp_pods_add(&pods, pod, &s);
	pods.pending += seed & 1;
	pods.failed += (seed >> 1) & 1;
	int64_t expected = 0;
	sf_awc_expected_pods(aw, &expected, err, sizeof(err));
	/* a live pod list, answered now, on some inputs: asked before or
	 * after the last DELETE */
	sf_awp_live_pods live = {
	    .pods = pods, .answered_ms = 1800000000000LL + seed * 997, .asked = (mix >> 10) & 3};

	sf_awp_input in = {.aw = aw,
	                   .cfg = &cfg,
	                   .s = &s,
	                   .now_ms = 1800000000000LL + seed * 997,
	                   .comp = comps,
	                   .ncomp = ncomp,
	                   .pods = &pods,
	                   .expected_pods = expected,
	                   .live_pods = (seed & 0x10) ? &live : NULL,
	                   .deletes_acked = (mix >> 12) & 3};
	sf_awp_plan plan;
	if (sf_awp_step(&in, &plan, err, sizeof(err)) == 0) {
		if (plan.meta_patch)
			CHECK(!plan.status && plan.nacts == 0);
		for (size_t i = 0; i < plan.nacts; i++) {
			/* a component whose kind cannot be resolved is never
			 * deleted, verified or taken for gone */
			size_t ix = plan.acts[i].idx;
			if (ix < ncomp && comps[ix].unresolved)
				CHECK(plan.acts[i].kind != SF_AWP_ACT_DELETE &&
				      plan.acts[i].kind != SF_AWP_ACT_DELETE_FORCE &&
				      plan.acts[i].kind != SF_AWP_ACT_VERIFY);
			if (plan.acts[i].kind != SF_AWP_ACT_DELETE_PODS &&
			    plan.acts[i].kind != SF_AWP_ACT_LIST_PODS)
				CHECK(plan.acts[i].idx <
				      (sf_jv_len(sf_jv_path(aw, "status.componentStatus")) +
				       sf_jv_len(sf_jv_path(aw, "spec.components")) + 1));
			if (plan.from == SF_AW_RUNNING && plan.to == SF_AW_RUNNING &&
			    !sf_jv_ok(sf_jv_path(aw, "metadata.deletionTimestamp")))
				CHECK(plan.acts[i].kind != SF_AWP_ACT_DELETE &&
				      plan.acts[i].kind != SF_AWP_ACT_DELETE_FORCE &&
				      plan.acts[i].kind != SF_AWP_ACT_DELETE_PODS);
		}
		CHECK(plan.nevents <= SF_AWP_MAX_EVENTS);
		sf_awp_plan_free(&plan);
	}

	sf_jd *init = NULL;
	if (sf_awp_component_status_init(aw, &init, err, sizeof(err)) == 0)
		sf_jd_free(init);
	size_t nspec = sf_jv_len(sf_jv_path(aw, "spec.components"));
	for (size_t i = 0; i < nspec && i < 16; i++) {
		sf_jd *obj = NULL;
		int fatal = 0;
		sf_awc_build_opts bo = {.scheduler_name = (seed & 8) ? "fuzz-scheduler" : "",
		                        .autopilot = (seed & 16) ? &cfg.autopilot : NULL};
		if (sf_awc_build(aw, i, &bo, &obj, &fatal, err, sizeof(err)) == 0) {
			CHECK(obj != NULL);
			char *dump = sf_jd_dump(obj);
			CHECK(dump != NULL);
			free(dump);
			sf_jd_free(obj);
		} else {
			CHECK(obj == NULL);
		}
	}
	sf_buf_free(&m);
	return 0;
}
