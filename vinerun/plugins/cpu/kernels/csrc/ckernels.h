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

int vr_winograd_execute(void *self, void *stream, int nargs, const exec_arg *args);
int vr_gemv_execute(void *self, void *stream, int nargs, const exec_arg *args);
int vr_attention_execute(void *self, void *stream, int nargs, const exec_arg *args);

#endif
