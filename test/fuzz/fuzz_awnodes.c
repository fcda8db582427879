/*
 * fuzz_awnodes.c - libFuzzer target for the Autopilot node classifier
 * (awnodes.h), which reads Node objects from the API server.
 *
 * The input is a Node as JSON (minified first, as the client does),
 * classified with upstream's default taints. Whatever it says, nothing may
 * crash or read out of bounds, counts stay within their arrays, every
 * NoExecute resource is one of the config's, and "pods" is never counted
 * as capacity out of scheduling. The node cache's transform (keeping
 * SF_AWN_FIELDS) runs on the same input and must leave a valid
 * object that classifies the same (no dropped field is read), and the pod
 * check runs on the input as a pod.
 */
#include <stdint.h>
#include <string.h>

#include "steadfast/awnodes.h"
#include "steadfast/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sf_buf m;
	char err[128];
	sf_buf_init(&m, 0);
	if (sf_json_minify((const char *)data, size, &m, err, sizeof(err)) == 0 && m.len) {
		sf_aw_config c;
		sf_awcfg_defaults(&c);
		sf_awn_health h;
		if (sf_awn_classify(sf_jv_root(m.data, m.len), &c.autopilot, &h) == 0) {
			CHECK(h.nnoexec <= SF_AW_MAX_TAINTS && h.nnosched <= SF_AWN_MAX_RESOURCES);
			for (size_t i = 0; i < h.nnoexec; i++)
				CHECK(strcmp(h.noexec[i], "nvidia.com/gpu") == 0);
			for (size_t i = 0; i < h.nnosched; i++)
				CHECK(strcmp(h.nosched[i].resource, "pods") != 0);
			(void)sf_awn_pod_affected(sf_jv_root(m.data, m.len), &h);
		}
		sf_obj *o = sf_obj_new(m.data, m.len);
		if (o) {
			o = sf_obj_project(o, SF_AWN_FIELDS);
			sf_awn_health s;
			int a = sf_awn_classify(sf_jv_root(m.data, m.len), &c.autopilot, &h);
			int b = sf_awn_classify(sf_obj_root(o), &c.autopilot, &s);
			CHECK(a == b);
			if (a == 0)
				CHECK(memcmp(&h, &s, sizeof(h)) == 0);
			sf_obj_unref(o);
		}
	}
	sf_buf_free(&m);
	return 0;
}
