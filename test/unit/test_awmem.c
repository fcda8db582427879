/*
 * test_awmem.c - the controller's per-AppWrapper memory (memory.c): a
 * record per key and UID that grows with the components and is made anew
 * for a new object under an old name; expectations of creates held by
 * UID until the cache shows that very object or they time out; the
 * bookkeeping of a create made or adopted.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/appwrapper/ctl.h"

static sf_strmap *mems(void)
{
	sf_strmap *m = NULL;
	cr_assert_eq(sf_awctl_mems_new(&m), 0);
	cr_assert_not_null(m);
	return m;
}

Test(awmem, a_record_per_key_grows_and_keeps_what_it_holds)
{
	sf_strmap *t = mems();
	aw_mem *m = sf_awctl_mem_get(t, "ns/a", "uid-1", 2);
	cr_assert_not_null(m);
	cr_assert_eq(m->n, 2);
	cr_assert_eq(m->comp[0].create, SF_AWP_CREATE_NONE);
	cr_assert_null(m->comp[1].expect_uid);
	cr_assert_eq(m->written_rv, 0);
	m->written_rv = 7;
	m->comp[1].delete_gone = 1;

	/* the same object: the same record, never shrunk */
	cr_assert_eq(sf_awctl_mem_get(t, "ns/a", "uid-1", 1), m);
	cr_assert_eq(m->n, 2);
	/* more components: the new ones zeroed, the old ones kept */
	m = sf_awctl_mem_get(t, "ns/a", "uid-1", 5);
	cr_assert_not_null(m);
	cr_assert_eq(m->n, 5);
	cr_assert_eq(m->written_rv, 7);
	cr_assert_eq(m->comp[1].delete_gone, 1);
	for (size_t i = 2; i < 5; i++) {
		cr_assert_eq(m->comp[i].delete_gone, 0);
		cr_assert_null(m->comp[i].create_msg);
	}
	/* another key: another record */
	aw_mem *b = sf_awctl_mem_get(t, "ns/b", "uid-2", 0);
	cr_assert_not_null(b);
	cr_assert_neq(b, m);
	cr_assert_eq(b->n, 0);
	cr_assert_eq(sf_strmap_len(t), 2);
	sf_awctl_mems_free(t);
}

Test(awmem, a_new_object_under_an_old_name_starts_afresh)
{
	sf_strmap *t = mems();
	aw_mem *m = sf_awctl_mem_get(t, "ns/a", "uid-1", 1);
	cr_assert_not_null(m);
	m->written_rv = 42;
	m->deletes_acked = 3;
	sf_awctl_comp_made(&m->comp[0], "c-1");
	m->comp[0].create_msg = strdup("earlier");

	m = sf_awctl_mem_get(t, "ns/a", "uid-2", 1);
	cr_assert_not_null(m);
	cr_assert_eq(m->written_rv, 0);
	cr_assert_eq(m->deletes_acked, 0);
	cr_assert_null(m->comp[0].expect_uid);
	cr_assert_null(m->comp[0].create_msg);
	cr_assert_eq(sf_strmap_len(t), 1);
	sf_awctl_mems_free(t);
}

Test(awmem, forget_and_clear_drop_records)
{
	sf_strmap *t = mems();
	aw_mem *m = sf_awctl_mem_get(t, "ns/a", "uid-1", 1);
	cr_assert_not_null(m);
	/* what a record owns goes with it */
	m->live_pods = calloc(1, sizeof(*m->live_pods));
	m->noexec_live = calloc(1, sizeof(*m->noexec_live));
	sf_awctl_uid_set(&m->comp[0].deleted_uid, "c-1");
	cr_assert_not_null(sf_awctl_mem_get(t, "ns/b", "uid-2", 0));
	sf_awctl_mem_forget(t, "ns/a");
	sf_awctl_mem_forget(t, "ns/none"); /* nothing to drop */
	cr_assert_eq(sf_strmap_len(t), 1);
	cr_assert_null(sf_strmap_get(t, "ns/a"));
	sf_awctl_mems_clear(t);
	cr_assert_eq(sf_strmap_len(t), 0);
	sf_awctl_mems_free(t);
	sf_awctl_mems_free(NULL);
	sf_awctl_live_pods_free(NULL);
}

