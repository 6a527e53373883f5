/* Unit tests: mounts — confinement and planning on the sending side (mounts.h), the
 * receiving side (unpack.h), both together, and the pod spec parts (pod_mounts.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "check.h"
#include "config/request.h"
#include "config/settings.h"
#include "mounts/mounts.h"
#include "mounts/tar.h"
#include "mounts/unpack.h"
#include "pod/pod_manifest.h"

static char tmp_root[256];

static char *path_of(const char *rel)
{
	char *p = malloc(512);
	snprintf(p, 512, "%s/%s", tmp_root, rel);
	return p;
}

static void write_file(const char *rel, const char *text, mode_t mode)
{
	char *p = path_of(rel);
	FILE *f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	chmod(p, mode);
	free(p);
}

static void make_dir(const char *rel)
{
	char *p = path_of(rel);
	mkdir(p, 0755);
	free(p);
}

static void make_link(const char *target, const char *rel)
{
	char *p = path_of(rel);
	if (symlink(target, p) != 0)
		fprintf(stderr, "symlink %s: %s\n", p, strerror(errno));
	free(p);
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return NULL;
	char *s = calloc(1, 4096);
	size_t n = fread(s, 1, 4095, f);
	s[n] = '\0';
	fclose(f);
	return s;
}

/* A fresh temporary tree:
 *   app/                      the kustomization directory (root)
 *     data/a.txt  data/sub/b.txt (0600)  data/empty/  data/rel -> sub/b.txt
 *     single.txt
 *   outside.txt               next to root, never to be sent */
static void setup(void)
{
	snprintf(tmp_root, sizeof(tmp_root), "/tmp/krmpod-test-mounts-XXXXXX");
	if (mkdtemp(tmp_root) == NULL)
		abort();
	make_dir("app");
	make_dir("app/data");
	make_dir("app/data/sub");
	make_dir("app/data/empty");
	write_file("app/data/a.txt", "alpha\n", 0644);
	write_file("app/data/sub/b.txt", "bravo\n", 0600);
	make_link("sub/b.txt", "app/data/rel");
	write_file("app/single.txt", "single\n", 0644);
	write_file("outside.txt", "secret\n", 0644);
}

static void teardown(void)
{
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_root);
	if (strlen(tmp_root) > 20 && strncmp(tmp_root, "/tmp/krmpod-test-mounts-", 24) == 0) {
		FILE *p = popen(cmd, "r");
		if (p)
			pclose(p);
	}
}

/* A request with one bind mount per "source:target[:ro]" spec (sources relative to the
 * temporary tree). */
static void request(struct fn_request *req, int n, const char *const *specs)
{
	memset(req, 0, sizeof(*req));
	req->image = strdup("example.com/read-mount:v1");
	req->mounts = calloc((size_t)n, sizeof(*req->mounts));
	for (int i = 0; i < n; i++) {
		char src[256], dst[256] = "";
		int ro = 0;
		sscanf(specs[i], "%255[^:]:%255[^:]:ro%n", src, dst, &ro);
		if (dst[0] == '\0')
			sscanf(specs[i], "%255[^:]:%255s", src, dst);
		struct fn_mount *m = &req->mounts[req->n_mounts++];
		m->type = strcmp(src, "TMPFS") == 0 ? FN_MOUNT_TMPFS : FN_MOUNT_BIND;
		m->source = m->type == FN_MOUNT_BIND ? path_of(src) : NULL;
		m->target = strdup(dst);
		m->readonly = strstr(specs[i], ":ro") != NULL;
		char spec[600];
		snprintf(spec, sizeof(spec), "type=%s,source=%s,target=%s%s",
		         m->type == FN_MOUNT_BIND ? "bind" : "tmpfs", m->source ? m->source : "",
		         dst, m->readonly ? ",readonly" : "");
		m->spec = strdup(spec);
	}
}

static int plan(const char *const *specs, int n, int64_t max, struct mount_plan **out,
                struct err **err)
{
	struct fn_request req;
	request(&req, n, specs);
	char *root = path_of("app");
	int rc = mount_plan_build(&req, root, max, out, err);
	free(root);
	fn_request_clear(&req);
	return rc;
}

