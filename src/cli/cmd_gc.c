/* cmd_gc.c — `krmpod gc [--dry-run] [--older-than DURATION]`: deletes function pods that no
 * shim will delete any more. A shim deletes its pod on every path it lives through; a shim
 * killed with SIGKILL (the sidecar OOM-killed or evicted) cannot, and a pod stopped by its
 * activeDeadlineSeconds stays, Failed, until someone deletes it.
 *
 * Candidates carry krmpod.dev/function=true in the functions namespace. A finished pod
 * (Succeeded or Failed) is deleted once it has been finished for --older-than (default 60 s:
 * its shim, if alive, deletes it within milliseconds of reading the exit code, and gc must
 * not race that). A pod that is not finished is deleted only when it is older than its
 * activeDeadlineSeconds plus --older-than: the cluster should have stopped it by then. Running
 * functions of live generate runs are never touched. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/json.h"
#include "base/signals.h"
#include "base/xalloc.h"
#include "cli/cmd.h"
#include "config/settings.h"
#include "fn/fn_config.h"
#include "kube/kube_http.h"
#include "kube/kubeconfig.h"
#include "pod/pod_spec.h"

extern char **environ;

#define DEFAULT_OLDER_THAN_MS 60000

/* The time the pod finished (its container's finishedAt, else the latest condition), or 0. */
static time_t finished_at(const struct json *pod)
{
	time_t t = 0;
	const struct json *cs = json_path(pod, "status.containerStatuses");
	for (size_t i = 0; i < json_len(cs); i++) {
		time_t f;
		if (kube_parse_time(
		            json_str(json_path(json_at(cs, i), "state.terminated.finishedAt")),
		            &f) == 0 &&
		    f > t)
			t = f;
	}
	const struct json *conds = json_path(pod, "status.conditions");
	for (size_t i = 0; t == 0 && i < json_len(conds); i++) {
		time_t f;
		if (kube_parse_time(json_str(json_get(json_at(conds, i), "lastTransitionTime")),
		                    &f) == 0 &&
		    f > t)
			t = f;
	}
	return t;
}

/* Why the pod should go (written into why), or NULL to keep it. */
static const char *verdict(const struct json *pod, time_t now, int64_t older_than_s, char *why,
                           size_t why_len)
{
	const char *phase = json_str(json_path(pod, "status.phase"));
	if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)) {
		time_t f = finished_at(pod);
		if (f == 0 || now - f < older_than_s)
			return NULL;
		snprintf(why, why_len, "%s, finished %llds ago", phase, (long long)(now - f));
		return why;
	}
	time_t created;
	long long deadline = 0;
	if (kube_parse_time(json_str(json_path(pod, "metadata.creationTimestamp")), &created) < 0 ||
	    !json_int(json_path(pod, "spec.activeDeadlineSeconds"), &deadline))
		return NULL;
	if (now - created < deadline + older_than_s)
		return NULL;
	snprintf(why, why_len, "%s, created %llds ago, past its activeDeadlineSeconds (%llds)",
	         phase ? phase : "no phase", (long long)(now - created), deadline);
	return why;
}

int cmd_gc(int argc, char **argv, int *exit_code, struct err **err)
{
	bool dry_run = false;
	int64_t older_than_ms = DEFAULT_OLDER_THAN_MS;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--dry-run") == 0) {
			dry_run = true;
		} else if (strcmp(argv[i], "--older-than") == 0 && i + 1 < argc) {
			if (settings_parse_duration("--older-than", argv[++i], &older_than_ms,
			                            err) < 0) {
				(*err)->code = ERR_USAGE;
				return -1;
			}
		} else {
			return err_set(
			        err, ERR_USAGE,
			        "krmpod gc: unknown argument %s (use --dry-run, --older-than "
			        "DURATION)",
			        argv[i]);
		}
	}
	struct settings s = {0};
	struct kube_config *cfg = NULL;
	cleanup_kube_client struct kube_client *c = NULL;
	cleanup_json struct json *list = NULL;
	cleanup_free char *sel = NULL, *path = NULL;
	int rc = -1;
	if (kube_config_load(&cfg, err) < 0 || fn_config_base(environ, cfg, &s, err) < 0 ||
	    kube_client_new(cfg, &c, err) < 0)
		goto done;
	kube_client_set_cancel(c, &signals_cancel);
	const char *ns = s.namespace;
	sel = kube_query_escape(POD_LABEL_FUNCTION "=true");
	path = xasprintf("/api/v1/namespaces/%s/pods?labelSelector=%s", ns, sel);
	if (kube_request(c, "GET", path, NULL, NULL, 0, NULL, &list, err) < 0) {
		err_wrap(err, "gc: list the function pods in %s", ns);
		goto done;
	}
	time_t now = time(NULL);
	unsigned deleted = 0, kept = 0, failed = 0;
	const struct json *items = json_get(list, "items");
	for (size_t i = 0; i < json_len(items); i++) {
		const struct json *pod = json_at(items, i);
		const char *name = json_str(json_path(pod, "metadata.name"));
		char why[160];
		if (name == NULL ||
		    verdict(pod, now, older_than_ms / 1000, why, sizeof(why)) == NULL) {
			kept++;
			continue;
		}
		if (dry_run) {
			printf("would delete %s/%s (%s)\n", ns, name, why);
			deleted++;
			continue;
		}
		cleanup_err struct err *e = NULL;
		if (kube_pod_delete(c, ns, name, &e) < 0) {
			printf("cannot delete %s/%s: %s\n", ns, name, e->msg);
			failed++;
		} else {
			printf("deleted %s/%s (%s)\n", ns, name, why);
			deleted++;
		}
	}
	printf("gc: %u %s, %u kept (running, or finished less than %llds ago), %u failed\n",
	       deleted, dry_run ? "to delete" : "deleted", kept, (long long)(older_than_ms / 1000),
	       failed);
	*exit_code = failed ? 1 : 0;
	rc = 0;
done:
	kube_config_free(cfg);
	settings_clear(&s);
	return rc;
}
