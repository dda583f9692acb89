/* Fused attention, f32: out = softmax(q k^T * scale + mask) v, per batch and head (see kernels/attention_c.py).
 *
 * One work unit is one (batch, head): it packs that head's k transposed ([d][keys], keys padded to a whole
 * vector) and v ([keys][dv padded]) into its thread's scratch once, then for each block of query rows computes
 * the scores into a [rows][keys] buffer (register tiles of 4 x 64, 8 x 32 or 8 x 16), takes the softmax of
 * each row in place (its own exp: no libm vector calls), multiplies by v the same way and scales each row by
 * 1 / its sum as it stores it. Scores never leave L1/L2; no Python between heads. Units are split over the
 * calling thread's OpenMP team.
 *
 * Strides are in elements, for q/k/v/out as [batch, head, row, column] views (the column stride is 1), and for
 * the mask as [batch, head, row, key] (0 where it broadcasts; the key stride is 1).
 */
#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ckernels.h"

#define BLOCK 32    /* query rows whose scores are in the work buffer at a time */

typedef struct {
    dnnl_api api;
    int64_t batch, heads, sq, sk, d, dv;
    int64_t q[3], k[3], v[3], out[3], mask[3]; /* strides of the batch, head and row dimensions */
    int64_t has_mask;
    int64_t bf16, mask_bf16; /* q, k, v and out in bf16 (else f32); the mask in bf16 (else f32) */
    int64_t zero_nan_rows;   /* a row whose softmax is NaN (a mask removing every key) gives zeros, not NaN */
    int64_t amx;             /* bf16 products on AMX tiles (the caller saw vr_amx_ready()) */
    float scale;
} attention;

/* out[r][0..16 nv) = scale * sum_i a[r][i] b[i][0..16 nv) for r < `rows` (R <= 8 row pointers in `a`, spare ones
 * repeating a real row; b's rows `pitch` floats apart): the scores (a = q, b = k^T) and the weighted values
 * (a = the weights, b = v). R x nv accumulators stay in registers; both are constants where it is inlined. */
INLINE void tile(const float *const *a, const float *b, int64_t pitch, int64_t len, int R, int nv, int rows,
                 float scale, float *out, int64_t out_pitch) {
    v16 acc[8][4];
    for (int r = 0; r < R; r++) /* constant bounds: once inlined, every accumulator is a register */
        for (int c = 0; c < nv; c++) acc[r][c] = (v16){0};
    for (int64_t i = 0; i < len; i++) {
        const float *row = b + i * pitch;
        v16 w[4];
        for (int c = 0; c < nv; c++) w[c] = load(row + 16 * c);
        for (int r = 0; r < R; r++) {
            float x = a[r][i]; /* broadcast by the scalar-vector product */
            for (int c = 0; c < nv; c++) acc[r][c] += x * w[c];
        }
    }
    for (int r = 0; r < R; r++)
        if (r < rows)
            for (int c = 0; c < nv; c++) put(out + r * out_pitch + 16 * c, acc[r][c] * scale);
}

/* `rows` rows of a (`a_pitch` floats apart) times b ([len][pitch], `cols` <= pitch columns, pitch a multiple of
 * LANES) into out ([rows][out_pitch]), scaled: 4 x 64 tiles, then 8 x 32 and 8 x 16 ones for what is left. */
INLINE void product(const float *a, int64_t a_pitch, int64_t rows, const float *b, int64_t pitch, int64_t len,
                    int64_t cols, float scale, float *out, int64_t out_pitch) {
    int64_t c0 = 0;
    for (; c0 + 64 <= cols; c0 += 64) {
        for (int64_t r = 0; r < rows; r += 4) {
            int n = rows - r < 4 ? (int)(rows - r) : 4;
            const float *ra[8];
            for (int i = 0; i < 4; i++) ra[i] = a + (r + (i < n ? i : n - 1)) * a_pitch;
            tile(ra, b + c0, pitch, len, 4, 4, n, scale, out + r * out_pitch + c0, out_pitch);
        }
    }
    for (int nv = 2; nv >= 1; nv--) {
        if (c0 + 16 * nv > cols) continue;
        for (int64_t r = 0; r < rows; r += 8) {
            int n = rows - r < 8 ? (int)(rows - r) : 8;
            const float *ra[8];
            for (int i = 0; i < 8; i++) ra[i] = a + (r + (i < n ? i : n - 1)) * a_pitch;
            if (nv == 2)
                tile(ra, b + c0, pitch, len, 8, 2, n, scale, out + r * out_pitch + c0, out_pitch);
            else
                tile(ra, b + c0, pitch, len, 8, 1, n, scale, out + r * out_pitch + c0, out_pitch);
        }
        c0 += 16 * nv;
    }
}

