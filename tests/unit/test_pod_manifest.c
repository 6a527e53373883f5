/* Unit tests: the function Pod. Parses the generated JSON back and checks every field the
 * Pod Security "restricted" profile and design.md §3.3 require. */
#include <stdlib.h>

#include "base/json.h"
#include "check.h"
#include "pod/pod_manifest.h"
#include "pod/pod_template.h"
#include "unit_settings.h"

static struct json *build(struct fn_request *req, struct settings *s)
{
	struct buf b;
	buf_init(&b, 0);
	pod_spec_build(req, s, &b);
	struct json *j = NULL;
	struct err *e = NULL;
	if (json_parse(b.data, b.len, "pod", &j, &e) < 0) {
		fprintf(stderr, "parse: %s\n%s\n", e->msg, b.data);
		err_free(e);
	}
	buf_free(&b);
	return j;
}

TEST(locked_down)
{
	struct fn_env env[] = {{"A", "1"}, {"QUOTE", "say \"hi\"\n"}};
	struct fn_request req = {.image = "ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.2.0",
	                         .env = env,
	                         .n_env = 2,
	                         .run_as_user = 65534,
	                         .run_as_group = 65534,
	                         .want_stdin = true};
	struct settings s = unit_settings(299500);
	struct json *p = build(&req, &s);
	CHECK(p != NULL);
	CHECK_STR(json_str(json_path(p, "kind")), "Pod");
	CHECK_STR(json_str(json_path(p, "metadata.generateName")), "krmpod-set-labels-");
	CHECK_STR(json_str(json_get(json_path(p, "metadata.labels"), "krmpod.dev/network")),
	          "none");
	CHECK_STR(json_str(json_get(json_path(p, "metadata.labels"), "krmpod.dev/function")),
	          "true");
	CHECK_STR(json_str(json_get(json_path(p, "metadata.annotations"), "krmpod.dev/image")),
	          req.image);
	CHECK(json_path(p, "metadata.ownerReferences") == NULL);
	long long v = 0;
	bool bv = true;
	CHECK(json_int(json_path(p, "spec.activeDeadlineSeconds"), &v) && v == 300);
	CHECK(json_bool(json_path(p, "spec.automountServiceAccountToken"), &bv) && !bv);
	CHECK(json_bool(json_path(p, "spec.enableServiceLinks"), &bv) && !bv);
	CHECK(json_bool(json_path(p, "spec.hostNetwork"), &bv) && !bv);
	CHECK_STR(json_str(json_path(p, "spec.restartPolicy")), "Never");
	CHECK(json_bool(json_path(p, "spec.securityContext.runAsNonRoot"), &bv) && bv);
	CHECK(json_int(json_path(p, "spec.securityContext.runAsUser"), &v) && v == 65534);
	CHECK_STR(json_str(json_path(p, "spec.securityContext.seccompProfile.type")),
	          "RuntimeDefault");
	const struct json *c = json_path(p, "spec.containers[0]");
	CHECK_STR(json_str(json_get(c, "name")), "fn");
	CHECK_STR(json_str(json_get(c, "image")), req.image);
	CHECK(json_bool(json_get(c, "stdin"), &bv) && bv);
	CHECK(json_bool(json_get(c, "stdinOnce"), &bv) && bv);
	CHECK(json_bool(json_get(c, "tty"), &bv) && !bv);
	CHECK(json_get(c, "imagePullPolicy") == NULL);
	CHECK(json_bool(json_path(c, "securityContext.allowPrivilegeEscalation"), &bv) && !bv);
	CHECK_STR(json_str(json_path(c, "securityContext.capabilities.drop[0]")), "ALL");
	CHECK_STR(json_str(json_path(c, "resources.limits.memory")), "512Mi");
	CHECK_STR(json_str(json_path(c, "resources.requests.cpu")), "100m");
	CHECK_STR(json_str(json_get(c, "terminationMessagePolicy")), "FallbackToLogsOnError");
	CHECK_STR(json_str(json_path(c, "env[1].value")), "say \"hi\"\n");
	CHECK_INT(json_len(json_get(c, "env")), 2);
	json_free(p);
}

