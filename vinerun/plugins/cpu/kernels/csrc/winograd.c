/* Winograd F(4x4, 3x3) convolution, f32, channels-last (see kernels/conv_winograd.py for when it is used).
 *
 * A 3x3 stride-1 convolution with one pixel of padding computes each 4x4 output tile from a 6x6 input tile in
 * 36 multiplications per (input, output) channel pair instead of 144:
 *   1. input transform:  V[x][t][c] = (B^T d B)[x]   for every 6x6 tile t of the padded input, channel c
 *   2. 36 matrix products: M[x] = V[x] @ U[x]        (U[x] = (G g G^T)[x], [c, k], transformed once at compile
 *                                                      time; oneDNN's batched matmul, made by the caller)
 *   3. output transform: y[tile t] = A^T M[.][t] A   + bias, activation, residual sum, activation
 * Both transforms work on 16 channels at a time (channels-last: contiguous) in GCC vector types, which each
 * target_clones variant lowers to its own registers; tiles are split over the calling thread's OpenMP team.
 */
#include <stddef.h>

#include "ckernels.h"

#define CB 64 /* channels per block of the output epilogue */

typedef struct {
    dnnl_api api;
    int64_t n, h, w, c, k;        /* source [n, h, w, c], destination [n, h, w, k] (channels-last, dense) */
    int64_t tiles_h, tiles_w;     /* ceil(h / 4), ceil(w / 4) */
    const float *bias;            /* [k] */
    activation pre, post;         /* before and after the residual sum */
    int64_t sum;                  /* whether the destination holds a residual to add */
    void *matmul;                 /* the batched product: [36, tiles, c] x [36, c, k] -> [36, tiles, k] */
    void *matmul_src, *matmul_dst;
    int64_t matmul_nargs;
    const exec_arg *matmul_args;
} winograd_conv;

static const float zeros[LANES]; /* what a tile position in the padding reads */

/* B^T x for 6 points (interpolation points 0, -1, 1, -2, 2 and infinity) */
INLINE void bt6(const v16 x[6], v16 y[6]) {
    y[0] = 4.0f * x[0] - 5.0f * x[2] + x[4];
    y[1] = -4.0f * (x[1] + x[2]) + x[3] + x[4];
    y[2] = 4.0f * (x[1] - x[2]) - x[3] + x[4];
    y[3] = 2.0f * (x[3] - x[1]) - x[2] + x[4];
    y[4] = 2.0f * (x[1] - x[3]) - x[2] + x[4];
    y[5] = 4.0f * x[1] - 5.0f * x[3] + x[5];
}

/* A^T x: 6 products to 4 outputs */
INLINE void at6(const v16 x[6], v16 y[4]) {
    v16 s12 = x[1] + x[2], d12 = x[1] - x[2], s34 = x[3] + x[4], d34 = x[3] - x[4];
    y[0] = x[0] + s12 + s34;
    y[1] = d12 + 2.0f * d34;
    y[2] = s12 + 4.0f * s34;
    y[3] = d12 + 8.0f * d34 + x[5];
}

/* 16 channels of one tile: the 36 input positions `in[p] + c` to
 * the tile's 36 rows of V, `vs` floats apart. Columns first, then rows: a few vectors live at a time. */
INLINE void tile_in(const float *const *in, int64_t c, float *out, int64_t vs) {
    v16 t[6][6], x[6], y[6];
    for (int j = 0; j < 6; j++) {
        for (int i = 0; i < 6; i++) x[i] = load(in[6 * i + j] + c);
        bt6(x, y);
        for (int i = 0; i < 6; i++) t[i][j] = y[i];
    }
    for (int i = 0; i < 6; i++) {
        bt6(t[i], y);
        for (int j = 0; j < 6; j++) put(out + (6 * i + j) * vs, y[j]);
    }
}

/* One tile's 36 input positions (pointers to `n` channels each) to its 36 rows of V (stride `vs` floats). */
__attribute__((target_clones("avx512f", "avx2", "default")))
static void transform_in(const float *const *in, float *out, int64_t vs, int64_t n) {
    int64_t c = 0;
    for (; c + LANES <= n; c += LANES) tile_in(in, c, out + c, vs);
    if (c < n) { /* the last channels, through zero-padded copies */
        float pad_in[36][LANES] __attribute__((aligned(64))), pad_out[36][LANES] __attribute__((aligned(64)));
        const float *rows[36];
        for (int i = 0; i < 36; i++) {
            for (int64_t l = 0; l < LANES; l++) pad_in[i][l] = c + l < n ? in[i][c + l] : 0.0f;
            rows[i] = pad_in[i];
        }
        tile_in(rows, 0, pad_out[0], LANES);
        for (int i = 0; i < 36; i++)
            for (int64_t l = 0; c + l < n; l++) out[i * vs + c + l] = pad_out[i][l];
    }
}

/* 16 channels of one tile: its 36 rows of M (`ms` floats apart) to the 4x4 outputs plus the bias, `os` floats
 * apart. */
INLINE void tile_out(const float *m, int64_t ms, v16 bias, float *out, int64_t os) {
    v16 t[6][4], x[6], y[4];
    for (int i = 0; i < 6; i++) {
        for (int j = 0; j < 6; j++) x[j] = load(m + (6 * i + j) * ms);
        at6(x, t[i]);
    }
    for (int j = 0; j < 4; j++) {
        for (int i = 0; i < 6; i++) x[i] = t[i][j];
        at6(x, y);
        for (int i = 0; i < 4; i++) put(out + (4 * i + j) * os, y[i] + bias);
    }
}

