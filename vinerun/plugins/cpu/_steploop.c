/* The native step loop of the CPU plugin's static segments (see native_segment.py).
 *
 * One call points the oneDNN memory objects of the segment's per-run buffers (its inputs and the outputs it
 * hands back) at their addresses, then executes the segment's primitives in order, with the GIL released:
 * no Python between two primitives. The oneDNN functions come in as addresses (from the ctypes binding), so
 * this file needs no oneDNN headers and no link to libdnnl. A step may bring its own execute function (a C
 * kernel of the plugin's, with oneDNN's signature); the others run through dnnl_primitive_execute.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

typedef struct { int arg; void *memory; } exec_arg;                     /* dnnl_exec_arg_t */
typedef int (*execute_fn)(void *primitive, void *stream, int nargs, const exec_arg *args);
typedef int (*set_handle_fn)(void *memory, void *handle);

/* as native_segment._StepEntry; execute NULL: dnnl_primitive_execute */
typedef struct { execute_fn execute; void *primitive; int64_t nargs; const exec_arg *args; } step;
typedef struct { void *memory; int64_t buffer; int64_t offset; } handle; /* as native_segment._HandleEntry */

/* An address: an int as it is, else the start of the object's buffer (a NumPy array's data pointer; ~0.1 us
 * where NumPy's ``a.ctypes.data`` takes ~1 us). The caller keeps the object alive while the pointer is used. */
static int pointer_of(PyObject *o, void **out) {
    if (PyLong_Check(o)) {
        *out = PyLong_AsVoidPtr(o);
        return (*out == NULL && PyErr_Occurred()) ? -1 : 0;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(o, &view, PyBUF_STRIDES) != 0) return -1;
    *out = view.buf;
    PyBuffer_Release(&view);
    return 0;
}

/* address(obj) -> int: the data pointer of an array (any strides, any dtype) */
static PyObject *address(PyObject *self, PyObject *obj) {
    (void)self;
    void *p;
    if (pointer_of(obj, &p) != 0) return NULL;
    return PyLong_FromVoidPtr(p);
}

/* One thread's instance of a segment: the execute and set-handle functions, its stream, step and handle tables. */
typedef struct {
    execute_fn execute;
    set_handle_fn set_handle;
    void *stream;
    const step *steps;
    Py_ssize_t n_steps;
    const handle *handles;
    Py_ssize_t n_handles;
} segment;

/* Point the per-run memory objects at the run's buffers, then execute every step; without the GIL.
 * -1: every step ran; -2: a handle failed; else the index of the step that failed. */
static long run_segment(const segment *seg, void *const *address, Py_ssize_t n_addresses) {
    for (Py_ssize_t i = 0; i < seg->n_handles; i++) {
        int64_t b = seg->handles[i].buffer;
        if (b < 0 || b >= n_addresses ||
            seg->set_handle(seg->handles[i].memory, (char *)address[b] + seg->handles[i].offset) != 0)
            return -2;
    }
    for (Py_ssize_t i = 0; i < seg->n_steps; i++) {
        execute_fn fn = seg->steps[i].execute ? seg->steps[i].execute : seg->execute;
        if (fn(seg->steps[i].primitive, seg->stream, (int)seg->steps[i].nargs, seg->steps[i].args) != 0)
            return (long)i;
    }
    return -1;
}

/* The pointer arguments of a segment instance: execute, set_handle, stream, steps, n_steps, handles, n_handles. */
static int segment_of(PyObject *const *args, segment *seg) {
    void *ptr[5];
    static const int pointer_args[5] = {0, 1, 2, 3, 5};
    for (int i = 0; i < 5; i++) {
        ptr[i] = PyLong_AsVoidPtr(args[pointer_args[i]]);
        if (ptr[i] == NULL && PyErr_Occurred()) return -1;
    }
    Py_ssize_t n_steps = PyLong_AsSsize_t(args[4]), n_handles = PyLong_AsSsize_t(args[6]);
    if ((n_steps < 0 || n_handles < 0) && PyErr_Occurred()) return -1;
    *seg = (segment){(execute_fn)ptr[0], (set_handle_fn)ptr[1], ptr[2], (const step *)ptr[3], n_steps,
                     (const handle *)ptr[4], n_handles};
    return 0;
}