Test(awmem, uids)
{
	char *u = NULL;
	sf_awctl_uid_set(&u, "x");
	cr_assert_str_eq(u, "x");
	cr_assert(sf_awctl_uid_is(u, "x"));
	cr_assert_not(sf_awctl_uid_is(u, "y"));
	cr_assert_not(sf_awctl_uid_is(u, NULL));
	cr_assert_not(sf_awctl_uid_is(NULL, "x"));
	sf_awctl_uid_set(&u, "");
	cr_assert_null(u);
	sf_awctl_uid_set(&u, "z");
	sf_awctl_uid_set(&u, NULL);
	cr_assert_null(u);
}

Test(awmem, a_create_made_is_expected_and_ends_a_deletion)
{
	comp_mem cm = {0};
	sf_awctl_uid_set(&cm.deleted_uid, "old");
	cm.deleted_cached = 1;
	cm.delete_gone = 1;
	cm.live.found = SF_AWP_LIVE_MISSING;
	int64_t before = mono_ms();
	sf_awctl_comp_made(&cm, "new");
	cr_assert_str_eq(cm.expect_uid, "new");
	cr_assert_geq(cm.expect_ms, before);
	cr_assert_leq(cm.expect_ms, mono_ms());
	cr_assert_gt(cm.confirmed_ms, 0);
	cr_assert_null(cm.deleted_uid);
	cr_assert_eq(cm.deleted_cached, 0);
	cr_assert_eq(cm.delete_gone, 0);
	cr_assert_eq(cm.live.found, 0);
	/* a create whose answer had no uid: nothing to expect */
	sf_awctl_comp_made(&cm, NULL);
	cr_assert_null(cm.expect_uid);
}

Test(awmem, an_expectation_holds_by_uid)
{
	comp_mem cm = {0};
	sf_awctl_comp_made(&cm, "u1");
	/* another object by that name does not satisfy it */
	sf_awctl_expect_seen(&cm, "u2");
	cr_assert_str_eq(cm.expect_uid, "u1");
	cr_assert(sf_awctl_expect_pending(&cm, cm.expect_ms + 10, 60000));
	cr_assert_str_eq(cm.expect_uid, "u1");
	/* that very object does */
	sf_awctl_expect_seen(&cm, "u1");
	cr_assert_null(cm.expect_uid);
	cr_assert_not(sf_awctl_expect_pending(&cm, cm.expect_ms + 10, 60000));
}

Test(awmem, an_expectation_times_out)
{
	comp_mem cm = {0};
	cr_assert_not(sf_awctl_expect_pending(&cm, 0, 60000)); /* none */
	sf_awctl_comp_made(&cm, "u1");
	int64_t t0 = cm.expect_ms;
	cr_assert(sf_awctl_expect_pending(&cm, t0 + 59999, 60000));
	cr_assert_not(sf_awctl_expect_pending(&cm, t0 + 60000, 60000));
	cr_assert_null(cm.expect_uid); /* dropped: absent from now on */
	cr_assert_not(sf_awctl_expect_pending(&cm, t0, 60000));
}

Test(awmem, the_name_the_api_server_chose)
{
	comp_mem cm = {0};
	cm.lost_create_ms = 123;
	sf_awctl_created_name_set(&cm, "job-x7k2p");
	cr_assert_str_eq(cm.created_name, "job-x7k2p");
	cr_assert_eq(cm.lost_create_ms, 0);
	sf_awctl_created_name_set(&cm, "");
	cr_assert_null(cm.created_name);
	sf_awctl_created_name_set(&cm, "job-abcde");
	sf_awctl_created_name_set(&cm, NULL);
	cr_assert_null(cm.created_name);
}
