/* pod_mounts.c — see pod_mounts.h. */
#include "pod/pod_mounts.h"

#include <stdio.h>

#include "mounts/mounts.h"
#include "pod/pod_container.h"
#include "pod/pod_names.h"

bool pod_mounts_need_helper(const struct fn_request *req)
{
	for (size_t i = 0; i < req->n_mounts; i++)
		if (req->mounts[i].type == FN_MOUNT_BIND)
			return true;
	return false;
}

static void volume_name(char *out, size_t size, size_t i)
{
	snprintf(out, size, POD_MOUNT_VOLUME_PREFIX "%zu", i);
}

void pod_mounts_write_init_container(struct jw *w, const struct fn_request *req,
                                     const struct settings *s)
{
	jw_obj_begin(w);
	jw_kv_str(w, "name", POD_MOUNTS_CONTAINER_NAME);
	jw_kv_str(w, "image", s->helper_image ? s->helper_image : "");
	jw_key(w, "command");
	jw_arr_begin(w);
	jw_str(w, "krmpod");
	jw_str(w, "unpack");
	jw_str(w, POD_MOUNTS_DIR);
	jw_arr_end(w);
	pod_container_write_attach_fields(w, true); /* it receives the tar on stdin */
	jw_key(w, "env");
	jw_arr_begin(w);
	jw_obj_begin(w);
	char max[32];
	snprintf(max, sizeof(max), "%lld", (long long)s->mount_max_bytes);
	jw_kv_str(w, "name", "KRMPOD_MOUNT_MAX_BYTES");
	jw_kv_str(w, "value", max);
	jw_obj_end(w);
	jw_arr_end(w);
	pod_container_write_helper_resources(w);
	pod_container_write_security_context(w, false);
	jw_kv_str(w, "terminationMessagePolicy", "FallbackToLogsOnError");
	jw_key(w, "volumeMounts");
	jw_arr_begin(w);
	for (size_t i = 0; i < req->n_mounts; i++) {
		if (req->mounts[i].type != FN_MOUNT_BIND)
			continue;
		char name[48], path[64];
		volume_name(name, sizeof(name), i);
		snprintf(path, sizeof(path), POD_MOUNTS_DIR "/%zu", i);
		jw_obj_begin(w);
		jw_kv_str(w, "name", name);
		jw_kv_str(w, "mountPath", path);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

void pod_mounts_write_volume_mounts(struct jw *w, const struct fn_request *req)
{
	for (size_t i = 0; i < req->n_mounts; i++) {
		const struct fn_mount *m = &req->mounts[i];
		char name[48];
		volume_name(name, sizeof(name), i);
		jw_obj_begin(w);
		jw_kv_str(w, "name", name);
		jw_kv_str(w, "mountPath", m->target);
		if (m->type == FN_MOUNT_BIND)
			jw_kv_str(w, "subPath", MOUNTS_CONTENT);
		if (m->readonly)
			jw_kv_bool(w, "readOnly", true);
		jw_obj_end(w);
	}
}

void pod_mounts_write_volumes(struct jw *w, const struct fn_request *req)
{
	for (size_t i = 0; i < req->n_mounts; i++) {
		char name[48];
		volume_name(name, sizeof(name), i);
		jw_obj_begin(w);
		jw_kv_str(w, "name", name);
		jw_key(w, "emptyDir");
		jw_obj_begin(w);
		if (req->mounts[i].type == FN_MOUNT_TMPFS)
			jw_kv_str(w, "medium", "Memory");
		jw_obj_end(w);
		jw_obj_end(w);
	}
}