/* run(execute, set_handle, stream, steps, n_steps, handles, n_handles, addresses) -> int
 *
 * addresses: a tuple of the per-run buffers (ints, or arrays: their data pointers); handle i points memory i at
 * addresses[buffer i] + offset i (a view into the buffer).
 * Returns -1 when every primitive ran, the index of the step that failed, or -2 when setting a handle did.
 */
static PyObject *run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "run() takes 8 arguments");
        return NULL;
    }
    segment seg;
    if (segment_of(args, &seg) != 0) return NULL;
    PyObject *addresses = args[7];
    if (!PyTuple_Check(addresses)) {
        PyErr_SetString(PyExc_TypeError, "run(): addresses must be a tuple");
        return NULL;
    }
    Py_ssize_t n_addresses = PyTuple_GET_SIZE(addresses);
    void *stack[64];
    void **address = n_addresses <= 64 ? stack : PyMem_Malloc(sizeof(void *) * (size_t)n_addresses);
    if (address == NULL) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n_addresses; i++) {
        if (pointer_of(PyTuple_GET_ITEM(addresses, i), &address[i]) != 0) {
            if (address != stack) PyMem_Free(address);
            return NULL;
        }
    }
    long failed;
    Py_BEGIN_ALLOW_THREADS
    failed = run_segment(&seg, address, n_addresses);
    Py_END_ALLOW_THREADS
    if (address != stack) PyMem_Free(address);
    return PyLong_FromLong(failed);
}

/* ---- the request loop -------------------------------------------------------------------------------------------
 * A queue of request slots served by stream threads that wait, take a slot and run the segment on its buffers
 * without ever taking the GIL (request_loop.py): a request of a model that is one native segment costs the
 * Python that submits it and nothing more. A slot marked ``python`` (or ``notify``: a callback is set) has the
 * worker take the GIL and call the hook with (slot, status): RUN_IN_PYTHON (-3) asks the hook to run it.
 */
enum { SLOT_IDLE, SLOT_TAKEN, SLOT_QUEUED, SLOT_RUNNING };
enum { JOB_NATIVE = 0, JOB_NOTIFY = 1, JOB_PYTHON = 2 };
#define RUN_IN_PYTHON (-3)
#define NOT_FAILED (-1)

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t work, idle;  /* a job was queued (or the loop closed); a slot became idle */
    int n_slots, n_addresses, closed, busy;  /* busy: slots queued or running */
    void **addresses;                         /* n_slots x n_addresses */
    int *state, *kind, *queue, *idle_ring;
    long *failed;                             /* each slot's first unreported failure (NOT_FAILED if none) */
    double *submitted, *latency;              /* each slot's last submission (s) and its run's duration (ms) */
    int head, count, idle_head, idle_count;
} loop_t;

static void loop_destroy(loop_t *lp) {
    free(lp->addresses); free(lp->state); free(lp->kind); free(lp->queue); free(lp->idle_ring); free(lp->failed);
    free(lp->submitted); free(lp->latency);
    free(lp);
}

static void loop_free(PyObject *capsule) {  /* the capsule's destructor: no thread serves it any more */
    loop_t *lp = PyCapsule_GetPointer(capsule, "vinerun.request_loop");
    if (lp == NULL) return;
    pthread_mutex_destroy(&lp->lock);
    pthread_cond_destroy(&lp->work);
    pthread_cond_destroy(&lp->idle);
    loop_destroy(lp);
}

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static loop_t *loop_of(PyObject *capsule) { return PyCapsule_GetPointer(capsule, "vinerun.request_loop"); }

