/* Shared declarations of the CPU plugin's own C kernels (see ckernels.c).
 *
 * A kernel runs as a step of a native segment, so its entry point has oneDNN's execute signature: the step loop
 * calls it in place of ``dnnl_primitive_execute`` with the kernel's parameter block as the "primitive" and
 * oneDNN memory objects as the arguments (their data handles point at the step's buffers).
 */
#ifndef VINERUN_CKERNELS_H
#define VINERUN_CKERNELS_H

#include <stddef.h>
#include <stdint.h>

typedef struct { int arg; void *memory; } exec_arg; /* dnnl_exec_arg_t */
typedef int (*execute_fn)(void *primitive, void *stream, int nargs, const exec_arg *args);
typedef int (*get_handle_fn)(void *memory, void **handle);
typedef int (*set_handle_fn)(void *memory, void *handle);

/* the oneDNN functions a kernel calls (addresses from the ctypes binding: no link to libdnnl) */
typedef struct {
    get_handle_fn get_handle;
    set_handle_fn set_handle;
    execute_fn execute;
} dnnl_api;

/* 16 floats in GCC's vector types: each target_clones variant lowers them to its own registers (one zmm, two ymm,
 * four xmm) */
typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4))); /* for unaligned loads and stores */
#define LANES 16
#define INLINE static inline __attribute__((always_inline))

INLINE v16 load(const float *p) { return *(const v16u *)p; }
INLINE void put(float *p, v16 v) { *(v16u *)p = v; }

typedef int32_t v16i __attribute__((vector_size(64)));

INLINE v16 splat(float x) { return (v16){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }
/* lanes of a where `take` is set (all ones), else of b */
INLINE v16 blend(v16i take, v16 a, v16 b) { return (v16)(((v16i)a & take) | ((v16i)b & ~take)); }
INLINE v16 vmax(v16 a, v16 b) { return blend(a > b, a, b); }

/* the sum and the maximum of a vector's lanes by halving (4 shuffles and 4 adds, not 15 dependent scalar ones) */
#define HALVES(v, op)                                                                                     \
    do {                                                                                                  \
        v = op(v, __builtin_shuffle(v, (v16i){8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7}));      \
        v = op(v, __builtin_shuffle(v, (v16i){4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11}));      \
        v = op(v, __builtin_shuffle(v, (v16i){2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13}));      \
        v = op(v, __builtin_shuffle(v, (v16i){1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14}));      \
    } while (0)
INLINE v16 vadd(v16 a, v16 b) { return a + b; }
INLINE float hsum(v16 v) {
    HALVES(v, vadd);
    return v[0];
}
INLINE float hmax(v16 v) {
    HALVES(v, vmax);
    return v[0];
}

/* exp(x) for x <= 0 (Cephes' expf: 2^n * e^r, |r| <= ln 2 / 2, a degree-6 polynomial; ~1 ulp); below -87.3 it
 * gives 2^-126 instead of underflowing further (a weight of ~1e-38 against the row's maximum of 1); NaN stays. */
INLINE v16 exp_neg(v16 x) {
    x = blend(x < -87.3f, splat(-87.3f), x);
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

/* activations applied in a kernel's epilogue */
enum { ACT_NONE = 0, ACT_RELU = 1, ACT_CLIP = 2 };

typedef struct {
    int64_t kind;
    float lo, hi;
} activation;

/* A buffer of at least `bytes` (64-byte aligned) owned by the calling thread, reused by every kernel call on it
 * (the steps of a segment run one after another on one thread); freed when the thread exits. NULL if out of
 * memory. */
void *thread_scratch(size_t bytes);

/* AMX (amx.c): whether this process may use the tile unit (asks Linux once; 0 on CPUs and compilers without it);
 * a thread's tile configuration for vr_amx_product_bf16, and its release; the product itself (see amx.c) */
int vr_amx_ready(void);
void vr_amx_configure(void);
void vr_amx_release(void);
void vr_amx_product_bf16(const void *a, int64_t a_stride, int64_t k, const void *b, int64_t b_stride, int64_t cols,
                         float *out, int64_t out_pitch, int64_t rows);

int vr_winograd_execute(void *self, void *stream, int nargs, const exec_arg *args);
int vr_gemv_execute(void *self, void *stream, int nargs, const exec_arg *args);
int vr_attention_execute(void *self, void *stream, int nargs, const exec_arg *args);
int vr_planes_execute(void *self, void *stream, int nargs, const exec_arg *args);

/* y[0..n) = x[0..k) @ W + add[0..n) for W packed as gemv.c packs it (split over the calling thread's team) */
/* one direction of an LSTM at batch 1 (lstm.c) */
void vr_lstm_steps(const float *panels, int64_t hidden, int64_t seq, int64_t reverse, const float *xw, float *h,
                   float *c, float *y, int64_t y_stride, float *pre);
void vr_panels_product(const float *x, const float *panels, int64_t k, int64_t n, const float *add, float *y);

#endif
