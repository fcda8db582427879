/*
 * phase_input.c - what the phase machine is given (see awphase.h): the pod
 * summary and which component a pod belongs to, the node sets of
 * Autopilot's evacuation, and what an API server's answer about one
 * component proves. Pure functions, so that the controller and the model
 * checker (test/model) read pods and answers the same way.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "steadfast/awcomp.h"

#include "phase_step.h"

/* ---- pods ---- */

static int code_in(const int *codes, int n, int code)
{
	for (int i = 0; i < n; i++)
		if (codes[i] == code)
			return 1;
	return 0;
}

static void copy_jv_str(sf_jv v, char *buf, size_t cap)
{
	int n = sf_jv_str(v, buf, cap);
	if (n == -ERANGE) {
		/* keep a prefix: the start of a long termination message */
		char *full = sf_jv_strdup(v);
		if (full) {
			snprintf(buf, cap, "%s", full);
			free(full);
			return;
		}
	}
	if (n < 0)
		buf[0] = 0;
}

void sf_awp_pods_add(sf_awp_pods *p, sf_jv pod, const sf_aw_settings *s)
{
	sf_jv phase = sf_jv_path(pod, "status.phase");
	p->total++;
	if (sf_jv_streq(phase, "Pending")) {
		p->pending++;
	} else if (sf_jv_streq(phase, "Running")) {
		if (!sf_jv_ok(sf_jv_path(pod, "metadata.deletionTimestamp")))
			p->running++;
	} else if (sf_jv_streq(phase, "Succeeded")) {
		p->succeeded++;
	} else if (sf_jv_streq(phase, "Failed")) {
		p->failed++;
		sf_jv_iter it = sf_jv_iter_init(sf_jv_path(pod, "status.containerStatuses"));
		sf_jv cs;
		int first_detail = !p->have_fail;
		while (sf_jv_next(&it, NULL, &cs)) {
			sf_jv term = sf_jv_path(cs, "state.terminated");
			if (!sf_jv_ok(term))
				continue;
			int64_t code = 0;
			if (sf_jv_int64(sf_jv_get(term, "exitCode"), &code) != 0 || code == 0)
				continue;
			if (s && code_in(s->terminal_codes, s->n_terminal, (int)code))
				p->terminal_failure = 1;
			if (s && s->n_retryable > 0 &&
			    !code_in(s->retryable_codes, s->n_retryable, (int)code))
				p->terminal_failure = 1;
			if (first_detail && !p->have_fail) {
				p->have_fail = 1;
				p->fail_exit_code = (int)code;
				copy_jv_str(sf_jv_path(pod, "metadata.name"), p->fail_pod,
				            sizeof(p->fail_pod));
				copy_jv_str(sf_jv_get(cs, "name"), p->fail_container,
				            sizeof(p->fail_container));
				copy_jv_str(sf_jv_get(term, "reason"), p->fail_reason,
				            sizeof(p->fail_reason));
				copy_jv_str(sf_jv_get(term, "message"), p->fail_message,
				            sizeof(p->fail_message));
			}
		}
		if (first_detail && !p->have_fail) {
			/* failed without a container exit code (evicted, deadline) */
			p->have_fail = 1;
			p->fail_exit_code = -1;
			copy_jv_str(sf_jv_path(pod, "metadata.name"), p->fail_pod,
			            sizeof(p->fail_pod));
			copy_jv_str(sf_jv_path(pod, "status.reason"), p->fail_reason,
			            sizeof(p->fail_reason));
			copy_jv_str(sf_jv_path(pod, "status.message"), p->fail_message,
			            sizeof(p->fail_message));
		}
	}
}

/* 1 when API versions a and b name the same group ("" for the core one). */
static int same_group(const char *a, const char *b)
{
	const char *sa = strchr(a, '/'), *sb = strchr(b, '/');
	size_t la = sa ? (size_t)(sa - a) : 0, lb = sb ? (size_t)(sb - b) : 0;
	return la == lb && strncmp(a, b, la) == 0;
}

/* 1 when componentStatus entry cs names the object (apiVersion's group,
 * kind, name) that ref (an owner reference) does. */
static int names_component(sf_jv cs, sf_jv ref)
{
	char api[256], ref_api[256], kind[128], name[254];
	if (sf_jv_str(sf_jv_get(cs, "name"), name, sizeof(name)) <= 0 ||
	    sf_jv_str(sf_jv_get(cs, "kind"), kind, sizeof(kind)) <= 0 ||
	    sf_jv_str(sf_jv_get(cs, "apiVersion"), api, sizeof(api)) <= 0 ||
	    sf_jv_str(sf_jv_get(ref, "apiVersion"), ref_api, sizeof(ref_api)) <= 0)
		return 0;
	return sf_jv_streq(sf_jv_get(ref, "name"), name) &&
	       sf_jv_streq(sf_jv_get(ref, "kind"), kind) && same_group(api, ref_api);
}

