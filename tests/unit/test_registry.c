/* Unit tests: registry. The pure parts (SHA-256, OCI references, WWW-Authenticate,
 * dockerconfigjson, manifest and index reading, image configs, the content cache), then the
 * client against a scripted plain-HTTP registry on 127.0.0.1 (opts.plain_http): anonymous
 * pulls, the Bearer token flow, Basic authentication, digests that do not match, size caps,
 * 404s, the cache, redirects to a blob store, image configs behind an index, deadlines and
 * cancellation. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/size_limits.h"
#include "base/xalloc.h"
#include "check.h"
#include "fake_http.h"
#include "registry/oci_manifest.h"
#include "registry/oci_ref.h"
#include "registry/registry.h"
#include "registry/registry_auth.h"
#include "registry/registry_cache.h"
#include "registry/registry_http.h"

/* --- SHA-256 ---------------------------------------------------------------------------- */

TEST(sha256_known_values)
{
	char hex[SHA256_HEX_LEN + 1], digest[SHA256_DIGEST_LEN + 1];
	sha256_hex("abc", 3, hex);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha256_digest("", 0, digest);
	CHECK_STR(digest,
	          "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	CHECK(sha256_digest_valid(digest));
	CHECK(!sha256_digest_valid("sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b"
	                           "7852b85")); /* 63 digits */
	CHECK(!sha256_digest_valid("sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B"
	                           "7852B855")); /* uppercase */
	CHECK(!sha256_digest_valid("sha512:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b"
	                           "7852b855"));
	CHECK(!sha256_digest_valid(NULL));
	CHECK(!sha256_digest_valid("sha256:"));
}

/* --- OCI references --------------------------------------------------------------------- */

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const struct {
	const char *text, *registry, *repository, *tag, *digest;
} good_refs[] = {
        {"alpine", "docker.io", "library/alpine", "latest", NULL},
        {"alpine:3.20", "docker.io", "library/alpine", "3.20", NULL},
        {"user/app:v1", "docker.io", "user/app", "v1", NULL},
        {"docker.io/alpine", "docker.io", "library/alpine", "latest", NULL},
        {"index.docker.io/library/alpine:edge", "docker.io", "library/alpine", "edge", NULL},
        {"ghcr.io/org/fns/catalog:v1.2_b-3", "ghcr.io", "org/fns/catalog", "v1.2_b-3", NULL},
        {"localhost/fn", "localhost", "fn", "latest", NULL},
        {"localhost:5000/fn:dev", "localhost:5000", "fn", "dev", NULL},
        {"127.0.0.1:5000/a.b/c__d/e-f--g", "127.0.0.1:5000", "a.b/c__d/e-f--g", "latest", NULL},
        {"registry.example.co:5000/fns/catalog@sha256:" D64, "registry.example.co:5000",
         "fns/catalog", NULL, "sha256:" D64},
        {"reg.io/a/b:t@sha256:" D64, "reg.io", "a/b", "t", "sha256:" D64},
        {"[::1]:5000/x:y", "[::1]:5000", "x", "y", NULL},
        {"Reg.Example.COM/x", "Reg.Example.COM", "x", "latest", NULL},
        {"example.com", "docker.io", "library/example.com", "latest", NULL},
};

TEST(oci_ref_parses_like_docker)
{
	for (size_t i = 0; i < sizeof(good_refs) / sizeof(good_refs[0]); i++) {
		struct oci_ref r;
		struct err *e = NULL;
		if (oci_ref_parse(good_refs[i].text, &r, &e) < 0) {
			CHECK_STR(e ? e->msg : NULL, "(no error)");
			err_free(e);
			continue;
		}
		CHECK_STR(r.registry, good_refs[i].registry);
		CHECK_STR(r.repository, good_refs[i].repository);
		if (good_refs[i].tag)
			CHECK_STR(r.tag, good_refs[i].tag);
		else
			CHECK(r.tag == NULL);
		if (good_refs[i].digest)
			CHECK_STR(r.digest, good_refs[i].digest);
		else
			CHECK(r.digest == NULL);
		oci_ref_clear(&r);
		CHECK(r.registry == NULL && r.repository == NULL);
	}
}

static const struct {
	const char *text, *why;
} bad_refs[] = {
        {"", "empty"},
        {"Alpine", "lowercase"},
        {"reg.io/a//b", "lowercase"},
        {"reg.io/a/", "lowercase"},
        {"reg.io/a_", "lowercase"},
        {"reg.io/a___b", "lowercase"},
        {"reg.io/-a", "lowercase"},
        {"reg.io/a:", "the tag is empty"},
        {"reg.io/a:-x", "the tag must be"},
        {"reg.io/a:t!", "the tag must be"},
        {"reg.io/a@sha256:abc", "64 lowercase hex"},
        {"reg.io/a@sha512:" D64, "only sha256"},
        {"reg.io/a@", "only sha256"},
        {"oci://reg.io/a", "no scheme"},
        {"reg.io:99999/a", "port"},
        {"reg.io:/a", "port"},
        {"reg.io:50x/a", "port"},
        {"re_g.io/a", "host name"},
        {"[zz]:5/a", "IPv6"},
        {"a b", "white space"},
        {"/a", "lowercase"},
};

TEST(oci_ref_refuses_bad_references)
{
	for (size_t i = 0; i < sizeof(bad_refs) / sizeof(bad_refs[0]); i++) {
		struct oci_ref r;
		struct err *e = NULL;
		int rc = oci_ref_parse(bad_refs[i].text, &r, &e);
		CHECK_INT(rc, -1);
		if (rc == 0) {
			fprintf(stderr, "  accepted \"%s\"\n", bad_refs[i].text);
			oci_ref_clear(&r);
			continue;
		}
		CHECK_INT(e ? e->code : ERR_OK, ERR_CONFIG);
		char *want = xasprintf("bad OCI reference \"%s\": ", bad_refs[i].text);
		CHECK_CONTAINS(e ? e->msg : NULL, want);
		CHECK_CONTAINS(e ? e->msg : NULL, bad_refs[i].why);
		CHECK(r.registry == NULL && r.tag == NULL && r.digest == NULL);
		free(want);
		err_free(e);
	}
	struct oci_ref r;
	CHECK_INT(oci_ref_parse(NULL, &r, NULL), -1); /* err may be NULL */
}

TEST(oci_ref_string_is_canonical)
{
	struct oci_ref r;
	CHECK_INT(oci_ref_parse("alpine", &r, NULL), 0);
	char *s = oci_ref_string(&r);
	CHECK_STR(s, "docker.io/library/alpine:latest");
	CHECK_STR(oci_ref_reference(&r), "latest");
	free(s);
	oci_ref_clear(&r);
	CHECK_INT(oci_ref_parse("reg.io:5000/a/b:t@sha256:" D64, &r, NULL), 0);
	s = oci_ref_string(&r);
	CHECK_STR(s, "reg.io:5000/a/b:t@sha256:" D64);
	CHECK_STR(oci_ref_reference(&r), "sha256:" D64); /* the digest pins the content */
	free(s);
	oci_ref_clear(&r);
	CHECK_STR(registry_host("docker.io"), "registry-1.docker.io");
	CHECK_STR(registry_host("ghcr.io"), "ghcr.io");
}

/* --- WWW-Authenticate ------------------------------------------------------------------- */

TEST(challenge_bearer)
{
	struct registry_challenge c;
	struct err *e = NULL;
	CHECK_INT(registry_challenge_parse(
	                  "Bearer realm=\"https://auth.docker.io/token\",service=\"registry."
	                  "docker.io\",scope=\"repository:library/alpine:pull\"",
	                  &c, &e),
	          0);
	CHECK_STR(c.scheme, "Bearer");
	CHECK_STR(c.realm, "https://auth.docker.io/token");
	CHECK_STR(c.service, "registry.docker.io");
	CHECK_STR(c.scope, "repository:library/alpine:pull");
	registry_challenge_clear(&c);
	CHECK(c.scheme == NULL && c.realm == NULL);

	/* Commas and escaped quotes inside quotes, names in any case, plain tokens, spaces. */
	CHECK_INT(registry_challenge_parse("bearer  Realm = \"http://h/t?a=1,b=\\\"2\\\"\" , "
	                                   "SERVICE=reg.test,scope=\"repository:a:pull,push\","
	                                   "error=\"insufficient_scope\"",
	                                   &c, &e),
	          0);
	CHECK_STR(c.scheme, "bearer");
	CHECK_STR(c.realm, "http://h/t?a=1,b=\"2\"");
	CHECK_STR(c.service, "reg.test");
	CHECK_STR(c.scope, "repository:a:pull,push");
	registry_challenge_clear(&c);
}

TEST(challenge_basic_and_several)
{
	struct registry_challenge c;
	struct err *e = NULL;
	CHECK_INT(registry_challenge_parse("Basic realm=\"Registry Realm\"", &c, &e), 0);
	CHECK_STR(c.scheme, "Basic");
	CHECK_STR(c.realm, "Registry Realm");
	CHECK(c.service == NULL && c.scope == NULL);
	registry_challenge_clear(&c);
	/* Only the first of several challenges is read. */
	CHECK_INT(registry_challenge_parse("Bearer realm=\"x\",service=\"y\", Basic realm=\"z\"",
	                                   &c, &e),
	          0);
	CHECK_STR(c.scheme, "Bearer");
	CHECK_STR(c.realm, "x");
	CHECK_STR(c.service, "y");
	registry_challenge_clear(&c);
	CHECK_INT(registry_challenge_parse("Negotiate", &c, &e), 0);
	CHECK_STR(c.scheme, "Negotiate");
	CHECK(c.realm == NULL);
	registry_challenge_clear(&c);
}

TEST(challenge_malformed)
{
	static const struct {
		const char *value, *why;
	} bad[] = {
	        {"", "no scheme"},
	        {"=x", "no scheme"},
	        {"Bearer realm=\"x", "does not end"},
	        {"Bearer realm=\"x\" service=\"y\"", "expected a ','"},
	        {"Bearer realm=\"x\",=y", "parameter name"},
	        {"Bea\"rer realm=x", "not a token"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct registry_challenge c;
		struct err *e = NULL;
		CHECK_INT(registry_challenge_parse(bad[i].value, &c, &e), -1);
		CHECK_INT(e ? e->code : ERR_OK, ERR_NET);
		CHECK_CONTAINS(e ? e->msg : NULL, "bad WWW-Authenticate header");
		CHECK_CONTAINS(e ? e->msg : NULL, bad[i].why);
		CHECK(c.scheme == NULL && c.realm == NULL);
		err_free(e);
	}
}

/* --- dockerconfigjson ------------------------------------------------------------------- */

/* base64("user:pass") and base64("u2:pa:ss") */
#define AUTH_USER_PASS "dXNlcjpwYXNz"
#define AUTH_U2        "dTI6cGE6c3M="

static int lookup(const char *json, const char *registry, struct registry_creds *c, struct err **e)
{
	return registry_auth_lookup(json, strlen(json), "auth.json", registry, "team/app", c, e);
}

/* The auths key that registry_auth_lookup picks in json for registry/repository ("" when
 * none matches, "error: …" when it fails); a new string. */
static char *picked(const char *json, const char *registry, const char *repository)
{
	struct registry_creds c;
	struct err *e = NULL;
	int rc =
	        registry_auth_lookup(json, strlen(json), "auth.json", registry, repository, &c, &e);
	char *key = rc < 0 ? xasprintf("error: %s", e ? e->msg : "?")
	                   : xstrdup(rc == 1 && c.key ? c.key : "");
	if (rc == 1 && (c.user == NULL || c.password == NULL))
		fprintf(stderr, "  key %s matched without credentials\n", key);
	registry_creds_clear(&c);
	err_free(e);
	return key;
}

/* One lookup: the image and the key it must pick ("" for none). */
struct pick {
	const char *registry, *repository, *want;
};

/* An auths object with each of the keys, all with the same credentials. */
static char *auths_of(const char *const *keys)
{
	struct buf b;
	buf_init(&b, 0);
	buf_puts(&b, "{\"auths\":{");
	for (size_t i = 0; keys[i]; i++)
		buf_printf(&b, "%s\"%s\":{\"auth\":\"" AUTH_USER_PASS "\"}", i ? "," : "", keys[i]);
	buf_puts(&b, "}}");
	return buf_steal(&b, NULL);
}

/* Checks each case against an auths object of keys (a NULL-terminated list). */
static void check_picks(const char *const *keys, const struct pick *cases, size_t n)
{
	char *json = auths_of(keys);
	for (size_t i = 0; i < n; i++) {
		char *got = picked(json, cases[i].registry, cases[i].repository);
		if (strcmp(got, cases[i].want) != 0)
			CHECK_FAIL_("the key for %s/%s in %s: got \"%s\", want \"%s\"",
			            cases[i].registry, cases[i].repository, json, got,
			            cases[i].want);
		free(got);
	}
	free(json);
}

#define CHECK_PICKS(keys, cases) check_picks(keys, cases, sizeof(cases) / sizeof(cases[0]))

TEST(dockerconfig_docker_hub_keys)
{
	static const char *const keys[] = {
	        "https://index.docker.io/v1/",  "docker.io",       "registry-1.docker.io",
	        "https://registry-1.docker.io", "index.docker.io", "INDEX.docker.io/v2/"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char *json = xasprintf("{\"auths\":{\"other.io\":{\"auth\":\"" AUTH_U2 "\"},"
		                       "\"%s\":{\"auth\":\"" AUTH_USER_PASS "\"}}}",
		                       keys[i]);
		struct registry_creds c;
		struct err *e = NULL;
		CHECK_INT(lookup(json, "docker.io", &c, &e), 1);
		CHECK_STR(c.user, "user");
		CHECK_STR(c.password, "pass");
		CHECK_STR(c.key, keys[i]);
		registry_creds_clear(&c);
		CHECK(c.user == NULL && c.password == NULL && c.key == NULL);
		/* Docker Hub's keys do not name another registry, nor Hub on another port. */
		CHECK_INT(lookup(json, "ghcr.io", &c, &e), 0);
		CHECK(c.user == NULL);
		CHECK_INT(lookup(json, "docker.io:5000", &c, &e), 0);
		free(json);
	}
	/* A path under Docker Hub: only that organisation's repositories. */
	static const char *const hub[] = {"https://index.docker.io/v1/", "docker.io/myorg/", NULL};
	static const struct pick cases[] = {
	        {"docker.io", "myorg/fn", "docker.io/myorg/"},
	        {"docker.io", "library/alpine", "https://index.docker.io/v1/"},
	};
	CHECK_PICKS(hub, cases);
}

TEST(dockerconfig_other_registries)
{
	const char *json = "{\"auths\":{"
	                   "\"https://reg.io:5000\":{\"auth\":\"" AUTH_U2 "\"},"
	                   "\"reg.io\":{\"username\":\"plain\",\"password\":\"pw\"},"
	                   "\"http://Other.IO/v2/\":{\"auth\":\"" AUTH_USER_PASS "\"}}}";
	struct registry_creds c;
	struct err *e = NULL;
	CHECK_INT(lookup(json, "reg.io:5000", &c, &e), 1);
	CHECK_STR(c.user, "u2");
	CHECK_STR(c.password, "pa:ss"); /* the password may hold ':' */
	CHECK_STR(c.key, "https://reg.io:5000");
	registry_creds_clear(&c);
	CHECK_INT(lookup(json, "reg.io", &c, &e), 1); /* no port: its own key */
	CHECK_STR(c.user, "plain");
	CHECK_STR(c.password, "pw");
	registry_creds_clear(&c);
	CHECK_INT(lookup(json, "other.io", &c, &e), 1); /* scheme and /v2/ dropped, any case */
	CHECK_STR(c.user, "user");
	registry_creds_clear(&c);
	CHECK_INT(lookup(json, "reg.io:5001", &c, &e), 0);
	CHECK_INT(lookup(json, "docker.io", &c, &e), 0);
	CHECK_INT(lookup("{\"auths\":{}}", "reg.io", &c, &e), 0);
	char *basic = registry_auth_basic(&(struct registry_creds){"user", "pass", NULL});
	CHECK_STR(basic, "Basic " AUTH_USER_PASS);
	free(basic);
}

TEST(dockerconfig_ports)
{
	/* A key with a port matches that port only; a key without one only no port. */
	static const char *const keys[] = {"reg.io:5000", "reg.io", "[::1]:5000", NULL};
	static const struct pick cases[] = {
	        {"reg.io:5000", "team/app", "reg.io:5000"},
	        {"reg.io", "team/app", "reg.io"},
	        {"reg.io:443", "team/app", ""},
	        {"reg.io:50000", "team/app", ""},
	        {"[::1]:5000", "team/app", "[::1]:5000"},
	        {"[::1]", "team/app", ""},
	};
	CHECK_PICKS(keys, cases);
	static const char *const portless[] = {"reg.io", NULL};
	static const struct pick other_port[] = {{"reg.io:5000", "team/app", ""}};
	CHECK_PICKS(portless, other_port);
}

TEST(dockerconfig_path_prefixes)
{
	/* The key's path is a prefix of the repository's; the most specific key wins; a key
	 * for another path never matches. */
	static const char *const keys[] = {"reg.io/other",     "reg.io",
	                                   "reg.io/team",      "https://reg.io/v2/team/app",
	                                   "reg.io/team/lib/", NULL};
	static const struct pick cases[] = {
	        {"reg.io", "team/app", "https://reg.io/v2/team/app"},
	        {"reg.io", "team/app/sub", "https://reg.io/v2/team/app"},
	        {"reg.io", "team/lib/x", "reg.io/team/lib/"},
	        {"reg.io", "team/lib", "reg.io/team"}, /* "/team/lib/" is longer */
	        {"reg.io", "team/web", "reg.io/team"},
	        {"reg.io", "teamx/web", "reg.io/team"}, /* a string prefix, as the kubelet's */
	        {"reg.io", "other/x", "reg.io/other"},
	        {"reg.io", "library/alpine", "reg.io"},
	};
	CHECK_PICKS(keys, cases);
	/* Without a key for the host alone, another repository gets nothing. */
	static const char *const only_team[] = {"reg.io/team/", "reg.io:5000", NULL};
	static const struct pick team_cases[] = {
	        {"reg.io", "team/app", "reg.io/team/"},
	        {"reg.io", "teamx/app", ""},
	        {"reg.io", "other/app", ""},
	        {"reg.io:5000", "other/app", "reg.io:5000"},
	};
	CHECK_PICKS(only_team, team_cases);
}

TEST(dockerconfig_globs)
{
	/* Each label of the key's host is a pattern; the number of labels must be equal. */
	static const char *const keys[] = {"*.example.com", "registry.example.com/team/",
	                                   "*.*.corp.io",   "reg-?.lab.io",
	                                   "*.io:5000",     NULL};
	static const struct pick cases[] = {
	        {"a.example.com", "x/y", "*.example.com"},
	        {"A.Example.COM", "x/y", "*.example.com"}, /* hosts: any case */
	        {"registry.example.com", "team/app", "registry.example.com/team/"},
	        {"registry.example.com", "other/app", "*.example.com"},
	        {"example.com", "x/y", ""},     /* fewer labels */
	        {"a.b.example.com", "x/y", ""}, /* more labels */
	        {"a.b.corp.io", "x/y", "*.*.corp.io"},
	        {"reg-1.lab.io", "x/y", "reg-?.lab.io"},
	        {"reg-10.lab.io", "x/y", ""},
	        {"ghcr.io:5000", "x/y", "*.io:5000"},
	        {"ghcr.io", "x/y", ""},
	};
	CHECK_PICKS(keys, cases);
}

TEST(dockerconfig_most_specific_first)
{
	/* Of the matching keys the greatest host[:port]path in byte order wins, whatever the
	 * order in the file; a name beats a glob; equal keys: the first. */
	static const char *const keys[] = {"*.reg.io", "https://a.reg.io/", "a.reg.io/team",
	                                   "http://a.reg.io/team/app", NULL};
	static const char *const reversed[] = {"http://a.reg.io/team/app", "a.reg.io/team",
	                                       "https://a.reg.io/", "*.reg.io", NULL};
	static const struct pick cases[] = {
	        {"a.reg.io", "team/app", "http://a.reg.io/team/app"},
	        {"a.reg.io", "team/web", "a.reg.io/team"},
	        {"a.reg.io", "misc/x", "https://a.reg.io/"},
	        {"b.reg.io", "team/app", "*.reg.io"},
	};
	CHECK_PICKS(keys, cases);
	CHECK_PICKS(reversed, cases);
	static const char *const equal[] = {"reg.io", "https://reg.io/v1/", "http://reg.io/", NULL};
	/* Keys that name no registry are skipped, not errors. */
	static const char *const odd[] = {"oci://reg.io", ":5000", "", "[::1", "reg.io", NULL};
	static const struct pick plain[] = {{"reg.io", "x/y", "reg.io"}};
	CHECK_PICKS(equal, plain);
	CHECK_PICKS(odd, plain);
	/* The most specific entry is the one read: without credentials it is an error naming
	 * it, even when a less specific one has some. */
	char *got = picked("{\"auths\":{\"reg.io\":{\"auth\":\"" AUTH_USER_PASS "\"},"
	                   "\"reg.io/team\":{\"identitytoken\":\"t\"}}}",
	                   "reg.io", "team/app");
	CHECK_STR(got, "error: auth.json: auths.\"reg.io/team\" has no credentials: krmpod reads "
	               "\"auth\" (base64 of user:password) or \"username\" and \"password\"");
	free(got);
}

TEST(dockerconfig_errors)
{
	static const struct {
		const char *json, *why;
	} bad[] = {
	        {"{\"auths\": [", "auth.json"},
	        {"{\"credsStore\":\"desktop\"}", "is not a dockerconfigjson"},
	        {"{\"auths\":{\"reg.io\":{\"identitytoken\":\"t\"}}}", "has no credentials"},
	        {"{\"auths\":{\"reg.io\":{\"auth\":\"!!!\"}}}", "auths.\"reg.io\".auth"},
	        {"{\"auths\":{\"reg.io\":{\"auth\":\"bm9jb2xvbg==\"}}}", "not the base64 of user"},
	        {"{\"auths\":{\"reg.io\":\"x\"}}", "is not an object"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct registry_creds c;
		struct err *e = NULL;
		CHECK_INT(lookup(bad[i].json, "reg.io", &c, &e), -1);
		CHECK_INT(e ? e->code : ERR_OK, ERR_CONFIG);
		CHECK_CONTAINS(e ? e->msg : NULL, bad[i].why);
		CHECK(c.user == NULL);
		err_free(e);
	}
	struct registry_creds c;
	struct err *e = NULL;
	CHECK_INT(registry_auth_load("/nonexistent/auth.json", "reg.io", "x", &c, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_CONFIG);
	CHECK_CONTAINS(e ? e->msg : NULL, "/nonexistent/auth.json");
	err_free(e);
}

/* --- Manifests, indexes, image configs -------------------------------------------------- */

#define DA           "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define DB           "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define DC           "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define CATALOG_TYPE "application/vnd.krmpod.catalog.v1+yaml"

static struct json *parse(const char *text)
{
	struct json *j = NULL;
	struct err *e = NULL;
	if (json_parse(text, strlen(text), "test JSON", &j, &e) < 0) {
		fprintf(stderr, "test JSON: %s\n", e->msg);
		abort();
	}
	return j;
}

TEST(manifest_kind)
{
	static const struct {
		const char *json;
		int kind; /* -1: an error */
	} cases[] = {
	        {"{\"mediaType\":\"" OCI_MANIFEST "\",\"layers\":[]}", OCI_KIND_MANIFEST},
	        {"{\"mediaType\":\"" DOCKER_MANIFEST "\"}", OCI_KIND_MANIFEST},
	        {"{\"mediaType\":\"" OCI_INDEX "\"}", OCI_KIND_INDEX},
	        {"{\"mediaType\":\"" DOCKER_LIST "\"}", OCI_KIND_INDEX},
	        {"{\"schemaVersion\":2,\"layers\":[]}", OCI_KIND_MANIFEST},
	        {"{\"schemaVersion\":2,\"manifests\":[]}", OCI_KIND_INDEX},
	        {"{\"schemaVersion\":1,\"fsLayers\":[]}", -1},
	        {"{\"mediaType\":\"text/html\"}", -1},
	        {"[1]", -1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json *j = parse(cases[i].json);
		enum oci_manifest_kind kind = (enum oci_manifest_kind) - 1;
		struct err *e = NULL;
		int rc = oci_manifest_kind(j, &kind, &e);
		CHECK_INT(rc, cases[i].kind < 0 ? -1 : 0);
		if (cases[i].kind >= 0)
			CHECK_INT(kind, cases[i].kind);
		else
			CHECK_INT(e ? e->code : ERR_OK, ERR_NET);
		err_free(e);
		json_free(j);
	}
}

TEST(manifest_layer_selection)
{
	struct json *m =
	        parse("{\"layers\":["
	              "{\"mediaType\":\"application/x-other\",\"digest\":\"" DA "\",\"size\":1},"
	              "{\"mediaType\":\"" CATALOG_TYPE "\",\"digest\":\"" DB "\",\"size\":42},"
	              "{\"mediaType\":\"application/x-twice\",\"digest\":\"" DA "\",\"size\":1},"
	              "{\"mediaType\":\"application/x-twice\",\"digest\":\"" DC "\",\"size\":1}],"
	              "\"config\":{\"mediaType\":\"" OCI_IMAGE_CONFIG "\",\"digest\":\"" DC
	              "\",\"size\":7}}");
	struct oci_descriptor d;
	struct err *e = NULL;
	CHECK_INT(oci_manifest_layer(m, CATALOG_TYPE, &d, &e), 0);
	CHECK_STR(d.digest, DB);
	CHECK_INT(d.size, 42);
	CHECK_STR(d.media_type, CATALOG_TYPE);
	CHECK_INT(oci_manifest_layer(m, "application/x-none", &d, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_CONFIG);
	CHECK_STR(e ? e->msg : NULL,
	          "the manifest has no layer of media type application/x-none (its layers: "
	          "application/x-other, " CATALOG_TYPE
	          ", application/x-twice, application/x-twice)");
	CHECK_INT(oci_manifest_layer(m, "application/x-twice", &d, &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "has 2 layers of media type application/x-twice");
	CHECK_INT(oci_manifest_config(m, &d, &e), 0);
	CHECK_STR(d.digest, DC);
	CHECK_STR(d.media_type, OCI_IMAGE_CONFIG);
	json_free(m);

	m = parse("{\"layers\":[{\"mediaType\":\"" CATALOG_TYPE "\",\"digest\":\"sha512:" D64
	          "\",\"size\":1}]}");
	CHECK_INT(oci_manifest_layer(m, CATALOG_TYPE, &d, &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "unsupported digest");
	CHECK_INT(e ? e->code : ERR_OK, ERR_NET);
	CHECK_INT(oci_manifest_config(m, &d, &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "has no config");
	json_free(m);
	m = parse("{\"layers\":[{\"mediaType\":\"" CATALOG_TYPE "\",\"digest\":\"" DA
	          "\",\"size\":-1}]}");
	CHECK_INT(oci_manifest_layer(m, CATALOG_TYPE, &d, &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "no valid size");
	json_free(m);
	err_free(e);
}

#define PLATFORM(os, arch, variant) \
	"\"platform\":{\"os\":\"" os "\",\"architecture\":\"" arch "\"" variant "}"

TEST(index_platform_selection)
{
	struct json *idx = parse(
	        "{\"manifests\":["
	        "{\"digest\":\"" DA "\",\"size\":1," PLATFORM(
	                "linux", "arm64",
	                "") "},"
	                    "{\"digest\":\"" DB "\",\"size\":2," PLATFORM(
	                            "linux", "amd64",
	                            ",\"variant\":\"v3\"") "},"
	                                                   "{\"digest\":\"" DC
	                                                   "\",\"size\":3," PLATFORM(
	                                                           "linux", "amd64",
	                                                           "") "},"
	                                                               "{\"digest\":\"" DA
	                                                               "\",\"size\":4," PLATFORM(
	                                                                       "unknown", "unknown",
	                                                                       "") "}]}");
	struct oci_descriptor d;
	struct err *e = NULL;
	CHECK_INT(oci_index_platform(idx, "linux", "amd64", &d, &e), 0);
	CHECK_STR(d.digest, DC); /* the one without a variant */
	CHECK_INT(d.size, 3);
	CHECK_INT(oci_index_platform(idx, "linux", "arm64", &d, &e), 0);
	CHECK_STR(d.digest, DA);
	CHECK_INT(oci_index_platform(idx, "windows", "amd64", &d, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_CONFIG);
	CHECK_STR(e ? e->msg : NULL, "the index has no manifest for windows/amd64 (it has: "
	                             "linux/arm64, linux/amd64/v3, linux/amd64, unknown/unknown)");
	json_free(idx);
	idx = parse("{\"manifests\":[{\"digest\":\"" DB
	            "\",\"size\":2," PLATFORM("linux", "amd64", ",\"variant\":\"v2\"") "}]}");
	CHECK_INT(oci_index_platform(idx, "linux", "amd64", &d, &e), 0);
	CHECK_STR(d.digest, DB); /* only a variant: taken */
	json_free(idx);
	err_free(e);
}

TEST(image_config_parse)
{
	const char *text = "{\"architecture\":\"amd64\",\"config\":{\"Entrypoint\":[\"/fn\","
	                   "\"--x\"],\"Cmd\":[\"a b\"],\"Env\":[\"PATH=/bin\",\"A=1=2\"],"
	                   "\"WorkingDir\":\"/work\",\"User\":\"65532:65532\"},\"rootfs\":{}}";
	struct registry_image_config c;
	memset(&c, 0, sizeof(c));
	memcpy(c.manifest_digest, DA, sizeof(DA));
	struct err *e = NULL;
	CHECK_INT(oci_image_config_parse(text, strlen(text), &c, &e), 0);
	CHECK_STR(c.entrypoint ? c.entrypoint[0] : NULL, "/fn");
	CHECK_STR(c.entrypoint ? c.entrypoint[1] : NULL, "--x");
	CHECK(c.entrypoint && c.entrypoint[2] == NULL);
	CHECK_STR(c.cmd ? c.cmd[0] : NULL, "a b");
	CHECK(c.cmd && c.cmd[1] == NULL);
	CHECK_STR(c.env ? c.env[1] : NULL, "A=1=2");
	CHECK_STR(c.working_dir, "/work");
	CHECK_STR(c.user, "65532:65532");
	CHECK_STR(c.manifest_digest, DA); /* left alone */
	registry_image_config_clear(&c);
	CHECK(c.entrypoint == NULL && c.env == NULL && c.manifest_digest[0] == '\0');

	text = "{\"config\":{\"Entrypoint\":null,\"WorkingDir\":\"\",\"User\":\"\"}}";
	CHECK_INT(oci_image_config_parse(text, strlen(text), &c, &e), 0);
	CHECK(c.entrypoint == NULL && c.cmd == NULL && c.working_dir == NULL && c.user == NULL);
	CHECK(c.env != NULL && c.env[0] == NULL); /* Env: never NULL */
	registry_image_config_clear(&c);
	CHECK_INT(oci_image_config_parse("{}", 2, &c, &e), 0); /* an empty config */
	CHECK(c.env != NULL && c.entrypoint == NULL);
	registry_image_config_clear(&c);

	text = "{\"config\":{\"Cmd\":[\"a\"],\"Env\":[\"A=1\",2]}}";
	CHECK_INT(oci_image_config_parse(text, strlen(text), &c, &e), -1);
	CHECK_STR(e ? e->msg : NULL, "the image config's config.Env is not a list of strings");
	CHECK(c.cmd == NULL); /* what was read is freed */
	text = "{\"config\":{\"User\":0}}";
	CHECK_INT(oci_image_config_parse(text, strlen(text), &c, &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "config.User is not a string");
	CHECK_INT(oci_image_config_parse("[]", 2, &c, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_NET);
	err_free(e);
}

/* --- The content cache ------------------------------------------------------------------ */

static char *make_tmp_dir(void)
{
	char *dir = xstrdup("/tmp/krmpod-test-registry-XXXXXX");
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		abort();
	}
	return dir;
}

static void remove_tree(const char *dir)
{
	char *cmd[] = {"rm", "-rf", (char *)dir, NULL};
	pid_t pid = fork();
	if (pid == 0) {
		execvp(cmd[0], cmd);
		_exit(127);
	}
	int status;
	waitpid(pid, &status, 0);
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static void set_mtime(const char *path, time_t t)
{
	struct timespec ts[2] = {{t, 0}, {t, 0}};
	if (utimensat(AT_FDCWD, path, ts, 0) < 0)
		perror(path);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		perror(path);
		abort();
	}
	fputs(text, f);
	fclose(f);
}

TEST(cache_put_get_and_corruption)
{
	char *dir = make_tmp_dir();
	char *root = xasprintf("%s/deeper/cache", dir); /* created when missing */
	char d[SHA256_DIGEST_LEN + 1];
	sha256_digest("hello", 5, d);
	struct buf b;
	buf_init(&b, 0);
	CHECK(!registry_cache_get(root, d, 100, &b)); /* a miss */
	registry_cache_put(root, d, "hello", 5);
	char *path = registry_cache_path(root, d);
	char *want = xasprintf("%s/sha256/%s", root, d + 7);
	CHECK_STR(path, want);
	free(want);
	CHECK(exists(path));
	CHECK(registry_cache_get(root, d, 100, &b));
	CHECK_INT(b.len, 5);
	CHECK_STR(b.data, "hello");
	CHECK(!registry_cache_get(root, d, 4, &b)); /* larger than the caller takes */
	CHECK_INT(b.len, 0);
	CHECK(!registry_cache_get(NULL, d, 100, &b));
	CHECK(!registry_cache_get(root, "sha256:../../etc", 100, &b));
	write_file(path, "jello"); /* corrupt: deleted on read */
	CHECK(!registry_cache_get(root, d, 100, &b));
	CHECK(!exists(path));
	CHECK_INT(b.len, 0);
	buf_free(&b);
	free(path);
	free(root);
	remove_tree(dir);
	free(dir);
}

TEST(cache_evicts_the_least_recently_used)
{
	char *dir = make_tmp_dir();
	static const char *const texts[] = {"first object", "second object", "third object"};
	char d[3][SHA256_DIGEST_LEN + 1];
	char *paths[3];
	time_t now = time(NULL);
	for (int i = 0; i < 3; i++) {
		sha256_digest(texts[i], strlen(texts[i]), d[i]);
		registry_cache_put(dir, d[i], texts[i], strlen(texts[i]));
		paths[i] = registry_cache_path(dir, d[i]);
		set_mtime(paths[i], now - 300 + i * 100); /* first is oldest */
	}
	char *stale = xasprintf("%s/sha256/.tmp-old-abc", dir);
	char *fresh = xasprintf("%s/sha256/.tmp-new-abc", dir);
	write_file(stale, "x");
	write_file(fresh, "x");
	set_mtime(stale, now - 7200);
	struct buf b;
	buf_init(&b, 0);
	CHECK(registry_cache_get(dir, d[0], 100, &b)); /* the first is now the newest */
	registry_cache_evict(dir, strlen(texts[0]) + strlen(texts[2]));
	CHECK(exists(paths[0]));
	CHECK(!exists(paths[1])); /* the least recently used */
	CHECK(exists(paths[2]));
	CHECK(!exists(stale));
	CHECK(exists(fresh));
	registry_cache_evict(dir, 0);
	CHECK(!exists(paths[0]) && !exists(paths[2]));
	for (int i = 0; i < 3; i++)
		free(paths[i]);
	free(stale);
	free(fresh);
	buf_free(&b);
	remove_tree(dir);
	free(dir);
}

/* --- The client against a scripted registry (fake_http.h) ------------------------------------------- */

#define LAYER       "catalog:\n  - fn-a\n  - fn-b\n"
#define EMPTY_JSON  "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
#define MANIFEST_CT "Content-Type: " OCI_MANIFEST "\r\n"
#define OK          "200 OK"

struct reg {
	struct fake_http f;
	struct registry_opts o;
	char *dir;  /* a temporary directory: the auth file, the cache */
	char *host; /* "127.0.0.1:PORT" */
};

static void reg_start(struct reg *r)
{
	memset(r, 0, sizeof(*r));
	fake_http_start(&r->f, NULL, 0);
	r->dir = make_tmp_dir();
	r->host = xasprintf("127.0.0.1:%d", r->f.port);
	r->o.plain_http = true;
	r->o.deadline_ms = now_ms() + 20000;
}

/* Writes a dockerconfigjson with `auth` for the fake registry and uses it. */
static void reg_auth(struct reg *r, const char *auth)
{
	char *path = xasprintf("%s/auth.json", r->dir);
	char *json = xasprintf("{\"auths\":{\"https://%s\":{\"auth\":\"%s\"}}}", r->host, auth);
	write_file(path, json);
	free(json);
	r->o.auth_file = path;
}

static void reg_stop(struct reg *r)
{
	fake_http_stop(&r->f);
	remove_tree(r->dir);
	free((char *)r->o.auth_file);
	free((char *)r->o.cache_dir);
	free(r->dir);
	free(r->host);
}

/* An OCI artifact manifest with one layer of CATALOG_TYPE holding data. */
static char *artifact_manifest(const char *data, size_t len)
{
	char d[SHA256_DIGEST_LEN + 1];
	sha256_digest(data, len, d);
	return xasprintf("{\"schemaVersion\":2,\"mediaType\":\"" OCI_MANIFEST "\",\"config\":{"
	                 "\"mediaType\":\"application/vnd.oci.empty.v1+json\",\"digest\":"
	                 "\"" EMPTY_JSON "\",\"size\":2},\"layers\":[{\"mediaType\":"
	                 "\"" CATALOG_TYPE "\",\"digest\":\"%s\",\"size\":%zu}]}",
	                 d, len);
}

static void answer_manifest(struct fake_http *f, const char *json)
{
	fake_http_answer(f, OK, MANIFEST_CT, json);
}

/* Pulls the CATALOG_TYPE layer of HOST/suffix. */
static int pull(struct reg *r, const char *suffix, struct buf *out,
                char digest[SHA256_DIGEST_LEN + 1], struct err **e)
{
	char *text = xasprintf("%s/%s", r->host, suffix);
	struct oci_ref ref;
	int rc = oci_ref_parse(text, &ref, e);
	free(text);
	if (rc == 0)
		rc = registry_pull_layer(&r->o, &ref, CATALOG_TYPE, 1u << 20, out, digest, e);
	oci_ref_clear(&ref);
	return rc;
}

static char layer_digest[SHA256_DIGEST_LEN + 1];

TEST(anonymous_pull_of_a_layer)
{
	struct reg r;
	reg_start(&r);
	char *m = artifact_manifest(LAYER, strlen(LAYER));
	answer_manifest(&r.f, m);
	fake_http_answer(&r.f, OK, "Content-Type: application/octet-stream\r\n", LAYER);
	struct buf out;
	buf_init(&out, 0);
	char digest[SHA256_DIGEST_LEN + 1] = "";
	struct err *e = NULL;
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), 0);
	CHECK_STR(e ? e->msg : "", "");
	CHECK_STR(out.data, LAYER);
	CHECK_STR(digest, layer_digest);
	CHECK_INT(fake_http_nreq(&r.f), 2);
	CHECK_CONTAINS(fake_http_req(&r.f, 0), "GET /v2/fns/catalog/manifests/v1 HTTP/1.1");
	CHECK_CONTAINS(fake_http_req(&r.f, 0), "Accept: " OCI_MANIFEST ", " OCI_INDEX
	                                       ", " DOCKER_MANIFEST ", " DOCKER_LIST);
	CHECK(strstr(fake_http_req(&r.f, 0), "Authorization") == NULL);
	char *blob = xasprintf("GET /v2/fns/catalog/blobs/%s HTTP/1.1", layer_digest);
	CHECK_CONTAINS(fake_http_req(&r.f, 1), blob);
	CHECK(strstr(fake_http_req(&r.f, 1), "Authorization") == NULL);
	free(blob);
	free(m);
	buf_free(&out);
	err_free(e);
	reg_stop(&r);
}

/* A 429 with Retry-After and a 503 without it are retried (the manifest, then its layer),
 * and the pull goes through. */
TEST(throttled_and_unavailable_answers_are_retried)
{
	struct reg r;
	reg_start(&r);
	const char *busy =
	        "{\"errors\":[{\"code\":\"TOOMANYREQUESTS\",\"message\":\"slow down\"}]}";
	fake_http_answer(&r.f, "429 Too Many Requests", "Retry-After: 0\r\n", busy);
	char *m = artifact_manifest(LAYER, strlen(LAYER));
	answer_manifest(&r.f, m);
	fake_http_answer(&r.f, "503 Service Unavailable", NULL, "");
	fake_http_answer(&r.f, OK, NULL, LAYER);
	struct buf out;
	buf_init(&out, 0);
	char digest[SHA256_DIGEST_LEN + 1];
	struct err *e = NULL;
	int64_t t0 = now_ms();
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), 0);
	CHECK_STR(e ? e->msg : "", "");
	CHECK_STR(out.data, LAYER);
	CHECK_INT(fake_http_nreq(&r.f), 4);
	CHECK_CONTAINS(fake_http_req(&r.f, 1), "GET /v2/fns/catalog/manifests/v1 HTTP/1.1");
	CHECK_CONTAINS(fake_http_req(&r.f, 3), "/blobs/sha256:");
	CHECK(now_ms() - t0 >= 200); /* the 503's backoff */
	free(m);
	buf_free(&out);
	err_free(e);
	reg_stop(&r);
}

/* Pulls fns/catalog:v1 from r for its error alone; *ms gets how long it took. */
static int pull_failing(struct reg *r, struct err **e, int64_t *ms)
{
	struct buf out;
	buf_init(&out, 0);
	char digest[SHA256_DIGEST_LEN + 1];
	int64_t t0 = now_ms();
	int rc = pull(r, "fns/catalog:v1", &out, digest, e);
	*ms = now_ms() - t0;
	buf_free(&out);
	return rc;
}

/* Retries end: after 3, the last answer stands; a Retry-After over 5 s is not waited for;
 * neither is one that ends after the deadline. */
TEST(retries_are_bounded)
{
	struct reg r;
	reg_start(&r);
	for (int i = 0; i < 4; i++)
		fake_http_answer(&r.f, "502 Bad Gateway", NULL, "upstream down");
	struct err *e = NULL;
	int64_t ms = 0;
	CHECK_INT(pull_failing(&r, &e, &ms), -1);
	CHECK(e && strstr(e->msg, "502 Bad Gateway: \"upstream down\""));
	CHECK_INT(fake_http_nreq(&r.f), 4);
	CHECK(ms >= 200 + 400 + 800);
	err_free(e);
	e = NULL;
	reg_stop(&r);

	reg_start(&r);
	fake_http_answer(&r.f, "429 Too Many Requests", "Retry-After: 60\r\n", "");
	CHECK_INT(pull_failing(&r, &e, &ms), -1);
	CHECK(e && strstr(e->msg, "429 Too Many Requests"));
	CHECK_INT(fake_http_nreq(&r.f), 1);
	CHECK(ms < 1000);
	err_free(e);
	e = NULL;
	reg_stop(&r);

	reg_start(&r);
	r.o.deadline_ms = now_ms() + 1500;
	fake_http_answer(&r.f, "429 Too Many Requests", "Retry-After: 3\r\n", "");
	CHECK_INT(pull_failing(&r, &e, &ms), -1);
	CHECK(e && strstr(e->msg, "429 Too Many Requests"));
	CHECK_INT(fake_http_nreq(&r.f), 1);
	err_free(e);
	reg_stop(&r);
}

TEST(bearer_token_flow)
{
	struct reg r;
	reg_start(&r);
	reg_auth(&r, AUTH_USER_PASS);
	char *challenge =
	        xasprintf("WWW-Authenticate: Bearer realm=\"http://%s/token\","
	                  "service=\"reg.test\",scope=\"repository:fns/catalog:pull\"\r\n",
	                  r.host);
	fake_http_answer(&r.f, "401 Unauthorized", challenge,
	                 "{\"errors\":[{\"code\":\"UNAUTHORIZED\",\"message\":\"authentication "
	                 "required\"}]}");
	fake_http_answer(&r.f, OK, "Content-Type: application/json\r\n",
	                 "{\"token\":\"tkn-1\",\"access_token\":\"other\",\"expires_in\":300}");
	char *m = artifact_manifest(LAYER, strlen(LAYER));
	answer_manifest(&r.f, m);
	fake_http_answer(&r.f, OK, NULL, LAYER);
	struct buf out;
	buf_init(&out, 0);
	char digest[SHA256_DIGEST_LEN + 1];
	struct err *e = NULL;
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), 0);
	CHECK_STR(e ? e->msg : "", "");
	CHECK_STR(out.data, LAYER);
	CHECK_INT(fake_http_nreq(&r.f), 4);
	CHECK(strstr(fake_http_req(&r.f, 0), "Authorization") == NULL); /* anonymous first */
	CHECK_CONTAINS(fake_http_req(&r.f, 1),
	               "GET /token?service=reg.test&scope=repository%3Afns%2F"
	               "catalog%3Apull HTTP/1.1");
	CHECK_CONTAINS(fake_http_req(&r.f, 1), "Authorization: Basic " AUTH_USER_PASS);
	CHECK_CONTAINS(fake_http_req(&r.f, 2), "GET /v2/fns/catalog/manifests/v1 HTTP/1.1");
	CHECK_CONTAINS(fake_http_req(&r.f, 2), "Authorization: Bearer tkn-1");
	CHECK_CONTAINS(fake_http_req(&r.f, 3), "/blobs/sha256:");
	CHECK_CONTAINS(fake_http_req(&r.f, 3),
	               "Authorization: Bearer tkn-1"); /* kept for the pull */
	free(challenge);
	free(m);
	buf_free(&out);
	err_free(e);
	reg_stop(&r);
}

TEST(bearer_anonymous_token_and_default_scope)
{
	struct reg r;
	reg_start(&r);
	char *challenge =
	        xasprintf("WWW-Authenticate: Bearer realm=\"http://%s/auth?x=1\"\r\n", r.host);
	fake_http_answer(&r.f, "401 Unauthorized", challenge, "");
	fake_http_answer(&r.f, OK, NULL, "{\"access_token\":\"anon\"}");
	char *m = artifact_manifest(LAYER, strlen(LAYER));
	answer_manifest(&r.f, m);
	fake_http_answer(&r.f, OK, NULL, LAYER);
	struct buf out;
	buf_init(&out, 0);
	char digest[SHA256_DIGEST_LEN + 1];
	struct err *e = NULL;
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), 0);
	CHECK_CONTAINS(fake_http_req(&r.f, 1),
	               "GET /auth?x=1&scope=repository%3Afns%2Fcatalog%3Apull HTTP/1.1");
	CHECK(strstr(fake_http_req(&r.f, 1), "Authorization") == NULL); /* no credentials */
	CHECK_CONTAINS(fake_http_req(&r.f, 2), "Authorization: Bearer anon");
	free(challenge);
	free(m);
	buf_free(&out);
	err_free(e);
	reg_stop(&r);
}

#define BASIC_401 "WWW-Authenticate: Basic realm=\"Registry Realm\"\r\n"

TEST(basic_auth)
{
	struct reg r;
	reg_start(&r);
	reg_auth(&r, AUTH_USER_PASS);
	fake_http_answer(&r.f, "401 Unauthorized", BASIC_401, "");
	char *m = artifact_manifest(LAYER, strlen(LAYER));
	answer_manifest(&r.f, m);
	fake_http_answer(&r.f, OK, NULL, LAYER);
	struct buf out;
	buf_init(&out, 0);
	char digest[SHA256_DIGEST_LEN + 1];
	struct err *e = NULL;
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), 0);
	CHECK_STR(out.data, LAYER);
	CHECK_INT(fake_http_nreq(&r.f), 3);
	CHECK_CONTAINS(fake_http_req(&r.f, 1), "Authorization: Basic " AUTH_USER_PASS);
	CHECK_CONTAINS(fake_http_req(&r.f, 2), "Authorization: Basic " AUTH_USER_PASS);
	free(m);
	buf_free(&out);
	err_free(e);
	reg_stop(&r);
}

/* The registry's credentials from a pull Secret the sidecar read, and its first 401. */
static void use_doc(struct reg *r, const struct registry_auth_doc *doc)
{
	r->o.auth_docs = doc;
	r->o.n_auth_docs = 1;
	fake_http_answer(&r->f, "401 Unauthorized", BASIC_401, "");
}

TEST(credentials_missing_or_refused)
{
	/* No auth file: one request, then the error names the setting. */
	struct reg r;
	reg_start(&r);
	fake_http_answer(&r.f, "401 Unauthorized", BASIC_401, "");
	struct buf out;
	buf_init(&out, 0);
	char digest[SHA256_DIGEST_LEN + 1];
	struct err *e = NULL;
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_CONFIG);
	char *want = xasprintf("pull %s/fns/catalog:v1: the registry %s requires credentials: set "
	                       "KRMPOD_REGISTRY_AUTH to a dockerconfigjson that has them",
	                       r.host, r.host);
	CHECK_CONTAINS(e ? e->msg : NULL, want);
	free(want);
	CHECK_INT(fake_http_nreq(&r.f), 1);
	reg_stop(&r);

	/* Wrong credentials: refused after one retry, naming the registry and the file. */
	reg_start(&r);
	reg_auth(&r, AUTH_U2);
	fake_http_answer(&r.f, "401 Unauthorized", BASIC_401, "");
	fake_http_answer(&r.f, "401 Unauthorized", BASIC_401,
	                 "{\"errors\":[{\"code\":\"UNAUTHORIZED\",\"message\":\"bad password\"}]}");
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_CONFIG);
	want = xasprintf("the registry %s refused the credentials for fns/catalog in %s "
	                 "(KRMPOD_REGISTRY_AUTH, auths.\"https://%s\"): GET "
	                 "http://%s/v2/fns/catalog/manifests/v1: 401 Unauthorized: UNAUTHORIZED: "
	                 "bad password",
	                 r.host, r.o.auth_file, r.host, r.host);
	CHECK_CONTAINS(e ? e->msg : NULL, want);
	free(want);
	CHECK_INT(fake_http_nreq(&r.f), 2);
	reg_stop(&r);

	/* The token service refuses them. */
	reg_start(&r);
	reg_auth(&r, AUTH_U2);
	char *challenge =
	        xasprintf("WWW-Authenticate: Bearer realm=\"http://%s/token\"\r\n", r.host);
	fake_http_answer(&r.f, "401 Unauthorized", challenge, "");
	fake_http_answer(&r.f, "401 Unauthorized", NULL,
	                 "{\"details\":\"incorrect username or password\"}");
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_CONFIG);
	CHECK_CONTAINS(e ? e->msg : NULL, "refused the credentials for fns/catalog in");
	CHECK_CONTAINS(e ? e->msg : NULL, "incorrect username or password");
	free(challenge);
	reg_stop(&r);

	/* An auth file without an entry for this registry. */
	reg_start(&r);
	char *path = xasprintf("%s/auth.json", r.dir);
	write_file(path, "{\"auths\":{\"other.io\":{\"auth\":\"" AUTH_USER_PASS "\"}}}");
	r.o.auth_file = path;
	fake_http_answer(&r.f, "401 Unauthorized", BASIC_401, "");
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), -1);
	want = xasprintf("the registry %s requires credentials: the registry auth file %s "
	                 "(KRMPOD_REGISTRY_AUTH) has none for it: no key of its auths matches "
	                 "%s/fns/catalog",
	                 r.host, path, r.host);
	CHECK_CONTAINS(e ? e->msg : NULL, want);
	free(want);
	reg_stop(&r);

	/* A pull Secret read by the sidecar (pull_auth.h) without an entry for it: named. */
	reg_start(&r);
	static const char other[] = "{\"auths\":{\"other.io\":{\"auth\":\"" AUTH_USER_PASS "\"}}}";
	struct registry_auth_doc doc = {"pull Secret fns/pull", other, sizeof(other) - 1};
	use_doc(&r, &doc);
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), -1);
	want = xasprintf("the registry %s requires credentials: no key of auths matches "
	                 "%s/fns/catalog in pull Secret fns/pull (",
	                 r.host, r.host);
	CHECK_CONTAINS(e ? e->msg : NULL, want);
	free(want);
	reg_stop(&r);

	/* Its credentials refused: the Secret is named, not KRMPOD_REGISTRY_AUTH. */
	reg_start(&r);
	char *mine = xasprintf("{\"auths\":{\"%s\":{\"auth\":\"" AUTH_USER_PASS "\"}}}", r.host);
	doc.json = mine;
	doc.len = strlen(mine);
	use_doc(&r, &doc);
	fake_http_answer(&r.f, "401 Unauthorized", BASIC_401, "");
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), -1);
	want = xasprintf("the registry %s refused the credentials for fns/catalog in pull Secret "
	                 "fns/pull (auths.\"%s\")",
	                 r.host, r.host);
	CHECK_CONTAINS(e ? e->msg : NULL, want);
	free(want);
	free(mine);
	CHECK_INT(fake_http_nreq(&r.f), 2);
	reg_stop(&r);
	buf_free(&out);
	err_free(e);
}

