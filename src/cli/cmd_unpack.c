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

extern char **environ;

int cmd_unpack(int argc, char **argv, int *exit_code, struct err **err)
{
	if (argc != 2 || argv[1][0] == '\0' || argv[1][0] == '-')
		return err_set(err, ERR_USAGE,
		               "usage: krmpod unpack DIR < archive (run by function pods' mounts "
		               "container)");
	struct settings s;
	if (settings_load_env(&s, environ, err) < 0)
		return -1;
	struct unpack_stats st;
	int rc = unpack_tar(0, argv[1], s.mount_max_bytes, &st, err);
	settings_clear(&s);
	if (rc < 0)
		return -1;
	log_debug("unpacked %llu entries, %llu bytes of files into %s",
	          (unsigned long long)st.entries, (unsigned long long)st.bytes, argv[1]);
	*exit_code = 0;
	return 0;
}
