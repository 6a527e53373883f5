/* pod_container.c — see pod_container.h. */
#include "pod/pod_container.h"

void pod_container_write_attach_fields(struct jw *w, bool stdin_)
{
	jw_kv_bool(w, "stdin", stdin_);
	jw_kv_bool(w, "stdinOnce", stdin_);
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

void pod_container_write_helper_resources(struct jw *w)
{
	jw_key(w, "resources");
	jw_obj_begin(w);
	jw_key(w, "requests");
	jw_obj_begin(w);
	jw_kv_str(w, "cpu", HELPER_CPU_REQUEST);
	jw_kv_str(w, "memory", HELPER_MEMORY_REQUEST);
	jw_obj_end(w);
	jw_key(w, "limits");
	jw_obj_begin(w);
	jw_kv_str(w, "cpu", HELPER_CPU_LIMIT);
	jw_kv_str(w, "memory", HELPER_MEMORY_LIMIT);
	jw_obj_end(w);
	jw_obj_end(w);
}
