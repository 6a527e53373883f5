/* Unit tests: function catalogs (KEP-2906) and the image policy: parsing and strict
 * validation with field paths, the semver/sha256 rule, exec refused, lookups; catalog
 * references; the policy's three modes, the digest switch, and its file round trip; the
 * settings that choose them. */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/glob.h"
#include "base/strv.h"
#include "base/xalloc.h"
#include "catalog/catalog.h"
#include "catalog/image_policy.h"
#include "check.h"
#include "config/locations.h"
#include "config/settings.h"

#define HEX "a428de0000000000000000000000000000000000000000000000000000000000"

static const char good[] =
        "apiVersion: config.kubernetes.io/v1alpha1\n"
        "kind: Catalog\n"
        "metadata: {name: example-co-functions}\n"
        "spec:\n"
        "  krmFunctions:\n"
        "  - group: example.com\n"
        "    names: {kind: SetNamespace}\n"
        "    description: sets the namespace\n"
        "    publisher: example.com\n"
        "    versions:\n"
        "    - name: v1\n"
        "      idempotent: true\n"
        "      schema: {openAPIV3Schema: {type: object}}\n"
        "      usage: https://example.com/usage.md\n"
        "      examples: [https://example.com/ex.md]\n"
        "      license: Apache 2.0\n"
        "      runtime:\n"
        "        container:\n"
        "          image: registry.example.co/fns/set-namespace:v1.2.3\n"
        "          sha256: " HEX "\n"
        "    - name: v2\n"
        "      runtime: {container: {image: registry.example.co/fns/set-namespace:latest, "
        "requireNetwork: true, requireStorageMount: true, shareAcrossApplications: true, "
        "entrypoint: [/fn, --serve], cmd: [--x]}}\n"
        "  - group: example.com\n"
        "    names: {kind: SetNamespace}\n"
        "    versions:\n"
        "    - name: v1\n"
        "      runtime: {container: {image: registry.example.co/fns/shadowed:v9}}\n";

TEST(a_catalog_parses_and_the_first_match_wins)
{
	struct catalog *c = NULL;
	struct err *e = NULL;
	CHECK_INT(catalog_parse(good, strlen(good), "catalog.yaml", &c, &e), 0);
	if (c == NULL)
		return;
	CHECK_STR(c->name, "example-co-functions");
	CHECK_INT(c->n_fns, 2);
	CHECK(strncmp(c->digest, "sha256:", 7) == 0);
	const struct catalog_fn *f = NULL;
	const struct catalog_version *v = catalog_find(c, "example.com", "v1", "SetNamespace", &f);
	CHECK(v != NULL && f == &c->fns[0]);
	if (v) {
		CHECK(v->idempotent && !v->require_network && !v->require_storage_mount &&
		      !v->share_across_apps);
		CHECK_STR(v->sha256, "sha256:" HEX);
		char *img = catalog_version_image(v);
		CHECK_STR(img, "registry.example.co/fns/set-namespace@sha256:" HEX);
		free(img);
	}
	v = catalog_find(c, "example.com", "v2", "SetNamespace", NULL);
	CHECK(v && v->require_network && v->require_storage_mount && v->share_across_apps &&
	      v->sha256 == NULL);
	/* the recorded entrypoint and cmd: only where recorded */
	CHECK(v && strv_len(v->entrypoint) == 2 && strcmp(v->entrypoint[1], "--serve") == 0 &&
	      strv_len(v->cmd) == 1 && strcmp(v->cmd[0], "--x") == 0);
	CHECK(c->fns[0].versions[0].entrypoint == NULL && c->fns[0].versions[0].cmd == NULL);
	if (v) {
		char *img = catalog_version_image(v);
		CHECK_STR(img, "registry.example.co/fns/set-namespace:latest");
		free(img);
	}
	CHECK(catalog_find(c, "example.com", "v3", "SetNamespace", NULL) == NULL);
	CHECK(catalog_find(c, "other.com", "v1", "SetNamespace", NULL) == NULL);
	catalog_free(c);
}