static void expect_refused(const char *const *specs, int n, int64_t max, const char *needle)
{
	struct mount_plan *p = NULL;
	struct err *err = NULL;
	CHECK_INT(plan(specs, n, max, &p, &err), -1);
	CHECK(p == NULL);
	CHECK(err != NULL && err->code == ERR_USAGE);
	if (err)
		CHECK_CONTAINS(err->msg, needle);
	err_free(err);
}

/* Sends the plan into a temporary file and unpacks it into dest (with dest/0, dest/1...
 * made first, as the pod's volumes would be). */
static int send_and_unpack(struct mount_plan *p, const char *dest, int volumes,
                           struct unpack_stats *st, struct err **err)
{
	mkdir(dest, 0755);
	for (int i = 0; i < volumes; i++) {
		char d[600];
		snprintf(d, sizeof(d), "%s/%d", dest, i);
		mkdir(d, 0777);
	}
	char *archive = path_of("archive.tar");
	int fd = open(archive, O_RDWR | O_CREAT | O_TRUNC, 0600);
	free(archive);
	uint64_t written = 0;
	int rc = mount_plan_write(p, fd, &written, err);
	if (rc == 0) {
		/* trailing bytes after the end marker are never read */
		CHECK_INT(write(fd, "JUNK", 4), 4);
		lseek(fd, 0, SEEK_SET);
		rc = unpack_tar(fd, dest, 1 << 20, st, err);
		CHECK_INT(lseek(fd, 0, SEEK_CUR), (off_t)written);
	}
	close(fd);
	return rc;
}

TEST(directory_round_trip)
{
	setup();
	static const char *const specs[] = {"app/data:/data:ro"};
	struct mount_plan *p = NULL;
	struct err *err = NULL;
	CHECK_INT(plan(specs, 1, 1 << 20, &p, &err), 0);
	CHECK(p != NULL);
	/* data, a.txt, empty, rel, sub, sub/b.txt */
	CHECK_INT(mount_plan_entries(p), 6);
	CHECK_INT(mount_plan_bytes(p), 12);
	char *dest = path_of("dest");
	struct unpack_stats st = {0};
	CHECK_INT(send_and_unpack(p, dest, 1, &st, &err), 0);
	if (err)
		fprintf(stderr, "%s\n", err->msg);
	CHECK_INT(st.entries, 6);
	CHECK_INT(st.bytes, 12);
	char path[700];
	snprintf(path, sizeof(path), "%s/0/content/a.txt", dest);
	char *a = read_file(path);
	CHECK_STR(a, "alpha\n");
	free(a);
	snprintf(path, sizeof(path), "%s/0/content/rel", dest);
	char *b = read_file(path); /* through the symlink */
	CHECK_STR(b, "bravo\n");
	free(b);
	char target[64] = "";
	CHECK_INT(readlink(path, target, sizeof(target) - 1), 9);
	CHECK_STR(target, "sub/b.txt");
	struct stat sb;
	snprintf(path, sizeof(path), "%s/0/content/sub/b.txt", dest);
	CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);
	snprintf(path, sizeof(path), "%s/0/content/empty", dest);
	CHECK(stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 0777) == 0755);
	free(dest);
	mount_plan_free(p);
	err_free(err);
	teardown();
}

TEST(file_and_two_mounts_and_tmpfs)
{
	setup();
	static const char *const specs[] = {"app/single.txt:/etc/single.txt", "TMPFS:/scratch",
	                                    "app/data/sub:/sub:ro"};
	struct mount_plan *p = NULL;
	struct err *err = NULL;
	CHECK_INT(plan(specs, 3, 1 << 20, &p, &err), 0);
	CHECK_INT(mount_plan_entries(p), 3);
	char *dest = path_of("dest");
	struct unpack_stats st = {0};
	CHECK_INT(send_and_unpack(p, dest, 3, &st, &err), 0);
	char path[700];
	snprintf(path, sizeof(path), "%s/0/content", dest);
	char *s = read_file(path);
	CHECK_STR(s, "single\n");
	free(s);
	/* the tmpfs (volume 1) receives nothing; the third mount is volume 2 */
	snprintf(path, sizeof(path), "%s/1/content", dest);
	CHECK(access(path, F_OK) != 0);
	snprintf(path, sizeof(path), "%s/2/content/b.txt", dest);
	s = read_file(path);
	CHECK_STR(s, "bravo\n");
	free(s);
	free(dest);
	mount_plan_free(p);
	err_free(err);
	teardown();
}

