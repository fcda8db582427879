/*
 * test_yaml.c - YAML to JSON as sigs.k8s.io/yaml.YAMLToJSON does it:
 * Kubernetes manifests and multi-document streams, YAML 1.1 scalar typing
 * (booleans, nulls, Go integer and float syntax, canonical JSON numbers),
 * block scalars, keys turned into strings, explicit tags, anchors and
 * aliases (and alias bombs against the output cap), the refused cases
 * (merge keys, duplicate keys, null and non-scalar keys, .inf/.nan), error
 * positions, callback stop values, single-document and file entry points.
 *
 * Every JSON text produced is also run through sf_json_minify, which must
 * accept it and leave it unchanged.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "steadfast/json.h"
#include "steadfast/yaml.h"

#define assert_has(s, sub) cr_assert(strstr((s), (sub)) != NULL, "expected '%s' in: %s", (sub), (s))

/* Valid, already minified JSON: sf_json_minify accepts it unchanged. */
static void assert_minified(const char *json, size_t len)
{
	sf_buf b;
	char err[256];
	sf_buf_init(&b, 0);
	cr_assert_eq(sf_json_minify(json, len, &b, err, sizeof(err)), 0, "not JSON (%s): %.*s", err,
	             (int)len, json);
	cr_assert_eq(b.len, len, "minify changed %.*s into %s", (int)len, json, b.data);
	cr_assert_eq(memcmp(b.data, json, len), 0, "minify changed %.*s into %s", (int)len, json,
	             b.data);
	sf_buf_free(&b);
}

#define MAX_DOCS 16

struct docs {
	size_t n;
	size_t index[MAX_DOCS];
	char *json[MAX_DOCS];
	size_t stop_at; /* return stop_rc for the document with this number (from 1) */
	int stop_rc;
};

static int collect(void *ud, size_t index, const char *json, size_t len)
{
	struct docs *d = ud;
	cr_assert_lt(d->n, MAX_DOCS);
	cr_assert_eq(strlen(json), len, "callback text not NUL-terminated at len");
	assert_minified(json, len);
	d->index[d->n] = index;
	d->json[d->n] = strdup(json);
	cr_assert_not_null(d->json[d->n]);
	d->n++;
	return d->n == d->stop_at ? d->stop_rc : 0;
}

static void docs_free(struct docs *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->json[i]);
}

/* The single document yaml converts to must be want. */
static void expect_json(const char *yaml, const char *want)
{
	struct docs d = {0};
	char err[256] = "unset";
	int rc = sf_yaml_to_json(yaml, strlen(yaml), 0, collect, &d, err, sizeof(err));
	cr_assert_eq(rc, 0, "rc %d (%s) for:\n%s", rc, err, yaml);
	cr_assert_eq(err[0], '\0', "err not cleared: %s", err);
	cr_assert_eq(d.n, 1, "%zu documents for:\n%s", d.n, yaml);
	cr_expect_str_eq(d.json[0], want, "for:\n%s", yaml);
	docs_free(&d);
}

/* yaml must fail with rc and a message that contains each of the subs. */
static void expect_fail(const char *yaml, int want_rc, const char *sub1, const char *sub2)
{
	struct docs d = {0};
	char err[256] = "";
	int rc = sf_yaml_to_json(yaml, strlen(yaml), 0, collect, &d, err, sizeof(err));
	cr_assert_eq(rc, want_rc, "rc %d (%s), want %d, for:\n%s", rc, err, want_rc, yaml);
	assert_has(err, sub1);
	if (sub2)
		assert_has(err, sub2);
	docs_free(&d);
}