/* softmax of `scale` times one row of `n` scores (scale > 0) in place, unnormalized (keys from n to `padded` get
 * weight 0); returns 1 / the sum of the weights, NaN for a row with no finite maximum (as the reference:
 * exp(-inf - -inf)). With
 * `zero_nan`, a row whose weights would be NaN (no finite maximum, a NaN score) gets weights 0 and 1 / sum 0: the
 * zeros an exporter's ``where(isnan(p), 0, p)`` after the softmax makes of it */
INLINE float softmax_row(float *s, int64_t n, int64_t padded, int64_t zero_nan, float scale) {
    v16 m = splat(-INFINITY);
    int64_t j = 0;
    for (; j + LANES <= n; j += LANES) m = vmax(m, load(s + j));
    float mx = hmax(m);
    for (; j < n; j++) mx = s[j] > mx ? s[j] : mx;
    if (!(mx > -INFINITY) || mx == INFINITY) {
        if (!zero_nan) return NAN;
        memset(s, 0, (size_t)padded * sizeof(float));
        return 0.0f;
    }
    v16 sum = (v16){0}, top = splat(mx), k = splat(scale);
    for (j = 0; j + LANES <= n; j += LANES) {
        v16 e = exp_neg((load(s + j) - top) * k);
        put(s + j, e);
        sum += e;
    }
    if (j < padded) { /* the last vector: keys past n are padding, of no weight */
        v16 e = exp_neg((load(s + j) - top) * k);
        for (int l = 0; l < LANES; l++) e[l] = j + l < n ? e[l] : 0.0f;
        put(s + j, e);
        sum += e;
    }
    float total = hsum(sum);
    if (zero_nan && total != total) { /* a NaN score */
        memset(s, 0, (size_t)padded * sizeof(float));
        return 0.0f;
    }
    return 1.0f / total;
}

typedef struct {
    const void *q, *k, *v, *mask;
    void *out;
} tensors;

#define PAD(n) (((n) + LANES - 1) / LANES * LANES)

INLINE float bf16_to_f32(uint16_t x) {
    union { uint32_t u; float f; } v = {(uint32_t)x << 16};
    return v.f;
}

/* round to nearest even; a NaN stays a (quiet) NaN */
INLINE uint16_t f32_to_bf16(float x) {
    union { float f; uint32_t u; } v = {x};
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40);
    return (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);
}

/* the block's scores times `scale` (+ the mask's rows), then each row's softmax in place; inv[r] = 1 / the row's
 * sum. Without a mask and with scale > 0 the scaling is the softmax's (one pass less). */
INLINE void masked_softmax(const attention *p, const tensors *t, int64_t b, int64_t h, int64_t r0, int64_t rows,
                           float *scores, int64_t kp, float *inv, float scale) {
    const int64_t sk = p->sk, at = b * p->mask[0] + h * p->mask[1] + r0 * p->mask[2];
    const int in_softmax = !p->has_mask && scale > 0.0f;
    for (int64_t r = 0; r < rows; r++) {
        float *s = scores + r * kp;
        if (p->has_mask && p->mask_bf16) {
            const uint16_t *m = (const uint16_t *)t->mask + at + r * p->mask[2];
            for (int64_t j = 0; j < sk; j++) s[j] = s[j] * scale + bf16_to_f32(m[j]);
        } else if (p->has_mask) {
            const float *m = (const float *)t->mask + at + r * p->mask[2];
            for (int64_t j = 0; j < sk; j++) s[j] = s[j] * scale + m[j];
        } else if (!in_softmax && scale != 1.0f) {
            for (int64_t j = 0; j < sk; j++) s[j] *= scale;
        }
        inv[r] = softmax_row(s, sk, kp, p->zero_nan_rows, in_softmax ? scale : 1.0f);
    }
}

/* the floats a unit's work buffer holds: q (a block, packed), k^T, v, the block's scores, its outputs */
static int64_t work_floats(const attention *p) {
    int64_t kp = PAD(p->sk), vp = PAD(p->dv);
    return BLOCK * p->d + p->d * kp + p->sk * vp + BLOCK * kp + BLOCK * vp;
}

