/* One direction of an LSTM at batch 1, f32 (see kernels/lstm_steps.py for when it is used).
 *
 * The input projections of all steps (x_t W^T + biases) come computed, as one GEMM; each step is then the
 * recurrent product h R^T, a read of R (4H x H: 4 MB at hidden 512, which stays in the last-level cache between
 * steps), and the gates. R is packed as gemv.c packs a weight (panels of 64 gate columns, one sequential stream),
 * which reads it ~1.9x faster than oneDNN's RNN (brgemm at one row, 88 us a step against 46 at hidden 512 on the
 * 2-core CPU measured). Gates in ONNX's meaning, columns in the order i, f, c, o:
 *     i, f, o = sigmoid(.), g = tanh(.), c = f c + i g, h = o tanh(c).
 * The product is split over the calling thread's OpenMP team; the gates (4H values) run on the calling thread.
 */
#include <stddef.h>
#include <stdint.h>

#include "ckernels.h"

/* sigmoid(x) = 1 / (1 + e^-x), through e^-|x| (never overflows); NaN stays NaN */
INLINE v16 vsigmoid(v16 x) {
    v16 e = exp_neg(blend(x > 0.0f, -x, x));
    v16 one = splat(1.0f);
    return blend(x > 0.0f, one / (one + e), e / (one + e));
}

/* tanh(x) = 2 sigmoid(2x) - 1 */
INLINE v16 vtanh(v16 x) { return 2.0f * vsigmoid(2.0f * x) - 1.0f; }

__attribute__((target_clones("avx512f", "avx2", "default")))
static void gates(const float *pre, float *h, float *c, int64_t hidden) {
    const float *pi = pre, *pf = pre + hidden, *pg = pre + 2 * hidden, *po = pre + 3 * hidden;
    int64_t j = 0;
    for (; j + LANES <= hidden; j += LANES) {
        v16 cn = vsigmoid(load(pf + j)) * load(c + j) + vsigmoid(load(pi + j)) * vtanh(load(pg + j));
        put(c + j, cn);
        put(h + j, vsigmoid(load(po + j)) * vtanh(cn));
    }
    if (j < hidden) { /* the tail, through one padded vector */
        float t[4][LANES] __attribute__((aligned(64))) = {{0}};
        float ct[LANES] __attribute__((aligned(64))) = {0}, ht[LANES] __attribute__((aligned(64)));
        int64_t rest = hidden - j;
        for (int64_t q = 0; q < rest; q++) {
            t[0][q] = pi[j + q];
            t[1][q] = pf[j + q];
            t[2][q] = pg[j + q];
            t[3][q] = po[j + q];
            ct[q] = c[j + q];
        }
        v16 cn = vsigmoid(load(t[1])) * load(ct) + vsigmoid(load(t[0])) * vtanh(load(t[2]));
        put(ct, cn);
        put(ht, vsigmoid(load(t[3])) * vtanh(cn));
        for (int64_t q = 0; q < rest; q++) {
            c[j + q] = ct[q];
            h[j + q] = ht[q];
        }
    }
}

/* Steps 0..seq-1 (reverse: seq-1..0) of one direction. xw [seq][4H] the input projections with both biases;
 * h, c [H] the state, updated in place; y: step t's h goes to y + t * y_stride; pre: 4H floats of scratch. */
void vr_lstm_steps(const float *panels, int64_t hidden, int64_t seq, int64_t reverse, const float *xw, float *h,
                   float *c, float *y, int64_t y_stride, float *pre) {
    const int64_t width = 4 * hidden;
    for (int64_t s = 0; s < seq; s++) {
        int64_t t = reverse ? seq - 1 - s : s;
        vr_panels_product(h, panels, hidden, width, xw + t * width, pre);
        gates(pre, h, c, hidden);
        float *out = y + t * y_stride;
        for (int64_t j = 0; j < hidden; j++) out[j] = h[j];
    }
}
