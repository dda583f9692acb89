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
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "ckernels.h"

#define LANES 16
#define BLOCK 32    /* query rows whose scores are in the work buffer at a time */

typedef struct {
    dnnl_api api;
    int64_t batch, heads, sq, sk, d, dv;
    int64_t q[3], k[3], v[3], out[3], mask[3]; /* strides of the batch, head and row dimensions */
    int64_t has_mask;
    float scale;
} attention;

typedef float v16 __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4)));

#define INLINE static inline __attribute__((always_inline))

INLINE v16 load(const float *p) { return *(const v16u *)p; }
INLINE void put(float *p, v16 v) { *(v16u *)p = v; }
INLINE v16 splat(float x) { return (v16){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }
/* lanes of a where `take` is set (all ones), else of b */
INLINE v16 select(v16i take, v16 a, v16 b) { return (v16)(((v16i)a & take) | ((v16i)b & ~take)); }
INLINE v16 vmax(v16 a, v16 b) { return select(a > b, a, b); }

/* exp(x) for x <= 0 (Cephes' expf: 2^n * e^r, |r| <= ln 2 / 2, a degree-6 polynomial; ~1 ulp); below -87.3 it
 * gives 2^-126 instead of underflowing further (a weight of ~1e-38 against the row's maximum of 1); NaN stays. */
INLINE v16 exp_neg(v16 x) {
    x = select(x < -87.3f, splat(-87.3f), x);
    v16 n = x * 1.44269504088896341f + 12582912.0f; /* round to nearest: 1.5 * 2^23 */
    n -= 12582912.0f;
    v16 r = x - n * 0.693359375f + n * 2.12194440e-4f;
    v16 z = r * r;
    v16 y = ((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r + 4.1665795894e-2f) * r +
             1.6666665459e-1f) * r + 5.0000001201e-1f;
    y = y * z + r + 1.0f;
    v16i bits = (__builtin_convertvector(n, v16i) + 127) << 23;
    return y * (v16)bits;
}

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

/* softmax of one row of `n` scores in place, unnormalized (keys from n to `padded` get weight 0); returns
 * 1 / the sum of the weights, NaN for a row with no finite maximum (as the reference: exp(-inf - -inf)) */
INLINE float softmax_row(float *s, int64_t n, int64_t padded) {
    float mx = -INFINITY;
    v16 m = splat(-INFINITY);
    int64_t j = 0;
    for (; j + LANES <= n; j += LANES) m = vmax(m, load(s + j));
    for (int l = 0; l < LANES; l++) mx = m[l] > mx ? m[l] : mx;
    for (; j < n; j++) mx = s[j] > mx ? s[j] : mx;
    if (!(mx > -INFINITY) || mx == INFINITY) return NAN;
    v16 sum = (v16){0}, top = splat(mx);
    for (j = 0; j < padded; j += LANES) {
        v16 e = exp_neg(load(s + j) - top);
        if (j + LANES > n) /* padding: no weight */
            for (int l = 0; l < LANES; l++) e[l] = j + l < n ? e[l] : 0.0f;
        put(s + j, e);
        sum += e;
    }
    float total = 0.0f;
    for (int l = 0; l < LANES; l++) total += sum[l];
    return 1.0f / total;
}

typedef struct {
    const float *q, *k, *v, *mask;
    float *out;
} tensors;

#define PAD(n) (((n) + LANES - 1) / LANES * LANES)

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
    const float *kb = t->k + b * p->k[0] + h * p->k[1], *vb = t->v + b * p->v[0] + h * p->v[1];
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
        const float *qb = t->q + b * p->q[0] + h * p->q[1] + r0 * p->q[2];
        for (int64_t r = 0; r < rows; r++) memcpy(qp + r * d, qb + r * p->q[2], (size_t)d * sizeof(float));
        product(qp, d, rows, kt, kp, d, kp, p->scale, scores, kp);
        const float *mb = p->has_mask ? t->mask + b * p->mask[0] + h * p->mask[1] + r0 * p->mask[2] : NULL;
        for (int64_t r = 0; r < rows; r++) {
            float *s = scores + r * kp;
            if (mb != NULL) {
                const float *m = mb + r * p->mask[2];
                for (int64_t j = 0; j < sk; j++) s[j] += m[j];
            }
            inv[r] = softmax_row(s, sk, kp);
        }
        product(scores, kp, rows, vp, vpitch, sk, vpitch, 1.0f, tile_out, vpitch);
        float *ob = t->out + b * p->out[0] + h * p->out[1] + r0 * p->out[2];
        for (int64_t r = 0; r < rows; r++) {
            float *o = ob + r * p->out[2], scale = inv[r];
            const float *y = tile_out + r * vpitch;
            for (int64_t c = 0; c < dv; c++) o[c] = y[c] * scale;
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
    tensors t = {(const float *)h[0], (const float *)h[1], (const float *)h[2], (const float *)h[4], (float *)h[3]};
    const int64_t units = p->batch * p->heads;
    const size_t bytes = (size_t)work_floats(p) * sizeof(float);
    int failed = 0;
#pragma omp parallel
    {
        float *work = (float *)thread_scratch(bytes);
        if (work == NULL) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (int64_t u = 0; u < units; u++)
            if (work != NULL) run_unit(p, &t, u, work);
    }
    return failed ? 3 : 0;
}