static const char deployment_yaml[] = "# A typical manifest, as kubectl would read it.\n"
                                      "apiVersion: apps/v1\n"
                                      "kind: Deployment\n"
                                      "metadata:\n"
                                      "  name: web\n"
                                      "  namespace: prod\n"
                                      "  labels:\n"
                                      "    app.kubernetes.io/name: web\n"
                                      "    tier: \"1\"\n"
                                      "  annotations:\n"
                                      "    deployment.kubernetes.io/revision: \"3\"\n"
                                      "spec:\n"
                                      "  replicas: 3\n"
                                      "  selector:\n"
                                      "    matchLabels:\n"
                                      "      app: web\n"
                                      "  template:\n"
                                      "    metadata:\n"
                                      "      labels:\n"
                                      "        app: web\n"
                                      "    spec:\n"
                                      "      containers:\n"
                                      "        - name: app\n"
                                      "          image: nginx:1.25\n"
                                      "          args: [\"--port\", \"8080\", --verbose]\n"
                                      "          ports:\n"
                                      "            - containerPort: 8080\n"
                                      "              protocol: TCP\n"
                                      "          env:\n"
                                      "            - name: DEBUG\n"
                                      "              value: \"false\"\n"
                                      "            - name: RATIO\n"
                                      "              value: '0.5'\n"
                                      "          resources:\n"
                                      "            limits: {cpu: 500m, memory: 128Mi}\n"
                                      "        - name: sidecar\n"
                                      "          image: busybox\n"
                                      "          command:\n"
                                      "          - sh\n"
                                      "          - -c\n"
                                      "          - |\n"
                                      "            echo \"hello\"\n"
                                      "            sleep 3600\n"
                                      "      nodeSelector: {}\n"
                                      "      tolerations: []\n"
                                      "      hostNetwork: false\n";

static const char deployment_json[] =
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","
    "\"namespace\":\"prod\",\"labels\":{\"app.kubernetes.io/name\":\"web\",\"tier\":\"1\"},"
    "\"annotations\":{\"deployment.kubernetes.io/revision\":\"3\"}},\"spec\":{\"replicas\":3,"
    "\"selector\":{\"matchLabels\":{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":"
    "{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"nginx:1.25\","
    "\"args\":[\"--port\",\"8080\",\"--verbose\"],\"ports\":[{\"containerPort\":8080,"
    "\"protocol\":\"TCP\"}],\"env\":[{\"name\":\"DEBUG\",\"value\":\"false\"},{\"name\":"
    "\"RATIO\",\"value\":\"0.5\"}],\"resources\":{\"limits\":{\"cpu\":\"500m\",\"memory\":"
    "\"128Mi\"}}},{\"name\":\"sidecar\",\"image\":\"busybox\",\"command\":[\"sh\",\"-c\","
    "\"echo \\\"hello\\\"\\nsleep 3600\\n\"]}],\"nodeSelector\":{},\"tolerations\":[],"
    "\"hostNetwork\":false}}}}";

Test(yaml, deployment)
{
	expect_json(deployment_yaml, deployment_json);

	/* and it becomes an API object with the right metadata */
	char err[256];
	char *json =
	    sf_yaml_one_to_json(deployment_yaml, strlen(deployment_yaml), err, sizeof(err));
	cr_assert_not_null(json, "%s", err);
	sf_obj *o = sf_obj_parse(json, strlen(json), err, sizeof(err));
	cr_assert_not_null(o, "%s", err);
	cr_expect_str_eq(o->name, "web");
	cr_expect_str_eq(o->ns, "prod");
	int64_t replicas = 0;
	cr_expect_eq(sf_jv_int64(sf_jv_path(sf_obj_root(o), "spec.replicas"), &replicas), 0);
	cr_expect_eq(replicas, 3);
	sf_obj_unref(o);
	free(json);
}

Test(yaml, multi_document_stream)
{
	static const char stream[] = "# leading comment\n"
	                             "---\n"
	                             "apiVersion: v1\n"
	                             "kind: ConfigMap\n"
	                             "metadata: {name: a}  # trailing comment\n"
	                             "data:\n"
	                             "  on: \"yes\"\n"
	                             "---\n"
	                             "# only a comment: an empty document\n"
	                             "---\n"
	                             "~\n"
	                             "--- !!null\n"
	                             "---\n"
	                             "apiVersion: v1\n"
	                             "kind: Namespace\n"
	                             "metadata:\n"
	                             "  name: b\n"
	                             "...\n"
	                             "---\n"
	                             "- 1\n"
	                             "- two\n";
	struct docs d = {0};
	char err[256];
	int rc = sf_yaml_to_json(stream, strlen(stream), 0, collect, &d, err, sizeof(err));
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_eq(d.n, 3);
	/* the key `on` is a YAML 1.1 boolean, which becomes the key "true" */
	cr_expect_str_eq(d.json[0], "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
	                            "{\"name\":\"a\"},\"data\":{\"true\":\"yes\"}}");
	cr_expect_str_eq(
	    d.json[1],
	    "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"b\"}}");
	cr_expect_str_eq(d.json[2], "[1,\"two\"]");
	for (size_t i = 0; i < d.n; i++)
		cr_expect_eq(d.index[i], i, "callback index counts delivered documents");
	docs_free(&d);

	/* nothing but comments, separators and nulls: no callback at all */
	static const char empty[] = "# nothing\n---\n---\nnull\n--- ~\n...\n";
	d = (struct docs){0};
	cr_expect_eq(sf_yaml_to_json(empty, strlen(empty), 0, collect, &d, err, sizeof(err)), 0);
	cr_expect_eq(d.n, 0);
	cr_expect_eq(sf_yaml_to_json("", 0, 0, collect, &d, err, sizeof(err)), 0);
	cr_expect_eq(d.n, 0);

	/* a scalar document is not empty */
	expect_json("--- hello\n", "\"hello\"");
	expect_json("\"null\"", "\"null\"");
}

