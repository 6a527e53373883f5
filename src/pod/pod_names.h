/* pod_names.h — the names krmpod gives things in a function pod: its containers, the labels
 * a NetworkPolicy selects on, the annotation that records the image, and the mounts layout
 * (docs/levels.md). Only names: every module that writes or reads a function pod uses
 * these, none defines its own. */
#ifndef KRMPOD_POD_NAMES_H
#define KRMPOD_POD_NAMES_H

/* The function's container. */
#define POD_CONTAINER_NAME "fn"

/* Labels every function pod carries (a PodTemplate may not set them). */
#define POD_LABEL_MANAGED_BY "app.kubernetes.io/managed-by"
#define POD_LABEL_FUNCTION   "krmpod.dev/function"
#define POD_LABEL_NETWORK    "krmpod.dev/network" /* none | granted */
/* and KUBE_LABEL_CREATE_ID (kube/kube_api.h), random per pod create */

/* The full image the pod runs, as the request named it. */
#define POD_ANNOTATION_IMAGE "krmpod.dev/image"

/* The init container that receives bind mounts, where it unpacks them, and the volumes. */
#define POD_MOUNTS_CONTAINER_NAME "mounts"
/* The network gate (agent_gate.h): attach mode's init container (in exec mode the function
 * container's SETTINGS_NET_GATE_ENV makes krmpod call/serve gate the first function). */
#define POD_NET_GATE_CONTAINER_NAME "net-gate"
#define POD_MOUNTS_DIR              "/krmpod/mounts"
#define POD_MOUNT_VOLUME_PREFIX     "krmpod-mount-"

/* The warm pool (pool.h): the pool a pod belongs to (its pod key, 16 hex digits),
 * whether it is idle or leased, who holds the lease until when (epoch ms), and since when
 * it is idle. */
#define POD_LABEL_POOL              "krmpod.dev/pool"
#define POD_LABEL_POOL_STATE        "krmpod.dev/pool-state" /* idle | busy */
#define POD_ANNOTATION_LEASE_HOLDER "krmpod.dev/lease-holder"
#define POD_ANNOTATION_LEASE_UNTIL  "krmpod.dev/lease-until"
#define POD_ANNOTATION_IDLE_SINCE   "krmpod.dev/idle-since"
#define POD_ANNOTATION_SERVED       "krmpod.dev/served" /* "true": it ran a call */
/* A shim's lease on its pod (pool_lease.h): the count of its renewals, each a write the API
 * server stamps; and the path of the annotation in a JSON patch ('/' as "~1"). */
#define POD_ANNOTATION_RENEWED      "krmpod.dev/renewed"
#define POD_ANNOTATION_RENEWED_PATH "krmpod.dev~1renewed"
/* The repo-server pod whose sidecar made the pod ("NAMESPACE/NAME"), when it is known
 * (KRMPOD_OWNER_POD): who the pod belongs to, for people and for `krmpod gc`'s lines. */
#define POD_ANNOTATION_OWNER "krmpod.dev/owner"
/* The whole SHA-256 of the pod's spec and Application, of which the pool label holds 16 hex
 * digits: a claim checks it before the first call (pool.h). */
#define POD_ANNOTATION_SPEC_SHA256 "krmpod.dev/spec-sha256"

/* Exec mode (pod_agent.h): the init container that installs krmpod, where it goes, and
 * the work directory `krmpod call` gives each call. */
#define POD_AGENT_CONTAINER_NAME "krmpod"
#define POD_AGENT_BIN_VOLUME     "krmpod-bin"
#define POD_AGENT_BIN_DIR        "/krmpod/bin"
#define POD_AGENT_BINARY         POD_AGENT_BIN_DIR "/krmpod"
#define POD_AGENT_WORK_VOLUME    "krmpod-work"
#define POD_AGENT_WORK_DIR       "/krmpod/work"

#endif
