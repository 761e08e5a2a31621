/* rt_kern_wasm.h: WebAssembly's SIMD128 for rt_kern.c, included by it (only
 * there) after its shared definitions, in a build for wasm32 with -msimd128
 * (the TARGET=wasm32 row of templates/targets.mk): the primitives of the
 * kernels that NEON and SIMD128 share (rt_kern_v128.h, which lists them);
 * every function is static.
 *
 * A module either uses SIMD128 or does not, and an engine without it refuses
 * the whole module, so there is no choice at run time: the kernels are
 * there when the compiler was told -msimd128 (__wasm_simd128__), and a
 * build without it runs the portable loops.  Every browser and Node since
 * 2021 runs SIMD128.  The engine compiles the module for the CPU it runs on,
 * most often x86-64 with 16 vector registers, so the blocks are sized for
 * 16: the GEMM micro-kernel a 6 x 8 block (12 accumulators, two vectors of
 * the panel, one broadcast), eight per panel of 64 columns; the packed GEMV
 * 32 columns of a block a pass; the bfloat16 and int8 GEMVs 2 groups (8
 * accumulators) a pass.  SIMD128 has no fused multiply-add (that is the
 * relaxed-SIMD proposal), so a product is a multiply and an add, rounded
 * twice, as the portable loops round it; nor a pairwise add, which two
 * shuffles and an add make.
 *   bfloat16 (RT_BF16_SHIFT): a shift and a mask widen each word's two
 *     weights, as AVX2 and NEON do; there is no bfloat16 dot product, so
 *     RT_BF16_PAIRS is never chosen.
 *   int8: i16x8.extmul multiplies 8 weights (two rows' four) by the four
 *     activations twice over into int16 (at most 127 * 127), and
 *     i32x4.extadd_pairwise adds their pairs into int32 lanes, as NEON's
 *     SMULL and SADALP: the same exact sums as the other kernels.
 * A GEMM of at most 4 rows (V128_FEW_ROWS: a streaming model's convolution
 * over the few positions of a chunk, Silero VAD's 4 x 258 x 256, 4 x 128 x
 * 387 and 2 x 64 x 384) is multiplied unpacked: the micro-kernel packs
 * op(B) at every call and computes 6 rows, and on these shapes packing and
 * the padding rows took half its time.
 */
#ifndef RT_KERN_WASM_H
#define RT_KERN_WASM_H

#define V4_INLINE static inline __attribute__((always_inline))

typedef v128_t v4f;
typedef v128_t v4u;
typedef v128_t v4i;
typedef v128_t v16b;

/* the blocking (rt_kern_v128.h): for 16 vector registers */
#define V128_MICRO_NV 2
#define V128_PACK_NV 8
#define V128_BF16_NG 2
#define V128_I8_NG 2
#define V128_FEW_ROWS 4

V4_INLINE v4f v4_zero(void) { return wasm_f32x4_splat(0.0f); }
V4_INLINE v4f v4_load(const float *p) { return wasm_v128_load(p); }
V4_INLINE void v4_store(float *p, v4f v) { wasm_v128_store(p, v); }
V4_INLINE v4f v4_dup(float x) { return wasm_f32x4_splat(x); }
V4_INLINE v4f v4_load_dup(const float *p) { return wasm_v128_load32_splat(p); }
V4_INLINE v4f v4_add(v4f a, v4f b) { return wasm_f32x4_add(a, b); }
V4_INLINE v4f v4_mul_n(v4f a, float s) { return wasm_f32x4_mul(a, wasm_f32x4_splat(s)); }
V4_INLINE v4f v4_fma(v4f acc, v4f a, v4f b) { return wasm_f32x4_add(acc, wasm_f32x4_mul(a, b)); }
V4_INLINE v4f v4_fma_n(v4f acc, v4f a, float s) { return v4_fma(acc, a, wasm_f32x4_splat(s)); }
V4_INLINE v4f v4_min(v4f a, v4f b) { return wasm_f32x4_min(a, b); }
V4_INLINE v4f v4_max(v4f a, v4f b) { return wasm_f32x4_max(a, b); }
V4_INLINE v4f v4_round(v4f v) { return wasm_f32x4_nearest(v); }

