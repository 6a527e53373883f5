/* size_limits.h — every limit on a buffer filled from outside, named in one place. */
#ifndef KRMPOD_SIZE_LIMITS_H
#define KRMPOD_SIZE_LIMITS_H

/* A non-streaming API response body (a Pod, a Status, a list of our pods). */
#define LIMIT_API_BODY (8u << 20)
/* One line of a watch stream (one event with one Pod object). */
#define LIMIT_WATCH_EVENT (4u << 20)
/* A kubeconfig file, a token file, a CA bundle, a certificate or key file. */
#define LIMIT_KUBECONFIG (4u << 20)
#define LIMIT_TOKEN_FILE (64u << 10)
#define LIMIT_PEM_FILE   (1u << 20)
/* What `krmpod doctor --probe` reads of its probe pod's stderr (one line is expected). */
#define LIMIT_DOCTOR_PROBE_OUTPUT (16u << 10)
/* A pod's resolv.conf, read by the network gate for its nameserver. */
#define LIMIT_RESOLV_CONF (64u << 10)
/* One incoming WebSocket message we buffer (channel-3 Status); stdout/stderr payloads are
 * streamed through and never buffered whole. */
#define LIMIT_WS_STATUS (64u << 10)
/* Pod log recovered for output written before attach (and logs of containers that ended
 * before attach): more than this is cut with a note. */
#define LIMIT_POD_LOG (16u << 20)
/* After an early attach: the most bytes written before the attach that are recovered from
 * the log (read once the container ended, together with what the attach delivered). */
#define LIMIT_PREATTACH_LOG (1u << 20)
/* Bytes of stdin read ahead of the WebSocket (flow control). */
#define LIMIT_STDIN_CHUNK (64u << 10)

/* The header line of an exec-mode call (agent.h): the function's argv and env. */
#define LIMIT_CALL_HEADER (256u << 10)
/* The command line of an exec-mode pod's PID 1 that a call runs (agent_pid1_argv). */
#define LIMIT_PID1_CMDLINE (128u << 10)
/* What the function's own process (PID 1, on its image's entrypoint) may write before its
 * call and still be checked against the call's stderr (fn_exec.c); more fails the call. */
#define LIMIT_PID1_LOG (1u << 20)
/* The largest frame of a call session (agent_frame.h); senders cut at LIMIT_STDIN_CHUNK. */
#define LIMIT_SESSION_FRAME (1u << 20)

/* The manifests `krmpod generate` holds until kustomize succeeded. */
#define LIMIT_GENERATE_OUTPUT (256u << 20)
/* A kustomization or function config file read by discover / init. */
#define LIMIT_KUSTOMIZE_FILE (16u << 20)

/* The bytes of files generate copies to apply catalogs outside Argo CD (cmp/tree_copy.h). */
#define LIMIT_TREE_COPY (256u << 20)
/* One function catalog (a file, an HTTPS download or an OCI layer; docs/catalogs.md). */
#define LIMIT_CATALOG (4u << 20)

/* Mounts (docs/levels.md, "Level 2: mounts"); their bytes are capped by
 * KRMPOD_MOUNT_MAX_BYTES. --mount flags of one function: */
#define LIMIT_MOUNTS 32
/* Files, directories and symlinks of one function's mounts (both when sending and when
 * unpacking): */
#define LIMIT_MOUNT_ENTRIES 100000
/* One path inside a mount, and one symlink target: */
#define LIMIT_MOUNT_PATH 4096
/* One tar PAX extended header (path and linkpath records): */
#define LIMIT_TAR_PAX (16u << 10)

/* Container registries and HTTPS catalogs (src/registry/). An image or artifact manifest
 * (or an index), a token endpoint's answer, an image's config blob: */
#define LIMIT_REGISTRY_MANIFEST (4u << 20)
#define LIMIT_REGISTRY_TOKEN    (64u << 10)
#define LIMIT_IMAGE_CONFIG      (4u << 20)
/* A dockerconfigjson file (KRMPOD_REGISTRY_AUTH): */
#define LIMIT_REGISTRY_AUTH_FILE (1u << 20)
/* One WWW-Authenticate header value, and the part of an error answer's body kept to quote
 * (the rest is read and dropped): */
#define LIMIT_REGISTRY_HEADER     (8u << 10)
#define LIMIT_REGISTRY_ERROR_BODY (16u << 10)
/* Signatures (sign/cosign.h): a simple-signing payload, a sigstore bundle, the signature
 * policy file, and how many signatures of one image are looked at (layers of the .sig
 * manifest, bundle referrers) before the rest is ignored: */
#define LIMIT_COSIGN_PAYLOAD    (64u << 10)
#define LIMIT_COSIGN_BUNDLE     (1u << 20)
#define LIMIT_SIGNATURE_POLICY  (1u << 20)
#define LIMIT_COSIGN_SIGNATURES 64
/* The system CA bundle together with KRMPOD_REGISTRY_CA: */
#define LIMIT_CA_BUNDLE (4u << 20)
/* The content cache (registry_opts.cache_dir): the oldest files beyond this many bytes are
 * evicted, and a larger object is not cached. */
#define LIMIT_REGISTRY_CACHE (64u << 20)

#endif
