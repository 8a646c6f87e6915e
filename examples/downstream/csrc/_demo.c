/* aotdemo._demo: hands the device images aotwheel_add_device_code(NAME demo) embedded to Python,
 * as aotwheel's loader takes them: images() -> [(triple, source, bytes)], one entry per
 * struct aotwheel_image of the generated demo_aot.h. aotwheel.opencl.build_program(ctx, device,
 * "aotdemo._demo") picks the image for the device and decompresses it (each image is one zstd
 * frame unless built with USE_AOT_COMPRESS=OFF). Stable ABI (abi3, 3.10+). */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030A0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "demo_aot.h"

static PyObject *images(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *out = PyList_New(0);
    if (!out)
        return NULL;
    for (unsigned long i = 0; i < aotwheel_demo_image_count; ++i) {
        const struct aotwheel_image *img = &aotwheel_demo_images[i];
        PyObject *item = Py_BuildValue("(ssy#)", img->triple, img->source, (const char *)img->begin, (Py_ssize_t)(img->end - img->begin));
        if (!item || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(item);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"images", images, METH_NOARGS, "images() -> list of (triple, source, bytes): 'spir64_gen' fat binaries, then 'spir64' SPIR-V, as stored "
     "(zstd frames unless built with USE_AOT_COMPRESS=OFF)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_demo", "Device images embedded ahead of time by aotwheel.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__demo(void) { return PyModule_Create(&module); }