/* One tile's 36 rows of M (stride `ms` floats, `n` <= CB channels) to its 4x4 outputs plus the bias. */
__attribute__((target_clones("avx512f", "avx2", "default")))
static void transform_out(const float *m, int64_t ms, const float *bias, float out[16][CB], int64_t n) {
    int64_t k = 0;
    for (; k + LANES <= n; k += LANES) tile_out(m + k, ms, load(bias + k), out[0] + k, CB);
    if (k < n) { /* the last channels, through zero-padded copies */
        float pad_m[36][LANES] __attribute__((aligned(64))), pad_out[16][LANES] __attribute__((aligned(64)));
        float pad_bias[LANES] = {0};
        for (int i = 0; i < 36; i++)
            for (int64_t l = 0; l < LANES; l++) pad_m[i][l] = k + l < n ? m[i * ms + k + l] : 0.0f;
        for (int64_t l = 0; k + l < n; l++) pad_bias[l] = bias[k + l];
        tile_out(pad_m[0], LANES, load(pad_bias), pad_out[0], LANES);
        for (int i = 0; i < 16; i++)
            for (int64_t l = 0; k + l < n; l++) out[i][k + l] = pad_out[i][l];
    }
}

__attribute__((target_clones("avx512f", "avx2", "default")))
static void apply(float *v, int64_t n, const activation *a) {
    if (a->kind == ACT_RELU) {
        for (int64_t i = 0; i < n; i++) v[i] = v[i] > 0.0f ? v[i] : 0.0f;
    } else if (a->kind == ACT_CLIP) {
        float lo = a->lo, hi = a->hi;
        for (int64_t i = 0; i < n; i++) v[i] = v[i] < lo ? lo : (v[i] > hi ? hi : v[i]);
    }
}

/* out[i] = act(post, act(pre, v[i]) + (sum ? out[i] : 0)) */
__attribute__((target_clones("avx512f", "avx2", "default")))
static void store(float *out, float *v, int64_t n, const winograd_conv *p) {
    apply(v, n, &p->pre);
    if (p->sum)
        for (int64_t i = 0; i < n; i++) v[i] += out[i];
    apply(v, n, &p->post);
    for (int64_t i = 0; i < n; i++) out[i] = v[i];
}

static void input_transform(const winograd_conv *p, const float *src, float *v, int64_t tiles) {
    const int64_t h = p->h, w = p->w, c = p->c, per_image = p->tiles_h * p->tiles_w;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < tiles; t++) {
        int64_t img = t / per_image, row0 = (t % per_image) / p->tiles_w * 4 - 1, col0 = t % p->tiles_w * 4 - 1;
        const float *base = src + img * h * w * c;
        const float *in[36];
        int padded = 0;
        for (int i = 0; i < 6; i++) {
            for (int j = 0; j < 6; j++) {
                int64_t r = row0 + i, col = col0 + j;
                int outside = r < 0 || r >= h || col < 0 || col >= w;
                padded |= outside;
                in[6 * i + j] = outside ? NULL : base + (r * w + col) * c;
            }
        }
        if (!padded) {
            transform_in(in, v + t * c, tiles * c, c);
            continue;
        }
        /* a border tile: LANES channels at a time, the padding read from zeros */
        for (int64_t c0 = 0; c0 < c; c0 += LANES) {
            const float *block[36];
            for (int i = 0; i < 36; i++) block[i] = in[i] ? in[i] + c0 : zeros;
            transform_in(block, v + t * c + c0, tiles * c, c - c0 < LANES ? c - c0 : LANES);
        }
    }
}

static void output_transform(const winograd_conv *p, const float *m, float *dst, int64_t tiles) {
    const int64_t h = p->h, w = p->w, k = p->k, per_image = p->tiles_h * p->tiles_w;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < tiles; t++) {
        int64_t img = t / per_image, row0 = (t % per_image) / p->tiles_w * 4, col0 = t % p->tiles_w * 4;
        float out[16][CB] __attribute__((aligned(64)));
        for (int64_t k0 = 0; k0 < k; k0 += CB) {
            int64_t n = k - k0 < CB ? k - k0 : CB;
            transform_out(m + t * k + k0, tiles * k, p->bias + k0, out, n);
            for (int i = 0; i < 4 && row0 + i < h; i++)
                for (int j = 0; j < 4 && col0 + j < w; j++)
                    store(dst + ((img * h + row0 + i) * w + col0 + j) * k + k0, out[4 * i + j], n, p);
        }
    }
}

/* args: [0] the source, [1] the destination. V and M live in the calling thread's scratch buffer. */
int vr_winograd_execute(void *self, void *stream, int nargs, const exec_arg *args) {
    const winograd_conv *p = (const winograd_conv *)self;
    void *src, *dst;
    if (nargs < 2 || p->api.get_handle(args[0].memory, &src) || p->api.get_handle(args[1].memory, &dst)) return 1;
    int64_t tiles = p->n * p->tiles_h * p->tiles_w;
    float *v = (float *)thread_scratch((size_t)(36 * tiles * (p->c + p->k)) * sizeof(float));
    if (v == NULL) return 3;
    float *m = v + 36 * tiles * p->c;
    input_transform(p, (const float *)src, v, tiles);
    if (p->api.set_handle(p->matmul_src, v) || p->api.set_handle(p->matmul_dst, m) ||
        p->api.execute(p->matmul, stream, (int)p->matmul_nargs, p->matmul_args))
        return 2;
    output_transform(p, m, (float *)dst, tiles);
    return 0;
}
