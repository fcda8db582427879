/*
 * components_podsets.h - what components.c (pod sets, paths) shares with
 * components_build.c (the object to create): the growable pod-set vector,
 * the definitive pod sets of a component, and the path walker over the
 * tree being built. Private to those files (steadfast/awcomp.h is the
 * interface).
 */
#ifndef STEADFAST_APPWRAPPER_COMPONENTS_PODSETS_H
#define STEADFAST_APPWRAPPER_COMPONENTS_PODSETS_H

#include <stddef.h>

#include "steadfast/awcomp.h"
#include "steadfast/jdoc.h"
#include "steadfast/json.h"

/* the size of a reason buffer (why) */
#define WHY_LEN 768

/* pod sets, gathered before the caller's capacity is known */
typedef struct psvec {
	sf_awc_podset *v; /* owned: free(v) */
	size_t n;
	size_t cap;
} psvec;

/* spec.components (into *comps) and how many there are */
size_t sf_awc_ncomponents(sf_jv aw, sf_jv *comps);
/* "component 2 (Job sample)" for messages */
void sf_awc_comp_desc(sf_jv tmpl, size_t index, char *buf, size_t len);
/* The definitive pod sets of component index (status.componentStatus's
 * when recorded, else declared or inferred); message without prefix. */
int sf_awc_definitive_podsets(sf_jv aw, size_t index, psvec *pv, char *why, size_t wl);
/* Upstream's GetRawTemplate over the tree being built: the map at path
 * (borrowed from root). */
int sf_awc_tree_template(sf_jd *root, const char *path, sf_jd **out, char *why, size_t wl);

#endif