/* Replaces the first `from` in good by `to` and expects an error with both parts. */
static void refused(const char *from, const char *to, const char *field, const char *why)
{
	char *text = NULL;
	const char *at = strstr(good, from);
	CHECK(at != NULL);
	if (at == NULL)
		return;
	text = xasprintf("%.*s%s%s", (int)(at - good), good, to, at + strlen(from));
	struct catalog *c = NULL;
	struct err *e = NULL;
	CHECK_INT(catalog_parse(text, strlen(text), "repo/catalog.yaml", &c, &e), -1);
	CHECK(c == NULL);
	CHECK(e && e->code == ERR_CONFIG);
	CHECK_CONTAINS(e ? e->msg : NULL, "catalog repo/catalog.yaml: ");
	CHECK_CONTAINS(e ? e->msg : NULL, field);
	CHECK_CONTAINS(e ? e->msg : NULL, why);
	err_free(e);
	free(text);
}

TEST(validation_names_the_file_and_the_field)
{
	refused("          sha256: " HEX "\n", "",
	        "spec.krmFunctions[0].versions[0].runtime.container.sha256",
	        "is required: the image's tag v1.2.3 is a semantic version");
	refused("sha256: " HEX, "sha256: a428", "versions[0].runtime.container.sha256",
	        "is not 64 lowercase hex digits");
	refused("set-namespace:v1.2.3", "set-namespace@sha256:" HEX "1", "runtime.container.image",
	        "not sha256:<64 lowercase hex>");
	refused("      runtime:\n        container:\n",
	        "      runtime:\n        exec: []\n        container:\n",
	        "spec.krmFunctions[0].versions[0].runtime.exec",
	        "krmpod runs functions only as pods");
	refused("requireNetwork: true", "requireNetwrok: true",
	        "spec.krmFunctions[0].versions[1].runtime.container.requireNetwrok",
	        "unknown field (known here: image, sha256, requireNetwork, requireStorageMount, "
	        "shareAcrossApplications, entrypoint, cmd)");
	refused("entrypoint: [/fn, --serve]", "entrypoint: /fn",
	        "versions[1].runtime.container.entrypoint", "must be a list of strings");
	refused("entrypoint: [/fn, --serve], ", "", "versions[1].runtime.container.cmd",
	        "is recorded without entrypoint");
	refused("entrypoint: [/fn, --serve], cmd: [--x]", "entrypoint: [], cmd: []",
	        "versions[1].runtime.container.entrypoint", "and cmd are both empty");
	refused("requireNetwork: true", "requireNetwork: yes please",
	        "versions[1].runtime.container.requireNetwork", "must be true or false");
	refused("    names: {kind: SetNamespace}\n    description",
	        "    names: {}\n    description", "spec.krmFunctions[0].names.kind", "is required");
	refused("kind: Catalog", "kind: Kustomization", "kind",
	        "must be Catalog or KRMFunctionCatalog");
	refused("config.kubernetes.io/v1alpha1", "config.kubernetes.io/v1", "apiVersion",
	        "must be config.kubernetes.io/v1alpha1");
	refused("    versions:\n    - name: v1\n      runtime: {container: {image: "
	        "registry.example.co/fns/shadowed:v9}}\n",
	        "    versions: []\n", "spec.krmFunctions[1].versions", "at least one version");
	refused("image: registry.example.co/fns/shadowed:v9", "image: 'bad image'",
	        "spec.krmFunctions[1].versions[0].runtime.container.image",
	        "is not an image reference");
}

TEST(krm_function_catalog_and_digest_in_the_image)
{
	const char *doc = "apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\n"
	                  "spec:\n  krmFunctions:\n  - group: ''\n    names: {kind: Fn}\n"
	                  "    versions:\n    - name: v1\n      runtime:\n        container:\n"
	                  "          image: r:5000/fn:v1.0.0@sha256:" HEX "\n";
	struct catalog *c = NULL;
	struct err *e = NULL;
	CHECK_INT(catalog_parse(doc, strlen(doc), "c", &c, &e), 0);
	const struct catalog_version *v = c ? catalog_find(c, "", "v1", "Fn", NULL) : NULL;
	CHECK(v && v->sha256 && strcmp(v->sha256, "sha256:" HEX) == 0);
	if (v) {
		char *img = catalog_version_image(v);
		CHECK_STR(img, "r:5000/fn@sha256:" HEX);
		free(img);
	}
	catalog_free(c);
	err_free(e);
}

