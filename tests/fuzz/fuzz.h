/* fuzz.h: what every libFuzzer target of tests/fuzz/ shares.
 *
 * The readers under test take file names, so each input is written to a file
 * of the fuzzing process's own scratch directory (under $TMPDIR) and the
 * command or reader is called on it, in process.  The compiler's memory
 * budget is lowered to FUZZ_BUDGET so that a model asking for more is
 * refused (the located error and exit 2 of the command line) rather than
 * exhausting the fuzzer; that refusal returns here through arena_oom_hook,
 * which frees the arena that ran out and jumps back.  Everything else --
 * a crash, an ASSERT or die (abort), a sanitizer report, a leak, a hang --
 * is a finding.  CELLC_VERIFY is set (unless the environment says otherwise), so
 * the IR is checked after every pass and an inconsistency is a finding too.
 */
#ifndef CELLC_FUZZ_H
#define CELLC_FUZZ_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arena.h"

#define FUZZ_BUDGET ((size_t)256 << 20)

static jmp_buf fuzz_jb;
static char fuzz_dir[256];

static void fuzz_oom(arena *A)
{
	if (A)
		arena_free(A);
	longjmp(fuzz_jb, 1);
}

/* The scratch directory, made once (run_fuzz.py silences the targets'
 * stderr with -close_fd_mask; libFuzzer keeps its own). */
static inline const char *fuzz_scratch(void)
{
	if (!fuzz_dir[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(fuzz_dir, sizeof fuzz_dir, "%s/cellc_fuzz_%ld", t && *t ? t : "/tmp", (long)getpid());
		mkdir(fuzz_dir, 0700);
		arena_budget = FUZZ_BUDGET;
		setenv("CELLC_VERIFY", "1", 0);  /* ir_verify after every pass: its aborts are findings */
		arena_oom_hook = fuzz_oom;
	}
	return fuzz_dir;
}

/* Writes data[0, n) to the scratch file `name`; returns its path (static). */
static inline const char *fuzz_file(const char *name, const uint8_t *data, size_t n)
{
	static char path[4][400];
	static int k;
	char *p = path[k++ & 3];
	snprintf(p, sizeof path[0], "%s/%s", fuzz_scratch(), name);
	FILE *f = fopen(p, "wb");
	if (!f)
		abort();        /* the scratch directory must work */
	if (n && fwrite(data, 1, n, f) != n)
		abort();
	fclose(f);
	return p;
}

/* A path in the scratch directory (for outputs). */
static inline const char *fuzz_path(const char *name)
{
	static char p[400];
	snprintf(p, sizeof p, "%s/%s", fuzz_scratch(), name);
	return p;
}

#endif
