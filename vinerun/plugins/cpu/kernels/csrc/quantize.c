/* QuantizeLinear of f32 data with one scale and zero point, q = saturate(round_half_even(x / scale) + zero_point),
 * to u8 or s8, from [n, c, hw] (NCHW) to channels-last [n, hw, c] (see kernels/quantize.py).
 *
 * A model's image input takes this path into its first int8 convolution: oneDNN's reorder does the quantization and
 * the transposition to 3-channel channels-last in its generic jit:uni kernel, ~200 us for 1x3x224x224 on one
 * thread here; this one reads the planes as vectors and writes 16 pixels' 3 channels as 3 vectors (~70-100 us).
 */
#include <stddef.h>
#include <stdint.h>

#include "ckernels.h"

typedef struct {
    dnnl_api api;
    int64_t n, c, hw;        /* source [n, c, hw], destination [n, hw, c] */
    float scale, zero_point; /* the destination's */
    float lo, hi;            /* its type's range */
} quantize;

typedef uint8_t v16b __attribute__((vector_size(16)));

/* the grid's constants as vectors, made once per call (splat of a struct member in the loop was rebuilt lane by
 * lane each time: 3x slower) */
typedef struct {
    v16 scale, zero_point, lo, hi;
} grid;

/* 16 values on the grid, saturated: integers as floats. x / scale as QuantizeLinear divides (a reciprocal's
 * product rounds differently at ties); rounding half to even by adding and subtracting 1.5 * 2^23, exact for
 * |v| < 2^22 (clamped there first: anything beyond saturates anyway). */
INLINE v16 on_grid(v16 x, const grid *g) {
    const v16 big = splat(4194304.0f), magic = splat(12582912.0f);
    v16 v = x / g->scale;
    v = vmax(v, -big);
    v = blend(v > big, big, v);
    v = (v + magic) - magic;
    v += g->zero_point;
    v = vmax(v, g->lo);
    return blend(v > g->hi, g->hi, v);
}

/* 16 pixels of 3 channels, one vector of bytes per channel, stored interleaved (48 bytes: r g b r g b ...) with
 * byte shuffles (pshufb) instead of 48 single-byte stores */
INLINE void interleave3(const v16b *ch, uint8_t *out) {
    /* out[3 j + k] = ch[k][j]: first the slots of channels 0 and 1 (indexes into ch[0] ++ ch[1]), then channel
     * 2's (16 + j into t ++ ch[2]; the other slots keep t's byte) */
    static const v16b ab[3] = {{0, 16, 0, 1, 17, 0, 2, 18, 0, 3, 19, 0, 4, 20, 0, 5},
                               {21, 0, 6, 22, 0, 7, 23, 0, 8, 24, 0, 9, 25, 0, 10, 26},
                               {0, 11, 27, 0, 12, 28, 0, 13, 29, 0, 14, 30, 0, 15, 31, 0}};
    static const v16b c[3] = {{0, 1, 16, 3, 4, 17, 6, 7, 18, 9, 10, 19, 12, 13, 20, 15},
                              {0, 21, 2, 3, 22, 5, 6, 23, 8, 9, 24, 11, 12, 25, 14, 15},
                              {26, 1, 2, 27, 4, 5, 28, 7, 8, 29, 10, 11, 30, 13, 14, 31}};
    for (int i = 0; i < 3; i++) {
        v16b t = __builtin_shuffle(ch[0], ch[1], ab[i]);
        v16b o = __builtin_shuffle(t, ch[2], c[i]);
        __builtin_memcpy(out + 16 * i, &o, 16);
    }
}

__attribute__((target_clones("avx512f", "avx2", "default")))
static void plane_block(const float *src, int64_t hw, int64_t c, int64_t first, int64_t count, const quantize *p,
                        uint8_t *dst) {
    const grid g = {splat(p->scale), splat(p->zero_point), splat(p->lo), splat(p->hi)};
    v16b rgb[3];
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
            v16i q = __builtin_convertvector(on_grid(x, &g), v16i);
            if (c == 3 && m == LANES) {
                rgb[ch] = __builtin_convertvector(q, v16b); /* the bytes of s8 values too */
                if (ch == 2) interleave3(rgb, dst + px * 3);
            } else {
                uint8_t *out = dst + px * c + ch;
                for (int64_t j = 0; j < m; j++) out[j * c] = (uint8_t)q[j];
            }
        }
    }
}

#define BLOCK 1024 /* pixels a thread takes at a time */

/* args: [0] src, [1] dst */
int vr_quantize_execute(void *self, void *stream, int nargs, const exec_arg *args) {
    (void)stream;
    const quantize *p = (const quantize *)self;
    void *src, *dst;
    if (nargs < 2 || p->api.get_handle(args[0].memory, &src) || p->api.get_handle(args[1].memory, &dst)) return 1;
    const int64_t blocks = (p->hw + BLOCK - 1) / BLOCK, image = p->c * p->hw;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < p->n * blocks; b++) {
        int64_t i = b / blocks, first = b % blocks * BLOCK;
        int64_t count = p->hw - first < BLOCK ? p->hw - first : BLOCK;
        plane_block((const float *)src + i * image, p->hw, p->c, first, count, p, (uint8_t *)dst + i * image);
    }
    return 0;
}
