/* cmd_gc.c — `krmpod gc [--dry-run] [--older-than DURATION]` (gc.h). Exits 1 when a pod
 * could not be deleted. */
#include <stdio.h>
#include <string.h>

#include "base/signals.h"
#include "cli/cmd.h"
#include "config/settings.h"
#include "ops/gc.h"

extern char **environ;

int cmd_gc(int argc, char **argv, int *exit_code, struct err **err)
{
	struct fn_gc_opts o = {.older_than_ms = FN_GC_DEFAULT_OLDER_THAN_MS,
	                       .out = stdout,
	                       .cancel = &signals_cancel};
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--dry-run") == 0) {
			o.dry_run = true;
		} else if (strcmp(argv[i], "--older-than") == 0 && i + 1 < argc) {
			if (settings_parse_duration("--older-than", argv[++i], &o.older_than_ms,
			                            err) < 0) {
				(*err)->code = ERR_USAGE;
				return -1;
			}
		} else {
			return err_set(
			        err, ERR_USAGE,
			        "krmpod gc: unknown argument %s (use --dry-run, --older-than "
			        "DURATION)",
			        argv[i]);
		}
	}
	struct fn_gc_result res;
	if (fn_gc(environ, &o, &res, err) < 0)
		return -1;
	*exit_code = res.failed ? 1 : 0;
	return 0;
}
