/* NCHW f32 planes into a channels-last array of a narrower type (see kernels/planes.py): the step that takes a
 * model's image input to its first convolution, either
 *   - QuantizeLinear with one scale and zero point, q = saturate(round_half_even(x / scale) + zero_point), to u8
 *     or s8 (an int8 model); or a FakeQuantize as openvino computes it, saturate(round_half_even(x * isc + ish) +
 *     zero_point), the product and the sum each rounded to f32 (no FMA), or
 *   - a Convert to bf16, rounding to nearest even (a bf16 model).
 * oneDNN's reorder does either with the transposition to 3-channel channels-last in its generic jit:uni kernel
 * (1x3x224x224 on one thread here: ~200 us quantizing, ~190 us to bf16); this one reads the planes as vectors and
 * writes 16 pixels' 3 channels as whole vectors, interleaved with byte shuffles.
 */
#include <stddef.h>
#include <stdint.h>

/* a * b + c rounds twice, as openvino's FakeQuantize does: no contraction into an FMA */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "ckernels.h"

typedef struct {
    dnnl_api api;
    int64_t n, c, hw;        /* source [n, c, hw], destination [n, hw, c] */
    int64_t bf16;            /* 1: to bf16; 0: quantize to 8 bits */
    float scale, zero_point; /* the quantization's */
    float lo, hi;            /* its type's range */
    int64_t fake_quantize;   /* 1: x * isc + ish (scale and shift below) in place of x / scale */
    float isc, ish;
} planes;

typedef uint8_t v16b __attribute__((vector_size(16)));
typedef uint16_t v8w __attribute__((vector_size(16)));
typedef uint16_t v16w __attribute__((vector_size(32)));
typedef uint32_t v16ui __attribute__((vector_size(64)));

/* the quantization's constants as vectors, made once per call (a splat of a struct member inside the loop was
 * rebuilt lane by lane each time: 3x slower) */
typedef struct {
    v16 scale, zero_point, lo, hi, isc, ish;
    int fake_quantize;
} grid;

/* 16 values on the grid, saturated: integers as floats. x / scale as QuantizeLinear divides (a reciprocal's
 * product rounds differently at ties); rounding half to even by adding and subtracting 1.5 * 2^23, exact for
 * |v| < 2^22 (clamped there first: anything beyond saturates anyway). */
INLINE v16 on_grid(v16 x, const grid *g) {
    const v16 big = splat(4194304.0f), magic = splat(12582912.0f);
    v16 v;
    if (g->fake_quantize) {
        v = x * g->isc + g->ish; /* two roundings: the file is compiled without FMA contraction */
    } else v = x / g->scale;
    v = vmax(v, -big);
    v = blend(v > big, big, v);
    v = (v + magic) - magic;
    v += g->zero_point;
    v = vmax(v, g->lo);
    return blend(v > g->hi, g->hi, v);
}

/* 16 floats as bf16 bits, rounded to nearest even; a NaN stays a (quiet) NaN of its sign */
INLINE v16w to_bf16(v16 x) {
    v16ui bits = (v16ui)x;
    v16ui rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    v16ui nan = ((bits >> 16) & 0x8000u) | 0x7FC0u;
    rounded = (v16ui)blend(x != x, (v16)nan, (v16)rounded);
    return __builtin_convertvector(rounded, v16w);
}

/* 16 pixels of 3 channels, one vector of bytes per channel, stored interleaved (48 bytes: r g b r g b ...):
 * out[3 j + k] = ch[k][j]. First the slots of channels 0 and 1 (indexes into ch[0] ++ ch[1]), then channel 2's
 * (16 + j into t ++ ch[2]; the other slots keep t's byte). */
INLINE void interleave3_bytes(const v16b *ch, uint8_t *out) {
    static const v16b ab[3] = {{0, 16, 0, 1, 17, 0, 2, 18, 0, 3, 19, 0, 4, 20, 0, 5},
                               {21, 0, 6, 22, 0, 7, 23, 0, 8, 24, 0, 9, 25, 0, 10, 26},
                               {0, 11, 27, 0, 12, 28, 0, 13, 29, 0, 14, 30, 0, 15, 31, 0}};
    static const v16b c[3] = {{0, 1, 16, 3, 4, 17, 6, 7, 18, 9, 10, 19, 12, 13, 20, 15},
                              {0, 21, 2, 3, 22, 5, 6, 23, 8, 9, 24, 11, 12, 25, 14, 15},
                              {26, 1, 2, 27, 4, 5, 28, 7, 8, 29, 10, 11, 30, 13, 14, 31}};
    for (int i = 0; i < 3; i++) {
        v16b o = __builtin_shuffle(__builtin_shuffle(ch[0], ch[1], ab[i]), ch[2], c[i]);
        __builtin_memcpy(out + 16 * i, &o, 16);
    }
}

