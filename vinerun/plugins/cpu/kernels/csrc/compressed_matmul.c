/* MatMul by compressed weights (int8 or int4, group-wise scales and zero points) with f32 activations, reading the
 * weights compressed: y[m, n] = bias[n] + sum_g scale[n, g] * sum_{k in g} x[m, k] * (w[n, k] - zp[n, g]).
 * See kernels/compressed_matmul.py for the layout the weights are packed in and when each path runs.
 *
 * Weights are unsigned (an i8 / i4 weight is stored as w + 128 / w + 8 with its zero point moved by as much), in
 * panels of 16 output columns; a "quad" is 4 consecutive k of one column (one 32-bit lane):
 *   int8: [panels][k / 4][16 columns][4] bytes
 *   int4: [panels][k / 8][16 columns][4] bytes, the low nibble of byte b is k = 8j + b, the high one 8j + 4 + b.
 * Scales and zero points: f32 [panels][groups][16]; bias f32 [panels * 16].
 *
 * Two ways to compute, both over the panels split across the calling thread's OpenMP team (16 columns at a time,
 * up to 4 rows at a time, so a panel is read once per 4 rows and no partial sum is ever reduced across lanes):
 *  - f32: each weight converted to f32 and multiplied into f32 sums (exact up to f32 rounding);
 *  - dynamic quantization (DYNAMIC_QUANTIZATION_GROUP_SIZE > 0): x quantized per row and group of `dq`
 *    columns to s8 (symmetric, scale max|x| / 127), the products summed in int32 with VNNI's vpdpbusd
 *    (u8 weights x s8 activations, 64 products an instruction) over chunks of `chunk` = min(dq, group) columns,
 *    then scaled into f32 sums: sum_chunk sx * scale * (dot - zp * sum(xq)).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef uint32_t v16ua __attribute__((vector_size(64), aligned(4)));
typedef float v16fu __attribute__((vector_size(64), aligned(4)));
#define ROWS 4 /* rows per block */

typedef struct {
    int64_t k, n;          /* x [m, k], y [m, n] */
    int64_t group;         /* columns of k per scale */
    int64_t bits;          /* 8 or 4 */
    int64_t dq;            /* dynamic quantization group (columns of k per activation scale); 0: f32 */
    const uint8_t *w;      /* packed weights (see above) */
    const float *scale;    /* [panels][groups][16] */
    const float *zp;       /* [panels][groups][16] */
    const float *bias;     /* [panels * 16] or NULL */
} cm_params;

static inline v16f loadf(const float *p) { return *(const v16fu *)p; }

/* 16 columns' next 4 k (one byte each, as f32): the b-th byte of every lane */
static inline v16f byte_of(v16i v, int b) {
    return __builtin_convertvector((v16i)(((uint32_t __attribute__((vector_size(64))))v >> (8 * b)) & 0xFF), v16f);
}

/* f32 path: one panel, rows [0, rows) of x (row stride k), sums into out[r][16] */
__attribute__((target_clones("avx512f", "avx2", "default")))
static void panel_f32(const cm_params *p, const uint8_t *w, const float *scale, const float *zp, const float *x,
                      const float *xsum, int64_t rows, int64_t groups, float *out) {
    const int64_t k = p->k, gsize = p->group, step = p->bits == 8 ? 4 : 8;
    v16f tot[ROWS] = {{0}};
    for (int64_t g = 0; g < groups; g++) {
        v16f acc[ROWS] = {{0}};
        for (int64_t k0 = g * gsize; k0 < (g + 1) * gsize; k0 += step) {
            v16i raw = (v16i)(*(const v16ua *)w);
            w += 64;
            v16i lo = raw, hi = raw;
            if (p->bits == 4) {
                lo = raw & 0x0F0F0F0F;
                hi = (v16i)(((uint32_t __attribute__((vector_size(64))))raw >> 4) & 0x0F0F0F0F);
            }
            for (int half = 0; half < step / 4; half++) {
                v16i v = half ? hi : lo;
                const int64_t kk = k0 + 4 * half;
                v16f w0 = byte_of(v, 0), w1 = byte_of(v, 1), w2 = byte_of(v, 2), w3 = byte_of(v, 3);
                for (int64_t r = 0; r < rows; r++) {
                    const float *xr = x + r * k + kk;
                    acc[r] += xr[0] * w0 + xr[1] * w1 + xr[2] * w2 + xr[3] * w3;
                }
            }
        }
        v16f s = loadf(scale + g * 16), z = loadf(zp + g * 16);
        for (int64_t r = 0; r < rows; r++) tot[r] += (acc[r] - z * xsum[r * groups + g]) * s;
    }
    for (int64_t r = 0; r < rows; r++) *(v16fu *)(out + r * 16) = tot[r];
}