TEST(tmpfs_only_needs_no_plan)
{
	setup();
	static const char *const specs[] = {"TMPFS:/scratch"};
	struct mount_plan *p = (struct mount_plan *)1;
	struct err *err = NULL;
	CHECK_INT(plan(specs, 1, 1, &p, &err), 0);
	CHECK(p == NULL);
	teardown();
}

TEST(confinement)
{
	setup();
	make_link("../outside.txt", "app/data/up");
	static const char *const up[] = {"app/data:/data"};
	expect_refused(up, 1, 1 << 20, "data/up: a symlink to \"../outside.txt\", which leaves");
	teardown();

	setup();
	make_link("/etc/passwd", "app/data/abs");
	expect_refused(up, 1, 1 << 20,
	               "data/abs: a symlink to \"/etc/passwd\", which leaves the mount");
	teardown();

	setup();
	/* a link that stays in the kustomization but leaves the mount */
	make_link("../single.txt", "app/data/sib");
	expect_refused(up, 1, 1 << 20, "data/sib: a symlink to \"../single.txt\"");
	teardown();

	setup();
	make_link("/etc", "app/etc");
	static const char *const via_link[] = {"app/etc:/etc2"};
	expect_refused(via_link, 1, 1 << 20,
	               "resolves to /etc, outside the kustomization directory");
	static const char *const dotdot[] = {"app/../outside.txt:/o"};
	expect_refused(dotdot, 1, 1 << 20, "has a \"..\" component");
	static const char *const outside[] = {"outside.txt:/o"};
	expect_refused(outside, 1, 1 << 20, "outside the kustomization directory");
	static const char *const missing[] = {"app/nope:/o"};
	expect_refused(missing, 1, 1 << 20, "No such file or directory");
	teardown();

	setup();
	/* a symlinked source that stays inside is fine: it is resolved, then walked */
	make_link("data", "app/datalink");
	static const char *const ok[] = {"app/datalink:/data"};
	struct mount_plan *p = NULL;
	struct err *err = NULL;
	CHECK_INT(plan(ok, 1, 1 << 20, &p, &err), 0);
	CHECK_INT(mount_plan_entries(p), 6);
	mount_plan_free(p);
	err_free(err);
	teardown();
}

TEST(hard_links_and_special_files)
{
	setup();
	char *a = path_of("app/data/a.txt"), *out = path_of("outside.txt");
	char *hl = path_of("app/data/hard"), *hl_out = path_of("app/data/hard-out");
	CHECK_INT(link(a, hl), 0); /* both links in the mount: fine */
	static const char *const data[] = {"app/data:/data"};
	struct mount_plan *p = NULL;
	struct err *err = NULL;
	CHECK_INT(plan(data, 1, 1 << 20, &p, &err), 0);
	mount_plan_free(p);
	CHECK_INT(link(out, hl_out), 0); /* the other link is outside the kustomization */
	expect_refused(data, 1, 1 << 20, "data/hard-out has 2 hard links and only 1 of them");
	free(a);
	free(out);
	free(hl);
	free(hl_out);
	err_free(err);
	teardown();

	setup();
	char *fifo = path_of("app/data/fifo");
	CHECK_INT(mkfifo(fifo, 0644), 0);
	free(fifo);
	expect_refused(data, 1, 1 << 20, "data/fifo: a FIFO");
	teardown();
}

TEST(size_limit_names_each_mount)
{
	setup();
	static const char *const two[] = {"app/data:/data", "app/single.txt:/s"};
	expect_refused(two, 2, 10,
	               "the mounts hold 19 bytes of files, more than KRMPOD_MOUNT_MAX_BYTES (10 "
	               "bytes) allows");
	struct mount_plan *p = NULL;
	struct err *err = NULL;
	CHECK_INT(plan(two, 2, 10, &p, &err), -1);
	CHECK_CONTAINS(err ? err->msg : NULL, "/app/data,target=/data: 12 bytes; --mount");
	CHECK_CONTAINS(err ? err->msg : NULL, "/app/single.txt,target=/s: 7 bytes");
	err_free(err);
	err = NULL;
	CHECK_INT(plan(two, 2, 19, &p, &err), 0);
	mount_plan_free(p);
	teardown();
}