TEST(network_owner_labels_pull_args)
{
	struct label labels[] = {{"team", "a"}};
	char *args[] = {"--x"};
	struct fn_request req = {.image = "fn",
	                         .network = FN_NETWORK_HOST,
	                         .pull = FN_PULL_NEVER,
	                         .args = args,
	                         .n_args = 1,
	                         .run_as_user = 1000,
	                         .run_as_group = 1000};
	struct settings s = unit_settings(299500);
	s.labels = labels;
	s.n_labels = 1;
	s.owner_pod = "argocd-repo-server-7c9";
	s.owner_uid = "uid-1";
	struct json *p = build(&req, &s);
	CHECK_STR(json_str(json_get(json_path(p, "metadata.labels"), "krmpod.dev/network")),
	          "granted");
	CHECK_STR(json_str(json_path(p, "metadata.labels.team")), "a");
	CHECK_STR(json_str(json_path(p, "metadata.ownerReferences[0].kind")), "Pod");
	CHECK_STR(json_str(json_path(p, "metadata.ownerReferences[0].name")), s.owner_pod);
	CHECK_STR(json_str(json_path(p, "metadata.ownerReferences[0].uid")), "uid-1");
	bool bv = true;
	CHECK(json_bool(json_path(p, "metadata.ownerReferences[0].blockOwnerDeletion"), &bv) &&
	      !bv);
	/* the owner, also as an annotation */
	CHECK_STR(json_str(json_get(json_path(p, "metadata.annotations"), "krmpod.dev/owner")),
	          "argocd-repo-server-7c9");
	CHECK_STR(json_str(json_path(p, "spec.containers[0].imagePullPolicy")), "Never");
	CHECK_STR(json_str(json_path(p, "spec.containers[0].args[0]")), "--x");
	long long v = 0;
	CHECK(json_int(json_path(p, "spec.securityContext.runAsUser"), &v) && v == 1000);
	CHECK(json_bool(json_path(p, "spec.hostNetwork"), &bv) && !bv);
	json_free(p);
	/* the shipped install: the owner in argocd, the pod in another namespace: no
	 * ownerReference (the garbage collector would take the owner for missing and delete the
	 * pod at once), the annotation names the owner with its namespace */
	s.owner_namespace = "argocd";
	s.namespace = "krmpod-functions";
	p = build(&req, &s);
	CHECK(json_path(p, "metadata.ownerReferences") == NULL);
	CHECK_STR(json_str(json_get(json_path(p, "metadata.annotations"), "krmpod.dev/owner")),
	          "argocd/argocd-repo-server-7c9");
	json_free(p);
}

/* docker run without -i: no stdin (the process reads /dev/null, nothing waits for an attach
 * that never sends input); the mounts init container still takes its tar on stdin. */
TEST(stdin_only_with_i)
{
	struct fn_mount m = {.type = FN_MOUNT_BIND,
	                     .source = "/app/data",
	                     .target = "/data",
	                     .readonly = true,
	                     .spec = "type=bind,source=/app/data,target=/data,readonly"};
	struct fn_request req = {.image = "fn",
	                         .run_as_user = 65534,
	                         .run_as_group = 65534,
	                         .mounts = &m,
	                         .n_mounts = 1};
	struct settings s = unit_settings(300000);
	s.helper_image = "example.com/krmpod:test";
	struct json *p = build(&req, &s);
	CHECK(p != NULL);
	bool bv = true;
	const struct json *c = json_path(p, "spec.containers[0]");
	CHECK(json_bool(json_get(c, "stdin"), &bv) && !bv);
	CHECK(json_bool(json_get(c, "stdinOnce"), &bv) && !bv);
	CHECK(json_bool(json_get(c, "tty"), &bv) && !bv);
	const struct json *init = json_path(p, "spec.initContainers[0]");
	CHECK_STR(json_str(json_get(init, "name")), "mounts");
	CHECK(json_bool(json_get(init, "stdin"), &bv) && bv);
	CHECK(json_bool(json_get(init, "stdinOnce"), &bv) && bv);
	json_free(p);
	req.want_stdin = true;
	p = build(&req, &s);
	c = json_path(p, "spec.containers[0]");
	CHECK(json_bool(json_get(c, "stdin"), &bv) && bv);
	CHECK(json_bool(json_get(c, "stdinOnce"), &bv) && bv);
	json_free(p);
}