/* the same for 8 pixels of 16-bit values (24 values) */
INLINE void interleave3_words(const v8w *ch, uint16_t *out) {
    static const v8w ab[3] = {{0, 8, 0, 1, 9, 0, 2, 10}, {0, 3, 11, 0, 4, 12, 0, 5}, {13, 0, 6, 14, 0, 7, 15, 0}};
    static const v8w c[3] = {{0, 1, 8, 3, 4, 9, 6, 7}, {10, 1, 2, 11, 4, 5, 12, 7}, {0, 13, 2, 3, 14, 5, 6, 15}};
    for (int i = 0; i < 3; i++) {
        v8w o = __builtin_shuffle(__builtin_shuffle(ch[0], ch[1], ab[i]), ch[2], c[i]);
        __builtin_memcpy(out + 8 * i, &o, 16);
    }
}

/* 16 (or the last m < 16) pixels of one channel, converted */
INLINE void narrow(v16 x, const grid *g, int bf16, v16b *bytes, v16w *words) {
    if (bf16) *words = to_bf16(x);
    else *bytes = __builtin_convertvector(__builtin_convertvector(on_grid(x, g), v16i), v16b); /* s8: its bytes */
}

__attribute__((target_clones("avx512f", "avx2", "default")))
static void block(const float *src, int64_t hw, int64_t c, int64_t first, int64_t count, const planes *p,
                  void *dst) {
    const grid g = {splat(p->scale), splat(p->zero_point), splat(p->lo), splat(p->hi), splat(p->isc), splat(p->ish),
                    (int)p->fake_quantize};
    const int bf16 = (int)p->bf16;
    uint8_t *out8 = (uint8_t *)dst;
    uint16_t *out16 = (uint16_t *)dst;
    v16b bytes[3];
    union {
        v16w whole[3];
        v8w halves[3][2];
    } words;
    /* pixels [first, first + count) of one image: every channel's plane, 16 pixels at a time */
    for (int64_t px = first; px < first + count; px += LANES) {
        int64_t m = first + count - px < LANES ? first + count - px : LANES;
        for (int64_t ch = 0; ch < c; ch++) {
            const float *row = src + ch * hw + px;
            v16 x;
            if (m == LANES) x = load(row);
            else {
                x = splat(0.0f);
                for (int64_t j = 0; j < m; j++) x[j] = row[j];
            }
            int k = c == 3 && m == LANES ? (int)ch : 0; /* 3 channels of whole vectors: kept, then interleaved */
            narrow(x, &g, bf16, &bytes[k], &words.whole[k]);
            if (c == 3 && m == LANES) continue;
            for (int64_t j = 0; j < m; j++) {
                if (bf16) out16[(px + j) * c + ch] = words.whole[0][j];
                else out8[(px + j) * c + ch] = bytes[0][j];
            }
        }
        if (c == 3 && m == LANES) {
            if (!bf16) interleave3_bytes(bytes, out8 + px * 3);
            else {
                v8w low[3] = {words.halves[0][0], words.halves[1][0], words.halves[2][0]};
                v8w high[3] = {words.halves[0][1], words.halves[1][1], words.halves[2][1]};
                interleave3_words(low, out16 + px * 3);
                interleave3_words(high, out16 + (px + 8) * 3);
            }
        }
    }
}

#define BLOCK 1024 /* pixels a thread takes at a time */

/* args: [0] src, [1] dst */
int vr_planes_execute(void *self, void *stream, int nargs, const exec_arg *args) {
    (void)stream;
    const planes *p = (const planes *)self;
    void *src, *dst;
    if (nargs < 2 || p->api.get_handle(args[0].memory, &src) || p->api.get_handle(args[1].memory, &dst)) return 1;
    const int64_t blocks = (p->hw + BLOCK - 1) / BLOCK, image = p->c * p->hw, size = p->bf16 ? 2 : 1;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < p->n * blocks; b++) {
        int64_t i = b / blocks, first = b % blocks * BLOCK;
        int64_t count = p->hw - first < BLOCK ? p->hw - first : BLOCK;
        block((const float *)src + i * image, p->hw, p->c, first, count, p, (char *)dst + i * image * size);
    }
    return 0;
}
