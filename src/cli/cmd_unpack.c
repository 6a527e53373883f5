/* cmd_unpack.c — `krmpod unpack DIR`: the receiving side of mounts, run by the `mounts` init
 * container of a function pod (docs/levels.md, "Level 2: mounts"). Reads the tar on stdin
 * up to its end marker and extracts it into DIR/<index>/... (unpack.h). The size cap comes
 * from KRMPOD_MOUNT_MAX_BYTES, which the pod spec sets. */
#include <stdint.h>
#include <stdlib.h>

#include "base/log.h"
#include "cli/cmd.h"
#include "config/settings.h"
#include "mounts/unpack.h"

int cmd_unpack(int argc, char **argv, int *exit_code, struct err **err)
{
	if (argc != 2 || argv[1][0] == '\0' || argv[1][0] == '-')
		return err_set(err, ERR_USAGE,
		               "usage: krmpod unpack DIR < archive (run by function pods' mounts "
		               "container)");
	int64_t max_bytes = 64LL << 20;
	const char *v = getenv("KRMPOD_MOUNT_MAX_BYTES");
	if (v && *v && settings_parse_size("KRMPOD_MOUNT_MAX_BYTES", v, &max_bytes, err) < 0)
		return -1;
	struct unpack_stats st;
	if (unpack_tar(0, argv[1], max_bytes, &st, err) < 0)
		return -1;
	log_debug("unpacked %llu entries, %llu bytes of files into %s",
	          (unsigned long long)st.entries, (unsigned long long)st.bytes, argv[1]);
	*exit_code = 0;
	return 0;
}