/* one (batch, head): k and v packed once, then the query rows block by block */
__attribute__((target_clones("avx512f", "avx2", "default")))
static void run_unit(const attention *p, const tensors *t, int64_t unit, float *work) {
    const int64_t d = p->d, dv = p->dv, sk = p->sk, kp = PAD(sk), vpitch = PAD(dv);
    const int64_t b = unit / p->heads, h = unit % p->heads;
    const float *kb = (const float *)t->k + b * p->k[0] + h * p->k[1];
    const float *vb = (const float *)t->v + b * p->v[0] + h * p->v[1];
    float *qp = work, *kt = qp + BLOCK * d, *vp = kt + d * kp, *scores = vp + sk * vpitch;
    float *tile_out = scores + BLOCK * kp;
    float inv[BLOCK];

    for (int64_t i = 0; i < d; i++) /* k transposed: [d][keys], zero past the keys */
        memset(kt + i * kp + sk, 0, (size_t)(kp - sk) * sizeof(float));
    for (int64_t j0 = 0; j0 < sk; j0 += LANES) /* 16 keys at a time: 16 rows read, d columns written */
        for (int64_t i = 0; i < d; i++)
            for (int64_t j = j0; j < j0 + LANES && j < sk; j++) kt[i * kp + j] = kb[j * p->k[2] + i];
    for (int64_t j = 0; j < sk; j++) { /* v: [keys][dv], zero past dv */
        memcpy(vp + j * vpitch, vb + j * p->v[2], (size_t)dv * sizeof(float));
        memset(vp + j * vpitch + dv, 0, (size_t)(vpitch - dv) * sizeof(float));
    }
    for (int64_t r0 = 0; r0 < p->sq; r0 += BLOCK) {
        const int64_t rows = p->sq - r0 < BLOCK ? p->sq - r0 : BLOCK;
        const float *qb = (const float *)t->q + b * p->q[0] + h * p->q[1] + r0 * p->q[2];
        for (int64_t r = 0; r < rows; r++) memcpy(qp + r * d, qb + r * p->q[2], (size_t)d * sizeof(float));
        product(qp, d, rows, kt, kp, d, kp, p->scale, scores, kp);
        masked_softmax(p, t, b, h, r0, rows, scores, kp, inv, 1.0f);
        product(scores, kp, rows, vp, vpitch, sk, vpitch, 1.0f, tile_out, vpitch);
        float *ob = (float *)t->out + b * p->out[0] + h * p->out[1] + r0 * p->out[2];
        for (int64_t r = 0; r < rows; r++) {
            float *o = ob + r * p->out[2], scale = inv[r];
            const float *y = tile_out + r * vpitch;
            for (int64_t c = 0; c < dv; c++) o[c] = y[c] * scale;
        }
    }
}

/* bf16: products of bf16 pairs accumulated in f32 (AVX512-BF16's vdpbf16ps: two products a lane). k is packed
 * as [d / 2][keys][2] and v as [keys / 2][dv][2] (pairs along the reduction); a q row and a row of weights (the
 * softmax's, rounded to bf16 as oneDNN's bf16 softmax does) are read as 32-bit pairs and broadcast.
 * With AMX both products are tile products (amx.c): the same packing, the reduction (d, and the keys) padded with
 * zeros to whole tiles of 16 pairs; the scores come out unscaled and are scaled before the softmax. */
#define PAIR_PAD(n) (((n) + 1) / 2)
#define TILE_PAIRS 16

/* pairs along a reduction of n: rounded up to whole tiles on AMX */
INLINE int64_t reduction_pairs(int64_t n, int64_t amx) {
    int64_t pairs = PAIR_PAD(n);
    return amx ? (pairs + TILE_PAIRS - 1) / TILE_PAIRS * TILE_PAIRS : pairs;
}

__attribute__((target("avx512f,avx512bf16"), always_inline))
static inline void tile_bf16(const uint32_t *const *a, const uint16_t *b, int64_t pitch, int64_t pairs, int R,
                             int nv, int rows, float scale, float *out, int64_t out_pitch) {
    __m512 acc[8][4];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < nv; c++) acc[r][c] = _mm512_setzero_ps();
    for (int64_t i = 0; i < pairs; i++) {
        const uint16_t *row = b + i * pitch * 2;
        __m512bh w[4];
        for (int c = 0; c < nv; c++) w[c] = (__m512bh)_mm512_loadu_si512(row + 32 * c);
        for (int r = 0; r < R; r++) {
            __m512bh x = (__m512bh)_mm512_set1_epi32((int)a[r][i]);
            for (int c = 0; c < nv; c++) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], x, w[c]);
        }
    }
    for (int r = 0; r < R; r++)
        if (r < rows)
            for (int c = 0; c < nv; c++) _mm512_storeu_ps(out + r * out_pitch + 16 * c, acc[r][c] * scale);
}

