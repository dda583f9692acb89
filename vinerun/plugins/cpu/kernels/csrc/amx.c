/* AMX tiles for the C kernels: bf16 products on the tile unit (Intel Sapphire Rapids and later).
 *
 * A product here is out[rows][cols] = a[rows][k] * b[k][cols] in f32 for up to 32 rows, with
 *   a: bf16 rows, `a_stride` bytes apart, k a multiple of 32 (zero-padded by the caller);
 *   b: bf16 in VNNI pairs, [k / 2][cols][2], a row of pairs `b_stride` bytes apart; cols a multiple of 16;
 *   out: f32 rows `out_pitch` floats apart; all 16 or 32 rows are written (rows past the caller's are scratch).
 * Every tile is 16 rows of 64 bytes (one configuration: palette 1, tmm0-7 alike): tmm0-3 accumulate a 32 x 32
 * block of out, tmm4-5 hold a's two row tiles, tmm6-7 b's two column tiles.
 *
 * Linux hands a process the tile state only when asked (arch_prctl ARCH_REQ_XCOMP_PERM); vr_amx_ready() asks once
 * and says whether the kernels may use the tiles. A thread configures its tiles before a kernel's products
 * (vr_amx_configure) and releases them after (vr_amx_release): oneDNN's AMX kernels load their own configuration
 * each call, so nothing is assumed between kernels.
 */
#include <stdint.h>
#include <string.h>

#include "ckernels.h"

#if defined(__x86_64__) && defined(__linux__) && \
    ((defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11))
#define VR_HAVE_AMX 1
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static int amx_state; /* 0: not asked yet, 1: granted, -1: refused (an old kernel, no AMX) */

int vr_amx_ready(void) {
    int state = __atomic_load_n(&amx_state, __ATOMIC_ACQUIRE);
    if (state == 0) { /* asking twice is harmless: the grant is per process */
        int granted = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
        state = granted ? 1 : -1;
        __atomic_store_n(&amx_state, state, __ATOMIC_RELEASE);
    }
    return state > 0;
}

typedef struct {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* palette 1, tmm0-7 of 16 rows x 64 bytes; a constant in memory (GCC drops the stores to a local one: it does not
 * see ldtilecfg read them) */
static const tile_config CONFIG __attribute__((aligned(64))) = {
    1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

__attribute__((target("amx-tile"))) void vr_amx_configure(void) { _tile_loadconfig(&CONFIG); }

__attribute__((target("amx-tile"))) void vr_amx_release(void) { _tile_release(); }

__attribute__((target("amx-tile,amx-bf16")))
void vr_amx_product_bf16(const void *a, int64_t a_stride, int64_t k, const void *b, int64_t b_stride, int64_t cols,
                         float *out, int64_t out_pitch, int64_t rows) {
    const char *ab = (const char *)a, *bb = (const char *)b;
    const int64_t steps = k / 32, out_stride = out_pitch * (int64_t)sizeof(float);
    const int two_rows = rows > 16;
    for (int64_t n0 = 0; n0 < cols; n0 += 32) {
        const int two_cols = n0 + 32 <= cols;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int64_t s = 0; s < steps; s++) {
            const char *bs = bb + 16 * s * b_stride + n0 * 4; /* 16 pairs of rows, 16 columns of pairs */
            _tile_loadd(4, ab + 64 * s, a_stride);
            _tile_loadd(6, bs, b_stride);
            _tile_dpbf16ps(0, 4, 6);
            if (two_cols) {
                _tile_loadd(7, bs + 64, b_stride);
                _tile_dpbf16ps(1, 4, 7);
            }
            if (two_rows) {
                _tile_loadd(5, ab + 16 * a_stride + 64 * s, a_stride);
                _tile_dpbf16ps(2, 5, 6);
                if (two_cols) _tile_dpbf16ps(3, 5, 7);
            }
        }
        float *o = out + n0;
        _tile_stored(0, o, out_stride);
        if (two_cols) _tile_stored(1, o + 16, out_stride);
        if (two_rows) {
            _tile_stored(2, o + 16 * out_pitch, out_stride);
            if (two_cols) _tile_stored(3, o + 16 * out_pitch + 16, out_stride);
        }
    }
}

#else /* no AMX in this compiler or on this platform: the kernels keep their AVX-512 paths */

int vr_amx_ready(void) { return 0; }
void vr_amx_configure(void) {}
void vr_amx_release(void) {}
void vr_amx_product_bf16(const void *a, int64_t a_stride, int64_t k, const void *b, int64_t b_stride, int64_t cols,
                         float *out, int64_t out_pitch, int64_t rows) {
    (void)a, (void)a_stride, (void)k, (void)b, (void)b_stride, (void)cols, (void)out, (void)out_pitch, (void)rows;
}

#endif
