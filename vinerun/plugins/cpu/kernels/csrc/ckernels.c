/* The CPU plugin's own C kernels, as one extension module: the module hands out their entry points' addresses,
 * which the Python side places in native-segment step tables or calls through ctypes. See ckernels.h.
 *
 * Built with OpenMP (``-fopenmp``): the module is imported after torch, so its libgomp is the one torch and
 * oneDNN already share (the loader reuses a loaded soname), and a kernel's parallel loops run on the calling
 * stream thread's team with its thread count.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ckernels.h"

/* entry_points() -> {name: address} */
static PyObject *entry_points(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n}", "winograd", (Py_ssize_t)(uintptr_t)&vr_winograd_execute, "gemv",
                         (Py_ssize_t)(uintptr_t)&vr_gemv_execute, "attention",
                         (Py_ssize_t)(uintptr_t)&vr_attention_execute, "lstm_steps",
                         (Py_ssize_t)(uintptr_t)&vr_lstm_steps, "planes",
                         (Py_ssize_t)(uintptr_t)&vr_planes_execute);
}

/* amx_ready() -> whether the kernels may use AMX tiles here (the CPU has them, Linux granted the process) */
static PyObject *amx_ready(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(vr_amx_ready());
}

static PyMethodDef methods[] = {
    {"entry_points", entry_points, METH_NOARGS, "entry_points() -> {name: address of the kernel's execute}"},
    {"amx_ready", amx_ready, METH_NOARGS, "amx_ready() -> whether the C kernels may use AMX tiles here"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ckernels", "The CPU plugin's own C kernels.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__ckernels(void) { return PyModule_Create(&module); }