/* Exec mode: no init container (its end would wait for a kubelet relist); the installer is
 * the first container, its postStart hook copies krmpod before the function container
 * starts, and the function container holds with krmpod from the shared volume. */
/* KRMPOD_NETWORK_GATE in attach mode: an init container runs `krmpod net-gate MS` from the
 * helper image before the function's entrypoint (and before the mounts' init container);
 * in exec mode the function container carries the gate's time for krmpod call/serve. */
TEST(network_gate_in_both_modes)
{
	struct fn_request req = {.image = "fn", .run_as_user = 65534, .run_as_group = 65534};
	struct settings s = unit_settings(300000);
	s.helper_image = "example.com/krmpod:test";
	s.net_gate_ms = 10000;
	s.net_gate_dns = true;
	struct json *p = build(&req, &s);
	CHECK(p != NULL);
	CHECK(json_len(json_path(p, "spec.initContainers")) == 1);
	const struct json *gate = json_path(p, "spec.initContainers[0]");
	CHECK_STR(json_str(json_get(gate, "name")), "net-gate");
	CHECK_STR(json_str(json_get(gate, "image")), "example.com/krmpod:test");
	CHECK_STR(json_str(json_path(gate, "command[1]")), "net-gate");
	CHECK_STR(json_str(json_path(gate, "command[2]")), "10000");
	bool ro = false;
	CHECK(json_bool(json_path(gate, "securityContext.readOnlyRootFilesystem"), &ro) && ro);
	/* the gate's other targets: the node's kubelet, and the cluster DNS (no grant) */
	CHECK_STR(json_str(json_path(gate, "env[0].name")), "KRMPOD_NET_GATE_NODE");
	CHECK_STR(json_str(json_path(gate, "env[0].valueFrom.fieldRef.fieldPath")),
	          "status.hostIP");
	CHECK_STR(json_str(json_path(gate, "env[1].name")), "KRMPOD_NET_GATE_DNS");
	CHECK_STR(json_str(json_path(gate, "env[1].value")), "1");
	CHECK(json_len(json_path(gate, "env")) == 2);
	CHECK(json_len(json_path(p, "spec.containers")) == 1);
	CHECK(json_path(p, "spec.containers[0].command") == NULL);    /* the image's entrypoint */
	CHECK(json_len(json_path(p, "spec.containers[0].env")) == 0); /* the function sees none */
	json_free(p);

	/* a granted pod may reach the cluster DNS: the gate does not probe it; nor where the
	 * admin opens DNS to every pod (KRMPOD_NETWORK_GATE_DNS=false) */
	req.network = FN_NETWORK_HOST;
	p = build(&req, &s);
	CHECK(json_len(json_path(p, "spec.initContainers[0].env")) == 1);
	json_free(p);
	req.network = FN_NETWORK_NONE;
	s.net_gate_dns = false;
	p = build(&req, &s);
	CHECK(json_len(json_path(p, "spec.initContainers[0].env")) == 1);
	json_free(p);
	s.net_gate_dns = true;

	char *argv[] = {"/bin/fn", NULL};
	req.exec_argv = argv;
	p = build(&req, &s);
	CHECK(p != NULL);
	CHECK(json_path(p, "spec.initContainers") == NULL);
	const struct json *fn = json_path(p, "spec.containers[1]");
	CHECK_STR(json_str(json_path(fn, "env[0].name")), "KRMPOD_NET_GATE_MS");
	CHECK_STR(json_str(json_path(fn, "env[0].value")), "10000");
	CHECK_STR(json_str(json_path(fn, "env[1].name")), "KRMPOD_NET_GATE_NODE");
	CHECK_STR(json_str(json_path(fn, "env[2].name")), "KRMPOD_NET_GATE_DNS");
	json_free(p);

	/* off: neither */
	s.net_gate_ms = 0;
	p = build(&req, &s);
	CHECK(json_path(p, "spec.containers[1].env") == NULL);
	json_free(p);
	req.exec_argv = NULL;
	p = build(&req, &s);
	CHECK(json_path(p, "spec.initContainers") == NULL);
	json_free(p);
}