TEST(blob_digest_mismatch)
{
	struct reg r;
	reg_start(&r);
	char *m = artifact_manifest(LAYER, strlen(LAYER));
	answer_manifest(&r.f, m);
	fake_http_answer(&r.f, OK, NULL, "catalog: [tampered]\n");
	struct buf out;
	buf_init(&out, 0);
	char digest[SHA256_DIGEST_LEN + 1], bad[SHA256_DIGEST_LEN + 1];
	sha256_digest("catalog: [tampered]\n", 20, bad);
	struct err *e = NULL;
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_IO);
	char *want = xasprintf("layer %s: its content's digest is %s, not %s", layer_digest, bad,
	                       layer_digest);
	CHECK_CONTAINS(e ? e->msg : NULL, want);
	CHECK_INT(out.len, 0); /* nothing delivered */
	free(want);
	free(m);
	buf_free(&out);
	err_free(e);
	reg_stop(&r);
}

TEST(manifest_digest_mismatch)
{
	struct reg r;
	reg_start(&r);
	char *m = artifact_manifest(LAYER, strlen(LAYER));
	answer_manifest(&r.f, m);
	struct buf out;
	buf_init(&out, 0);
	char digest[SHA256_DIGEST_LEN + 1], got[SHA256_DIGEST_LEN + 1];
	sha256_digest(m, strlen(m), got);
	struct err *e = NULL;
	CHECK_INT(pull(&r, "fns/catalog@sha256:" D64, &out, digest, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_IO);
	char *want = xasprintf("manifest sha256:" D64 ": its content's digest is %s, not "
	                       "sha256:" D64,
	                       got);
	CHECK_CONTAINS(e ? e->msg : NULL, want);
	CHECK_CONTAINS(fake_http_req(&r.f, 0), "GET /v2/fns/catalog/manifests/sha256:" D64);
	free(want);
	free(m);
	buf_free(&out);
	err_free(e);
	reg_stop(&r);
}

TEST(manifest_over_the_size_cap)
{
	struct reg r;
	reg_start(&r);
	/* Announced by Content-Length: refused before the body. */
	char *head = xasprintf("HTTP/1.1 200 OK\r\nContent-Type: " OCI_MANIFEST "\r\nContent-"
	                       "Length: %u\r\nConnection: close\r\n\r\n{\"layers\":[",
	                       LIMIT_REGISTRY_MANIFEST + 1);
	fake_http_answer_raw(&r.f, head, strlen(head));
	struct buf out;
	buf_init(&out, 0);
	char digest[SHA256_DIGEST_LEN + 1];
	struct err *e = NULL;
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_NET);
	char *want = xasprintf("GET http://%s/v2/fns/catalog/manifests/v1: the response exceeds "
	                       "the limit of %u bytes",
	                       r.host, LIMIT_REGISTRY_MANIFEST);
	CHECK_CONTAINS(e ? e->msg : NULL, want);
	free(want);
	free(head);
	/* Not announced (the body ends when the connection closes): cut while it arrives. */
	size_t n = LIMIT_REGISTRY_MANIFEST + 100;
	char *big = xmalloc(n);
	int h = snprintf(big, n, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
	memset(big + h, ' ', n - (size_t)h);
	fake_http_answer_raw(&r.f, big, n);
	CHECK_INT(pull(&r, "fns/catalog:v2", &out, digest, &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "/manifests/v2: the response exceeds the limit of");
	free(big);
	buf_free(&out);
	err_free(e);
	reg_stop(&r);
}

TEST(not_found_names_the_reference)
{
	struct reg r;
	reg_start(&r);
	fake_http_answer(
	        &r.f, "404 Not Found", "Content-Type: application/json\r\n",
	        "{\"errors\":[{\"code\":\"MANIFEST_UNKNOWN\",\"message\":\"manifest unknown\","
	        "\"detail\":{\"Tag\":\"v9\"}}]}\n");
	struct buf out;
	buf_init(&out, 0);
	char digest[SHA256_DIGEST_LEN + 1];
	struct err *e = NULL;
	CHECK_INT(pull(&r, "fns/catalog:v9", &out, digest, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_CONFIG);
	CHECK_INT(e ? e->http_status : 0, 404);
	char *want = xasprintf("pull %s/fns/catalog:v9: GET http://%s/v2/fns/catalog/manifests/v9: "
	                       "404 Not Found: MANIFEST_UNKNOWN: manifest unknown",
	                       r.host, r.host);
	CHECK_STR(e ? e->msg : NULL, want);
	free(want);
	/* A blob the manifest names but the registry lost is the registry's fault (ERR_NET). */
	char *m = artifact_manifest(LAYER, strlen(LAYER));
	answer_manifest(&r.f, m);
	fake_http_answer(&r.f, "404 Not Found", NULL, "blob unknown");
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_NET);
	CHECK_CONTAINS(e ? e->msg : NULL, ": 404 Not Found: \"blob unknown\"");
	free(m);
	buf_free(&out);
	err_free(e);
	reg_stop(&r);
}

TEST(cache_saves_blob_requests)
{
	struct reg r;
	reg_start(&r);
	r.o.cache_dir = xasprintf("%s/cache", r.dir);
	char *m = artifact_manifest(LAYER, strlen(LAYER));
	char mdigest[SHA256_DIGEST_LEN + 1];
	sha256_digest(m, strlen(m), mdigest);
	answer_manifest(&r.f, m); /* the first pull */
	fake_http_answer(&r.f, OK, NULL, LAYER);
	answer_manifest(&r.f, m);                /* the second */
	answer_manifest(&r.f, m);                /* the third, */
	fake_http_answer(&r.f, OK, NULL, LAYER); /* after the corruption */
	struct buf out;
	buf_init(&out, 0);
	char digest[SHA256_DIGEST_LEN + 1];
	struct err *e = NULL;
	/* First pull: manifest and blob. */
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), 0);
	CHECK_INT(fake_http_nreq(&r.f), 2);
	/* Second pull of the tag: the manifest is asked for (tags move), the blob is not. */
	buf_reset(&out);
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), 0);
	CHECK_STR(out.data, LAYER);
	CHECK_INT(fake_http_nreq(&r.f), 3);
	CHECK_CONTAINS(fake_http_req(&r.f, 2), "/manifests/v1");
	/* A corrupted cache file is dropped and the blob fetched again. */
	char *path = registry_cache_path(r.o.cache_dir, layer_digest);
	write_file(path, "catalog: [corrupted]\n");
	buf_reset(&out);
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), 0);
	CHECK_STR(out.data, LAYER);
	CHECK_INT(fake_http_nreq(&r.f), 5);
	CHECK_CONTAINS(fake_http_req(&r.f, 4), "/blobs/sha256:");
	struct buf cached;
	buf_init(&cached, 0);
	CHECK(registry_cache_get(r.o.cache_dir, layer_digest, 1000, &cached));
	CHECK_STR(cached.data, LAYER);
	/* A digest-pinned reference needs no registry at all once cached. */
	fake_http_stop(&r.f);
	char *pinned = xasprintf("fns/catalog@%s", mdigest);
	buf_reset(&out);
	CHECK_INT(pull(&r, pinned, &out, digest, &e), 0);
	CHECK_STR(e ? e->msg : "", "");
	CHECK_STR(out.data, LAYER);
	CHECK_STR(digest, layer_digest);
	free(pinned);
	free(path);
	free(m);
	buf_free(&cached);
	buf_free(&out);
	err_free(e);
	reg_stop(&r);
}

