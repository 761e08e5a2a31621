/* arena.h: one bump allocator per compilation.
 *
 * Every IR object (graphs, nodes, values, names, constant data) is allocated
 * from the compilation's arena and freed at once with arena_free().  Nothing
 * allocated here is ever freed individually, so passes may drop objects freely.
 * Memory budget (--max-memory): a compilation's arena hands out at most
 * arena_budget bytes.  Whoever allocates on behalf of the model (parameters,
 * constants, external data, unrolled loops) asks arena_fits first and
 * reports a located error; an allocation past the budget anyway, or one the
 * system refuses, ends the compilation with "FILE: error: out of memory ..."
 * and exit status 2 (arena_oom), never an abort.
 */
#ifndef CELLC_ARENA_H
#define CELLC_ARENA_H

#include <stddef.h>

typedef struct arena_block arena_block;

typedef struct arena {
	arena_block *head;      /* newest block first */
	size_t total;           /* bytes handed out, for `cellc info` */
	const char *file;       /* the model, for the out-of-memory message (NULL: none) */
} arena;

/* Bytes one compilation may allocate (default ARENA_BUDGET_DEFAULT). */
#define ARENA_BUDGET_DEFAULT ((size_t)2 << 30)
extern size_t arena_budget;
/* Called instead of exit(2) when set, with the arena that ran out (NULL:
 * a plain malloc failed); fuzz targets free it and jump back. */
extern void (*arena_oom_hook)(arena *A);

/* Whether n more bytes stay within the budget. */
int arena_fits(const arena *A, size_t n);
/* Parses a --max-memory value: bytes with an optional K, M or G suffix
 * (powers of 1024); 0 if malformed or below 16M. */
size_t arena_parse_size(const char *s);
/* Out of memory: prints the error (naming A->file) and exits with status 2. */
_Noreturn void arena_oom(arena *A, size_t n, const char *what);

void arena_init(arena *A);
void arena_free(arena *A);
void *arena_alloc(arena *A, size_t n);                 /* zeroed, 16-byte aligned */
void *arena_array(arena *A, size_t count, size_t size); /* overflow-checked */
char *arena_strdup(arena *A, const char *s);
char *arena_strndup(arena *A, const char *s, size_t n);
char *arena_printf(arena *A, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Grow an array allocated from the arena: copies into a new allocation. */
void *arena_grow(arena *A, void *old, size_t oldcount, size_t newcount, size_t size);

#endif
