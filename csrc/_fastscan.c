/* aotwheel._fastscan: the inspector's hot loops over mapped binaries, in C (issue 13).
 *
 * Every function reads a buffer (mmap, bytes: the buffer protocol) and returns None when the
 * input is anything its core (fastscan_core.h) is not sure about; the caller then runs the
 * Python reader, so answers, warnings and error messages are always the Python readers'. Used
 * through aotwheel.formats.fastscan, which imports it lazily and falls back when it is missing.
 *
 * Stable ABI (abi3) from 3.11: the buffer protocol joined the limited API there; on 3.10 the
 * wrapper does not import it and the pure-Python readers run. */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "fastscan_core.h"

/* buf[start:start+size] as a pointer; -1 with an exception when the span is not inside buf. */
static int get_span(PyObject *obj, Py_ssize_t start, Py_ssize_t size, Py_buffer *view, const uint8_t **p) {
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0)
        return -1;
    if (start < 0 || size < 0 || start > view->len || size > view->len - start) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "span outside the buffer");
        return -1;
    }
    *p = (const uint8_t *)view->buf + start;
    return 0;
}

static PyObject *u32_or_none(const fs_zebin *z, int type) {
    if (z->desc[type] == NULL || z->desc_n[type] < 4)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLong(fs_u32(z->desc[type]));
}

/* (ip_u32, product_family, gfx_core, version, has_spirv), the ZebinInfo fields. */
static PyObject *zebin_tuple(const fs_zebin *z) {
    PyObject *version;
    const uint8_t *v = z->desc[FS_NT_ZEBIN_VERSION];
    size_t n = z->desc_n[FS_NT_ZEBIN_VERSION];
    if (v == NULL || n == 0) {
        version = Py_NewRef(Py_None);
    } else {
        while (n && v[n - 1] == 0)
            --n;
        version = PyUnicode_DecodeASCII((const char *)v, (Py_ssize_t)n, NULL);
    }
    PyObject *ip = u32_or_none(z, FS_NT_PRODUCT_CONFIG), *product = u32_or_none(z, FS_NT_PRODUCT_FAMILY);
    PyObject *core = u32_or_none(z, FS_NT_GFX_CORE), *spirv = PyBool_FromLong(z->has_spirv);
    PyObject *out = NULL;
    if (version && ip && product && core && spirv)
        out = PyTuple_Pack(5, ip, product, core, version, spirv);
    Py_XDECREF(version);
    Py_XDECREF(ip);
    Py_XDECREF(product);
    Py_XDECREF(core);
    Py_XDECREF(spirv);
    return out;
}

PyDoc_STRVAR(zebin_summary_doc, "zebin_summary(buf, start, size) -> (ip_u32, product_family, gfx_core, version, has_spirv) | None\n\n"
                                "read_zebin_summary's values for the zebin at buf[start:start+size]; None: ask the Python reader.");

static PyObject *zebin_summary(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t start, size;
    Py_buffer view;
    const uint8_t *p;
    fs_zebin z;
    if (!PyArg_ParseTuple(args, "Onn", &obj, &start, &size) || get_span(obj, start, size, &view, &p) < 0)
        return NULL;
    int ok = fs_zebin_summary(p, (size_t)size, &z);
    PyObject *out = ok == FS_OK ? zebin_tuple(&z) : Py_NewRef(Py_None);
    PyBuffer_Release(&view);
    return out;
}

PyDoc_STRVAR(fat_binary_doc, "fat_binary(buf, start, size) -> tuple[(name, offset, size, info), ...] | None\n\n"
                             "The members read_ar lists for the archive at buf[start:start+size], padding (pad_*) left out;\n"
                             "offsets are relative to start. info is zebin_summary's tuple for zebin members, the first (up\n"
                             "to) 64 bytes of ir_payload for an IR-only ELF named generic_ir (b'' without one), None for every\n"
                             "other member (and any it doubts): the Python walk handles those. None: ask read_ar.");

