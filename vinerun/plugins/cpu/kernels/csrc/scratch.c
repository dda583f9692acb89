/* Per-thread scratch memory of the C kernels (see ckernels.h). */
#include <pthread.h>
#include <stdlib.h>

#include "ckernels.h"

typedef struct {
    void *data;
    size_t bytes;
} scratch;

static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void release(void *p) {
    scratch *s = (scratch *)p;
    free(s->data);
    free(s);
}

static void make_key(void) { (void)pthread_key_create(&key, release); }

void *thread_scratch(size_t bytes) {
    (void)pthread_once(&once, make_key);
    scratch *s = (scratch *)pthread_getspecific(key);
    if (s == NULL) {
        s = (scratch *)calloc(1, sizeof(scratch));
        if (s == NULL || pthread_setspecific(key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    if (s->bytes < bytes) {
        size_t size = (bytes + 63) / 64 * 64;
        void *data = aligned_alloc(64, size);
        if (data == NULL) return NULL;
        free(s->data);
        s->data = data;
        s->bytes = size;
    }
    return s->data;
}
