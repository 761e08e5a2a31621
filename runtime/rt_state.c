/* rt_state.c: what the time loop of an emitted recurrence sets up before its
 * steps (cellrt.h, "recurrent states of emitted models"): the states kept in
 * the instance, the batch-1 packed weights, the team of threads.  Emitted
 * code once printed these as a block per state and per product; a call
 * with a table reads as what it does.  A target without an OS
 * (RT_BARE_METAL) has no heap: there the states are the arena's, and
 * nothing here allocates. */
#include "cellrt.h"

#include <stdlib.h>
#include <string.h>

int rt_states_prepare(const rt_state *s, int n, int started, int in_arena)
{
	for (int k = 0; k < n; k++) {
		if (*s[k].count_now == s[k].count)
			continue;
		if (started)
			return RT_ERR_SHAPE;    /* a stream cannot change its batch size */
		if (!in_arena) {
#if RT_BARE_METAL
			return RT_ERR_NOMEM;    /* no heap: the states live in the arena */
#else
			free(*s[k].data);
			*s[k].count_now = 0;
			/* one byte more, rounded up to whole lines: the last line is the
			 * state's own, never shared with what the allocator puts next */
			size_t bytes = (sizeof(float) * s[k].count + 1 + 63) & ~(size_t)63;
			*s[k].data = aligned_alloc(64, bytes);
			if (!*s[k].data)
				return RT_ERR_NOMEM;
#endif
		}
		*s[k].count_now = s[k].count;
	}
	if (started)
		return RT_OK;
	for (int k = 0; k < n; k++) {
		if (s[k].init)
			memcpy(*s[k].data, s[k].init, sizeof(float) * s[k].count);
		else
			memset(*s[k].data, 0, sizeof(float) * s[k].count);
	}
	return RT_OK;
}

/* 64-byte aligned bytes for n elements of size es, rounded up to whole lines. */
static void *alloc_lines(size_t es, size_t n)
{
	return aligned_alloc(64, (es * n + 63) / 64 * 64);
}

const float *rt_gemv_pack_once(float **P, int transB, int64_t N, int64_t K, const float *B, int64_t ldb)
{
	if (!*P) {
		float *p = alloc_lines(sizeof(float), (size_t)N * (size_t)K);
		if (!p)
			return NULL;
		rt_gemv_pack(transB, N, K, B, ldb, p);
		*P = p;
	}
	return *P;
}

const uint16_t *rt_gemv_pack_once_bf16(uint16_t **P, int transB, int64_t N, int64_t K, const float *B,
				       int64_t ldb)
{
	if (!*P) {
		uint16_t *p = alloc_lines(sizeof(uint16_t), rt_gemv_pack_bf16_size(N, K));
		if (!p)
			return NULL;
		rt_gemv_pack_bf16(transB, N, K, B, ldb, p);
		*P = p;
	}
	return *P;
}

const int8_t *rt_gemv_pack_once_i8(int8_t **P, int transB, int64_t N, int64_t K, const float *B, int64_t ldb)
{
	if (!*P) {
		int8_t *p = alloc_lines(sizeof(int8_t), rt_gemv_pack_i8_size(N, K));
		if (!p)
			return NULL;
		rt_gemv_pack_i8(transB, N, K, B, ldb, p);
		*P = p;
	}
	return *P;
}

int rt_team(int64_t B, int64_t T, int64_t step_weights, int *cols)
{
	int nt = rt_num_threads();
	int c = cols && B == 1 && T > 1 && nt > 1 && rt_split_columns(step_weights);
	if (cols)
		*cols = c;
	if (!c && nt > B)
		nt = (int)B;
	return nt;
}
