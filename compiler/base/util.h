/* util.h: our own bugs abort loudly; user errors go through diag.h instead. */
#ifndef CELLC_UTIL_H
#define CELLC_UTIL_H

#include <stdio.h>
#include <stdlib.h>

_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define ASSERT(c) \
	((c) ? (void)0 : die("%s:%d: internal error: assertion failed: %s", __FILE__, __LINE__, #c))
#define UNREACHABLE() die("%s:%d: internal error: unreachable", __FILE__, __LINE__)
#define COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

#endif