/* loop_new(n_slots, n_addresses) -> capsule: every slot idle */
static PyObject *loop_new(PyObject *self, PyObject *args) {
    (void)self;
    int n_slots, n_addresses;
    if (!PyArg_ParseTuple(args, "ii", &n_slots, &n_addresses)) return NULL;
    if (n_slots < 1 || n_addresses < 0) {
        PyErr_SetString(PyExc_ValueError, "loop_new(): needs a slot and no negative address count");
        return NULL;
    }
    loop_t *lp = calloc(1, sizeof(loop_t));
    if (lp == NULL) return PyErr_NoMemory();
    lp->n_slots = n_slots;
    lp->n_addresses = n_addresses;
    lp->addresses = calloc((size_t)n_slots * (size_t)(n_addresses ? n_addresses : 1), sizeof(void *));
    lp->state = calloc((size_t)n_slots, sizeof(int));
    lp->kind = calloc((size_t)n_slots, sizeof(int));
    lp->queue = calloc((size_t)n_slots, sizeof(int));
    lp->idle_ring = calloc((size_t)n_slots, sizeof(int));
    lp->failed = calloc((size_t)n_slots, sizeof(long));
    lp->submitted = calloc((size_t)n_slots, sizeof(double));
    lp->latency = calloc((size_t)n_slots, sizeof(double));
    if (!lp->addresses || !lp->state || !lp->kind || !lp->queue || !lp->idle_ring || !lp->failed || !lp->submitted ||
        !lp->latency) {
        loop_destroy(lp);
        return PyErr_NoMemory();
    }
    for (int i = 0; i < n_slots; i++) {
        lp->idle_ring[i] = i;
        lp->failed[i] = NOT_FAILED;
    }
    lp->idle_count = n_slots;
    pthread_mutex_init(&lp->lock, NULL);
    pthread_cond_init(&lp->work, NULL);
    pthread_cond_init(&lp->idle, NULL);
    PyObject *capsule = PyCapsule_New(lp, "vinerun.request_loop", loop_free);
    if (capsule == NULL) {
        pthread_mutex_destroy(&lp->lock);
        pthread_cond_destroy(&lp->work);
        pthread_cond_destroy(&lp->idle);
        loop_destroy(lp);
    }
    return capsule;
}

/* loop_take(loop) -> slot: the slot idle longest, marked taken (waits without the GIL while none is idle) */
static PyObject *loop_take(PyObject *self, PyObject *capsule) {
    (void)self;
    loop_t *lp = loop_of(capsule);
    if (lp == NULL) return NULL;
    int slot;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&lp->lock);
    while (lp->idle_count == 0) pthread_cond_wait(&lp->idle, &lp->lock);
    slot = lp->idle_ring[lp->idle_head];
    lp->idle_head = (lp->idle_head + 1) % lp->n_slots;
    lp->idle_count--;
    lp->state[slot] = SLOT_TAKEN;
    pthread_mutex_unlock(&lp->lock);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(slot);
}

static void make_idle(loop_t *lp, int slot) {  /* lock held */
    lp->state[slot] = SLOT_IDLE;
    lp->idle_ring[(lp->idle_head + lp->idle_count) % lp->n_slots] = slot;
    lp->idle_count++;
    pthread_cond_broadcast(&lp->idle);
}

static int taken_slot(loop_t *lp, int slot) {  /* only the thread that took a slot moves it on: read unlocked */
    if (slot < 0 || slot >= lp->n_slots || lp->state[slot] != SLOT_TAKEN) {
        PyErr_Format(PyExc_RuntimeError, "request loop: slot %d is not taken", slot);
        return -1;
    }
    return 0;
}

/* loop_release(loop, slot): give a taken slot back unused */
static PyObject *loop_release(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule;
    int slot;
    if (!PyArg_ParseTuple(args, "Oi", &capsule, &slot)) return NULL;
    loop_t *lp = loop_of(capsule);
    if (lp == NULL || taken_slot(lp, slot) != 0) return NULL;
    pthread_mutex_lock(&lp->lock);
    make_idle(lp, slot);
    pthread_mutex_unlock(&lp->lock);
    Py_RETURN_NONE;
}

/* loop_submit(loop, slot, addresses, kind): queue a taken slot with its buffers (a tuple of n_addresses arrays
 * or ints; the caller keeps them alive until the slot is idle again) */
static PyObject *loop_submit(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule, *addresses;
    int slot, kind;
    if (!PyArg_ParseTuple(args, "OiO!i", &capsule, &slot, &PyTuple_Type, &addresses, &kind)) return NULL;
    loop_t *lp = loop_of(capsule);
    if (lp == NULL || taken_slot(lp, slot) != 0) return NULL;
    if (kind != JOB_PYTHON && PyTuple_GET_SIZE(addresses) != lp->n_addresses) {
        PyErr_Format(PyExc_ValueError, "request loop: %d buffers expected, got %zd", lp->n_addresses,
                     PyTuple_GET_SIZE(addresses));
        return NULL;
    }
    void **address = lp->addresses + (size_t)slot * (size_t)lp->n_addresses;
    for (Py_ssize_t i = 0; kind != JOB_PYTHON && i < lp->n_addresses; i++)
        if (pointer_of(PyTuple_GET_ITEM(addresses, i), &address[i]) != 0) return NULL;
    pthread_mutex_lock(&lp->lock);
    if (lp->closed) {
        pthread_mutex_unlock(&lp->lock);
        PyErr_SetString(PyExc_RuntimeError, "request loop: closed");
        return NULL;
    }
    lp->kind[slot] = kind;
    lp->submitted[slot] = seconds_now();
    lp->state[slot] = SLOT_QUEUED;
    lp->queue[(lp->head + lp->count) % lp->n_slots] = slot;
    lp->count++;
    lp->busy++;
    pthread_cond_signal(&lp->work);
    pthread_mutex_unlock(&lp->lock);
    Py_RETURN_NONE;
}

