/* arena.h: one bump allocator per compilation.
 *
 * Every IR object (graphs, nodes, values, names, constant data) is allocated
 * from the compilation's arena and freed at once with arena_free().  Nothing
 * allocated here is ever freed individually, so passes may drop objects freely.
 * Allocation failure is fatal (our bug or an absurd model), not a user error:
 * the loader checks sizes against the file before asking for memory.
 */
#ifndef CELLC_ARENA_H
#define CELLC_ARENA_H

#include <stddef.h>

typedef struct arena_block arena_block;

typedef struct arena {
	arena_block *head;      /* newest block first */
	size_t total;           /* bytes handed out, for `cellc info` */
} arena;

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