TEST(image_config_from_an_index)
{
	struct reg r;
	reg_start(&r);
	const char *config = "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{"
	                     "\"Entrypoint\":[\"/usr/local/bin/fn\"],\"Cmd\":[\"--serve\"],"
	                     "\"Env\":[\"PATH=/usr/bin\",\"FN_MODE=krm\"],\"WorkingDir\":\"/work\","
	                     "\"User\":\"nobody\"}}";
	char cdigest[SHA256_DIGEST_LEN + 1], mdigest[SHA256_DIGEST_LEN + 1];
	sha256_digest(config, strlen(config), cdigest);
	char *manifest = xasprintf(
	        "{\"schemaVersion\":2,\"mediaType\":\"" DOCKER_MANIFEST "\",\"config\":{"
	        "\"mediaType\":\"" DOCKER_IMAGE_CONFIG "\",\"digest\":\"%s\",\"size\":%zu},"
	        "\"layers\":[]}",
	        cdigest, strlen(config));
	sha256_digest(manifest, strlen(manifest), mdigest);
	char *index = xasprintf(
	        "{\"schemaVersion\":2,\"mediaType\":\"" DOCKER_LIST "\",\"manifests\":["
	        "{\"mediaType\":\"" DOCKER_MANIFEST "\",\"digest\":\"" DA "\",\"size\":9," PLATFORM(
	                "linux", "arm64",
	                ",\"variant\":\"v8\"") "},"
	                                       "{\"mediaType\":\"" DOCKER_MANIFEST
	                                       "\",\"digest\":\"%s\",\"size\":%zu," PLATFORM(
	                                               "linux", "amd64", "") "}]}",
	        mdigest, strlen(manifest));
	fake_http_answer(&r.f, OK, "Content-Type: " DOCKER_LIST "\r\n", index);
	fake_http_answer(&r.f, OK, "Content-Type: " DOCKER_MANIFEST "\r\n", manifest);
	fake_http_answer(&r.f, OK, NULL, config);
	struct oci_ref ref;
	char *text = xasprintf("%s/fns/set-labels:v0.2", r.host);
	struct err *e = NULL;
	CHECK_INT(oci_ref_parse(text, &ref, &e), 0);
	struct registry_image_config c;
	CHECK_INT(registry_image_config(&r.o, &ref, &c, &e), 0);
	CHECK_STR(e ? e->msg : "", "");
	CHECK_STR(c.manifest_digest, mdigest); /* the platform's manifest */
	CHECK_STR(c.entrypoint ? c.entrypoint[0] : NULL, "/usr/local/bin/fn");
	CHECK(c.entrypoint && c.entrypoint[1] == NULL);
	CHECK_STR(c.cmd ? c.cmd[0] : NULL, "--serve");
	CHECK_STR(c.env ? c.env[0] : NULL, "PATH=/usr/bin");
	CHECK_STR(c.env ? c.env[1] : NULL, "FN_MODE=krm");
	CHECK(c.env && c.env[2] == NULL);
	CHECK_STR(c.working_dir, "/work");
	CHECK_STR(c.user, "nobody");
	CHECK_INT(fake_http_nreq(&r.f), 3);
	CHECK_CONTAINS(fake_http_req(&r.f, 0), "GET /v2/fns/set-labels/manifests/v0.2 HTTP/1.1");
	char *want = xasprintf("GET /v2/fns/set-labels/manifests/%s HTTP/1.1", mdigest);
	CHECK_CONTAINS(fake_http_req(&r.f, 1), want);
	free(want);
	want = xasprintf("GET /v2/fns/set-labels/blobs/%s HTTP/1.1", cdigest);
	CHECK_CONTAINS(fake_http_req(&r.f, 2), want);
	free(want);
	registry_image_config_clear(&c);

	/* An artifact is not an image. */
	char *m = artifact_manifest(LAYER, strlen(LAYER));
	answer_manifest(&r.f, m);
	CHECK_INT(registry_image_config(&r.o, &ref, &c, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_CONFIG);
	CHECK_CONTAINS(e ? e->msg : NULL, "not a container image");
	CHECK(c.env == NULL);
	free(m);
	free(text);
	free(index);
	free(manifest);
	oci_ref_clear(&ref);
	err_free(e);
	reg_stop(&r);
}

TEST(redirect_to_a_blob_store_drops_the_authorization)
{
	struct reg r;
	reg_start(&r);
	reg_auth(&r, AUTH_USER_PASS);
	struct fake_http store;
	fake_http_start(&store, NULL, 0);
	fake_http_answer(&store, OK, NULL, LAYER);
	fake_http_answer(&r.f, "401 Unauthorized", BASIC_401, "");
	char *m = artifact_manifest(LAYER, strlen(LAYER));
	answer_manifest(&r.f, m);
	char *location =
	        xasprintf("Location: http://127.0.0.1:%d/store/blob?sig=abc\r\n", store.port);
	fake_http_answer(&r.f, "307 Temporary Redirect", location, "");
	struct buf out;
	buf_init(&out, 0);
	char digest[SHA256_DIGEST_LEN + 1];
	struct err *e = NULL;
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), 0);
	CHECK_STR(e ? e->msg : "", "");
	CHECK_STR(out.data, LAYER);
	CHECK_CONTAINS(fake_http_req(&r.f, 2), "/blobs/sha256:");
	CHECK_CONTAINS(fake_http_req(&r.f, 2), "Authorization: Basic " AUTH_USER_PASS);
	CHECK_CONTAINS(fake_http_req(&store, 0), "GET /store/blob?sig=abc HTTP/1.1");
	CHECK(strstr(fake_http_req(&store, 0), "Authorization") == NULL);
	fake_http_stop(&store);
	free(location);
	free(m);
	buf_free(&out);
	err_free(e);
	reg_stop(&r);
}

