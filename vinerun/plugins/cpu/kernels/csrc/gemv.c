/* Matrix-vector product with constant weights, f32: y[1, n] = act(x[1, k] @ W[k, n] + bias) (see
 * kernels/gemv.py for when it is used).
 *
 * With one row the product is a read of W: 5 MB for a classifier of 1280 -> 1000, and from memory, since the
 * layers before it evicted it. W is packed once into panels of PANEL columns, each [k][PANEL] contiguous and the
 * panels one after another, so the whole product reads W as one sequential stream (what the hardware prefetcher
 * serves fastest; oneDNN's blocked layout reads several streams and takes ~1.9x the time of a plain read on the
 * CPUs measured; software prefetching 1-8 KB ahead made it slower here). Panels are split over the calling
 * thread's OpenMP team.
 */
#include <stddef.h>

#include "ckernels.h"

#define PANEL 64 /* output columns per panel: 4 vectors of 16 */

typedef struct {
    dnnl_api api;
    int64_t k, n;         /* x [1, k], y [1, n] */
    const float *panels;  /* W packed: ceil(n / PANEL) panels of [k][PANEL], columns past n zero */
    const float *bias;    /* [n] */
    activation act;
} gemv;

/* One panel: out[0..PANEL) = x @ panel, 4 accumulators per k step, 2 k steps at a time (8 chains). */
__attribute__((target_clones("avx512f", "avx2", "default")))
static void panel_product(const float *x, const float *panel, int64_t k, float *out) {
    v16 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
    const v16 *w = (const v16 *)panel;
    int64_t i = 0;
    for (; i + 2 <= k; i += 2, w += 8) {
        float x0 = x[i], x1 = x[i + 1];
        a0 += x0 * w[0];
        a1 += x0 * w[1];
        a2 += x0 * w[2];
        a3 += x0 * w[3];
        b0 += x1 * w[4];
        b1 += x1 * w[5];
        b2 += x1 * w[6];
        b3 += x1 * w[7];
    }
    if (i < k) {
        float x0 = x[i];
        a0 += x0 * w[0];
        a1 += x0 * w[1];
        a2 += x0 * w[2];
        a3 += x0 * w[3];
    }
    put(out, a0 + b0);
    put(out + 16, a1 + b1);
    put(out + 32, a2 + b2);
    put(out + 48, a3 + b3);
}

/* y[j] = act(sums[j] + bias[j]) for the `count` columns of a panel */
static void finish(const float *sums, const float *bias, const activation *act, float *y, int64_t count) {
    for (int64_t j = 0; j < count; j++) {
        float v = sums[j] + bias[j];
        if (act->kind == ACT_RELU) v = v > 0.0f ? v : 0.0f;
        else if (act->kind == ACT_CLIP) v = v < act->lo ? act->lo : (v > act->hi ? act->hi : v);
        y[j] = v;
    }
}

/* args: [0] x, [1] y */
int vr_gemv_execute(void *self, void *stream, int nargs, const exec_arg *args) {
    (void)stream;
    const gemv *p = (const gemv *)self;
    void *src, *dst;
    if (nargs < 2 || p->api.get_handle(args[0].memory, &src) || p->api.get_handle(args[1].memory, &dst)) return 1;
    const float *x = (const float *)src;
    float *y = (float *)dst;
    const int64_t k = p->k, n = p->n, panels = (n + PANEL - 1) / PANEL;
#pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < panels; q++) {
        float sums[PANEL] __attribute__((aligned(64)));
        panel_product(x, p->panels + q * k * PANEL, k, sums);
        int64_t first = q * PANEL, count = n - first < PANEL ? n - first : PANEL;
        finish(sums, p->bias + first, &p->act, y + first, count);
    }
    return 0;
}

void vr_panels_product(const float *x, const float *panels, int64_t k, int64_t n, const float *add, float *y) {
    const int64_t count = (n + PANEL - 1) / PANEL;
#pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < count; q++) {
        float sums[PANEL] __attribute__((aligned(64)));
        panel_product(x, panels + q * k * PANEL, k, sums);
        int64_t first = q * PANEL, cols = n - first < PANEL ? n - first : PANEL;
        for (int64_t j = 0; j < cols; j++) y[first + j] = sums[j] + add[first + j];
    }
}
