/* aotwheel._kernels: this repository's OpenCL C kernels, embedded ahead of time.
 *
 * The images are placed by aotwheel_add_device_code (NAME kernels) into icpx-style sections with
 * a .tgtimg table; this module only hands them to Python as bytes, as stored: zstd frames by
 * default (USE_AOT_COMPRESS ON; aotwheel.opencl.inflate() gives the image back), the plain
 * images with USE_AOT_COMPRESS=OFF. Stable ABI (abi3, 3.10+):
 * device code does not depend on the Python version. */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030A0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "kernels_aot.h"

/* i-th image whose triple equals `triple` (NULL if none). */
static const struct aotwheel_image *find_image(const char *triple, Py_ssize_t index) {
    for (unsigned long i = 0; i < aotwheel_kernels_image_count; ++i) {
        const struct aotwheel_image *img = &aotwheel_kernels_images[i];
        if (strcmp(img->triple, triple) == 0 && index-- == 0)
            return img;
    }
    return NULL;
}

static PyObject *image_bytes(const struct aotwheel_image *img) {
    return PyBytes_FromStringAndSize((const char *)img->begin, (Py_ssize_t)(img->end - img->begin));
}

static PyObject *get_by_triple(PyObject *args, const char *triple, const char *what) {
    Py_ssize_t index = 0;
    if (!PyArg_ParseTuple(args, "|n", &index))
        return NULL;
    const struct aotwheel_image *img = index >= 0 ? find_image(triple, index) : NULL;
    if (!img) {
        PyErr_Format(PyExc_LookupError,
                     "no %s image %zd in aotwheel._kernels; rebuild with USE_AOT_DEVLIST naming a device "
                     "(for fat binaries) or JIT fallback ON (for SPIR-V)",
                     what, index);
        return NULL;
    }
    return image_bytes(img);
}

static PyObject *k_fatbinary(PyObject *self, PyObject *args) {
    (void)self;
    return get_by_triple(args, "spir64_gen", "fat binary (spir64_gen)");
}

static PyObject *k_spirv(PyObject *self, PyObject *args) {
    (void)self;
    return get_by_triple(args, "spir64", "SPIR-V (spir64)");
}

static PyObject *k_images(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *out = PyList_New(0);
    if (!out)
        return NULL;
    for (unsigned long i = 0; i < aotwheel_kernels_image_count; ++i) {
        const struct aotwheel_image *img = &aotwheel_kernels_images[i];
        PyObject *data = image_bytes(img);
        PyObject *item = data ? Py_BuildValue("(ssN)", img->triple, img->source, data) : NULL;
        if (!item || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(item);
    }
    return out;
}

static PyObject *k_kernel_names(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    /* .tgtsym: NUL-separated "sycl-<triple>.<kernel>"; report each kernel once. */
    PyObject *seen = PyList_New(0);
    if (!seen)
        return NULL;
    for (const char *p = aotwheel_kernels_tgtsym; p < aotwheel_kernels_tgtsym_end; p += strlen(p) + 1) {
        const char *dot = strchr(p, '.');
        PyObject *name = PyUnicode_FromString(dot ? dot + 1 : p);
        if (!name) {
            Py_DECREF(seen);
            return NULL;
        }
        int present = PySequence_Contains(seen, name);
        if (present < 0 || (!present && PyList_Append(seen, name) < 0)) {
            Py_DECREF(name);
            Py_DECREF(seen);
            return NULL;
        }
        Py_DECREF(name);
    }
    return seen;
}

static PyMethodDef methods[] = {
    {"fatbinary", k_fatbinary, METH_VARARGS,
     "fatbinary(index=0) -> bytes: the index-th ocloc fat binary (ar; one per kernel source), as stored: "
     "a zstd frame unless built with USE_AOT_COMPRESS=OFF (aotwheel.opencl.inflate gives the ar)."},
    {"spirv", k_spirv, METH_VARARGS, "spirv(index=0) -> bytes: the index-th SPIR-V module (one per kernel source), as stored (see fatbinary)."},
    {"images", k_images, METH_NOARGS, "images() -> list of (triple, source file, bytes), in .tgtimg order."},
    {"kernel_names", k_kernel_names, METH_NOARGS, "kernel_names() -> list of kernel names (from .tgtsym)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kernels", "aotwheel's own OpenCL C kernels, compiled ahead of time.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
