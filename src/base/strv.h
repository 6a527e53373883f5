/* strv.h — NULL-terminated vectors of strings (an argv, an image's Entrypoint): each string
 * and the vector are owned by whoever holds the vector. NULL is an empty vector throughout. */
#ifndef KRMPOD_STRV_H
#define KRMPOD_STRV_H

#include <stdbool.h>
#include <stddef.h>

size_t strv_len(char *const *v);
/* A deep copy (NULL for NULL). */
char **strv_dup(char *const *v);
void strv_free(char **v);
/* Same strings in the same order (NULL equals an empty vector). */
bool strv_equal(char *const *a, char *const *b);

#endif