TEST(https_get)
{
	struct reg r;
	reg_start(&r);
	fake_http_answer(&r.f, OK, "Content-Type: text/yaml\r\n", "catalog: []\n");
	fake_http_answer(&r.f, "404 Not Found", NULL, "no such catalog\n");
	char big[300];
	int h = snprintf(big, sizeof(big), "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
	memset(big + h, 'x', sizeof(big) - (size_t)h);
	fake_http_answer_raw(&r.f, big, sizeof(big));
	char *url = xasprintf("http://%s/catalogs/main.yaml", r.host);
	struct buf out;
	buf_init(&out, 0);
	struct err *e = NULL;
	CHECK_INT(registry_https_get(&r.o, url, 100, &out, &e), 0);
	CHECK_STR(out.data, "catalog: []\n");
	CHECK_CONTAINS(fake_http_req(&r.f, 0), "GET /catalogs/main.yaml HTTP/1.1");
	CHECK(strstr(fake_http_req(&r.f, 0), "Authorization") == NULL);
	CHECK_INT(registry_https_get(&r.o, url, 100, &out, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_NET);
	char *want = xasprintf("GET %s: 404 Not Found: \"no such catalog\"", url);
	CHECK_STR(e ? e->msg : NULL, want);
	free(want);
	CHECK_INT(registry_https_get(&r.o, url, 100, &out, &e), -1); /* 262 bytes, no length */
	want = xasprintf("GET %s: the response exceeds the limit of 100 bytes", url);
	CHECK_STR(e ? e->msg : NULL, want);
	free(want);
	CHECK_INT(fake_http_nreq(&r.f), 3);
	/* Only https:// without plain_http, and never another scheme. */
	r.o.plain_http = false;
	CHECK_INT(registry_https_get(&r.o, url, 100, &out, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_CONFIG);
	CHECK_CONTAINS(e ? e->msg : NULL, "only https:// URLs are fetched");
	CHECK_INT(registry_https_get(&r.o, "file:///etc/passwd", 100, &out, &e), -1);
	CHECK_INT(fake_http_nreq(&r.f), 3);
	CHECK_STR(out.data, "catalog: []\n"); /* failures left out alone */
	free(url);
	buf_free(&out);
	err_free(e);
	reg_stop(&r);
}

static atomic_int cancel_flag;

static void *cancel_later(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 150 * 1000000L};
	nanosleep(&ts, NULL);
	cancel_flag = SIGTERM;
	return NULL;
}

TEST(deadline_and_cancel_stop_a_hanging_registry)
{
	struct reg r;
	reg_start(&r);
	fake_http_add(&r.f, &(struct fake_http_step){.hang = true});
	fake_http_add(&r.f, &(struct fake_http_step){.hang = true});
	r.o.deadline_ms = now_ms() + 300;
	struct buf out;
	buf_init(&out, 0);
	char digest[SHA256_DIGEST_LEN + 1];
	struct err *e = NULL;
	int64_t t0 = now_ms();
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), -1);
	CHECK_INT(e ? e->code : ERR_OK, ERR_TIMEOUT);
	CHECK(now_ms() - t0 >= 250 && now_ms() - t0 < 1500);
	CHECK_CONTAINS(e ? e->msg : NULL, "the deadline passed");
	r.o.deadline_ms = 0;
	cancel_flag = 0;
	r.o.cancel = &cancel_flag;
	pthread_t t;
	pthread_create(&t, NULL, cancel_later, NULL);
	t0 = now_ms();
	CHECK_INT(pull(&r, "fns/catalog:v1", &out, digest, &e), -1);
	pthread_join(t, NULL);
	CHECK_INT(e ? e->code : ERR_OK, ERR_SIGNAL);
	CHECK_INT(e ? e->signo : 0, SIGTERM);
	CHECK(now_ms() - t0 < 1000);
	buf_free(&out);
	err_free(e);
	reg_stop(&r);
}