TEST(a_file_that_changes_is_not_sent)
{
	setup();
	static const char *const data[] = {"app/data:/data"};
	struct mount_plan *p = NULL;
	struct err *err = NULL;
	CHECK_INT(plan(data, 1, 1 << 20, &p, &err), 0);
	write_file("app/data/a.txt", "alpha, longer now\n", 0644);
	char *dest = path_of("dest");
	struct unpack_stats st;
	CHECK_INT(send_and_unpack(p, dest, 1, &st, &err), -1);
	CHECK_CONTAINS(err ? err->msg : NULL, "data/a.txt changed while being sent");
	free(dest);
	mount_plan_free(p);
	err_free(err);
	err = NULL;
	teardown();

	/* replaced by a symlink to a file outside: refused, nothing of it is read */
	setup();
	CHECK_INT(plan(data, 1, 1 << 20, &p, &err), 0);
	char *a = path_of("app/data/a.txt");
	unlink(a);
	free(a);
	make_link("../../outside.txt", "app/data/a.txt");
	dest = path_of("dest");
	CHECK_INT(send_and_unpack(p, dest, 1, &st, &err), -1);
	CHECK_CONTAINS(err ? err->msg : NULL, "changed while being sent");
	free(dest);
	mount_plan_free(p);
	err_free(err);
	teardown();
}

/* --- the receiving side, with hand-made archives --------------------------------------- */

static void entry(struct buf *b, enum tar_type type, const char *path, const char *link,
                  const char *data)
{
	size_t n = data ? strlen(data) : 0;
	struct tar_entry e = {type, path, link, type == TAR_DIR ? 0755 : 0644, n, 0};
	tar_header(&e, b, NULL);
	if (n) {
		buf_append(b, data, n, "test", NULL);
		static const char zeros[TAR_BLOCK];
		buf_append(b, zeros, tar_padding(n), "test", NULL);
	}
}

