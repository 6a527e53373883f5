/* pod_agent.c — see pod_agent.h. */
#include "pod/pod_agent.h"

#include <stddef.h>

#include "pod/pod_container.h"
#include "pod/pod_names.h"

const char *const pod_agent_call_command[] = {POD_AGENT_BINARY, "call", POD_AGENT_WORK_DIR, NULL};

static void write_mount(struct jw *w, const char *volume, const char *path, bool readonly)
{
	jw_obj_begin(w);
	jw_kv_str(w, "name", volume);
	jw_kv_str(w, "mountPath", path);
	if (readonly)
		jw_kv_bool(w, "readOnly", true);
	jw_obj_end(w);
}

/* The installer runs first among the pod's containers: the kubelet starts them one after
 * another in one sync and runs a postStart hook before it starts the next container, so the
 * binary is in place when the function container starts, without the relist (~1 s) an init
 * container's end waits for (docs/internals/exec-mode.md). */
void pod_agent_write_container(struct jw *w, const struct settings *s)
{
	jw_obj_begin(w);
	jw_kv_str(w, "name", POD_AGENT_CONTAINER_NAME);
	jw_kv_str(w, "image", s->helper_image ? s->helper_image : "");
	jw_key(w, "command");
	jw_arr_begin(w);
	jw_str(w, "krmpod");
	jw_str(w, "hold");
	jw_arr_end(w);
	jw_key(w, "lifecycle");
	jw_obj_begin(w);
	jw_key(w, "postStart");
	jw_obj_begin(w);
	jw_key(w, "exec");
	jw_obj_begin(w);
	jw_key(w, "command");
	jw_arr_begin(w);
	jw_str(w, "krmpod");
	jw_str(w, "install-self");
	jw_str(w, POD_AGENT_BIN_DIR);
	jw_arr_end(w);
	jw_obj_end(w);
	jw_obj_end(w);
	jw_obj_end(w);
	pod_container_write_agent_resources(w);
	pod_container_write_security_context(w, false);
	jw_kv_str(w, "terminationMessagePolicy", "FallbackToLogsOnError");
	jw_key(w, "volumeMounts");
	jw_arr_begin(w);
	write_mount(w, POD_AGENT_BIN_VOLUME, POD_AGENT_BIN_DIR, false);
	jw_arr_end(w);
	jw_obj_end(w);
}

void pod_agent_write_command(struct jw *w)
{
	jw_key(w, "command");
	jw_arr_begin(w);
	jw_str(w, POD_AGENT_BINARY);
	jw_str(w, "hold");
	jw_arr_end(w);
}

void pod_agent_write_volume_mounts(struct jw *w)
{
	write_mount(w, POD_AGENT_BIN_VOLUME, POD_AGENT_BIN_DIR, true);
	write_mount(w, POD_AGENT_WORK_VOLUME, POD_AGENT_WORK_DIR, false);
}

void pod_agent_write_volumes(struct jw *w)
{
	static const char *const names[] = {POD_AGENT_BIN_VOLUME, POD_AGENT_WORK_VOLUME};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		jw_obj_begin(w);
		jw_kv_str(w, "name", names[i]);
		jw_key(w, "emptyDir");
		jw_obj_begin(w);
		jw_obj_end(w);
		jw_obj_end(w);
	}
}