/* loop_serve(loop, execute, set_handle, stream, steps, n_steps, handles, n_handles, hook): a stream thread's
 * life: run queued slots on this thread's instance of the segment until the loop closes and its queue is empty */
static PyObject *loop_serve(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "loop_serve() takes 9 arguments");
        return NULL;
    }
    loop_t *lp = loop_of(args[0]);
    segment seg;
    if (lp == NULL || segment_of(args + 1, &seg) != 0) return NULL;
    PyObject *hook = args[8];
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&lp->lock);
    for (;;) {
        while (lp->count == 0 && !lp->closed) pthread_cond_wait(&lp->work, &lp->lock);
        if (lp->count == 0) break;  /* closed, nothing left */
        int slot = lp->queue[lp->head];
        lp->head = (lp->head + 1) % lp->n_slots;
        lp->count--;
        lp->state[slot] = SLOT_RUNNING;
        int kind = lp->kind[slot];
        pthread_mutex_unlock(&lp->lock);
        long status = kind == JOB_PYTHON
            ? RUN_IN_PYTHON : run_segment(&seg, lp->addresses + (size_t)slot * (size_t)lp->n_addresses,
                                          lp->n_addresses);
        lp->latency[slot] = (seconds_now() - lp->submitted[slot]) * 1e3;  /* a callback may read it */
        if (kind != JOB_NATIVE) {  /* the hook reports (or runs) it, with the GIL */
            Py_BLOCK_THREADS
            PyObject *r = PyObject_CallFunction(hook, "il", slot, status);
            if (r == NULL) PyErr_WriteUnraisable(hook);
            Py_XDECREF(r);
            Py_UNBLOCK_THREADS
            status = NOT_FAILED;
        }
        pthread_mutex_lock(&lp->lock);
        /* a failure stays until loop_failures reads it, whatever the slot runs next */
        if (status != NOT_FAILED && lp->failed[slot] == NOT_FAILED) lp->failed[slot] = status;
        lp->busy--;
        make_idle(lp, slot);
    }
    pthread_mutex_unlock(&lp->lock);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static int slot_done(const loop_t *lp, int slot) {  /* lock held; slot -1: every slot */
    return slot < 0 ? lp->busy == 0 : lp->state[slot] != SLOT_QUEUED && lp->state[slot] != SLOT_RUNNING;
}

/* loop_wait(loop, slot, timeout) -> bool: wait without the GIL until the slot (-1: every slot) is neither queued
 * nor running, at most ``timeout`` seconds (negative: no limit); whether it is */
static PyObject *loop_wait(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule;
    int slot;
    double timeout;
    if (!PyArg_ParseTuple(args, "Oid", &capsule, &slot, &timeout)) return NULL;
    loop_t *lp = loop_of(capsule);
    if (lp == NULL) return NULL;
    if (slot >= lp->n_slots) {
        PyErr_Format(PyExc_IndexError, "request loop: no slot %d", slot);
        return NULL;
    }
    int done;
    Py_BEGIN_ALLOW_THREADS
    struct timespec until;
    if (timeout >= 0) {
        clock_gettime(CLOCK_REALTIME, &until);
        double end = (double)until.tv_sec + until.tv_nsec * 1e-9 + timeout;
        until.tv_sec = (time_t)end;
        until.tv_nsec = (long)((end - (double)until.tv_sec) * 1e9);
    }
    pthread_mutex_lock(&lp->lock);
    int timed_out = 0;
    while (!(done = slot_done(lp, slot)) && !timed_out) {
        if (timeout < 0)
            pthread_cond_wait(&lp->idle, &lp->lock);
        else
            timed_out = pthread_cond_timedwait(&lp->idle, &lp->lock, &until) != 0;
    }
    pthread_mutex_unlock(&lp->lock);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(done);
}