/* [a0 + a1, a2 + a3, b0 + b1, b2 + b3]: the even lanes plus the odd ones */
V4_INLINE v4f v4_pairs(v4f a, v4f b)
{
	return wasm_f32x4_add(wasm_i32x4_shuffle(a, b, 0, 2, 4, 6), wasm_i32x4_shuffle(a, b, 1, 3, 5, 7));
}

V4_INLINE float v4_sum(v4f v)
{
	return (wasm_f32x4_extract_lane(v, 0) + wasm_f32x4_extract_lane(v, 1)) +
	       (wasm_f32x4_extract_lane(v, 2) + wasm_f32x4_extract_lane(v, 3));
}

V4_INLINE float v4_minv(v4f v)
{
	v4f m = wasm_f32x4_min(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
	return wasm_f32x4_extract_lane(wasm_f32x4_min(m, wasm_i32x4_shuffle(m, m, 1, 0, 3, 2)), 0);
}

V4_INLINE float v4_maxv(v4f v)
{
	v4f m = wasm_f32x4_max(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
	return wasm_f32x4_extract_lane(wasm_f32x4_max(m, wasm_i32x4_shuffle(m, m, 1, 0, 3, 2)), 0);
}

/* to int32, then narrowed with unsigned saturation twice (the values are in [0, 127]) */
V4_INLINE void v4_store_u7(uint8_t *q, v4f w0, v4f w1, v4f w2, v4f w3)
{
	v128_t h0 = wasm_u16x8_narrow_i32x4(wasm_i32x4_trunc_sat_f32x4(w0), wasm_i32x4_trunc_sat_f32x4(w1));
	v128_t h1 = wasm_u16x8_narrow_i32x4(wasm_i32x4_trunc_sat_f32x4(w2), wasm_i32x4_trunc_sat_f32x4(w3));
	wasm_v128_store(q, wasm_u8x16_narrow_i16x8(h0, h1));
}

/* two rounds of shuffles: interleaved 32-bit lanes, then 64-bit halves */
V4_INLINE void v4_transpose(v4f *r)
{
	v4f t0 = wasm_i32x4_shuffle(r[0], r[1], 0, 4, 1, 5), t1 = wasm_i32x4_shuffle(r[0], r[1], 2, 6, 3, 7);
	v4f t2 = wasm_i32x4_shuffle(r[2], r[3], 0, 4, 1, 5), t3 = wasm_i32x4_shuffle(r[2], r[3], 2, 6, 3, 7);
	r[0] = wasm_i64x2_shuffle(t0, t2, 0, 2);
	r[1] = wasm_i64x2_shuffle(t0, t2, 1, 3);
	r[2] = wasm_i64x2_shuffle(t1, t3, 0, 2);
	r[3] = wasm_i64x2_shuffle(t1, t3, 1, 3);
}

V4_INLINE v4u u4_load16(const uint16_t *p) { return wasm_v128_load(p); }
V4_INLINE v4f v4_bf16_lo(v4u w) { return wasm_i32x4_shl(w, 16); }
V4_INLINE v4f v4_bf16_hi(v4u w) { return wasm_v128_and(w, wasm_i32x4_splat((int32_t)0xffff0000u)); }

V4_INLINE v16b b16_load(const int8_t *p) { return wasm_v128_load(p); }
V4_INLINE v16b b16_dup4(const uint8_t *q) { return wasm_v128_load32_splat(q); }
V4_INLINE v4i i4_zero(void) { return wasm_i32x4_splat(0); }
V4_INLINE void i4_store(int32_t *p, v4i v) { wasm_v128_store(p, v); }
V4_INLINE v4i i4_madd_lo(v4i acc, v16b w, v16b x)
{
	return wasm_i32x4_add(acc, wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_extmul_low_i8x16(w, x)));
}
V4_INLINE v4i i4_madd_hi(v4i acc, v16b w, v16b x)
{
	return wasm_i32x4_add(acc, wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_extmul_high_i8x16(w, x)));
}
V4_INLINE v4i i4_pairs(v4i a, v4i b)
{
	return wasm_i32x4_add(wasm_i32x4_shuffle(a, b, 0, 2, 4, 6), wasm_i32x4_shuffle(a, b, 1, 3, 5, 7));
}

#endif
