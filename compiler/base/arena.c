/* arena.c: the per-compilation bump allocator (see arena.h). */
#include "arena.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct arena_block {
	arena_block *next;      /* older block */
	size_t used, cap;       /* bytes of data[] in use / available */
	_Alignas(16) unsigned char data[];
};

enum { ARENA_BLOCK = 1 << 20 };

size_t arena_budget = ARENA_BUDGET_DEFAULT;
void (*arena_oom_hook)(arena *A);

void arena_init(arena *A) { A->head = NULL; A->total = 0; A->file = NULL; }

int arena_fits(const arena *A, size_t n)
{
	return n <= arena_budget && A->total <= arena_budget - n;
}

size_t arena_parse_size(const char *s)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		return 0;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	int shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (errno || *end || v > (SIZE_MAX >> shift) || (v << shift) < ((size_t)16 << 20))
		return 0;
	return (size_t)(v << shift);
}

_Noreturn void arena_oom(arena *A, size_t n, const char *what)
{
	if (n > arena_budget || (A && A->total > arena_budget - n))
		fprintf(stderr, "%s: error: out of memory: %s of %zu bytes would take the compilation past "
			"its memory budget of %zu MiB (--max-memory raises it)\n",
			A && A->file ? A->file : "cellc", what, n, arena_budget >> 20);
	else
		fprintf(stderr, "%s: error: out of memory: the system refused %s of %zu bytes\n",
			A && A->file ? A->file : "cellc", what, n);
	if (arena_oom_hook)
		arena_oom_hook(A);
	exit(2);
}

void arena_free(arena *A)
{
	arena_block *b = A->head;
	while (b) {
		arena_block *next = b->next;
		free(b);
		b = next;
	}
	A->head = NULL;
	A->total = 0;
}

void *arena_alloc(arena *A, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n == 0)
		n = 16;
	arena_block *b = A->head;
	if (!arena_fits(A, n))
		arena_oom(A, n, "an allocation");
	if (!b || b->cap - b->used < n) {
		size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
		b = malloc(sizeof *b + cap);
		if (!b)
			arena_oom(A, cap, "an arena block");
		b->cap = cap;
		b->used = 0;
		b->next = A->head;
		A->head = b;
	}
	void *p = b->data + b->used;
	b->used += n;
	A->total += n;
	memset(p, 0, n);
	return p;
}

void *arena_array(arena *A, size_t count, size_t size)
{
	if (size && count > SIZE_MAX / size / 2)
		arena_oom(A, SIZE_MAX, "an array");
	return arena_alloc(A, count * size);
}

char *arena_strndup(arena *A, const char *s, size_t n)
{
	char *p = arena_alloc(A, n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *arena_strdup(arena *A, const char *s) { return arena_strndup(A, s, strlen(s)); }

char *arena_printf(arena *A, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *p = arena_alloc(A, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void *arena_grow(arena *A, void *old, size_t oldcount, size_t newcount, size_t size)
{
	void *p = arena_array(A, newcount, size);
	if (old && oldcount)
		memcpy(p, old, (oldcount < newcount ? oldcount : newcount) * size);
	return p;
}
