#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <assert.h>

#include "checksum.h"

/* __FILE__ and assert() put source paths into the object; the build's prefix maps must keep
 * them relative, which the reproducibility tests check. */
static const char *source_file = __FILE__;

static PyObject *adler32(PyObject *self, PyObject *args) {
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf)) return NULL;
    uint32_t v = vs_adler32(buf.buf, (size_t)buf.len);
    PyBuffer_Release(&buf);
    return PyLong_FromUnsignedLong(v);
}

static PyObject *fnv1a64(PyObject *self, PyObject *args) {
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf)) return NULL;
    uint64_t v = vs_fnv1a64(buf.buf, (size_t)buf.len);
    PyBuffer_Release(&buf);
    return PyLong_FromUnsignedLongLong(v);
}

static PyObject *dot(PyObject *self, PyObject *args) {
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "OO", &a, &b)) return NULL;
    Py_ssize_t n = PySequence_Length(a);
    if (n < 0 || n != PySequence_Length(b)) {
        PyErr_SetString(PyExc_ValueError, "dot: sequences must have the same length");
        return NULL;
    }
    double acc = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PySequence_GetItem(a, i), *y = PySequence_GetItem(b, i);
        double xv = x ? PyFloat_AsDouble(x) : -1.0, yv = y ? PyFloat_AsDouble(y) : -1.0;
        Py_XDECREF(x);
        Py_XDECREF(y);
        if (PyErr_Occurred()) return NULL;
        acc += xv * yv;
    }
    return PyFloat_FromDouble(acc);
}

static PyObject *origin(PyObject *self, PyObject *noargs) {
    assert(source_file != NULL);
    return PyUnicode_FromString(source_file);
}

static PyMethodDef methods[] = {
    {"adler32", adler32, METH_VARARGS, "Adler-32 checksum of a bytes-like object."},
    {"fnv1a64", fnv1a64, METH_VARARGS, "64-bit FNV-1a hash of a bytes-like object."},
    {"dot", dot, METH_VARARGS, "Dot product of two equal-length sequences of floats."},
    {"origin", origin, METH_NOARGS, "The source file name as the compiler saw it."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "vouch_sample._native", "C helpers of vouch-sample.", -1, methods,
};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
