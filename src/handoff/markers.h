/* markers.h — the marker each shim under `krmpod generate` keeps while it runs a
 * function, so that generate can name a function whose shim died without a word.
 *
 * A shim SIGKILLed (by the kernel's OOM killer in the sidecar, by hand, or by generate's own
 * stop sequence after its grace) prints nothing and deletes nothing; kustomize only says
 * "couldn't execute function: signal: killed", naming no function. So while it runs, each
 * shim keeps the file DIR/PID (DIR is KRMPOD_RUNNING_DIR, private to one generate run):
 *
 *     IMAGE \n NAMESPACE \n POD \n     (NAMESPACE and POD empty until the pod is known)
 *
 * written when the run starts, rewritten (atomically, by rename) once the pod has a name,
 * and removed on every path the shim lives through, after its pod was deleted. A marker left
 * behind once kustomize ended is a shim that died: generate names its function and deletes
 * its pod (cmp.c). */
#ifndef KRMPOD_MARKERS_H
#define KRMPOD_MARKERS_H

#include <stddef.h>
#include <sys/types.h>

/* Largest marker file read back. */
#define SHIM_MARKER_MAX 4096

/* Shim side: writes (or rewrites) this process's marker in dir; ns and pod may be NULL
 * (not known yet). Best effort: a failure is logged at debug level, the run goes on. */
void shim_marker_write(const char *dir, const char *image, const char *ns, const char *pod);

/* Shim side: removes this process's marker from dir. */
void shim_marker_remove(const char *dir);

/* A marker left by a shim that is no longer running. */
struct shim_marker {
	pid_t pid;
	char *image;
	char *ns, *pod; /* NULL when the shim died before its pod had a name */
};

/* generate side: the markers in dir whose shim is no longer alive (*out, *n; to free with
 * shim_markers_free), and removes their files. Unreadable entries are skipped. */
void shim_markers_collect(const char *dir, struct shim_marker **out, size_t *n);

void shim_markers_free(struct shim_marker *m, size_t n);

/* generate side: removes whatever is left in dir, then dir itself. */
void shim_markers_remove_dir(const char *dir);

#endif