TEST(exec_mode_installs_with_a_post_start_hook)
{
	char *argv[] = {"/bin/fn", NULL};
	struct fn_request req = {
	        .image = "fn", .run_as_user = 65534, .run_as_group = 65534, .exec_argv = argv};
	struct settings s = unit_settings(300000);
	s.helper_image = "example.com/krmpod:test";
	struct json *p = build(&req, &s);
	CHECK(p != NULL);
	CHECK(json_path(p, "spec.initContainers") == NULL);
	CHECK(json_len(json_path(p, "spec.containers")) == 2);
	const struct json *agent = json_path(p, "spec.containers[0]");
	CHECK_STR(json_str(json_get(agent, "name")), "krmpod");
	CHECK_STR(json_str(json_get(agent, "image")), "example.com/krmpod:test");
	CHECK_STR(json_str(json_path(agent, "command[1]")), "hold");
	const struct json *hook = json_path(agent, "lifecycle.postStart.exec.command");
	CHECK(json_len(hook) == 3);
	CHECK_STR(json_str(json_at(hook, 1)), "install-self");
	CHECK_STR(json_str(json_at(hook, 2)), "/krmpod/bin");
	CHECK_STR(json_str(json_path(agent, "resources.limits.memory")), "32Mi");
	CHECK_STR(json_str(json_path(agent, "volumeMounts[0].mountPath")), "/krmpod/bin");
	const struct json *fn = json_path(p, "spec.containers[1]");
	CHECK_STR(json_str(json_get(fn, "name")), "fn");
	CHECK_STR(json_str(json_path(fn, "command[0]")), "/krmpod/bin/krmpod");
	CHECK_STR(json_str(json_path(fn, "command[1]")), "hold");
	json_free(p);
}

TEST(exec_mode_on_the_images_own_entrypoint)
{
	/* the image config unknown: the entrypoint runs as the container's process with the
	 * request's args and env, held on stdin, gated by the init container, beside krmpod */
	char *none[] = {NULL};
	struct fn_env env[] = {{.name = "SAY", .value = "hi"}};
	char *args[] = {"--x", "y"};
	struct fn_request req = {.image = "fn",
	                         .run_as_user = 65534,
	                         .run_as_group = 65534,
	                         .exec_argv = none,
	                         .exec_pid1 = true,
	                         .args = args,
	                         .n_args = 2,
	                         .env = env,
	                         .n_env = 1};
	struct settings s = unit_settings(300000);
	s.helper_image = "example.com/krmpod:test";
	s.net_gate_ms = 10000;
	struct json *p = build(&req, &s);
	CHECK(p != NULL);
	CHECK(json_len(json_path(p, "spec.initContainers")) == 1);
	CHECK_STR(json_str(json_path(p, "spec.initContainers[0].command[1]")), "net-gate");
	CHECK(json_len(json_path(p, "spec.containers")) == 2);
	CHECK_STR(json_str(json_path(p, "spec.containers[0].name")), "krmpod");
	const struct json *fn = json_path(p, "spec.containers[1]");
	CHECK_STR(json_str(json_get(fn, "name")), "fn");
	CHECK(json_get(fn, "command") == NULL);
	CHECK_STR(json_str(json_path(fn, "args[1]")), "y");
	bool b = false;
	CHECK(json_bool(json_get(fn, "stdin"), &b) && b);
	CHECK(json_bool(json_get(fn, "stdinOnce"), &b) && !b);
	CHECK_STR(json_str(json_path(fn, "env[0].name")), "SAY");
	CHECK(json_len(json_get(fn, "env")) == 1); /* the call's gate is the init container */
	CHECK_STR(json_str(json_path(fn, "volumeMounts[0].mountPath")), "/krmpod/bin");
	json_free(p);
}

