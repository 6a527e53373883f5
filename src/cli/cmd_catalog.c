/* cmd_catalog.c — `krmpod catalog view [DIR] [-o text|yaml|json]` and `krmpod catalog
 * validate REFERENCE [-o text|yaml|json]` (cmp_view.h). */
#include <stdio.h>
#include <string.h>

#include "cli/cmd.h"
#include "cmp/cmp_view.h"
#include "config/settings.h"

extern char **environ;

#define USAGE                                                                             \
	"usage: krmpod catalog view [DIR] [-o text|yaml|json] | krmpod catalog validate " \
	"FILE|URL|oci://REF [-o text|yaml|json]"

static int parse_format(const char *v, enum catalog_view_format *f, struct err **err)
{
	if (strcmp(v, "text") == 0)
		*f = CATALOG_VIEW_TEXT;
	else if (strcmp(v, "yaml") == 0)
		*f = CATALOG_VIEW_YAML;
	else if (strcmp(v, "json") == 0)
		*f = CATALOG_VIEW_JSON;
	else
		return err_set(err, ERR_USAGE, "krmpod catalog: -o %s: use text, yaml or json", v);
	return 0;
}

int cmd_catalog(int argc, char **argv, int *exit_code, struct err **err)
{
	if (argc < 2 || (strcmp(argv[1], "view") != 0 && strcmp(argv[1], "validate") != 0))
		return err_set(err, ERR_USAGE, USAGE);
	bool view = strcmp(argv[1], "view") == 0;
	enum catalog_view_format f = CATALOG_VIEW_TEXT;
	const char *arg = NULL;
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
			if (parse_format(argv[++i], &f, err) < 0)
				return -1;
		} else if (strncmp(argv[i], "-o", 2) == 0 && argv[i][2]) {
			if (parse_format(argv[i][2] == '=' ? argv[i] + 3 : argv[i] + 2, &f, err) <
			    0)
				return -1;
		} else if (argv[i][0] == '-' || arg) {
			return err_set(err, ERR_USAGE, "krmpod catalog %s: unexpected %s: " USAGE,
			               argv[1], argv[i]);
		} else {
			arg = argv[i];
		}
	}
	if (!view && arg == NULL)
		return err_set(err, ERR_USAGE, "krmpod catalog validate: which catalog? " USAGE);
	struct settings s;
	if (settings_load_env(&s, environ, err) < 0)
		return -1;
	int rc = view ? catalog_view(&s, arg ? arg : ".", f, stdout, err)
	              : catalog_validate(&s, arg, f, stdout, err);
	settings_clear(&s);
	if (rc < 0)
		return -1;
	*exit_code = 0;
	return 0;
}