/* loop_failures(loop) -> [(slot, status)]: the native runs that failed since the last call (taken under the lock,
 * made into Python objects after it: no Python code, a finalizer included, runs while the lock is held) */
static PyObject *loop_failures(PyObject *self, PyObject *capsule) {
    (void)self;
    loop_t *lp = loop_of(capsule);
    if (lp == NULL) return NULL;
    long *taken = PyMem_Malloc(sizeof(long) * (size_t)lp->n_slots);
    if (taken == NULL) return PyErr_NoMemory();
    pthread_mutex_lock(&lp->lock);
    for (int i = 0; i < lp->n_slots; i++) {
        taken[i] = lp->failed[i];
        lp->failed[i] = NOT_FAILED;
    }
    pthread_mutex_unlock(&lp->lock);
    PyObject *out = PyList_New(0);
    for (int i = 0; out != NULL && i < lp->n_slots; i++) {
        if (taken[i] == NOT_FAILED) continue;
        PyObject *pair = Py_BuildValue("(il)", i, taken[i]);
        if (pair == NULL || PyList_Append(out, pair) != 0) Py_CLEAR(out);
        Py_XDECREF(pair);
    }
    PyMem_Free(taken);
    return out;
}

/* loop_latency(loop, slot) -> float: milliseconds from the slot's last submission to the end of its run */
static PyObject *loop_latency(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule;
    int slot;
    if (!PyArg_ParseTuple(args, "Oi", &capsule, &slot)) return NULL;
    loop_t *lp = loop_of(capsule);
    if (lp == NULL) return NULL;
    if (slot < 0 || slot >= lp->n_slots) {
        PyErr_Format(PyExc_IndexError, "request loop: no slot %d", slot);
        return NULL;
    }
    pthread_mutex_lock(&lp->lock);
    double ms = lp->latency[slot];
    pthread_mutex_unlock(&lp->lock);
    return PyFloat_FromDouble(ms);
}

/* loop_idle(loop) -> int: how many slots are idle */
static PyObject *loop_idle(PyObject *self, PyObject *capsule) {
    (void)self;
    loop_t *lp = loop_of(capsule);
    if (lp == NULL) return NULL;
    pthread_mutex_lock(&lp->lock);
    int n = lp->idle_count;
    pthread_mutex_unlock(&lp->lock);
    return PyLong_FromLong(n);
}

/* loop_close(loop): the serving threads return once the queue is empty */
static PyObject *loop_close(PyObject *self, PyObject *capsule) {
    (void)self;
    loop_t *lp = loop_of(capsule);
    if (lp == NULL) return NULL;
    pthread_mutex_lock(&lp->lock);
    lp->closed = 1;
    pthread_cond_broadcast(&lp->work);
    pthread_mutex_unlock(&lp->lock);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"address", address, METH_O, "address(array) -> int: the array's data pointer"},
    {"run", (PyCFunction)(void (*)(void))run, METH_FASTCALL,
     "run(execute, set_handle, stream, steps, n_steps, handles, n_handles, addresses) -> int"},
    {"loop_new", loop_new, METH_VARARGS, "loop_new(n_slots, n_addresses) -> a request loop"},
    {"loop_take", loop_take, METH_O, "loop_take(loop) -> the idle slot taken"},
    {"loop_release", loop_release, METH_VARARGS, "loop_release(loop, slot): a taken slot back, unused"},
    {"loop_submit", loop_submit, METH_VARARGS, "loop_submit(loop, slot, addresses, kind): queue a taken slot"},
    {"loop_serve", (PyCFunction)(void (*)(void))loop_serve, METH_FASTCALL,
     "loop_serve(loop, execute, set_handle, stream, steps, n_steps, handles, n_handles, hook): serve until closed"},
    {"loop_wait", loop_wait, METH_VARARGS,
     "loop_wait(loop, slot, timeout) -> bool: until the slot (-1: all) is done, at most timeout s (< 0: no limit)"},
    {"loop_failures", loop_failures, METH_O, "loop_failures(loop) -> [(slot, status)] since the last call"},
    {"loop_idle", loop_idle, METH_O, "loop_idle(loop) -> the number of idle slots"},
    {"loop_latency", loop_latency, METH_VARARGS, "loop_latency(loop, slot) -> ms of the slot's last run"},
    {"loop_close", loop_close, METH_O, "loop_close(loop): serving threads return when the queue is empty"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_steploop", "The CPU plugin's native step loop.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__steploop(void) { return PyModule_Create(&module); }