Test(yaml, scalar_typing)
{
	static const struct {
		const char *yaml, *json;
	} cases[] = {
	    /* YAML 1.1 booleans, as go-yaml v2's resolve table */
	    {"true", "true"},
	    {"True", "true"},
	    {"TRUE", "true"},
	    {"tRUE", "\"tRUE\""},
	    {"false", "false"},
	    {"yes", "true"},
	    {"Yes", "true"},
	    {"YES", "true"},
	    {"no", "false"},
	    {"NO", "false"},
	    {"on", "true"},
	    {"On", "true"},
	    {"off", "false"},
	    {"OFF", "false"},
	    {"y", "true"},
	    {"n", "false"},
	    {"yEs", "\"yEs\""},
	    /* quoted and explicitly typed strings stay strings */
	    {"\"true\"", "\"true\""},
	    {"'yes'", "\"yes\""},
	    {"\"123\"", "\"123\""},
	    {"'~'", "\"~\""},
	    {"\"\"", "\"\""},
	    /* nulls */
	    {"~", "null"},
	    {"null", "null"},
	    {"Null", "null"},
	    {"NULL", "null"},
	    {"", "null"},
	    {"nUll", "\"nUll\""},
	    /* integers: Go's ParseInt(s, 0, 64) after removing underscores */
	    {"0", "0"},
	    {"-1", "-1"},
	    {"+5", "5"},
	    {"-0", "0"},
	    {"0755", "493"},
	    {"0o17", "15"},
	    {"0x10", "16"},
	    {"0x1F", "31"},
	    {"0X1f", "31"},
	    {"0b101", "5"},
	    {"-0x10", "-16"},
	    {"1_000", "1000"},
	    {"9223372036854775807", "9223372036854775807"},
	    {"-9223372036854775808", "-9223372036854775808"},
	    /* beyond int64: ParseUint still takes it, exactly */
	    {"12345678901234567890", "12345678901234567890"},
	    {"18446744073709551615", "18446744073709551615"},
	    /* beyond uint64: a float64, as encoding/json writes it */
	    {"18446744073709551616", "18446744073709552000"},
	    {"-9223372036854775809", "-9223372036854776000"},
	    {"99999999999999999999", "100000000000000000000"},
	    {"123456789012345678901234567890", "1.2345678901234568e+29"},
	    /* prefixed literals beyond 64 bits are strings */
	    {"0xFFFFFFFFFFFFFFFFFFFF", "\"0xFFFFFFFFFFFFFFFFFFFF\""},
	    {"0x10000000000000000", "\"0x10000000000000000\""},
	    /* floats, canonical */
	    {"1e3", "1000"},
	    {"1.0", "1"},
	    {"1.", "1"},
	    {"1.5", "1.5"},
	    {".5", "0.5"},
	    {"-.5", "-0.5"},
	    {"+.5e1", "5"},
	    {"08", "8"}, /* not octal, so a float (yamlStyleFloat) */
	    {"1e21", "1e+21"},
	    {"1e20", "100000000000000000000"},
	    {"0.000001", "0.000001"},
	    {"0.0000001", "1e-7"},
	    {"123456789.123456789", "123456789.12345679"},
	    {"-0.0", "-0"},
	    {"1e-400", "0"},
	    {"5e-324", "5e-324"},
	    {"1.7976931348623157e308", "1.7976931348623157e+308"},
	    /* not numbers */
	    {"1e400", "\"1e400\""}, /* ParseFloat's range error */
	    {"0x", "\"0x\""},
	    {"1_", "1"},
	    {"_1", "\"_1\""},
	    {"._5", "\"._5\""},
	    {".5_0", "0.5"},
	    {"1.2.3", "\"1.2.3\""},
	    {"12:30", "\"12:30\""}, /* no base 60 */
	    {"-0xFFFFFFFFFFFFFFFFFFFF", "\"-0xFFFFFFFFFFFFFFFFFFFF\""},
	    {"+.nan", "\"+.nan\""},
	    {"1,000", "\"1,000\""},
	    {"v1.2", "\"v1.2\""},
	    {"500m", "\"500m\""},
	    /* timestamps stay strings */
	    {"2001-12-14", "\"2001-12-14\""},
	    {"2001-12-14t21:59:43.10-05:00", "\"2001-12-14t21:59:43.10-05:00\""},
	    /* strings with escapes: JSON-escaped, valid UTF-8 */
	    {"\"caf\\u00e9 \\t\\0 \\\\ \\\"\"", "\"caf\xc3\xa9 \\t\\u0000 \\\\ \\\"\""},
	    {"\xe2\x9c\x93 ok", "\"\xe2\x9c\x93 ok\""},
	    {"'it''s'", "\"it's\""},
	    {"a\n  b", "\"a b\""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char yaml[256], want[256];
		snprintf(yaml, sizeof(yaml), "v: %s\n", cases[i].yaml);
		snprintf(want, sizeof(want), "{\"v\":%s}", cases[i].json);
		expect_json(yaml, want);
	}
}

Test(yaml, long_numbers)
{
	char yaml[700], want[700];
	/* a decimal beyond float64's range fails ParseFloat: a string */
	snprintf(yaml, sizeof(yaml), "v: 1%0320d1\n", 0);
	snprintf(want, sizeof(want), "{\"v\":\"1%0320d1\"}", 0);
	expect_json(yaml, want);
	/* beyond float64's precision only, it is a float64 */
	expect_json("v: 100000000000000000000000000000001\n", "{\"v\":1e+32}");
	/* a leading 0 makes it octal for ParseInt, decimal for the float rule */
	expect_json("v: 07777777777777777777777777\n", "{\"v\":7.777777777777778e+24}");
	expect_json("v: 0o7777777777777777777777777\n", "{\"v\":\"0o7777777777777777777777777\"}");
	/* very long digit strings are handled in linear time */
	size_t n = 1000000;
	char *big = malloc(n + 16);
	cr_assert_not_null(big);
	memcpy(big, "v: 0.", 5);
	memset(big + 5, '1', n);
	big[5 + n] = '\0';
	expect_json(big, "{\"v\":0.1111111111111111}");
	free(big);
}

Test(yaml, control_character_escapes)
{
	/* sf_buf_put_json_str's spelling, which is yajl_gen's: \b and \f,
	 * \u00XX in upper-case hex; minifying changes nothing */
	char err[256];
	static const char y[] = "v: \"\\b\\f\\x1f\\e\\r\\n\"";
	char *json = sf_yaml_one_to_json(y, strlen(y), err, sizeof(err));
	cr_assert_not_null(json, "%s", err);
	cr_expect_str_eq(json, "{\"v\":\"\\b\\f\\u001F\\u001B\\r\\n\"}");
	sf_buf b;
	sf_buf_init(&b, 0);
	cr_expect_eq(sf_json_minify(json, strlen(json), &b, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(b.data, json);
	sf_buf_free(&b);
	free(json);
}

Test(yaml, block_scalars)
{
	expect_json("a: |\n  line 1\n  line 2\n\nb: x\n",
	            "{\"a\":\"line 1\\nline 2\\n\",\"b\":\"x\"}");
	expect_json("a: |-\n  kept: true\n  # not a comment\n",
	            "{\"a\":\"kept: true\\n# not a comment\"}");
	expect_json("a: >\n  folded\n  text\n\n  para\n", "{\"a\":\"folded text\\npara\\n\"}");
	expect_json("a: >+\n  keep\n\n\n", "{\"a\":\"keep\\n\\n\\n\"}");
	/* block scalars are strings whatever they hold */
	expect_json("a: |-\n  true\nb: >-\n  42\n", "{\"a\":\"true\",\"b\":\"42\"}");
}

Test(yaml, keys_become_strings)
{
	expect_json("1: a\n", "{\"1\":\"a\"}");
	expect_json("true: a\n", "{\"true\":\"a\"}");
	expect_json("yes: a\nno: b\n", "{\"true\":\"a\",\"false\":\"b\"}");
	expect_json("0x10: a\n", "{\"16\":\"a\"}");
	expect_json("1.5: a\n1.10: b\n", "{\"1.5\":\"a\",\"1.1\":\"b\"}");
	/* floats print as FormatFloat(f, 'g', -1, 32) */
	expect_json("1000000000000000000000000000000000000: a\n", "{\"1e+36\":\"a\"}");
	expect_json("1e6: a\n100000: b\n0.00001: c\n",
	            "{\"1e+06\":\"a\",\"100000\":\"b\",\"1e-05\":\"c\"}");
	expect_json(".inf: a\n-.Inf: b\n.NaN: c\n",
	            "{\".inf\":\"a\",\"-.inf\":\"b\",\".nan\":\"c\"}");
	expect_json("\"1\": a\n'true': b\n~x: c\n", "{\"1\":\"a\",\"true\":\"b\",\"~x\":\"c\"}");
	expect_json("2001-12-14: a\n", "{\"2001-12-14\":\"a\"}");
	expect_json("? |\n  block key\n: v\n", "{\"block key\\n\":\"v\"}");
	expect_json("\"<<\": quoted merge is a key\n", "{\"<<\":\"quoted merge is a key\"}");

	expect_fail("~: a\n", -EBADMSG, "line 1 column 1:", "null mapping key");
	expect_fail("a: 1\n18446744073709551615: b\n", -EBADMSG,
	            "line 2 column 1:", "beyond int64");
	expect_fail("{[1, 2]: a}\n", -EBADMSG, "line 1 column 2:", "keys must be scalars");
	expect_fail("? {a: 1}\n: b\n", -EBADMSG, "line 1 column 3:", "not a mapping");
}

Test(yaml, explicit_tags)
{
	expect_json("a: !!str 5\nb: !!str true\nc: !!str\n",
	            "{\"a\":\"5\",\"b\":\"true\",\"c\":\"\"}");
	expect_json("a: !!int \"0x10\"\nb: !!float 5\nc: !!float '1.5'\n",
	            "{\"a\":16,\"b\":5,\"c\":1.5}");
	expect_json("a: !!bool \"yes\"\nb: !!null ''\nc: !!null ~\n",
	            "{\"a\":true,\"b\":null,\"c\":null}");
	expect_json("a: !!timestamp 2001-12-14 21:59:43.10\n",
	            "{\"a\":\"2001-12-14 21:59:43.10\"}");
	/* non-specific, local and unknown tags, !!binary: the text as written */
	expect_json("a: ! 5\nb: !local true\nc: !!binary aGVsbG8=\n",
	            "{\"a\":\"5\",\"b\":\"true\",\"c\":\"aGVsbG8=\"}");
	/* tags on collections are ignored */
	expect_json("a: !!map {b: !!seq [1]}\n", "{\"a\":{\"b\":[1]}}");
	/* %TAG directives expand like !! does */
	expect_json("%TAG !y! tag:yaml.org,2002:\n---\na: !y!int '7'\n", "{\"a\":7}");

	expect_fail("a: !!int abc\n", -EBADMSG,
	            "line 1 column 4:", "cannot decode !!str `abc` as a !!int");
	expect_fail("a: !!int 1.5\n", -EBADMSG, "cannot decode !!float", NULL);
	expect_fail("a: !!bool 1\n", -EBADMSG, "as a !!bool", NULL);
	expect_fail("a: !!null x\n", -EBADMSG, "as a !!null", NULL);
	expect_fail("a: !!float 18446744073709551615\n", -EBADMSG, "as a !!float", NULL);
	expect_fail("a: !!timestamp 2001-02-30\n", -EBADMSG, "as a !!timestamp", NULL);
}

Test(yaml, not_representable_floats)
{
	expect_fail("a: 1\nb: .inf\n", -EBADMSG,
	            "line 2 column 4:", "cannot be represented in JSON");
	expect_fail("a: -.INF\n", -EBADMSG, "infinity", NULL);
	expect_fail("- .nan\n", -EBADMSG, "not a number", NULL);
	expect_fail("a: !!float .NaN\n", -EBADMSG, "cannot be represented", NULL);
}

Test(yaml, anchors_and_aliases)
{
	expect_json("base: &base\n  image: nginx\n  ports: [80, 443]\n"
	            "copy: *base\n"
	            "list: [*base, *base]\n",
	            "{\"base\":{\"image\":\"nginx\",\"ports\":[80,443]},"
	            "\"copy\":{\"image\":\"nginx\",\"ports\":[80,443]},"
	            "\"list\":[{\"image\":\"nginx\",\"ports\":[80,443]},"
	            "{\"image\":\"nginx\",\"ports\":[80,443]}]}");
	/* a scalar anchor is resolved again where used: as a key it is a string */
	expect_json("a: &n 0x10\nb: *n\n*n : c\n", "{\"a\":16,\"b\":16,\"16\":\"c\"}");
	expect_json("&k key: 1\nother: *k\n", "{\"key\":1,\"other\":\"key\"}");
	expect_json("a: &n 1.10\nb: {*n : v}\nc: {*n : y}\nd: [*n, *n]\n",
	            "{\"a\":1.1,\"b\":{\"1.1\":\"v\"},\"c\":{\"1.1\":true},\"d\":[1.1,1.1]}");
	/* the latest definition wins, also inside the anchored node itself */
	expect_json("- &a 1\n- &a 2\n- *a\n", "[1,2,2]");
	expect_json("&a [&a 1, *a]\n", "[1,1]");
	expect_json("- &a {x: &a 1}\n- *a\n", "[{\"x\":1},1]");
	/* anchors do not cross documents */
	expect_fail("a: &x 1\n---\nb: *x\n", -EBADMSG, "line 3 column 4:", "unknown anchor 'x'");

	expect_fail("a: *nope\n", -EBADMSG, "line 1 column 4:", "unknown anchor 'nope' referenced");
	expect_fail("a: &x [1, *x]\n", -EBADMSG,
	            "line 1 column 11:", "anchor 'x' value contains itself");
	expect_fail("&x {a: [*x]}\n", -EBADMSG, "contains itself", NULL);
	expect_fail("a: &m {x: 1}\n*m : 2\n", -EBADMSG, "line 2 column 1:", "keys must be scalars");
}

Test(yaml, alias_bomb)
{
	static const char bomb[] =
	    "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
	    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
	    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
	    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
	    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
	    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
	    "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
	    "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h,*h]\n"
	    "j: &j [*i,*i,*i,*i,*i,*i,*i,*i,*i,*i]\n";
	struct docs d = {0};
	char err[256];
	/* go-yaml's rule: 99% of the nodes may come from aliases (up to 400,000
	 * decode operations); this stops the bomb on its fourth line */
	int rc = sf_yaml_to_json(bomb, sizeof(bomb) - 1, 0, collect, &d, err, sizeof(err));
	cr_expect_eq(rc, -E2BIG, "rc %d: %s", rc, err);
	assert_has(err, "line 4 column 14:");
	assert_has(err, "excessive aliasing");
	cr_expect_eq(d.n, 0);

	/* at 99% or less the expansion is allowed ... */
	char *y = malloc(4096);
	cr_assert_not_null(y);
	size_t k = (size_t)snprintf(y, 4096, "a: &a [%s]\nb: [", "0,1,2,3,4,5,6,7,8,9");
	for (int i = 0; i < 100; i++)
		k += (size_t)snprintf(y + k, 4096 - k, "*a,");
	snprintf(y + k, 4096 - k, "*a]\n"); /* 101 aliases of 11 nodes each */
	rc = sf_yaml_to_json(y, strlen(y), 0, collect, &d, err, sizeof(err));
	cr_expect_eq(rc, 0, "%s", err);
	cr_expect_eq(d.n, 1);
	cr_expect_eq(strlen(d.json[0]), 2255);
	/* ... while the output cap still bounds it */
	rc = sf_yaml_to_json(y, strlen(y), 2255, collect, &d, err, sizeof(err));
	cr_expect_eq(rc, 0, "%s", err);
	rc = sf_yaml_to_json(y, strlen(y), 2254, collect, &d, err, sizeof(err));
	cr_expect_eq(rc, -E2BIG);
	assert_has(err, "would exceed 2254 bytes");
	cr_expect_eq(d.n, 2);
	free(y);

	/* an expansion under both limits */
	static const char small[] = "a: &a [1, 2, 3]\nb: [*a, *a, *a]\n";
	rc = sf_yaml_to_json(small, sizeof(small) - 1, 64, collect, &d, err, sizeof(err));
	cr_expect_eq(rc, 0, "%s", err);
	cr_assert_eq(d.n, 3);
	cr_expect_str_eq(d.json[2], "{\"a\":[1,2,3],\"b\":[[1,2,3],[1,2,3],[1,2,3]]}");
	rc = sf_yaml_to_json(small, sizeof(small) - 1, 40, collect, &d, err, sizeof(err));
	cr_expect_eq(rc, -E2BIG);
	docs_free(&d);
}

Test(yaml, merge_key_refused)
{
	expect_fail("base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n", -EBADMSG,
	            "line 3 column 3:", "merge keys (<<) are not supported");
	expect_fail("a: {!!merge \"<<\": {x: 1}}\n", -EBADMSG, "merge keys", NULL);
	/* as a value, and as a quoted or !!str key, "<<" is a plain string */
	expect_json("a: <<\n!!str <<: b\n", "{\"a\":\"<<\",\"<<\":\"b\"}");
}

Test(yaml, duplicate_keys)
{
	expect_fail("metadata:\n  name: a\n  labels: {}\n  name: b\n", -EBADMSG, "line 4 column 3:",
	            "duplicate mapping key \"name\" (first at line 2 column 3)");
	/* compared after conversion: these all become the key "true" / "1" */
	expect_fail("true: a\nyes: b\n", -EBADMSG,
	            "line 2 column 1:", "duplicate mapping key \"true\"");
	expect_fail("1: a\n\"1\": b\n", -EBADMSG, "duplicate mapping key \"1\"", NULL);
	expect_fail("0x10: a\n16: b\n", -EBADMSG, "duplicate mapping key \"16\"", NULL);
	/* the earliest repetition is reported */
	expect_fail("{b: 1, a: 2, a: 3, b: 4}", -EBADMSG, "line 1 column 14:", "\"a\"");
	/* the same key in different mappings is fine */
	expect_json("a: {x: 1}\nb: {x: 2}\n", "{\"a\":{\"x\":1},\"b\":{\"x\":2}}");
}

Test(yaml, malformed)
{
	expect_fail("a: 1\nb: [1, 2\nc: 3\n", -EBADMSG,
	            "line 3 column 2:", "did not find expected ',' or ']'");
	expect_fail("key: value\n  bad: indent\n", -EBADMSG,
	            "line 2 column 6:", "mapping values are not allowed");
	expect_fail("a:\n\tb: 1\n", -EBADMSG, "line 2 column 1:", "cannot start any token");
	expect_fail("a: \"open\n", -EBADMSG, "line 2 column 1:", "while scanning a quoted scalar");
	expect_fail("ok: 1\nbad: \xc3\x28\n", -EBADMSG, "line 2 column", "UTF-8");
	expect_fail("a: b\x01\n", -EBADMSG, "line 1 column", "control characters");

	/* earlier documents were delivered before the error */
	static const char two[] = "a: 1\n---\nb: [\n";
	struct docs d = {0};
	char err[256];
	cr_expect_eq(sf_yaml_to_json(two, strlen(two), 0, collect, &d, err, sizeof(err)), -EBADMSG);
	cr_expect_eq(d.n, 1);
	assert_has(err, "line 4 column 1:");
	docs_free(&d);
}

Test(yaml, nesting_limit)
{
	char buf[600];
	size_t k = 0;
	for (int i = 0; i < 127; i++)
		buf[k++] = '[';
	for (int i = 0; i < 127; i++)
		buf[k++] = ']';
	buf[k] = '\0';
	expect_json(buf, buf); /* and yajl accepts that depth (checked by collect) */

	k = 0;
	for (int i = 0; i < 128; i++)
		buf[k++] = '[';
	buf[k] = '\0';
	expect_fail(buf, -EBADMSG, "line 1 column 128:", "nested deeper than 127 levels");
}

static int stop_cb(void *ud, size_t index, const char *json, size_t len)
{
	(void)json;
	(void)len;
	size_t *calls = ud;
	(*calls)++;
	return index == 1 ? 42 : 0;
}

Test(yaml, callback_stop_value)
{
	/* the third document is malformed: stopping at the second never reads it */
	static const char s[] = "a: 1\n---\nb: 2\n---\nc: [\n";
	size_t calls = 0;
	char err[256] = "x";
	int rc = sf_yaml_to_json(s, strlen(s), 0, stop_cb, &calls, err, sizeof(err));
	cr_expect_eq(rc, 42);
	cr_expect_eq(calls, 2);
	cr_expect_str_eq(err, "", "a callback stop is not an error: %s", err);

	struct docs d = {.stop_at = 1, .stop_rc = -ECANCELED};
	rc = sf_yaml_to_json(s, strlen(s), 0, collect, &d, err, sizeof(err));
	cr_expect_eq(rc, -ECANCELED);
	cr_expect_eq(d.n, 1);
	docs_free(&d);

	/* without a callback the stream is only checked */
	static const char ok[] = "a: 1\n---\nb: 2\n";
	cr_expect_eq(sf_yaml_to_json(ok, strlen(ok), 0, NULL, NULL, err, sizeof(err)), 0);
	cr_expect_eq(sf_yaml_to_json(s, strlen(s), 0, NULL, NULL, err, sizeof(err)), -EBADMSG);
}

Test(yaml, one_document)
{
	char err[256] = "";
	char *json = sf_yaml_one_to_json("", 0, err, sizeof(err));
	cr_expect_null(json);
	cr_expect_neq(err[0], '\0', "an empty stream must set err");
	assert_has(err, "no YAML document");

	err[0] = '\0';
	static const char nulls[] = "# c\n---\n~\n---\n";
	cr_expect_null(sf_yaml_one_to_json(nulls, strlen(nulls), err, sizeof(err)));
	assert_has(err, "no YAML document");

	static const char two[] = "---\n---\nkind: Pod\n---\nkind: Service\n";
	json = sf_yaml_one_to_json(two, strlen(two), err, sizeof(err));
	cr_assert_not_null(json, "%s", err);
	cr_expect_str_eq(json, "{\"kind\":\"Pod\"}");
	free(json);

	err[0] = '\0';
	cr_expect_null(sf_yaml_one_to_json("a: b: c", 7, err, sizeof(err)));
	assert_has(err, "line 1 column 5: mapping values are not allowed");
}

static int count_cb(void *ud, size_t index, const char *json, size_t len)
{
	(void)index;
	(void)json;
	(void)len;
	(*(size_t *)ud)++;
	return 0;
}

Test(yaml, files)
{
	char err[512];
	size_t n = 0;
	int rc = sf_yaml_file_to_json("/nonexistent/steadfast/manifest.yaml", 0, count_cb, &n, err,
	                              sizeof(err));
	cr_expect_eq(rc, -ENOENT);
	assert_has(err, "/nonexistent/steadfast/manifest.yaml");
	assert_has(err, "No such file");
	cr_expect_eq(n, 0);

	rc = sf_yaml_file_to_json("/tmp", 0, count_cb, &n, err, sizeof(err));
	cr_expect_eq(rc, -EISDIR);
	assert_has(err, "/tmp");

	char path[] = "/tmp/steadfast-yaml-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	static const char text[] = "a: 1\n---\nb: 2\n---\nc: d: e\n";
	cr_assert_eq(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
	close(fd);
	rc = sf_yaml_file_to_json(path, 0, count_cb, &n, err, sizeof(err));
	cr_expect_eq(rc, -EBADMSG);
	cr_expect_eq(n, 2);
	assert_has(err, path); /* messages name the file, then the position */
	assert_has(err, ": line 5 column 5:");

	fd = open(path, O_WRONLY | O_TRUNC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, deployment_yaml, sizeof(deployment_yaml) - 1),
	             (ssize_t)(sizeof(deployment_yaml) - 1));
	close(fd);
	struct docs d = {0};
	rc = sf_yaml_file_to_json(path, 0, collect, &d, err, sizeof(err));
	cr_expect_eq(rc, 0, "%s", err);
	cr_assert_eq(d.n, 1);
	cr_expect_str_eq(d.json[0], deployment_json);
	docs_free(&d);
	unlink(path);
}