TEST(generate_name)
{
	char *n = pod_spec_generate_name("REGISTRY:5000/Org/My_Fn.v2:tag@sha256:abc");
	CHECK_STR(n, "krmpod-my-fn-v2-");
	free(n);
	n = pod_spec_generate_name("x/----");
	CHECK_STR(n, "krmpod-");
	free(n);
	char longname[200];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	n = pod_spec_generate_name(longname);
	CHECK(strlen(n) + 5 <= 63);
	free(n);
}

/* A template whose containers or volumes are not lists of mappings is refused: the values of
 * a mapping were written as the pod's volumes (tests/fuzz/crashes/pod_template/
 * volumes-mapping). */
TEST(template_lists_must_be_lists_of_mappings)
{
	static const struct {
		const char *yaml, *msg;
	} bad[] = {
	        {"spec: {volumes: {drop: [ALL]}}\n", "spec.volumes is not a list"},
	        {"spec: {volumes: [[a]]}\n", "spec.volumes[0] is not a mapping"},
	        {"spec: {containers: {fn: {image: x}}}\n", "spec.containers is not a list"},
	        {"spec: {initContainers: x}\n", "spec.initContainers is not a list"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct settings s = unit_settings(299500);
		struct json *doc = NULL;
		CHECK_INT(json_parse(bad[i].yaml, strlen(bad[i].yaml), "t", &doc, NULL), 0);
		struct err *e = NULL;
		CHECK_INT(pod_template_adopt(&s, doc, "template t", &e), -1);
		CHECK_CONTAINS(e ? e->msg : NULL, bad[i].msg);
		CHECK_CONTAINS(e ? e->msg : NULL, "template t");
		err_free(e);
		CHECK(s.template_doc == NULL);
	}
	/* an empty list and null stay fine */
	const char *good = "spec: {volumes: [], containers: null}\n";
	struct settings s = unit_settings(299500);
	struct json *doc = NULL;
	CHECK_INT(json_parse(good, strlen(good), "t", &doc, NULL), 0);
	CHECK_INT(pod_template_adopt(&s, doc, "template t", NULL), 0);
	json_free(s.template_doc); /* unit_settings: the strings are literals */
}

/* A template whose labels or annotations are a list (not a mapping) is refused; writing the
 * pod from it read a NULL key (tests/fuzz/crashes/pod_template/annotations-list). */
TEST(template_metadata_must_be_mappings)
{
	static const char *const bad[] = {
	        "metadata: {annotations: [{name: x}]}\nspec: {}\n",
	        "metadata: {labels: [a, b]}\nspec: {}\n",
	        "metadata: {labels: x}\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct settings s = unit_settings(299500);
		struct json *doc = NULL;
		CHECK_INT(json_parse(bad[i], strlen(bad[i]), "t", &doc, NULL), 0);
		struct err *e = NULL;
		CHECK_INT(pod_template_adopt(&s, doc, "template t", &e), -1);
		CHECK_CONTAINS(e ? e->msg : NULL, "is not a mapping");
		err_free(e);
		CHECK(s.template_doc == NULL);
	}
	struct settings s = unit_settings(299500);
	const char *ok = "metadata: {labels: null, annotations: {a: b}}\nspec: {}\n";
	struct json *doc = NULL;
	CHECK_INT(json_parse(ok, strlen(ok), "t", &doc, NULL), 0);
	CHECK_INT(pod_template_adopt(&s, doc, "template t", NULL), 0);
	struct fn_request req = {.image = "example.com/fn:v1", .run_as_user = 1, .run_as_group = 1};
	struct json *p = build(&req, &s);
	CHECK_STR(json_str(json_get(json_path(p, "metadata.annotations"), "a")), "b");
	json_free(p);
	json_free(s.template_doc); /* unit_settings: the strings are literals */
}

/* The names of a pod's spec.imagePullSecrets, comma-separated ("" without any); a new
 * string. Every entry must be {"name": …} alone. */
static char *pull_secrets_of(const struct json *pod)
{
	const struct json *l = json_path(pod, "spec.imagePullSecrets");
	struct buf b;
	buf_init(&b, 0);
	buf_puts(&b, "");
	for (size_t i = 0; i < json_len(l); i++) {
		const struct json *entry = json_at(l, i);
		if (json_len(entry) != 1 || json_str(json_get(entry, "name")) == NULL)
			buf_puts(&b, "(an entry that is not {name})");
		buf_printf(&b, "%s%s", i ? "," : "", json_str(json_get(entry, "name")));
	}
	return buf_steal(&b, NULL);
}

/* KRMPOD_IMAGE_PULL_SECRETS goes to every function pod (attach and exec mode), after the
 * PodTemplate's own imagePullSecrets, each name once. */
TEST(image_pull_secrets_from_the_setting_and_the_template)
{
	struct fn_request req = {
	        .image = "reg.example.com:5444/fns/x:v1", .run_as_user = 1, .run_as_group = 1};
	struct settings s = unit_settings(299500);
	struct json *p = build(&req, &s);
	CHECK(json_path(p, "spec.imagePullSecrets") == NULL); /* none: no key at all */
	json_free(p);

	char *names[] = {"registry-creds", "team-creds"};
	s.pull_secrets = names;
	s.n_pull_secrets = 2;
	p = build(&req, &s);
	char *got = pull_secrets_of(p);
	CHECK_STR(got, "registry-creds,team-creds");
	free(got);
	json_free(p);

	/* merged with the template's: its own first, no name twice */
	const char *t = "spec: {imagePullSecrets: [{name: team-creds}, {name: template-only}, "
	                "{name: team-creds}]}\n";
	struct json *doc = NULL;
	CHECK_INT(json_parse(t, strlen(t), "t", &doc, NULL), 0);
	CHECK_INT(pod_template_adopt(&s, doc, "template t", NULL), 0);
	p = build(&req, &s);
	got = pull_secrets_of(p);
	CHECK_STR(got, "team-creds,template-only,registry-creds");
	free(got);
	json_free(p);
	const char **listed = NULL;
	CHECK_INT(pod_spec_pull_secrets(&s, &listed), 3);
	CHECK(listed[3] == NULL);
	free(listed);
	/* exec mode: the same pod-level list (the helper container pulls with it too) */
	char *argv[] = {"function", NULL};
	req.exec_argv = argv;
	s.helper_image = "example.com/krmpod:test";
	p = build(&req, &s);
	got = pull_secrets_of(p);
	CHECK_STR(got, "team-creds,template-only,registry-creds");
	free(got);
	json_free(p);
	json_free(s.template_doc); /* unit_settings: the strings are literals */

	/* a template's list that is not a list of mappings is refused before any pod */
	s = unit_settings(299500);
	const char *bad = "spec: {imagePullSecrets: registry-creds}\n";
	CHECK_INT(json_parse(bad, strlen(bad), "t", &doc, NULL), 0);
	struct err *e = NULL;
	CHECK_INT(pod_template_adopt(&s, doc, "template t", &e), -1);
	CHECK_CONTAINS(e ? e->msg : NULL, "spec.imagePullSecrets is not a list");
	err_free(e);
}

int main(void)
{
	RUN(locked_down);
	RUN(network_owner_labels_pull_args);
	RUN(stdin_only_with_i);
	RUN(exec_mode_installs_with_a_post_start_hook);
	RUN(network_gate_in_both_modes);
	RUN(exec_mode_on_the_images_own_entrypoint);
	RUN(generate_name);
	RUN(template_metadata_must_be_mappings);
	RUN(template_lists_must_be_lists_of_mappings);
	RUN(image_pull_secrets_from_the_setting_and_the_template);
	return check_summary();
}