/* dynamic-quantization path, with VNNI: xq s8 [rows][k], sx [rows][k / dq], xqsum [rows][k / chunk] */
__attribute__((target("avx512f,avx512bw,avx512vnni")))
static void panel_dq_vnni(const cm_params *p, const uint8_t *w, const float *scale, const float *zp,
                          const int8_t *xq, const float *sx, const int32_t *xqsum, int64_t chunk, int64_t rows,
                          float *out) {
    const int64_t k = p->k, gsize = p->group, dq = p->dq, chunks = k / chunk, sgroups = k / dq;
    const __m512i nib = _mm512_set1_epi8(0x0F);
    __m512 tot[ROWS];
    for (int r = 0; r < ROWS; r++) tot[r] = _mm512_setzero_ps();
    for (int64_t c = 0; c < chunks; c++) {
        __m512i acc[ROWS];
        for (int r = 0; r < ROWS; r++) acc[r] = _mm512_setzero_si512();
        const int64_t k0 = c * chunk;
        if (p->bits == 8) {
            for (int64_t kk = k0; kk < k0 + chunk; kk += 4, w += 64) {
                __m512i v = _mm512_loadu_si512(w);
                for (int64_t r = 0; r < rows; r++)
                    acc[r] = _mm512_dpbusd_epi32(acc[r], v, _mm512_set1_epi32(*(const int32_t *)(xq + r * k + kk)));
            }
        } else {
            for (int64_t kk = k0; kk < k0 + chunk; kk += 8, w += 64) {
                __m512i v = _mm512_loadu_si512(w);
                __m512i lo = _mm512_and_si512(v, nib), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
                for (int64_t r = 0; r < rows; r++) {
                    const int8_t *xr = xq + r * k + kk;
                    acc[r] = _mm512_dpbusd_epi32(acc[r], lo, _mm512_set1_epi32(*(const int32_t *)xr));
                    acc[r] = _mm512_dpbusd_epi32(acc[r], hi, _mm512_set1_epi32(*(const int32_t *)(xr + 4)));
                }
            }
        }
        const int64_t g = k0 / gsize;
        __m512 s = _mm512_loadu_ps(scale + g * 16), z = _mm512_loadu_ps(zp + g * 16);
        for (int64_t r = 0; r < rows; r++) {
            __m512 d = _mm512_fnmadd_ps(z, _mm512_set1_ps((float)xqsum[r * chunks + c]), _mm512_cvtepi32_ps(acc[r]));
            tot[r] = _mm512_fmadd_ps(d, _mm512_mul_ps(s, _mm512_set1_ps(sx[r * sgroups + k0 / dq])), tot[r]);
        }
    }
    for (int64_t r = 0; r < rows; r++) _mm512_storeu_ps(out + r * 16, tot[r]);
}

/* the same without VNNI (any CPU): integer products in 32-bit lanes */
__attribute__((target_clones("avx512f", "avx2", "default")))
static void panel_dq_generic(const cm_params *p, const uint8_t *w, const float *scale, const float *zp,
                             const int8_t *xq, const float *sx, const int32_t *xqsum, int64_t chunk, int64_t rows,
                             float *out) {
    const int64_t k = p->k, gsize = p->group, dq = p->dq, chunks = k / chunk, sgroups = k / dq;
    const int64_t step = p->bits == 8 ? 4 : 8;
    v16f tot[ROWS] = {{0}};
    for (int64_t c = 0; c < chunks; c++) {
        v16i acc[ROWS] = {{0}};
        const int64_t k0 = c * chunk;
        for (int64_t kk = k0; kk < k0 + chunk; kk += step, w += 64) {
            v16i raw = (v16i)(*(const v16ua *)w);
            for (int half = 0; half < step / 4; half++) {
                v16i v = p->bits == 8 ? raw : (v16i)((((uint32_t __attribute__((vector_size(64))))raw >> (4 * half))
                                                      & 0x0F0F0F0F));
                for (int64_t r = 0; r < rows; r++) {
                    const int8_t *xr = xq + r * k + kk + 4 * half;
                    acc[r] += (v & 0xFF) * xr[0] + ((v >> 8) & 0xFF) * xr[1] + ((v >> 16) & 0xFF) * xr[2] +
                              ((v >> 24) & 0xFF) * xr[3];
                }
            }
        }
        const int64_t g = k0 / gsize;
        v16f s = loadf(scale + g * 16), z = loadf(zp + g * 16);
        for (int64_t r = 0; r < rows; r++)
            tot[r] += (__builtin_convertvector(acc[r], v16f) - z * (float)xqsum[r * chunks + c]) *
                      (s * sx[r * sgroups + k0 / dq]);
    }
    for (int64_t r = 0; r < rows; r++) *(v16fu *)(out + r * 16) = tot[r];
}