TEST(semver_tags_and_image_parts)
{
	static const char *const semver[] = {"v1.2.3", "1.2.3", "v1.2.3-rc.1", "1.0.0+build.5",
	                                     "v10.20.30"};
	static const char *const other[] = {"v1", "v1.2", "latest", "1.2.3.4", "v1.2.x", ""};
	for (size_t i = 0; i < sizeof(semver) / sizeof(semver[0]); i++)
		CHECK(catalog_tag_is_semver(semver[i]));
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		CHECK(!catalog_tag_is_semver(other[i]));
	char *name, *tag, *digest;
	CHECK_INT(catalog_image_split("localhost:5000/a/b:v1@sha256:" HEX, &name, &tag, &digest),
	          0);
	CHECK_STR(name, "localhost:5000/a/b");
	CHECK_STR(tag, "v1");
	CHECK_STR(digest, "sha256:" HEX);
	free(name);
	free(tag);
	free(digest);
	CHECK_INT(catalog_image_split("localhost:5000/a/b", &name, &tag, &digest), 0);
	CHECK_STR(name, "localhost:5000/a/b");
	CHECK(tag == NULL && digest == NULL);
	free(name);
	CHECK_INT(catalog_image_split("a b", &name, NULL, NULL), -1);
	CHECK_INT(catalog_image_split("r/x:", &name, NULL, NULL), -1);
}

