/*
 * api.c - the AppWrapper resource's GVR (see awapi.h).
 *
 * The one definition awapi.h has, in a file of its own, so that what only
 * names AppWrappers (the get command, the load generator, the tests)
 * links this and not the controller.
 */
#include "steadfast/awapi.h"

#include "steadfast/client.h"

const sf_gvr SF_GVR_APPWRAPPERS = {SF_AW_GROUP, SF_AW_VERSION, SF_AW_RESOURCE, 1};