/* as product(): a's rows are `pairs` 32-bit pairs, `a_pitch` pairs apart; b is [pairs][pitch][2] */
__attribute__((target("avx512f,avx512bf16"), always_inline))
static inline void product_bf16(const uint32_t *a, int64_t a_pitch, int64_t rows, const uint16_t *b, int64_t pitch,
                                int64_t pairs, int64_t cols, float scale, float *out, int64_t out_pitch) {
    int64_t c0 = 0;
    for (; c0 + 64 <= cols; c0 += 64) {
        for (int64_t r = 0; r < rows; r += 4) {
            int n = rows - r < 4 ? (int)(rows - r) : 4;
            const uint32_t *ra[8];
            for (int i = 0; i < 4; i++) ra[i] = a + (r + (i < n ? i : n - 1)) * a_pitch;
            tile_bf16(ra, b + 2 * c0, pitch, pairs, 4, 4, n, scale, out + r * out_pitch + c0, out_pitch);
        }
    }
    for (int nv = 2; nv >= 1; nv--) {
        if (c0 + 16 * nv > cols) continue;
        for (int64_t r = 0; r < rows; r += 8) {
            int n = rows - r < 8 ? (int)(rows - r) : 8;
            const uint32_t *ra[8];
            for (int i = 0; i < 8; i++) ra[i] = a + (r + (i < n ? i : n - 1)) * a_pitch;
            if (nv == 2)
                tile_bf16(ra, b + 2 * c0, pitch, pairs, 8, 2, n, scale, out + r * out_pitch + c0, out_pitch);
            else
                tile_bf16(ra, b + 2 * c0, pitch, pairs, 8, 1, n, scale, out + r * out_pitch + c0, out_pitch);
        }
        c0 += 16 * nv;
    }
}

/* the bytes a bf16 unit's work buffer holds: q pairs, k and v packed, the scores (f32), the weights (bf16), the
 * outputs (f32) */
static int64_t work_bytes_bf16(const attention *p) {
    int64_t kp = PAD(p->sk), vpitch = PAD(p->dv), d2 = reduction_pairs(p->d, p->amx), k2 = reduction_pairs(kp, p->amx);
    return 4 * (BLOCK * d2 + d2 * kp + k2 * vpitch + BLOCK * kp + BLOCK * k2 + BLOCK * vpitch);
}

