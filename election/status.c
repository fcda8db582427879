/*
 * status.c - a Lease described for an operator (`steadfast lease status`).
 *
 * The elector judges expiry from when it saw the record change, on its own
 * monotonic clock. A one-shot command has no such history, so here the
 * Lease's renewTime is compared with this machine's wall clock: good
 * enough to tell a live lease from a dead one, and labelled as such.
 */
#include "steadfast/election.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "steadfast/time.h"

const char *sf_elect_status_name(sf_elect_status s)
{
	switch (s) {
	case SF_ELECT_STATUS_HEALTHY: return "healthy";
	case SF_ELECT_STATUS_EXPIRED: return "expired";
	case SF_ELECT_STATUS_UNHELD: return "unheld";
	case SF_ELECT_STATUS_ABSENT: return "absent";
	case SF_ELECT_STATUS_INVALID: return "invalid";
	}
	return "unknown";
}

/* "3.2 s", "4m05s", "2h07m", "3d04h" */
static const char *human(double s, char *buf, size_t n)
{
	if (s < 0)
		s = -s;
	long long t = (long long)s;
	if (s < 120)
		snprintf(buf, n, "%.1f s", s);
	else if (t < 3600)
		snprintf(buf, n, "%lldm%02llds", t / 60, t % 60);
	else if (t < 86400)
		snprintf(buf, n, "%lldh%02lldm", t / 3600, (t % 3600) / 60);
	else
		snprintf(buf, n, "%lldd%02lldh", t / 86400, (t % 86400) / 3600);
	return buf;
}

static int json_str(sf_buf *b, const char *key, const char *v)
{
	int rc = sf_buf_printf(b, ",\"%s\":", key);
	if (!rc)
		rc = sf_buf_put_json_str(b, v, strlen(v));
	return rc;
}

int sf_elect_status_format(const char *ns, const char *name, const sf_obj *lease,
                           int64_t wall_now_ns, int json, sf_buf *out)
{
	sf_elect_record r;
	memset(&r, 0, sizeof(r));
	int have = 0;
	if (lease) {
		int rc = sf_elect_record_decode(sf_obj_root(lease), &r);
		if (rc == -ENOMEM)
			return rc;
		have = rc == 0;
	}
	sf_elect_status st;
	char why[160];
	const char *holder = have && r.holder ? r.holder : "";
	int has_renew = have && r.renew_ns && !(r.bad & SF_ELECT_BAD_RENEW);
	double ago = has_renew ? (double)(wall_now_ns - r.renew_ns) / 1e9 : 0;
	double expires = has_renew ? (double)r.duration_s - ago : 0;
	if (!lease) {
		st = SF_ELECT_STATUS_ABSENT;
		snprintf(why, sizeof(why), "no such Lease: nobody has campaigned yet");
	} else if (!have || (r.bad & (SF_ELECT_BAD_SPEC | SF_ELECT_BAD_HOLDER))) {
		st = SF_ELECT_STATUS_INVALID;
		snprintf(why, sizeof(why), "the Lease has no usable spec");
	} else if (!holder[0]) {
		st = SF_ELECT_STATUS_UNHELD;
		snprintf(why, sizeof(why), "held by nobody (released, or never taken)");
	} else if (!has_renew || r.duration_s <= 0) {
		st = SF_ELECT_STATUS_INVALID;
		snprintf(why, sizeof(why), "renewTime or leaseDurationSeconds missing or invalid");
	} else if (expires <= 0) {
		st = SF_ELECT_STATUS_EXPIRED;
		snprintf(why, sizeof(why),
		         "not renewed within its lease duration: the holder is gone "
		         "or cut off from the API");
	} else {
		st = SF_ELECT_STATUS_HEALTHY;
		snprintf(why, sizeof(why), "held and renewed within its lease duration");
	}

	int rc;
	char h1[32], h2[32], h3[32];
	if (json) {
		rc = sf_buf_puts(out, "{\"namespace\":");
		if (!rc)
			rc = sf_buf_put_json_str(out, ns, strlen(ns));
		if (!rc)
			rc = json_str(out, "name", name);
		if (!rc)
			rc = sf_buf_printf(out, ",\"exists\":%s", lease ? "true" : "false");
		if (!rc && lease) {
			rc = json_str(out, "holderIdentity", holder);
			if (!rc)
				rc = json_str(out, "acquireTime", r.acquire_time);
			if (!rc)
				rc = json_str(out, "renewTime", r.renew_time);
			if (!rc)
				rc = sf_buf_printf(out,
				                   ",\"leaseDurationSeconds\":%lld,"
				                   "\"leaseTransitions\":%lld",
				                   (long long)r.duration_s,
				                   (long long)r.transitions);
			if (!rc && has_renew)
				rc = sf_buf_printf(
				    out, ",\"renewedSecondsAgo\":%.3f,\"expiresInSeconds\":%.3f",
				    ago, expires);
			if (!rc)
				rc = json_str(out, "resourceVersion", lease->rv);
		}
		if (!rc)
			rc = json_str(out, "status", sf_elect_status_name(st));
		if (!rc)
			rc = sf_buf_printf(out, ",\"healthy\":%s", st == 0 ? "true" : "false");
		if (!rc)
			rc = json_str(out, "reason", why);
		if (!rc)
			rc = sf_buf_puts(out, "}\n");
	} else {
		rc = sf_buf_printf(out, "Lease:        %s/%s\n", ns, name);
		if (!rc && lease) {
			sf_buf_printf(out, "Holder:       %s\n", holder[0] ? holder : "(none)");
			if (r.acquire_time[0]) {
				double aago =
				    r.acquire_ns ? (double)(wall_now_ns - r.acquire_ns) / 1e9 : 0;
				sf_buf_printf(out, "Acquired:     %s (%s %s)\n", r.acquire_time,
				              human(aago, h1, sizeof(h1)),
				              aago >= 0 ? "ago" : "from now");
			}
			if (has_renew)
				sf_buf_printf(out, "Renewed:      %s (%s %s)\n", r.renew_time,
				              human(ago, h2, sizeof(h2)),
				              ago >= 0 ? "ago" : "from now");
			else
				sf_buf_printf(out, "Renewed:      %s\n",
				              r.renew_time[0] ? r.renew_time : "(never)");
			sf_buf_printf(out, "Duration:     %lld s\n", (long long)r.duration_s);
			if (has_renew && holder[0] && r.duration_s > 0)
				sf_buf_printf(out,
				              expires > 0 ? "Expires:      in %s\n"
				                          : "Expires:      expired %s ago\n",
				              human(expires, h3, sizeof(h3)));
			sf_buf_printf(out, "Transitions:  %lld\n", (long long)r.transitions);
		}
		if (!rc)
			rc = sf_buf_printf(out, "Status:       %s: %s\n", sf_elect_status_name(st),
			                   why);
		if (!rc && has_renew)
			rc = sf_buf_puts(out,
			                 "Note:         ages compare the Lease's times with this "
			                 "machine's clock; clock skew shifts them\n");
	}
	sf_elect_record_clear(&r);
	return rc ? rc : (int)st;
}