static void expect_unpack_fails(struct buf *b, int64_t max, const char *needle)
{
	tar_end(b);
	char *archive = path_of("hand.tar"), *dest = path_of("dest");
	char idx[600];
	mkdir(dest, 0755);
	snprintf(idx, sizeof(idx), "%s/0", dest);
	mkdir(idx, 0777);
	int fd = open(archive, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK_INT(write(fd, b->data, b->len), (ssize_t)b->len);
	lseek(fd, 0, SEEK_SET);
	struct unpack_stats st;
	struct err *err = NULL;
	CHECK_INT(unpack_tar(fd, dest, max, &st, &err), -1);
	CHECK(err != NULL);
	if (err)
		CHECK_CONTAINS(err->msg, needle);
	err_free(err);
	close(fd);
	free(archive);
	free(dest);
	buf_free(b);
}

TEST(unpack_refuses_what_the_sender_never_writes)
{
	struct buf b;
	char *f;
	setup();
	buf_init(&b, 0);
	entry(&b, TAR_FILE, "0/../../etc/x", NULL, "x");
	expect_unpack_fails(&b, 1 << 20, "\"..\" path components are refused");
	buf_init(&b, 0);
	entry(&b, TAR_FILE, "/0/x", NULL, "x");
	expect_unpack_fails(&b, 1 << 20, "does not start with a mount number");
	buf_init(&b, 0);
	entry(&b, TAR_FILE, "00/x", NULL, "x");
	expect_unpack_fails(&b, 1 << 20, "does not start with a mount number");
	buf_init(&b, 0);
	entry(&b, TAR_FILE, "7/x", NULL, "x"); /* no volume 7 in this pod */
	expect_unpack_fails(&b, 1 << 20, "mount 7:");
	buf_init(&b, 0);
	entry(&b, TAR_DIR, "0/c", NULL, NULL);
	entry(&b, TAR_SYMLINK, "0/c/up", "../../x", NULL);
	expect_unpack_fails(&b, 1 << 20, "symlink to \"../../x\" refused");
	teardown();

	setup();
	buf_init(&b, 0);
	entry(&b, TAR_SYMLINK, "0/l", "/etc", NULL);
	expect_unpack_fails(&b, 1 << 20, "symlink to \"/etc\" refused");
	teardown();

	/* a chain of links that each look inside but together leave the volume: d1/l -> ".."
	 * is its root, so x -> "d1/l/../.." would be the volume's parent
	 * (tests/fuzz/crashes/tar_unpack/symlink-chain-escape) */
	setup();
	buf_init(&b, 0);
	entry(&b, TAR_DIR, "0/d1", NULL, NULL);
	entry(&b, TAR_SYMLINK, "0/d1/l", "..", NULL);
	entry(&b, TAR_SYMLINK, "0/x", "d1/l/../..", NULL);
	expect_unpack_fails(&b, 1 << 20, "entry 0/x: symlink to \"d1/l/../..\" refused");
	f = path_of("dest/0/x");
	CHECK(access(f, F_OK) != 0 && errno == ENOENT);
	free(f);
	teardown();

	/* a symlink the archive made is never followed by a later entry */
	setup();
	buf_init(&b, 0);
	entry(&b, TAR_DIR, "0/d", NULL, NULL);
	entry(&b, TAR_SYMLINK, "0/l", "d", NULL);
	entry(&b, TAR_FILE, "0/l/f", NULL, "x");
	expect_unpack_fails(&b, 1 << 20,
	                    "entry 0/l/f: l is not a directory (symlinks are never followed)");
	f = path_of("dest/0/d/f");
	CHECK(access(f, F_OK) != 0);
	free(f);
	teardown();

	setup();
	buf_init(&b, 0);
	entry(&b, TAR_FILE, "0/f", NULL, "x");
	entry(&b, TAR_FILE, "0/f", NULL, "y");
	expect_unpack_fails(&b, 1 << 20, "exists already (duplicate entry)");
	teardown();

	setup();
	buf_init(&b, 0);
	entry(&b, TAR_FILE, "0/missing/f", NULL, "x");
	expect_unpack_fails(&b, 1 << 20, "missing (its directory entry must come first)");
	teardown();

	setup();
	buf_init(&b, 0);
	entry(&b, TAR_FILE, "0/a", NULL, "12345");
	entry(&b, TAR_FILE, "0/b", NULL, "67890");
	expect_unpack_fails(&b, 8, "pass KRMPOD_MOUNT_MAX_BYTES (8 bytes)");
	teardown();

	/* cut short: no end marker */
	setup();
	buf_init(&b, 0);
	entry(&b, TAR_FILE, "0/a", NULL, "12345");
	char *archive = path_of("cut.tar"), *dest = path_of("dest");
	mkdir(dest, 0755);
	char idx[600];
	snprintf(idx, sizeof(idx), "%s/0", dest);
	mkdir(idx, 0777);
	int fd = open(archive, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK_INT(write(fd, b.data, b.len), (ssize_t)b.len);
	lseek(fd, 0, SEEK_SET);
	struct unpack_stats st;
	struct err *err = NULL;
	CHECK_INT(unpack_tar(fd, dest, 1 << 20, &st, &err), -1);
	CHECK_CONTAINS(err ? err->msg : NULL, "before the end marker");
	err_free(err);
	close(fd);
	free(archive);
	free(dest);
	buf_free(&b);
	teardown();
}

TEST(unpack_check_path)
{
	unsigned idx = 99;
	const char *rest = NULL;
	struct err *err = NULL;
	CHECK_INT(unpack_check_path("0", &idx, &rest, &err), 0);
	CHECK_INT(idx, 0);
	CHECK_STR(rest, "");
	CHECK_INT(unpack_check_path("12/content/a/b", &idx, &rest, &err), 0);
	CHECK_INT(idx, 12);
	CHECK_STR(rest, "content/a/b");
	CHECK_INT(unpack_check_path("32/x", &idx, &rest, &err), -1);
	CHECK_INT(unpack_check_path("1x/x", &idx, &rest, &err), -1);
	CHECK_INT(unpack_check_path("0//x", &idx, &rest, &err), -1);
	CHECK_INT(unpack_check_path("0/./x", &idx, &rest, &err), -1);
	CHECK_INT(unpack_check_path("0/x/", &idx, &rest, &err), -1);
	CHECK_INT(unpack_check_path("", &idx, &rest, &err), -1);
	err_free(err);
}

/* --- the pod spec ----------------------------------------------------------------------- */

TEST(pod_spec_with_mounts)
{
	struct fn_request req = {0};
	static const char *const specs[] = {"app/data:/data:ro", "TMPFS:/scratch", "app/out:/out"};
	snprintf(tmp_root, sizeof(tmp_root), "/k");
	request(&req, 3, specs);
	req.run_as_user = req.run_as_group = 65534;
	struct settings s = {0};
	s.cpu_request = "100m", s.cpu_limit = "1", s.memory_request = "64Mi";
	s.memory_limit = "512Mi", s.timeout_ms = 60000, s.mount_max_bytes = 1024;
	s.helper_image = "ghcr.io/krmpod/krmpod:v1";
	struct buf out;
	buf_init(&out, 0);
	pod_spec_build(&req, &s, &out);
	struct json *pod = NULL;
	struct err *err = NULL;
	CHECK_INT(json_parse(out.data, out.len, "pod", &pod, &err), 0);
	const struct json *init = json_path(pod, "spec.initContainers[0]");
	CHECK_STR(json_str(json_get(init, "name")), "mounts");
	CHECK_STR(json_str(json_get(init, "image")), "ghcr.io/krmpod/krmpod:v1");
	CHECK_STR(json_str(json_path(init, "command[0]")), "krmpod");
	CHECK_STR(json_str(json_path(init, "command[1]")), "unpack");
	CHECK_STR(json_str(json_path(init, "command[2]")), "/krmpod/mounts");
	bool b = false;
	CHECK(json_bool(json_get(init, "stdinOnce"), &b) && b);
	CHECK_STR(json_str(json_path(init, "env[0].value")), "1024");
	CHECK(json_bool(json_path(init, "securityContext.allowPrivilegeEscalation"), &b) && !b);
	CHECK_STR(json_str(json_path(init, "securityContext.capabilities.drop[0]")), "ALL");
	/* the init container mounts the two bind mounts' volumes only */
	CHECK_INT(json_len(json_get(init, "volumeMounts")), 2);
	CHECK_STR(json_str(json_path(init, "volumeMounts[0].name")), "krmpod-mount-0");
	CHECK_STR(json_str(json_path(init, "volumeMounts[0].mountPath")), "/krmpod/mounts/0");
	CHECK_STR(json_str(json_path(init, "volumeMounts[1].mountPath")), "/krmpod/mounts/2");
	const struct json *fn = json_path(pod, "spec.containers[0]");
	CHECK_INT(json_len(json_get(fn, "volumeMounts")), 3);
	CHECK_STR(json_str(json_path(fn, "volumeMounts[0].mountPath")), "/data");
	CHECK_STR(json_str(json_path(fn, "volumeMounts[0].subPath")), "content");
	CHECK(json_bool(json_path(fn, "volumeMounts[0].readOnly"), &b) && b);
	CHECK(json_path(fn, "volumeMounts[1].subPath") == NULL);
	CHECK(json_path(fn, "volumeMounts[2].readOnly") == NULL);
	CHECK_STR(json_str(json_path(pod, "spec.volumes[1].name")), "krmpod-mount-1");
	CHECK_STR(json_str(json_path(pod, "spec.volumes[1].emptyDir.medium")), "Memory");
	CHECK(json_path(pod, "spec.volumes[0].emptyDir.medium") == NULL);
	json_free(pod);
	buf_free(&out);

	/* tmpfs only: no init container */
	fn_request_clear(&req);
	static const char *const tmpfs[] = {"TMPFS:/scratch"};
	request(&req, 1, tmpfs);
	buf_init(&out, 0);
	pod_spec_build(&req, &s, &out);
	pod = NULL;
	CHECK_INT(json_parse(out.data, out.len, "pod", &pod, &err), 0);
	CHECK(json_path(pod, "spec.initContainers") == NULL);
	CHECK_INT(json_len(json_path(pod, "spec.volumes")), 1);
	json_free(pod);
	buf_free(&out);
	fn_request_clear(&req);
	err_free(err);
}

int main(void)
{
	RUN(directory_round_trip);
	RUN(file_and_two_mounts_and_tmpfs);
	RUN(tmpfs_only_needs_no_plan);
	RUN(confinement);
	RUN(hard_links_and_special_files);
	RUN(size_limit_names_each_mount);
	RUN(a_file_that_changes_is_not_sent);
	RUN(unpack_refuses_what_the_sender_never_writes);
	RUN(unpack_check_path);
	RUN(pod_spec_with_mounts);
	return check_summary();
}