int sf_awp_pod_component(sf_jv pod, sf_jv component_status)
{
	sf_jv ref;
	int owned = sf_awc_controller_owner(pod, &ref);
	size_t n = sf_jv_len(component_status);
	for (size_t i = 0; i < n; i++) {
		sf_jv cs = sf_jv_at(component_status, i);
		char name[254];
		if (sf_jv_streq(sf_jv_get(cs, "kind"), "Pod") &&
		    sf_jv_streq(sf_jv_get(cs, "apiVersion"), "v1") &&
		    sf_jv_str(sf_jv_get(cs, "name"), name, sizeof(name)) > 0 &&
		    sf_jv_streq(sf_jv_path(pod, "metadata.name"), name))
			return (int)i; /* the pod is the component */
		if (owned && names_component(cs, ref))
			return (int)i;
	}
	return -1;
}

void sf_awp_nodes_add(sf_awp_nodes *ns, const char *node)
{
	size_t i = 0;
	while (i < ns->n && strcmp(ns->name[i], node) < 0)
		i++;
	if (i < ns->n && strcmp(ns->name[i], node) == 0)
		return;
	if (strlen(node) >= sizeof(ns->name[0]) || ns->n == SF_AWP_MAX_NODES) {
		ns->more++;
		return;
	}
	memmove(ns->name[i + 1], ns->name[i], (ns->n - i) * sizeof(ns->name[0]));
	snprintf(ns->name[i], sizeof(ns->name[0]), "%s", node);
	ns->n++;
}

void sf_awp_nodes_str(const sf_awp_nodes *ns, char *buf, size_t n)
{
	size_t w = 0;
	if (!n)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i <= ns->n && w < n; i++) {
		int k = i < ns->n ? snprintf(buf + w, n - w, "%s%s", i ? " " : "[", ns->name[i])
		                  : snprintf(buf + w, n - w, "%s]", ns->n ? "" : "[");
		if (k < 0)
			break;
		w += (size_t)k;
	}
	if (ns->more && w < n)
		snprintf(buf + w, n - w, " and %zu more", ns->more);
}

/* ---- reading answers ---- */

int sf_awp_read_verify(const sf_awp_answer *a, sf_awp_confirmed *out)
{
	memset(out, 0, sizeof(*out));
	switch (a->kind) {
	case SF_AWP_ANS_ABSENT: out->found = SF_AWP_LIVE_MISSING; return 0;
	case SF_AWP_ANS_FOREIGN_404:
		if (MUTANT(SF_AWP_MUT_FOREIGN_404_ABSENT)) {
			out->found = SF_AWP_LIVE_MISSING;
			return 0;
		}
		return -EAGAIN;
	case SF_AWP_ANS_OK:
		/* someone else's object under the name, or ours being deleted
		 * by someone else: ours is gone for good */
		if (!a->owned || (a->deleting && !a->ours_gone)) {
			out->found = SF_AWP_LIVE_MISSING;
			return 0;
		}
		out->found = SF_AWP_LIVE_FOUND;
		out->failed = a->failed;
		out->complete = a->complete;
		return 0;
	default: return -EAGAIN;
	}
}

int sf_awp_read_create(const sf_awp_answer *a, sf_awp_create_outcome *out)
{
	switch (a->kind) {
	case SF_AWP_ANS_EXISTS: return 1;
	case SF_AWP_ANS_OK: *out = SF_AWP_CREATE_OK; return 0;
	case SF_AWP_ANS_INVALID: *out = SF_AWP_CREATE_FATAL; return 0;
	default: *out = SF_AWP_CREATE_RETRYABLE; return 0;
	}
}

int sf_awp_read_adopt(const sf_awp_answer *a, sf_awp_create_outcome *out)
{
	switch (a->kind) {
	case SF_AWP_ANS_ABSENT:
		/* gone between the create and the read: create again */
		*out = SF_AWP_CREATE_RETRYABLE;
		return 0;
	case SF_AWP_ANS_OK:
		if (!a->owned)
			*out = SF_AWP_CREATE_FATAL;
		else if ((a->deleting || a->ours_gone) && !MUTANT(SF_AWP_MUT_ADOPT_DELETING))
			*out = SF_AWP_CREATE_RETRYABLE; /* an earlier incarnation, going */
		else
			*out = SF_AWP_CREATE_OK;
		return 0;
	default: return -EAGAIN;
	}
}

int sf_awp_read_delete(const sf_awp_answer *a, int *gone)
{
	*gone = 0;
	switch (a->kind) {
	case SF_AWP_ANS_ABSENT: *gone = 1; return 1;
	case SF_AWP_ANS_CONFLICT:
		/* the UID precondition failed: the name holds another object,
		 * which may be a newer incarnation of ours (a create whose
		 * answer was lost, a cache behind): only a live read can say */
		return 0;
	case SF_AWP_ANS_FOREIGN_404:
		if (MUTANT(SF_AWP_MUT_FOREIGN_404_ABSENT)) {
			*gone = 1;
			return 1;
		}
		return -EAGAIN;
	case SF_AWP_ANS_OK:
		if (!a->owned) {
			*gone = 1; /* the name holds another's object: ours is gone */
			return 1;
		}
		return 0;
	default: return -EAGAIN;
	}
}
