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
#include <stdint.h>

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
    /* args: execute, set_handle, stream, steps, n_steps, handles, n_handles, addresses */
    void *ptr[5];
    static const int pointer_args[5] = {0, 1, 2, 3, 5};
    for (int i = 0; i < 5; i++) {
        ptr[i] = PyLong_AsVoidPtr(args[pointer_args[i]]);
        if (ptr[i] == NULL && PyErr_Occurred()) return NULL;
    }
    Py_ssize_t n_steps = PyLong_AsSsize_t(args[4]), n_handles = PyLong_AsSsize_t(args[6]);
    if ((n_steps < 0 || n_handles < 0) && PyErr_Occurred()) return NULL;
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
    execute_fn execute = (execute_fn)ptr[0];
    set_handle_fn set_handle = (set_handle_fn)ptr[1];
    void *stream = ptr[2];
    const step *steps = (const step *)ptr[3];
    const handle *handles = (const handle *)ptr[4];
    long failed = -1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n_handles; i++) {
        int64_t b = handles[i].buffer;
        if (b < 0 || b >= n_addresses || set_handle(handles[i].memory, (char *)address[b] + handles[i].offset) != 0) {
            failed = -2;
            break;
        }
    }
    for (Py_ssize_t i = 0; failed == -1 && i < n_steps; i++) {
        execute_fn fn = steps[i].execute ? steps[i].execute : execute;
        if (fn(steps[i].primitive, stream, (int)steps[i].nargs, steps[i].args) != 0) failed = (long)i;
    }
    Py_END_ALLOW_THREADS
    if (address != stack) PyMem_Free(address);
    return PyLong_FromLong(failed);
}

static PyMethodDef methods[] = {
    {"address", address, METH_O, "address(array) -> int: the array's data pointer"},
    {"run", (PyCFunction)(void (*)(void))run, METH_FASTCALL,
     "run(execute, set_handle, stream, steps, n_steps, handles, n_handles, addresses) -> int"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_steploop", "The CPU plugin's native step loop.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__steploop(void) { return PyModule_Create(&module); }