__attribute__((target("avx512f,avx512bf16")))
static void run_unit_bf16(const attention *p, const tensors *t, int64_t unit, char *work) {
    const int64_t d = p->d, dv = p->dv, sk = p->sk, kp = PAD(sk), vpitch = PAD(dv);
    const int64_t d2 = reduction_pairs(d, p->amx), k2 = reduction_pairs(kp, p->amx);
    const int64_t b = unit / p->heads, h = unit % p->heads;
    const uint16_t *kb = (const uint16_t *)t->k + b * p->k[0] + h * p->k[1];
    const uint16_t *vb = (const uint16_t *)t->v + b * p->v[0] + h * p->v[1];
    uint32_t *qp = (uint32_t *)work;                      /* [BLOCK][d2] pairs */
    uint16_t *kt = (uint16_t *)(qp + BLOCK * d2);         /* [d2][kp][2] */
    uint16_t *vp = kt + 2 * d2 * kp;                      /* [k2][vpitch][2] */
    float *scores = (float *)(vp + 2 * k2 * vpitch);      /* [BLOCK][kp] */
    uint32_t *weights = (uint32_t *)(scores + BLOCK * kp); /* [BLOCK][k2] pairs */
    float *tile_out = (float *)(weights + BLOCK * k2);    /* [BLOCK][vpitch] */
    float inv[BLOCK];

    uint32_t *kt32 = (uint32_t *)kt, *vp32 = (uint32_t *)vp;
    memset(kt, 0, (size_t)(2 * d2 * kp) * sizeof(uint16_t));
    for (int64_t j = 0; j < sk; j++) { /* a k row's (d, d + 1) pairs are 32-bit words: transposed as words */
        const uint16_t *row = kb + j * p->k[2];
        for (int64_t i = 0; i < d / 2; i++) {
            uint32_t pair;
            memcpy(&pair, row + 2 * i, sizeof pair);
            kt32[i * kp + j] = pair;
        }
        if (d & 1) kt32[(d / 2) * kp + j] = row[d - 1];
    }
    memset(vp, 0, (size_t)(2 * k2 * vpitch) * sizeof(uint16_t));
    for (int64_t j = 0; j < sk; j += 2) { /* two v rows interleaved into words */
        const uint16_t *row0 = vb + j * p->v[2], *row1 = j + 1 < sk ? vb + (j + 1) * p->v[2] : NULL;
        uint32_t *out = vp32 + (j / 2) * vpitch;
        if (row1 != NULL)
            for (int64_t c = 0; c < dv; c++) out[c] = (uint32_t)row0[c] | (uint32_t)row1[c] << 16;
        else
            for (int64_t c = 0; c < dv; c++) out[c] = row0[c];
    }
    for (int64_t r0 = 0; r0 < p->sq; r0 += BLOCK) {
        const int64_t rows = p->sq - r0 < BLOCK ? p->sq - r0 : BLOCK;
        const uint16_t *qb = (const uint16_t *)t->q + b * p->q[0] + h * p->q[1] + r0 * p->q[2];
        for (int64_t r = 0; r < rows; r++) {
            uint16_t *row = (uint16_t *)(qp + r * d2);
            memcpy(row, qb + r * p->q[2], (size_t)d * sizeof(uint16_t));
            memset(row + d, 0, (size_t)(2 * d2 - d) * sizeof(uint16_t));
        }
        if (p->amx) /* unscaled: the softmax scales */
            vr_amx_product_bf16(qp, 4 * d2, 2 * d2, kt, 4 * kp, kp, scores, kp, rows);
        else
            product_bf16(qp, d2, rows, kt, kp, d2, kp, p->scale, scores, kp);
        masked_softmax(p, t, b, h, r0, rows, scores, kp, inv, p->amx ? p->scale : 1.0f);
        for (int64_t r = 0; r < rows; r++) { /* the weights to bf16, 32 at a time (kp is a multiple of 16) */
            const float *s = scores + r * kp;
            uint16_t *w = (uint16_t *)(weights + r * k2);
            int64_t j = 0;
            for (; j + 32 <= kp; j += 32)
                _mm512_storeu_si512(w + j, (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + j + 16),
                                                                       _mm512_loadu_ps(s + j)));
            for (; j < 2 * k2; j++) w[j] = j < kp ? f32_to_bf16(s[j]) : 0;
        }
        if (p->amx)
            vr_amx_product_bf16(weights, 4 * k2, 2 * k2, vp, 4 * vpitch, vpitch, tile_out, vpitch, rows);
        else
            product_bf16(weights, k2, rows, vp, vpitch, k2, vpitch, 1.0f, tile_out, vpitch);
        uint16_t *ob = (uint16_t *)t->out + b * p->out[0] + h * p->out[1] + r0 * p->out[2];
        for (int64_t r = 0; r < rows; r++) { /* 16 at a time, then one by one */
            uint16_t *o = ob + r * p->out[2];
            const float *y = tile_out + r * vpitch;
            const __m512 scale = _mm512_set1_ps(inv[r]);
            int64_t c = 0;
            for (; c + 16 <= dv; c += 16)
                _mm256_storeu_si256((__m256i *)(o + c),
                                    (__m256i)_mm512_cvtneps_pbh(_mm512_mul_ps(_mm512_loadu_ps(y + c), scale)));
            for (; c < dv; c++) o[c] = f32_to_bf16(y[c] * inv[r]);
        }
    }
}

/* args: [0] q, [1] k, [2] v, [3] out, [4] the mask (with has_mask) */
int vr_attention_execute(void *self, void *stream, int nargs, const exec_arg *args) {
    (void)stream;
    const attention *p = (const attention *)self;
    void *h[5] = {NULL};
    int needed = p->has_mask ? 5 : 4;
    if (nargs < needed) return 1;
    for (int i = 0; i < needed; i++)
        if (p->api.get_handle(args[i].memory, &h[i])) return 1;
    tensors t = {h[0], h[1], h[2], h[4], h[3]};
    const int64_t units = p->batch * p->heads;
    const size_t bytes = p->bf16 ? (size_t)work_bytes_bf16(p) : (size_t)work_floats(p) * sizeof(float);
    int failed = 0;
#pragma omp parallel
    {
        float *work = (float *)thread_scratch(bytes);
        if (work == NULL) {
#pragma omp atomic write
            failed = 1;
        }
        if (p->amx) vr_amx_configure();
#pragma omp for schedule(static)
        for (int64_t u = 0; u < units; u++)
            if (work != NULL && p->bf16) run_unit_bf16(p, &t, u, (char *)work);
            else if (work != NULL) run_unit(p, &t, u, work);
        if (p->amx) vr_amx_release();
    }
    return failed ? 3 : 0;
}
