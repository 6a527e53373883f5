/* request.c — see request.h. */
#include "config/request.h"

#include <stdlib.h>
#include <string.h>

void fn_request_clear(struct fn_request *req)
{
	free(req->image);
	free(req->pinned_image);
	for (size_t i = 0; i < req->n_args; i++)
		free(req->args[i]);
	free(req->args);
	for (size_t i = 0; i < req->n_env; i++) {
		free(req->env[i].name);
		free(req->env[i].value);
	}
	free(req->env);
	for (size_t i = 0; i < req->n_mounts; i++) {
		free(req->mounts[i].source);
		free(req->mounts[i].target);
		free(req->mounts[i].spec);
	}
	free(req->mounts);
	for (size_t i = 0; req->exec_argv && req->exec_argv[i]; i++)
		free(req->exec_argv[i]);
	free(req->exec_argv);
	memset(req, 0, sizeof(*req));
}
