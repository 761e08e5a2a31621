/* cmd_home.c: where the running cellc finds libcellrt and ONNX Runtime.
 *
 * cellc carries its templates inside itself (templates/embed.sh); what it
 * needs from outside at run time is the runtime that emitted code links
 * (written into the emitted Makefile and CMakeLists.txt, used by `cellc
 * verify` to build what it compiled) and, for `verify --oracle
 * onnxruntime`, npm's onnxruntime-node.  Both are found from where the
 * executable itself lies (/proc/self/exe), never from a path fixed when
 * cellc was built, so a build tree or an installed prefix can move:
 *
 *   $CELLC_SHARE=DIR        DIR is a cellc build tree (an override)
 *   TREE/build/cellc        a build tree (TREE/runtime/cellrt.h exists):
 *                           the Makefile uses CELLRT=TREE, CMake finds
 *                           TREE/build/pkgconfig/cellrt.pc
 *   PREFIX/bin/cellc        installed (PREFIX/lib/pkgconfig/cellrt.pc exists):
 *                           pkg-config finds the runtime there
 *   anywhere else           pkg-config with the user's PKG_CONFIG_PATH
 *
 * onnxruntime-node: $CELLC_ORT_DIR, else TREE/build/ort in a build tree,
 * else $XDG_CACHE_HOME/cellc/ort (~/.cache/cellc/ort), where cellc verify
 * installs it with npm when it is missing.
 */
#define _XOPEN_SOURCE 700

#include "cmd.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int exists(arena *A, const char *dir, const char *rel)
{
	return access(arena_printf(A, "%s/%s", dir, rel), F_OK) == 0;
}

/* The directory two levels above the executable (TREE of TREE/build/cellc,
 * PREFIX of PREFIX/bin/cellc), or NULL. */
static const char *exe_parent(arena *A)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	for (int up = 0; up < 2; up++) {
		char *s = strrchr(buf, '/');
		if (!s)
			return NULL;
		*s = 0;
	}
	return arena_strdup(A, buf[0] ? buf : "/");
}

const cmd_home *cmd_home_get(arena *A)
{
	cmd_home *h = arena_alloc(A, sizeof *h);
	memset(h, 0, sizeof *h);
	h->pcdir = "";
	const char *e = getenv("CELLC_SHARE");
	const char *up = e && *e ? e : exe_parent(A);
	if (up && exists(A, up, "runtime/cellrt.h")) {
		h->tree = up;
		if (exists(A, up, "build/pkgconfig/cellrt.pc"))
			h->pcdir = arena_printf(A, "%s/build/pkgconfig", up);
	} else if (up && exists(A, up, "lib/pkgconfig/cellrt.pc")) {
		h->prefix = up;
		h->pcdir = arena_printf(A, "%s/lib/pkgconfig", up);
	}
	return h;
}

const char *cmd_ort_dir(arena *A)
{
	const char *e = getenv("CELLC_ORT_DIR");
	if (e && *e)
		return e;
	const cmd_home *h = cmd_home_get(A);
	if (h->tree)
		return arena_printf(A, "%s/build/ort", h->tree);
	const char *cache = getenv("XDG_CACHE_HOME");
	if (cache && cache[0] == '/')
		return arena_printf(A, "%s/cellc/ort", cache);
	const char *home = getenv("HOME");
	if (home && *home)
		return arena_printf(A, "%s/.cache/cellc/ort", home);
	return NULL;
}
