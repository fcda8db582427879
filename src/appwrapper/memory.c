/*
 * memory.c - what the leader remembers per AppWrapper for one term (ctl.h):
 * the creates of its own not yet seen in the cache (expectations), the
 * outcome of its last create, live read and deletes of each component,
 * and the last live lists, each news for the next step only.
 *
 * In the spirit of kube-controller-manager's ControllerExpectations, but
 * per component and by UID rather than by count: a create is expected
 * until the cache shows the object with the very UID the create returned
 * (another object by that name does not satisfy it), or until the
 * expectation times out; and a delete is remembered by the UID it was
 * sent for, so that a newer incarnation under the same name is never
 * taken for the one deleted. The table is keyed by the work queue's key;
 * a record made for one UID is dropped when another object turns up
 * under that key. Records are owned by the table, their strings by the
 * records.
 */
#include "ctl.h"

#include <stdlib.h>
#include <string.h>

static const char *mem_key(const void *m)
{
	return ((const aw_mem *)m)->strs;
}

static const char *mem_uid(const aw_mem *m)
{
	return m->strs + strlen(m->strs) + 1;
}

void sf_awctl_live_pods_free(live_pods *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->refs[i].name);
	free(l->refs);
	free(l->succeeded);
	free(l);
}

/* Sets *dst to a copy of uid ("" or NULL: none), or to none when the copy
 * cannot be made (ctl.h: what is remembered is never evidence). */
void sf_awctl_uid_set(char **dst, const char *uid)
{
	free(*dst);
	*dst = uid && *uid ? strdup(uid) : NULL;
}

/* Whether mine (NULL: none) is uid. */
int sf_awctl_uid_is(const char *mine, const char *uid)
{
	return mine && uid && strcmp(mine, uid) == 0;
}

static void mem_free(void *v)
{
	aw_mem *m = v;
	if (m) {
		for (size_t i = 0; i < m->n; i++) {
			free(m->comp[i].create_msg);
			free(m->comp[i].created_name);
			free(m->comp[i].expect_uid);
			free(m->comp[i].deleted_uid);
		}
		free(m->comp);
		free(m->noexec_live);
		sf_awctl_live_pods_free(m->live_pods);
	}
	free(m);
}

int sf_awctl_mems_new(sf_strmap **out)
{
	return sf_strmap_new_keyed(mem_key, 64, out);
}

void sf_awctl_mems_clear(sf_strmap *mems)
{
	sf_strmap_clear(mems, mem_free);
}

void sf_awctl_mems_free(sf_strmap *mems)
{
	sf_strmap_free(mems, mem_free);
}

void sf_awctl_mem_forget(sf_strmap *mems, const char *key)
{
	void *m = NULL;
	if (sf_strmap_remove(mems, key, &m) == 0)
		mem_free(m);
}

aw_mem *sf_awctl_mem_get(sf_strmap *mems, const char *key, const char *uid, size_t ncomp)
{
	aw_mem *m = sf_strmap_get(mems, key);
	if (m && strcmp(mem_uid(m), uid) != 0) {
		/* a new object under an old name */
		sf_strmap_remove(mems, key, NULL);
		mem_free(m);
		m = NULL;
	}
	if (!m) {
		size_t kl = strlen(key), ul = strlen(uid);
		m = calloc(1, sizeof(*m) + kl + ul + 2);
		if (!m)
			return NULL;
		memcpy(m->strs, key, kl + 1);
		memcpy(m->strs + kl + 1, uid, ul + 1);
		if (sf_strmap_put(mems, m->strs, m, NULL) < 0) {
			free(m);
			return NULL;
		}
	}
	if (m->n < ncomp) {
		comp_mem *nc = realloc(m->comp, ncomp * sizeof(*nc));
		if (!nc)
			return NULL;
		memset(nc + m->n, 0, (ncomp - m->n) * sizeof(*nc));
		m->comp = nc;
		m->n = ncomp;
	}
	return m;
}

/* The component exists as ours (created or adopted) with this uid: until
 * the cache shows it, it is pending rather than absent. */
void sf_awctl_comp_made(comp_mem *cm, const char *uid)
{
	sf_awctl_uid_set(&cm->expect_uid, uid);
	cm->expect_ms = mono_ms();
	cm->confirmed_ms = wall_ms();
	cm->delete_gone = 0;
	cm->live = (sf_awp_confirmed){0};
	sf_awctl_uid_set(&cm->deleted_uid, NULL);
	cm->deleted_cached = 0;
}

void sf_awctl_created_name_set(comp_mem *cm, const char *name)
{
	free(cm->created_name);
	cm->created_name = name && *name ? strdup(name) : NULL;
	cm->lost_create_ms = 0;
}

void sf_awctl_expect_seen(comp_mem *cm, const char *uid)
{
	if (sf_awctl_uid_is(cm->expect_uid, uid))
		sf_awctl_uid_set(&cm->expect_uid, NULL);
}

int sf_awctl_expect_pending(comp_mem *cm, int64_t now_mono, long timeout_ms)
{
	if (cm->expect_uid && now_mono - cm->expect_ms < timeout_ms)
		return 1;
	sf_awctl_uid_set(&cm->expect_uid, NULL);
	return 0;
}