/* A signal during the wait before a retry ends the fetch at once. */
TEST(a_retry_wait_is_cancelled_by_a_signal)
{
	struct reg r;
	reg_start(&r);
	cancel_flag = 0;
	r.o.cancel = &cancel_flag;
	fake_http_answer(&r.f, "429 Too Many Requests", "Retry-After: 4\r\n", "");
	struct err *e = NULL;
	int64_t ms = 0;
	pthread_t t;
	CHECK(pthread_create(&t, NULL, cancel_later, NULL) == 0);
	CHECK_INT(pull_failing(&r, &e, &ms), -1);
	pthread_join(t, NULL);
	CHECK(e && e->code == ERR_SIGNAL);
	CHECK(ms < 2000);
	err_free(e);
	reg_stop(&r);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	log_set_level(LOG_ERROR); /* the cache warns about the corrupt files made here */
	const char *lvl = getenv("KRMPOD_LOG_LEVEL");
	enum log_level level;
	if (lvl && log_parse_level(lvl, "KRMPOD_LOG_LEVEL", &level, NULL) == 0)
		log_set_level(level);
	sha256_digest(LAYER, strlen(LAYER), layer_digest);
	RUN(sha256_known_values);
	RUN(oci_ref_parses_like_docker);
	RUN(oci_ref_refuses_bad_references);
	RUN(oci_ref_string_is_canonical);
	RUN(challenge_bearer);
	RUN(challenge_basic_and_several);
	RUN(challenge_malformed);
	RUN(dockerconfig_docker_hub_keys);
	RUN(dockerconfig_other_registries);
	RUN(dockerconfig_ports);
	RUN(dockerconfig_path_prefixes);
	RUN(dockerconfig_globs);
	RUN(dockerconfig_most_specific_first);
	RUN(dockerconfig_errors);
	RUN(manifest_kind);
	RUN(manifest_layer_selection);
	RUN(index_platform_selection);
	RUN(image_config_parse);
	RUN(cache_put_get_and_corruption);
	RUN(cache_evicts_the_least_recently_used);
	RUN(anonymous_pull_of_a_layer);
	RUN(bearer_token_flow);
	RUN(bearer_anonymous_token_and_default_scope);
	RUN(basic_auth);
	RUN(credentials_missing_or_refused);
	RUN(blob_digest_mismatch);
	RUN(manifest_digest_mismatch);
	RUN(manifest_over_the_size_cap);
	RUN(not_found_names_the_reference);
	RUN(cache_saves_blob_requests);
	RUN(image_config_from_an_index);
	RUN(redirect_to_a_blob_store_drops_the_authorization);
	RUN(https_get);
	RUN(deadline_and_cancel_stop_a_hanging_registry);
	RUN(throttled_and_unavailable_answers_are_retried);
	RUN(retries_are_bounded);
	RUN(a_retry_wait_is_cancelled_by_a_signal);
	return check_summary();
}