/* x quantized per row and dq group: xq, sx (the scales), xqsum (sums of xq per chunk) */
static void quantize_rows(const float *x, int64_t m, int64_t k, int64_t dq, int64_t chunk, int8_t *xq, float *sx,
                          int32_t *xqsum) {
    const int64_t sgroups = k / dq, chunks = k / chunk;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < m; r++) {
        for (int64_t g = 0; g < sgroups; g++) {
            const float *xg = x + r * k + g * dq;
            float amax = 0.0f;
            for (int64_t i = 0; i < dq; i++) amax = fmaxf(amax, fabsf(xg[i]));
            float s = amax / 127.0f, inv = amax > 0.0f ? 127.0f / amax : 0.0f;
            sx[r * sgroups + g] = s;
            for (int64_t i = 0; i < dq; i++) xq[r * k + g * dq + i] = (int8_t)lrintf(xg[i] * inv);
        }
        for (int64_t c = 0; c < chunks; c++) {
            int32_t sum = 0;
            for (int64_t i = 0; i < chunk; i++) sum += xq[r * k + c * chunk + i];
            xqsum[r * chunks + c] = sum;
        }
    }
}

static void finish(const cm_params *p, const float *sums, int64_t panel, int64_t rows, float *y) {
    const int64_t first = panel * 16, count = p->n - first < 16 ? p->n - first : 16;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < count; j++)
            y[r * p->n + first + j] = sums[r * 16 + j] + (p->bias ? p->bias[first + j] : 0.0f);
}

/* y[m, n] = x[m, k] @ W; returns 0, or 1 when out of memory */
int vr_compressed_matmul(const cm_params *p, const float *x, float *y, int64_t m) {
    const int64_t k = p->k, panels = (p->n + 15) / 16, groups = k / p->group;
    const int64_t wpanel = p->bits == 8 ? k * 16 : k * 8; /* bytes a panel */
    if (p->dq == 0) {
        float *xsum = malloc(sizeof(float) * (size_t)(m * groups + 1));
        if (!xsum) return 1;
        for (int64_t r = 0; r < m; r++)
            for (int64_t g = 0; g < groups; g++) {
                float s = 0.0f;
                for (int64_t i = 0; i < p->group; i++) s += x[r * k + g * p->group + i];
                xsum[r * groups + g] = s;
            }
#pragma omp parallel for schedule(static)
        for (int64_t q = 0; q < panels; q++) {
            float sums[ROWS * 16] __attribute__((aligned(64)));
            for (int64_t r0 = 0; r0 < m; r0 += ROWS) {
                int64_t rows = m - r0 < ROWS ? m - r0 : ROWS;
                panel_f32(p, p->w + q * wpanel, p->scale + q * groups * 16, p->zp + q * groups * 16, x + r0 * k,
                          xsum + r0 * groups, rows, groups, sums);
                finish(p, sums, q, rows, y + r0 * p->n);
            }
        }
        free(xsum);
        return 0;
    }
    const int64_t chunk = p->dq < p->group ? p->dq : p->group, chunks = k / chunk, sgroups = k / p->dq;
    int8_t *xq = malloc((size_t)(m * k) + 64);
    float *sx = malloc(sizeof(float) * (size_t)(m * sgroups + 1));
    int32_t *xqsum = malloc(sizeof(int32_t) * (size_t)(m * chunks + 1));
    if (!xq || !sx || !xqsum) {
        free(xq), free(sx), free(xqsum);
        return 1;
    }
    quantize_rows(x, m, k, p->dq, chunk, xq, sx, xqsum);
    const int vnni = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
#pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < panels; q++) {
        float sums[ROWS * 16] __attribute__((aligned(64)));
        for (int64_t r0 = 0; r0 < m; r0 += ROWS) {
            int64_t rows = m - r0 < ROWS ? m - r0 : ROWS;
            const uint8_t *w = p->w + q * wpanel;
            const float *s = p->scale + q * groups * 16, *z = p->zp + q * groups * 16;
            if (vnni)
                panel_dq_vnni(p, w, s, z, xq + r0 * k, sx + r0 * sgroups, xqsum + r0 * chunks, chunk, rows, sums);
            else
                panel_dq_generic(p, w, s, z, xq + r0 * k, sx + r0 * sgroups, xqsum + r0 * chunks, chunk, rows, sums);
            finish(p, sums, q, rows, y + r0 * p->n);
        }
    }
    free(xq), free(sx), free(xqsum);
    return 0;
}

/* The module only carries the symbol: kernels/compressed_matmul.py calls it through ctypes. */
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_compressed", "MatMul by compressed weights.", -1, NULL};

PyMODINIT_FUNC PyInit__compressed(void) { return PyModule_Create(&module); }
