/*
 * test_awapi.c - the AppWrapper API names of awapi.h agree with the CRD the
 * project installs (manifests/crd/) and with the GVR the client uses.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/awapi.h"
#include "steadfast/client.h"
#include "steadfast/json.h"
#include "steadfast/yaml.h"
#include "tl_aw.h"

static int first_doc(void *ud, size_t index, const char *json, size_t len)
{
	char **out = ud;
	if (index == 0)
		*out = strndup(json, len);
	return 0;
}

Test(awapi, names_agree_with_the_crd)
{
	char path[1024], err[256] = "";
	char *crd = NULL;
	tl_aw_src_path(TL_AW_CRD_FILE, path, sizeof(path));
	cr_assert_eq(sf_yaml_file_to_json(path, 0, first_doc, &crd, err, sizeof(err)), 0, "%s",
	             err);
	cr_assert_not_null(crd);
	sf_jv r = sf_jv_root(crd, strlen(crd));
	cr_assert(sf_jv_streq(sf_jv_path(r, "metadata.name"), SF_AW_CRD_NAME), "%s", crd);
	cr_assert(sf_jv_streq(sf_jv_path(r, "spec.group"), SF_AW_GROUP));
	cr_assert(sf_jv_streq(sf_jv_path(r, "spec.names.kind"), SF_AW_KIND));
	cr_assert(sf_jv_streq(sf_jv_path(r, "spec.names.plural"), SF_AW_RESOURCE));
	cr_assert(sf_jv_streq(sf_jv_path(r, "spec.scope"), "Namespaced"));
	int served = 0;
	sf_jv vs = sf_jv_path(r, "spec.versions");
	for (size_t i = 0; i < sf_jv_len(vs); i++)
		if (sf_jv_streq(sf_jv_get(sf_jv_at(vs, i), "name"), SF_AW_VERSION))
			served = sf_jv_type(sf_jv_get(sf_jv_at(vs, i), "served")) == SF_JSON_TRUE;
	cr_assert(served, "%s not served", SF_AW_VERSION);
	free(crd);
}

Test(awapi, gvr_and_api_version)
{
	cr_assert_str_eq(SF_GVR_APPWRAPPERS.group, SF_AW_GROUP);
	cr_assert_str_eq(SF_GVR_APPWRAPPERS.version, SF_AW_VERSION);
	cr_assert_str_eq(SF_GVR_APPWRAPPERS.resource, SF_AW_RESOURCE);
	cr_assert(SF_GVR_APPWRAPPERS.namespaced);
	char api[128];
	snprintf(api, sizeof(api), "%s/%s", SF_GVR_APPWRAPPERS.group, SF_GVR_APPWRAPPERS.version);
	cr_assert_str_eq(SF_AW_API_VERSION, api);
}