static PyObject *fat_binary(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t start, size;
    Py_buffer view;
    const uint8_t *p;
    if (!PyArg_ParseTuple(args, "Onn", &obj, &start, &size) || get_span(obj, start, size, &view, &p) < 0)
        return NULL;
    fs_ar ar;
    fs_member m;
    PyObject *list = PyList_New(0), *out = NULL;
    int rc = list ? fs_ar_open(&ar, p, (size_t)size) : FS_DOUBT;
    while (list && rc == FS_OK && (rc = fs_ar_next(&ar, &m)) == FS_OK) {
        if (m.name_len >= 4 && memcmp(m.name, "pad_", 4) == 0)
            continue;
        fs_zebin z;
        size_t ir_off, ir_n;
        const uint8_t *body = p + m.offset;
        PyObject *info;
        if (fs_eq(m.name, m.name_len, "generic_ir")) /* walked as an image of its own, whatever its kind */
            info = fs_ir_payload(body, m.size, &ir_off, &ir_n) == FS_OK
                       ? PyBytes_FromStringAndSize((const char *)body + ir_off, (Py_ssize_t)(ir_n < 64 ? ir_n : 64))
                       : Py_NewRef(Py_None);
        else
            info = fs_zebin_summary(body, m.size, &z) == FS_OK ? zebin_tuple(&z) : Py_NewRef(Py_None);
        PyObject *name = PyUnicode_DecodeASCII((const char *)m.name, (Py_ssize_t)m.name_len, NULL);
        PyObject *item = NULL;
        if (info && name)
            item = Py_BuildValue("(OnnO)", name, (Py_ssize_t)m.offset, (Py_ssize_t)m.size, info);
        Py_XDECREF(info);
        Py_XDECREF(name);
        if (item == NULL || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(item);
    }
    PyBuffer_Release(&view);
    if (list == NULL)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    if (rc == FS_DONE)
        out = PyList_AsTuple(list);
    else
        out = Py_NewRef(Py_None);
    Py_DECREF(list);
    return out;
}

PyDoc_STRVAR(tgtsym_doc, "tgtsym(buf, start, size) -> ([(prefix, names), ...], names, kernels) | None\n\n"
                         "The NUL-separated .tgtsym names at buf[start:start+size]: names per prefix (bytes before the\n"
                         "first '.'), in first-seen order; the number of names; distinct kernels (after the first '.').");

static PyObject *tgtsym(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t start, size;
    Py_buffer view;
    const uint8_t *p;
    if (!PyArg_ParseTuple(args, "Onn", &obj, &start, &size) || get_span(obj, start, size, &view, &p) < 0)
        return NULL;
    fs_tgtsym_out t;
    PyObject *out = NULL;
    if (fs_tgtsym(p, (size_t)size, &t) != FS_OK) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    PyObject *list = PyList_New((Py_ssize_t)t.n_prefixes);
    for (size_t i = 0; list && i < t.n_prefixes; ++i) {
        PyObject *item = Py_BuildValue("(y#n)", (const char *)t.prefixes[i].p, (Py_ssize_t)t.prefixes[i].n, (Py_ssize_t)t.prefixes[i].count);
        if (item == NULL || PyList_SetItem(list, (Py_ssize_t)i, item) < 0)
            Py_CLEAR(list);
    }
    if (list)
        out = Py_BuildValue("(Nnn)", list, (Py_ssize_t)t.names, (Py_ssize_t)t.kernels);
    fs_tgtsym_free(&t);
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"zebin_summary", zebin_summary, METH_VARARGS, zebin_summary_doc},
    {"fat_binary", fat_binary, METH_VARARGS, fat_binary_doc},
    {"tgtsym", tgtsym, METH_VARARGS, tgtsym_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastscan", "C scanning loops for aotwheel.inspector (see aotwheel.formats.fastscan).", -1, methods,
};

PyMODINIT_FUNC PyInit__fastscan(void) { return PyModule_Create(&module); }
