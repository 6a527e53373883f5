/* pod_container.c — see pod_container.h. */
#include "pod/pod_container.h"

void pod_container_write_attach_fields(struct jw *w, bool stdin_)
{
	jw_kv_bool(w, "stdin", stdin_);
	jw_kv_bool(w, "stdinOnce", stdin_);
	jw_kv_bool(w, "tty", false);
}

void pod_container_write_held_stdin(struct jw *w)
{
	jw_kv_bool(w, "stdin", true);
	jw_kv_bool(w, "stdinOnce", false);
	jw_kv_bool(w, "tty", false);
}

void pod_container_write_security_context(struct jw *w, bool read_only_root)
{
	jw_key(w, "securityContext");
	jw_obj_begin(w);
	if (read_only_root)
		jw_kv_bool(w, "readOnlyRootFilesystem", true);
	jw_kv_bool(w, "allowPrivilegeEscalation", false);
	jw_kv_bool(w, "privileged", false);
	jw_kv_bool(w, "runAsNonRoot", true);
	jw_key(w, "capabilities");
	jw_obj_begin(w);
	jw_key(w, "drop");
	jw_arr_begin(w);
	jw_str(w, "ALL");
	jw_arr_end(w);
	jw_obj_end(w);
	jw_obj_end(w);
}

/* Resources of krmpod's init containers: they only copy bytes. */
#define HELPER_CPU_REQUEST    "10m"
#define HELPER_CPU_LIMIT      "500m"
#define HELPER_MEMORY_REQUEST "16Mi"
#define HELPER_MEMORY_LIMIT   "64Mi"

/* Resources of exec mode's installer container: it copies krmpod once (its postStart hook)
 * and then only waits, for as long as the pod lives. Unlike an init container's, they add
 * to the function container's in the pod's total (the shipped ResourceQuota counts them).
 * The CPU limit is a whole CPU: the hook's `runc exec` runs in this container's cgroup, and
 * under a 200m limit the CFS throttle alone added ~80 ms to every pod's start (measured on
 * the real-cluster node); the container uses next to nothing after its hook. */
#define AGENT_CPU_REQUEST    "10m"
#define AGENT_CPU_LIMIT      "1"
#define AGENT_MEMORY_REQUEST "16Mi"
#define AGENT_MEMORY_LIMIT   "32Mi"

static void write_resources(struct jw *w, const char *req_cpu, const char *req_mem,
                            const char *lim_cpu, const char *lim_mem)
{
	jw_key(w, "resources");
	jw_obj_begin(w);
	jw_key(w, "requests");
	jw_obj_begin(w);
	jw_kv_str(w, "cpu", req_cpu);
	jw_kv_str(w, "memory", req_mem);
	jw_obj_end(w);
	jw_key(w, "limits");
	jw_obj_begin(w);
	jw_kv_str(w, "cpu", lim_cpu);
	jw_kv_str(w, "memory", lim_mem);
	jw_obj_end(w);
	jw_obj_end(w);
}

void pod_container_write_helper_resources(struct jw *w)
{
	write_resources(w, HELPER_CPU_REQUEST, HELPER_MEMORY_REQUEST, HELPER_CPU_LIMIT,
	                HELPER_MEMORY_LIMIT);
}

void pod_container_write_agent_resources(struct jw *w)
{
	write_resources(w, AGENT_CPU_REQUEST, AGENT_MEMORY_REQUEST, AGENT_CPU_LIMIT,
	                AGENT_MEMORY_LIMIT);
}
