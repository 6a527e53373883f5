/* markers.c — see markers.h. */
#include "handoff/markers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/log.h"
#include "base/xalloc.h"

void shim_marker_write(const char *dir, const char *image, const char *ns, const char *pod)
{
	cleanup_free char *path = xasprintf("%s/%d", dir, (int)getpid());
	cleanup_free char *tmp = xasprintf("%s/.%d.new", dir, (int)getpid());
	cleanup_free char *text = xasprintf("%s\n%s\n%s\n", image, ns ? ns : "", pod ? pod : "");
	cleanup_err struct err *e = NULL;
	if (fd_write_atomic(path, tmp, text, strlen(text), 0600, "the shim marker", &e) < 0)
		log_debug("shim marker %s: %s", path, e->msg);
}

void shim_marker_remove(const char *dir)
{
	cleanup_free char *path = xasprintf("%s/%d", dir, (int)getpid());
	unlink(path);
}

/* The next line of *p (its newline replaced by NUL), advancing *p; NULL at the end. */
static const char *next_line(char **p)
{
	if (**p == '\0')
		return NULL;
	char *line = *p;
	char *nl = strchr(line, '\n');
	if (nl) {
		*nl = '\0';
		*p = nl + 1;
	} else {
		*p = line + strlen(line);
	}
	return line;
}

/* Reads a marker's three lines into m; false when it is not a marker. */
static bool parse(char *text, struct shim_marker *m)
{
	char *p = text;
	const char *image = next_line(&p), *ns = next_line(&p), *pod = next_line(&p);
	if (image == NULL || *image == '\0')
		return false;
	m->image = xstrdup(image);
	if (ns && *ns && pod && *pod) {
		m->ns = xstrdup(ns);
		m->pod = xstrdup(pod);
	}
	return true;
}

void shim_markers_collect(const char *dir, struct shim_marker **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (d == NULL)
		return;
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char *end = NULL;
		long pid = strtol(e->d_name, &end, 10);
		if (e->d_name[0] == '.' || end == e->d_name || *end != '\0' || pid <= 0)
			continue;
		if (kill((pid_t)pid, 0) == 0) /* still running: it will speak for itself */
			continue;
		cleanup_free char *path = xasprintf("%s/%s", dir, e->d_name);
		cleanup_free char *text = NULL;
		cleanup_err struct err *re = NULL;
		size_t len = 0;
		if (buf_read_file(path, SHIM_MARKER_MAX, "shim marker", ERR_IO, &text, &len, &re) <
		    0) {
			log_debug("%s", re->msg);
			continue;
		}
		unlink(path);
		struct shim_marker m = {.pid = (pid_t)pid};
		if (!parse(text, &m))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 4;
			*out = xrealloc(*out, cap * sizeof(**out));
		}
		(*out)[(*n)++] = m;
	}
	closedir(d);
}

void shim_markers_free(struct shim_marker *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(m[i].image);
		free(m[i].ns);
		free(m[i].pod);
	}
	free(m);
}

void shim_markers_remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		cleanup_free char *f = xasprintf("%s/%s", dir, e->d_name);
		unlink(f);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}