TEST(catalog_references)
{
	struct catalog_ref r;
	struct err *e = NULL;
	CHECK_INT(catalog_ref_parse("oci://r.example:5000/cat:v1#sha256:" HEX, "S", true, &r, &e),
	          0);
	CHECK(r.type == CATALOG_REF_OCI);
	CHECK_STR(r.location, "r.example:5000/cat:v1");
	CHECK_STR(r.pin, "sha256:" HEX);
	catalog_ref_clear(&r);
	CHECK_INT(catalog_ref_parse("catalog.yaml", "kustomization.yaml catalogs", false, &r, &e),
	          0);
	CHECK(r.type == CATALOG_REF_FILE && r.pin == NULL);
	catalog_ref_clear(&r);
	static const struct {
		const char *text, *why;
	} bad[] = {
	        {"catalog.yaml", "is a relative path"},
	        {"http://x/c.yaml", "http:// is refused"},
	        {"https://x/c.yaml#sha256:abc", "not sha256:<64 lowercase hex>"},
	        {"oci://registry-only", "REGISTRY/REPOSITORY"},
	        {"https:///c.yaml", "has no host"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_INT(catalog_ref_parse(bad[i].text, "KRMPOD_TRUSTED_CATALOGS", true, &r, &e),
		          -1);
		CHECK_CONTAINS(e ? e->msg : NULL, "KRMPOD_TRUSTED_CATALOGS: catalog reference");
		CHECK_CONTAINS(e ? e->msg : NULL, bad[i].why);
		err_free(e);
		e = NULL;
	}
	struct catalog_ref *refs = NULL;
	size_t n = 0;
	CHECK_INT(catalog_refs_parse_list(" /etc/krmpod/a.yaml , https://x/b.yaml ", "T", &refs, &n,
	                                  &e),
	          0);
	CHECK_INT(n, 2);
	if (n == 2) {
		CHECK_STR(refs[0].location, "/etc/krmpod/a.yaml");
		CHECK(catalog_ref_same(&refs[1], &refs[1]) &&
		      !catalog_ref_same(&refs[0], &refs[1]));
	}
	catalog_refs_free(refs, n);
	CHECK_INT(catalog_refs_parse_list("/a.yaml,,/b.yaml", "T", &refs, &n, &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "an empty entry");
	err_free(e);
}

static struct settings policy_settings(enum image_policy mode, bool digest)
{
	struct settings s = {0};
	s.image_policy = mode;
	s.require_digest = digest;
	return s;
}

static void add_image(struct policy *p, const char *image, const char *origin, bool network,
                      bool mounts, bool shared)
{
	policy_add_image(p, &(struct policy_image){.image = (char *)image,
	                                           .origin = (char *)origin,
	                                           .require_network = network,
	                                           .require_storage_mount = mounts,
	                                           .share_across_apps = shared});
}

TEST(the_three_policy_modes)
{
	struct err *e = NULL;
	struct settings s = policy_settings(IMAGE_POLICY_ANY, false);
	struct policy p;
	policy_init(&p, &s);
	CHECK_INT(policy_check(&p, "anything:latest", true, true, NULL, &e), 0);
	policy_clear(&p);

	char *pats[] = {"registry.example.co/fns/*", "docker.io/library/busybox:1.*"};
	s = policy_settings(IMAGE_POLICY_ALLOWLIST, false);
	s.image_allowlist = pats;
	s.n_image_allowlist = 2;
	policy_init(&p, &s);
	CHECK_INT(policy_check(&p, "registry.example.co/fns/a:v1", false, false, NULL, &e), 0);
	CHECK_INT(policy_check(&p, "docker.io/library/busybox:1.36", false, false, NULL, &e), 0);
	CHECK_INT(policy_check(&p, "evil.example/fns/a:v1", false, false, "app/fn.yaml", &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL,
	               "app/fn.yaml names image evil.example/fns/a:v1, which the image policy "
	               "(KRMPOD_IMAGE_POLICY=allowlist) refuses: it matches none of "
	               "registry.example.co/fns/*, docker.io/library/busybox:1.*");
	CHECK_CONTAINS(e ? e->msg : NULL, "KRMPOD_IMAGE_ALLOWLIST");
	err_free(e);
	e = NULL;
	policy_clear(&p);

	s = policy_settings(IMAGE_POLICY_CATALOG, true);
	policy_init(&p, &s);
	add_image(&p, "r.example/fns/ns@sha256:" HEX, "example.com/v1 SetNamespace in c", false,
	          false, false);
	add_image(&p, "r.example/fns/net:v1", "example.com/v1 Net in c", true, false, false);
	policy_add_named(&p, "r.example/fns/ns:v1.2.3", "app/ns.yaml");
	CHECK_INT(policy_check(&p, "r.example/fns/ns@sha256:" HEX, false, false, NULL, &e), 0);
	CHECK_INT(policy_check(&p, "r.example/fns/ns:v1.2.3@sha256:" HEX, false, false, NULL, &e),
	          0);
	/* the tag of a pinned image: refused first for the digest switch, naming the file */
	CHECK_INT(policy_check(&p, "r.example/fns/ns:v1.2.3", false, false, NULL, &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "app/ns.yaml names image r.example/fns/ns:v1.2.3");
	CHECK_CONTAINS(e ? e->msg : NULL, "KRMPOD_REQUIRE_DIGEST=true");
	err_free(e);
	e = NULL;
	CHECK_INT(policy_check(&p, "r.example/fns/ns@sha256:" HEX, true, false, NULL, &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "it asks for network, which its catalog entry "
	                                  "(example.com/v1 SetNamespace in c) does not require");
	err_free(e);
	e = NULL;
	CHECK_INT(policy_check(&p, "r.example/fns/other@sha256:" HEX, false, false, NULL, &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "it is not an image of the admin's catalogs");
	err_free(e);
	e = NULL;
	policy_clear(&p);
	s = policy_settings(IMAGE_POLICY_CATALOG, false);
	policy_init(&p, &s);
	add_image(&p, "r.example/fns/net:v1", "example.com/v1 Net in c", true, false, false);
	CHECK_INT(policy_check(&p, "r.example/fns/net:v1", true, false, NULL, &e), 0);
	CHECK_INT(policy_check(&p, "r.example/fns/net:v1", false, true, NULL, &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "storage mounts");
	err_free(e);
	policy_clear(&p);
}

TEST(patterns)
{
	CHECK(glob_match("*", "anything"));
	CHECK(glob_match("a*c", "abbbc"));
	CHECK(glob_match("a*c", "ac"));
	CHECK(!glob_match("a*c", "abcd"));
	CHECK(!glob_match("registry.example.co/fns/*", "registry.example.co/other/x"));
	CHECK(glob_match("r/*/x:*", "r/a/b/x:v1"));
	CHECK(!glob_match("r/x", "r/x:v1"));
	CHECK(glob_match("", "") && !glob_match("", "a") && glob_match("**", ""));
	CHECK(glob_match("*a", "aaa") && glob_match("a*b*c", "axbxbxc") &&
	      !glob_match("a*b*c", "acb"));
	/* many '*' against a long name that does not match: linear backtracking, where the
	 * recursive matcher of old took longer than the test's run (C(200, 30) ways) */
	char name[256];
	memset(name, 'a', 200);
	name[200] = '\0';
	char pat[128];
	size_t n = 0;
	for (int i = 0; i < 30; i++)
		n += (size_t)snprintf(pat + n, sizeof(pat) - n, "*a");
	snprintf(pat + n, sizeof(pat) - n, "*b");
	CHECK(!glob_match(pat, name));
	name[199] = 'b';
	CHECK(glob_match(pat, name));
}

TEST(the_policy_file_round_trip)
{
	char *pats[] = {"a/*"};
	struct settings s = policy_settings(IMAGE_POLICY_ALLOWLIST, true);
	s.image_allowlist = pats;
	s.n_image_allowlist = 1;
	struct policy p, q;
	policy_init(&p, &s);
	add_image(&p, "i@sha256:" HEX, "o", true, false, true);
	add_image(&p, "j:v1", "o", false, false, false);
	char *ep[] = {"/fn", "a b", NULL}, *cmd[] = {"--x", NULL};
	p.images[0].entrypoint = strv_dup(ep);
	p.images[0].cmd = strv_dup(cmd);
	policy_add_named(&p, "a/b:v1", "app/fn.yaml");
	struct buf b;
	buf_init(&b, 0);
	policy_write(&p, &b);
	struct err *e = NULL;
	CHECK_INT(policy_read(b.data, b.len, "policy", &q, &e), 0);
	CHECK(q.mode == IMAGE_POLICY_ALLOWLIST && q.require_digest);
	CHECK(q.n_allowlist == 1 && strcmp(q.allowlist[0], "a/*") == 0);
	CHECK(q.n_images == 2 && q.images[0].require_network && !q.images[0].require_storage_mount);
	/* shareAcrossApplications survives the file, and only the entry's own image has it */
	CHECK(q.images[0].share_across_apps && !q.images[1].share_across_apps);
	CHECK(policy_shared(&q, "i@sha256:" HEX) && policy_shared(&q, "i:v2@sha256:" HEX));
	CHECK(!policy_shared(&q, "j:v1") && !policy_shared(&q, "i:v1") &&
	      !policy_shared(&q, "k@sha256:" HEX));
	CHECK(q.n_named == 1 && strcmp(q.named[0].where, "app/fn.yaml") == 0);
	/* a recorded entrypoint survives the file too */
	CHECK(strv_equal(q.images[0].entrypoint, p.images[0].entrypoint) &&
	      strv_equal(q.images[0].cmd, p.images[0].cmd) && q.images[0].entrypoint &&
	      q.images[1].entrypoint == NULL);
	policy_clear(&q);
	CHECK_INT(policy_read("{mode: maybe}", 13, "policy", &q, &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "policy: not a policy krmpod generate wrote");
	err_free(e);
	policy_clear(&p);
	buf_free(&b);
}

static int load(char *const *env, struct settings *s, struct err **e)
{
	return settings_load_env(s, env, e);
}

TEST(policy_settings_are_checked)
{
	struct settings s;
	struct err *e = NULL;
	char *ok[] = {"KRMPOD_IMAGE_POLICY=catalog", "KRMPOD_DEFAULT_CATALOGS=/etc/c.yaml",
	              "KRMPOD_REQUIRE_DIGEST=true", NULL};
	CHECK_INT(load(ok, &s, &e), 0);
	CHECK(s.image_policy == IMAGE_POLICY_CATALOG && s.require_digest &&
	      s.n_default_catalogs == 1);
	CHECK(s.cache_dir && strstr(s.cache_dir, "krmpod-cache"));
	settings_clear(&s);
	static const struct {
		char *env[3];
		const char *why;
	} bad[] = {
	        {{"KRMPOD_IMAGE_POLICY=strict", NULL}, "KRMPOD_IMAGE_POLICY=strict: use any"},
	        {{"KRMPOD_IMAGE_POLICY=catalog", NULL},
	         "neither KRMPOD_TRUSTED_CATALOGS nor KRMPOD_DEFAULT_CATALOGS names a catalog"},
	        {{"KRMPOD_IMAGE_POLICY=allowlist", NULL}, "needs KRMPOD_IMAGE_ALLOWLIST"},
	        {{"KRMPOD_IMAGE_ALLOWLIST=a/*", NULL},
	         "KRMPOD_IMAGE_ALLOWLIST is set but KRMPOD_IMAGE_POLICY is any"},
	        {{"KRMPOD_TRUSTED_CATALOGS=catalog.yaml", NULL}, "is a relative path"},
	        {{"KRMPOD_REQUIRE_DIGEST=maybe", NULL}, "KRMPOD_REQUIRE_DIGEST=maybe"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_INT(load(bad[i].env, &s, &e), -1);
		CHECK_CONTAINS(e ? e->msg : NULL, bad[i].why);
		err_free(e);
		e = NULL;
	}
}

/* Every admin catalog that lists an image, each once, in the order read: a requirement
 * naming any of them covers it (issue 29). */
TEST(every_catalog_that_lists_an_image)
{
	struct settings s = policy_settings(IMAGE_POLICY_CATALOG, false);
	struct policy p;
	policy_init(&p, &s);
	static const char *const entries[][2] = {
	        {"vendor-functions", "registry.example.co/fns/set-x:v1"},
	        {"vendor-functions", "ghcr.io/vendor/other:v1"},
	        {"example-co-functions", "registry.example.co/fns/set-x:v1"},
	        {"vendor-functions", "registry.example.co/fns/set-x:v1"},
	        {"third", "registry.example.co/fns/set-x@sha256:" HEX},
	};
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
		policy_add_image(&p, &(struct policy_image){.image = (char *)entries[i][1],
		                                            .origin = (char *)"o",
		                                            .catalog = (char *)entries[i][0]});
	const char *out[4];
	CHECK_INT(policy_catalogs_of(&p, "registry.example.co/fns/set-x:v1", out, 4), 2);
	CHECK_STR(out[0], "vendor-functions");
	CHECK_STR(out[1], "example-co-functions");
	CHECK_INT(policy_catalogs_of(&p, "registry.example.co/fns/set-x:v1", out, 1), 2);
	CHECK_INT(policy_catalogs_of(&p, "ghcr.io/vendor/other:v1", out, 4), 1);
	CHECK_INT(policy_catalogs_of(&p, "registry.example.co/fns/set-x@sha256:" HEX, out, 4), 1);
	CHECK_STR(out[0], "third");
	CHECK_INT(policy_catalogs_of(&p, "registry.example.co/fns/set-y:v1", out, 4), 0);
	/* through the policy file generate hands its shims */
	struct buf b;
	buf_init(&b, 0);
	policy_write(&p, &b);
	struct policy q;
	struct err *e = NULL;
	CHECK_INT(policy_read(b.data, b.len, "policy", &q, &e), 0);
	CHECK_INT(policy_catalogs_of(&q, "registry.example.co/fns/set-x:v1", out, 4), 2);
	CHECK_STR(out[1], "example-co-functions");
	policy_clear(&q);
	policy_clear(&p);
	buf_free(&b);
}

/* The entry that records an image's entrypoint, from any admin catalog that lists it; two
 * that disagree are an error naming both. */
TEST(a_recorded_entrypoint_from_any_catalog)
{
	struct settings s = policy_settings(IMAGE_POLICY_CATALOG, false);
	struct policy p;
	policy_init(&p, &s);
	char *ep[] = {"/fn", NULL}, *other[] = {"/other", NULL};
	policy_add_image(&p, &(struct policy_image){.image = "r/fn:v1", .origin = "vendor entry"});
	policy_add_image(&p, &(struct policy_image){
	                             .image = "r/fn:v1", .origin = "org entry", .entrypoint = ep});
	policy_add_image(&p, &(struct policy_image){.image = "r/fn:v1",
	                                            .origin = "third entry",
	                                            .entrypoint = ep});
	const struct policy_image *rec = NULL;
	struct err *e = NULL;
	CHECK_INT(policy_recorded(&p, "r/fn:v1", &rec, &e), 0);
	CHECK(rec != NULL && rec == &p.images[1]);
	CHECK_INT(policy_recorded(&p, "r/other:v1", &rec, &e), 0);
	CHECK(rec == NULL);
	policy_add_image(&p, &(struct policy_image){.image = "r/fn:v1",
	                                            .origin = "fourth entry",
	                                            .entrypoint = other});
	CHECK_INT(policy_recorded(&p, "r/fn:v1", &rec, &e), -1);
	CHECK(rec == NULL && e && e->code == ERR_CONFIG);
	CHECK_CONTAINS(e ? e->msg : NULL, "org entry records entrypoint [\"/fn\"] cmd []");
	CHECK_CONTAINS(e ? e->msg : NULL, "fourth entry records entrypoint [\"/other\"]");
	err_free(e);
	policy_clear(&p);
}

int main(void)
{
	RUN(every_catalog_that_lists_an_image);
	RUN(a_recorded_entrypoint_from_any_catalog);
	RUN(a_catalog_parses_and_the_first_match_wins);
	RUN(validation_names_the_file_and_the_field);
	RUN(krm_function_catalog_and_digest_in_the_image);
	RUN(semver_tags_and_image_parts);
	RUN(catalog_references);
	RUN(the_three_policy_modes);
	RUN(patterns);
	RUN(the_policy_file_round_trip);
	RUN(policy_settings_are_checked);
	return check_summary();
}
