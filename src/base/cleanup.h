/* cleanup.h — the one cleanup pattern: variables declared with these attributes are released
 * when they go out of scope. Ownership moves out with `*out = p; p = NULL;`.
 *
 *     cleanup_free char *path = xasprintf(...);
 *     cleanup_close int fd = open(...);
 *     cleanup_err struct err *e = NULL;
 *
 * Modules with a type of their own declare its helper next to its free function
 * (cleanup_buf in buf.h, cleanup_json in json.h). Library handles (CURL, curl_slist, yaml parser) have their own helpers here too, so no
 * module needs its own goto-cleanup ladder.
 */
#ifndef KRMPOD_CLEANUP_H
#define KRMPOD_CLEANUP_H

#include <curl/curl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <yaml.h>

#include "base/err.h"

static inline void cleanup_freep(void *p)
{
	free(*(void **)p);
}
static inline void cleanup_closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}
static inline void cleanup_filep(FILE **f)
{
	if (*f)
		fclose(*f);
}
static inline void cleanup_dirp(DIR **d)
{
	if (*d)
		closedir(*d);
}
static inline void cleanup_errp(struct err **e)
{
	err_free(*e);
}
static inline void cleanup_curlp(CURL **c)
{
	if (*c)
		curl_easy_cleanup(*c);
}
static inline void cleanup_slistp(struct curl_slist **l)
{
	curl_slist_free_all(*l);
}
static inline void cleanup_yaml_parserp(yaml_parser_t *p)
{
	yaml_parser_delete(p);
}
static inline void cleanup_yaml_eventp(yaml_event_t *e)
{
	yaml_event_delete(e);
}

#define cleanup_free        __attribute__((cleanup(cleanup_freep)))
#define cleanup_close       __attribute__((cleanup(cleanup_closep)))
#define cleanup_file        __attribute__((cleanup(cleanup_filep)))
#define cleanup_dir         __attribute__((cleanup(cleanup_dirp)))
#define cleanup_err         __attribute__((cleanup(cleanup_errp)))
#define cleanup_curl        __attribute__((cleanup(cleanup_curlp)))
#define cleanup_slist       __attribute__((cleanup(cleanup_slistp)))
#define cleanup_yaml_parser __attribute__((cleanup(cleanup_yaml_parserp)))
#define cleanup_yaml_event  __attribute__((cleanup(cleanup_yaml_eventp)))

/* Declares a cleanup helper for a type with a `void T_free(T *)` destructor:
 *     DEFINE_CLEANUP(json, json_free)  =>  cleanup_json struct json *j = NULL;
 * Modules place this in their own header next to their free function. */
#define DEFINE_CLEANUP_FUNC(name, type, freefn)        \
	static inline void cleanup_##name##p(type **p) \
	{                                              \
		freefn(*p);                            \
	}

#endif
