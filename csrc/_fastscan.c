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

#include <stdarg.h>
#ifndef _WIN32
#include <fcntl.h>   /* posix_fadvise */
#include <sys/mman.h> /* mincore */
#endif

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
    fs_src src = fs_buffer(p, (size_t)size);
    PyObject *out = fs_zebin_summary(&src, &z) == FS_OK ? zebin_tuple(&z) : Py_NewRef(Py_None);
    PyBuffer_Release(&view);
    return out;
}

PyDoc_STRVAR(fat_binary_doc, "fat_binary(buf, start, size, fd=-1) -> tuple[(name, offset, size, info), ...] | None\n\n"
                             "The members read_ar lists for the archive at buf[start:start+size], padding (pad_*) left out;\n"
                             "offsets are relative to start. info is zebin_summary's tuple for zebin members, the first (up\n"
                             "to) 64 bytes of ir_payload for an IR-only ELF named generic_ir (b'' without one), None for every\n"
                             "other member (and any it doubts): the Python walk handles those. None: ask read_ar.\n"
                             "fd >= 0: buf maps that file from offset 0; headers are read from it with pread.");

static PyObject *fat_binary(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t start, size;
    int fd = -1;
    Py_buffer view;
    const uint8_t *p;
    if (!PyArg_ParseTuple(args, "Onn|i", &obj, &start, &size, &fd) || get_span(obj, start, size, &view, &p) < 0)
        return NULL;
    fs_src src = fs_buffer(p, (size_t)size);
#ifndef _WIN32
    fs_pread_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.fd = fd;
    if (fd >= 0) {
        src.buf = NULL;
        src.read = fs_pread_read;
        src.ctx = &ctx;
        src.base = (uint64_t)start;
    }
#endif
    fs_ar ar;
    fs_member m;
    PyObject *list = PyList_New(0), *out = NULL;
    int rc = list ? fs_ar_open(&ar, &src) : FS_DOUBT;
    while (list && rc == FS_OK && (rc = fs_ar_next(&ar, &m)) == FS_OK) {
        if (m.name_len >= 4 && memcmp(m.name, "pad_", 4) == 0)
            continue;
        /* The name first: the member's reads below may reuse the header's buffer. */
        PyObject *name = PyUnicode_DecodeASCII((const char *)m.name, (Py_ssize_t)m.name_len, NULL), *info = NULL;
        fs_src body = fs_sub(&src, m.offset, m.size);
        fs_zebin z;
        uint64_t ir_off, ir_n;
        const uint8_t *head;
        if (name == NULL)
            info = NULL;
        else if (fs_eq(m.name, m.name_len, "generic_ir")) /* walked as an image of its own, whatever its kind */
            info = fs_ir_payload(&body, &ir_off, &ir_n) == FS_OK &&
                           (head = fs_fetch(&body, FS_SLOT_NOTES, ir_off, ir_n < 64 ? ir_n : 64)) != NULL
                       ? PyBytes_FromStringAndSize((const char *)head, (Py_ssize_t)(ir_n < 64 ? ir_n : 64))
                       : Py_NewRef(Py_None);
        else
            info = fs_zebin_summary(&body, &z) == FS_OK ? zebin_tuple(&z) : Py_NewRef(Py_None);
        PyObject *item = NULL;
        if (info && name)
            item = Py_BuildValue("(OKKO)", name, (unsigned long long)m.offset, (unsigned long long)m.size, info);
        Py_XDECREF(info);
        Py_XDECREF(name);
        if (item == NULL || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(item);
    }
#ifndef _WIN32
    fs_pread_free(&ctx);
#endif
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

/* Attribute names and kind strings, made once (module state would be cleaner; these are immortal
 * enough: the module is never unloaded). */
static PyObject *s_offset, *s_size, *s_triple, *s_section, *s_listed_size, *s_compile_options, *s_link_options, *s_spirv, *s_llvmbc, *s_zstd;
static PyObject *s_ptx, *s_cubin, *s_ltoir, *s_unknown, *s_lz4;

static int intern_all(void) {
    struct { PyObject **slot; const char *text; } names[] = {
        {&s_offset, "offset"}, {&s_size, "size"}, {&s_triple, "triple"}, {&s_section, "section"}, {&s_listed_size, "listed_size"},
        {&s_compile_options, "compile_options"}, {&s_link_options, "link_options"}, {&s_spirv, "spirv"}, {&s_llvmbc, "llvmbc"}, {&s_zstd, "zstd"},
        {&s_ptx, "ptx"}, {&s_cubin, "cubin"}, {&s_ltoir, "ltoir"}, {&s_unknown, "unknown"}, {&s_lz4, "lz4"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
        if ((*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL)
            return -1;
    return 0;
}

static Py_ssize_t get_ssize(PyObject *obj, PyObject *name) {
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL) {
        PyErr_Clear(); /* no such attribute: not a plain leaf, the Python loop takes it */
        return -1;
    }
    Py_ssize_t out = PyLong_Check(v) ? PyLong_AsSsize_t(v) : -1;
    Py_DECREF(v);
    if (out < 0 && PyErr_Occurred())
        PyErr_Clear(); /* not a plain size: the Python loop takes this image */
    return out;
}

/* The image's first bytes from a pread copy, the rest from the map (fs_fetch keeps every read
 * inside the image, and the caller keeps the image inside the map). */
typedef struct {
    const uint8_t *copy, *mapped;
    size_t copied;
} head_or_map;

static const uint8_t *read_head_or_map(const fs_src *src, int slot, uint64_t at, size_t n) {
    const head_or_map *h = src->ctx;
    (void)slot;
    return at <= h->copied && n <= h->copied - at ? h->copy + at : h->mapped + at;
}

/* triple.partition("-")[0] == "spir64": SYCL IR (SPIR-V), as inspector._is_sycl_ir. 0 also for a
 * triple UTF-8 cannot hold (a surrogate-escaped section name): the Python loop then decides. */
static int is_sycl_ir(PyObject *triple) {
    if (!PyUnicode_Check(triple))
        return 0;
    Py_ssize_t n;
    const char *t = PyUnicode_AsUTF8AndSize(triple, &n);
    if (t == NULL) {
        PyErr_Clear();
        return 0;
    }
    const char *dash = memchr(t, '-', (size_t)n);
    Py_ssize_t head = dash ? dash - t : n;
    return head == 6 && memcmp(t, "spir64", 6) == 0;
}

/* One leaf Image, as _walk_host makes it, for the image of `size` bytes at `off` (relative to
 * start); NULL with an exception, or Py_None: not a plain leaf. SPIR-V and bitcode images without
 * a listed size (the Python loop adds that warning), and zstd-compressed SYCL IR images whose
 * frame headers are plain (kind "zstd", compressed, content "spirv", the declared size, and
 * listed_size as the Python loop sets it). listed, triple, section and the options are the
 * HostImage's fields (borrowed). */
static PyObject *make_leaf(PyObject *image_cls, const uint8_t *buf, Py_ssize_t len, Py_ssize_t start, Py_ssize_t base, Py_ssize_t index,
                           int fd, Py_ssize_t off, Py_ssize_t size, PyObject *listed, PyObject *triple, PyObject *section, PyObject *copt,
                           PyObject *lopt, PyObject **kind) {
    if (off < 0 || size < 0 || start < 0 || start > len || off > len - start)
        Py_RETURN_NONE;
    Py_ssize_t avail = len - start - off, n = size < 32 ? size : 32;
    const uint8_t *head = buf + start + off;
    if (n > avail)
        Py_RETURN_NONE;
#ifndef _WIN32
    /* The same bytes through the file: a page fault maps the 16 pages around it (fault-around),
     * which for 14k heads cost more than the reads, twice (again at munmap). 32 bytes: a zstd
     * frame's header and its first block header. */
    uint8_t copy[32];
    if (fd >= 0 && n > 0 && pread(fd, copy, (size_t)n, (off_t)(start + off)) == n)
        head = copy;
#endif
    int leaf = fs_leaf_kind(head, (size_t)(n < 4 ? n : 4));
    if (leaf == FS_LEAF_NONE)
        Py_RETURN_NONE;
    uint64_t stored = (uint64_t)size, declared = 0;
    int has_declared = 0, plain;
    if (leaf == FS_LEAF_ZSTD) {
        head_or_map ctx = {head, buf + start + off, (size_t)n};
        fs_src frame = {NULL, read_head_or_map, &ctx, 0, (uint64_t)size};
        /* size > avail: the Python loop reads such an image as far as the map goes */
        plain = size <= avail && is_sycl_ir(triple) && fs_zstd_facts(&frame, &stored, &has_declared, &declared) == FS_OK;
    } else
        plain = listed == Py_None; /* else the Python loop adds the cut-image warning */
    if (!plain)
        Py_RETURN_NONE;
    int zstd = leaf == FS_LEAF_ZSTD;
    *kind = leaf == FS_LEAF_LLVMBC ? s_llvmbc : s_spirv; /* what joins the report's ir list */
    PyObject *args[3] = {PyLong_FromSsize_t(index), PyLong_FromSsize_t(base + off), PyLong_FromUnsignedLongLong(stored)};
    PyObject *decl = zstd && has_declared ? PyLong_FromUnsignedLongLong(declared) : Py_NewRef(Py_None);
    PyObject *img = NULL;
    if (args[0] && args[1] && args[2] && decl) { /* positional, as _walk_host calls it */
        if (zstd)
            img = PyObject_CallFunctionObjArgs(image_cls, args[0], args[1], args[2], s_zstd, triple, Py_True, section, s_spirv,
                                               decl, NULL);
        else
            img = PyObject_CallFunctionObjArgs(image_cls, args[0], args[1], args[2], *kind, triple, Py_False, section, NULL);
    }
    for (int i = 0; i < 3; ++i)
        Py_XDECREF(args[i]);
    Py_XDECREF(decl);
    if (img == NULL)
        return NULL;
    /* Its fields are numbers, strings, None and the (empty) members list: it can be in no
     * reference cycle, so the cyclic collector need not scan it, as CPython untracks tuples of
     * atoms (measured: the young-generation collection 14k leaf Images set off took 3.2 ms of a
     * ~45 ms inspect of mkl, 0.6 ms untracked). Reference counting frees it all the same. */
    if (PyObject_GC_IsTracked(img)) /* not for a type without GC support: its header has no GC part */
        PyObject_GC_UnTrack(img);
    int rc = 0;
    if (copt != Py_None || lopt != Py_None)
        rc = PyObject_SetAttr(img, s_compile_options, copt) < 0 || PyObject_SetAttr(img, s_link_options, lopt) < 0 ? -1 : 0;
    if (rc == 0 && zstd && (listed != Py_None || stored != (uint64_t)size)) { /* the size the table claims */
        PyObject *claim = listed != Py_None ? Py_NewRef(listed) : PyLong_FromSsize_t(size);
        rc = claim == NULL || PyObject_SetAttr(img, s_listed_size, claim) < 0 ? -1 : 0;
        Py_XDECREF(claim);
    }
    if (rc < 0)
        Py_CLEAR(img);
    return img;
}

/* make_leaf for a HostImage (any object with its fields): Py_None when it lacks a plain offset or
 * size; NULL with an exception when it lacks another field. */
static PyObject *leaf_image(PyObject *host, PyObject *image_cls, const uint8_t *buf, Py_ssize_t len, Py_ssize_t start, Py_ssize_t base,
                            Py_ssize_t index, int fd, PyObject **kind) {
    Py_ssize_t off = get_ssize(host, s_offset), size = get_ssize(host, s_size);
    if (off < 0 || size < 0)
        Py_RETURN_NONE;
    PyObject *fields[5] = {NULL, NULL, NULL, NULL, NULL}, *names[5] = {s_listed_size, s_triple, s_section, s_compile_options, s_link_options};
    PyObject *img = NULL;
    int got = 1;
    for (int i = 0; got && i < 5; ++i)
        got = (fields[i] = PyObject_GetAttr(host, names[i])) != NULL;
    if (got)
        img = make_leaf(image_cls, buf, len, start, base, index, fd, off, size, fields[0], fields[1], fields[2], fields[3], fields[4], kind);
    for (int i = 0; i < 5; ++i)
        Py_XDECREF(fields[i]);
    return img;
}

/* Appends the leaf img (a new reference, consumed; NULL: make_leaf failed) to made and its kind to
 * kinds if new there (leaves and table_leaves); -1 with an exception. */
static int keep_leaf(PyObject *made, PyObject *kinds, PyObject *img, PyObject *kind) {
    int known = img == NULL ? -1 : PySequence_Contains(kinds, kind);
    int rc = img == NULL || known < 0 || PyList_Append(made, img) < 0 || (known == 0 && PyList_Append(kinds, kind) < 0) ? -1 : 0;
    Py_XDECREF(img);
    return rc;
}

PyDoc_STRVAR(leaves_doc, "leaves(buf, start, base, hosts, lo, hi, index, Image, fd=-1) -> (images, next, kinds)\n\n"
                         "Image objects for hosts[lo:hi] (HostImage, offsets relative to start) up to the first that is not a\n"
                         "plain SPIR-V or LLVM bitcode leaf (by its magic; no listed_size) or zstd-compressed SYCL IR with\n"
                         "plain frame headers: numbered from index, at base +\n"
                         "offset, as _walk_host makes them. next: the position of that first other image (hi: none);\n"
                         "kinds: the leaf kinds met, in first-seen order. fd >= 0: buf maps that file from offset 0, and the\n"
                         "magic is read with pread (no page mapped), else (or when the read falls short) from buf.");

static PyObject *leaves(PyObject *self, PyObject *args) {
    PyObject *obj, *hosts, *image_cls;
    Py_ssize_t start, base, lo, hi, index;
    int fd = -1;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "OnnO!nnnO|i", &obj, &start, &base, &PyList_Type, &hosts, &lo, &hi, &index, &image_cls, &fd))
        return NULL;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *made = PyList_New(0), *kinds = PyList_New(0);
    Py_ssize_t pos = lo < 0 ? 0 : lo, end = hi < PyList_Size(hosts) ? hi : PyList_Size(hosts);
    for (; made && kinds && pos < end; ++pos) {
        PyObject *kind = NULL, *img = leaf_image(PyList_GetItem(hosts, pos), image_cls, view.buf, view.len, start, base,
                                                 index + PyList_Size(made), fd, &kind);
        if (img == Py_None) {
            Py_DECREF(img);
            break;
        }
        if (keep_leaf(made, kinds, img, kind) < 0) {
            Py_CLEAR(made);
            break;
        }
    }
    PyBuffer_Release(&view);
    if (made == NULL || kinds == NULL) {
        Py_XDECREF(made);
        Py_XDECREF(kinds);
        return NULL;
    }
    return Py_BuildValue("(NnN)", made, pos, kinds);
}

/* The first PT_LOAD (vaddr, offset, filesz) holding [vaddr, vaddr + size), as ElfView.vaddr_to_offset
 * checks them (128-bit sums: Python's integers do not wrap); 1 and *off, or 0. */
static int segment_offset(const uint64_t *segs, Py_ssize_t nseg, uint64_t vaddr, uint64_t size, unsigned __int128 *off) {
    for (Py_ssize_t k = 0; k < nseg; ++k) {
        uint64_t p_vaddr = segs[3 * k], p_offset = segs[3 * k + 1], p_filesz = segs[3 * k + 2];
        if (p_vaddr <= vaddr && (unsigned __int128)vaddr + size <= (unsigned __int128)p_vaddr + p_filesz) {
            *off = (unsigned __int128)p_offset + (vaddr - p_vaddr);
            return 1;
        }
    }
    return 0;
}

/* Python ints of a list as u64 (0 with an exception when one is not). */
static uint64_t *u64_list(PyObject *list, Py_ssize_t *n) {
    *n = PyList_Size(list);
    uint64_t *out = PyMem_Malloc(sizeof(uint64_t) * (size_t)(*n ? *n : 1));
    if (out == NULL)
        return (uint64_t *)PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < *n; ++i) {
        out[i] = PyLong_AsUnsignedLongLong(PyList_GetItem(list, i));
        if (out[i] == (uint64_t)-1 && PyErr_Occurred()) {
            PyMem_Free(out);
            return NULL;
        }
    }
    return out;
}

/* A .tgtimg table and what resolving its entries takes: the arguments tgtimg and table_leaves
 * share (buf, table, count, lo, addends, slot, segments, starts, ends, names, triples, limit);
 * addends: slot_addends' records. */
typedef struct {
    Py_buffer view, addends_view;
    int have_view, have_addends;
    const uint8_t *t, *addends;
    Py_ssize_t count, lo, limit, nseg, nsec;
    PyObject *names, *triples; /* borrowed */
    unsigned long long slot;
    uint64_t *segs, *starts, *ends;
} tg_table;

static void tg_close(tg_table *tb) {
    if (tb->have_view)
        PyBuffer_Release(&tb->view);
    if (tb->have_addends)
        PyBuffer_Release(&tb->addends_view);
    PyMem_Free(tb->segs);
    PyMem_Free(tb->starts);
    PyMem_Free(tb->ends);
}

/* Parses the shared arguments from args[0:12]; -1 with an exception (tg_close it all the same). */
static int tg_open(tg_table *tb, PyObject *args) {
    PyObject *obj, *addends, *segments, *starts_l, *ends_l, *head = PyTuple_GetSlice(args, 0, 12);
    Py_ssize_t table, nend;
    memset(tb, 0, sizeof *tb);
    if (head == NULL)
        return -1;
    int ok = PyArg_ParseTuple(head, "OnnnOKO!O!O!O!O!n", &obj, &table, &tb->count, &tb->lo, &addends, &tb->slot,
                              &PyList_Type, &segments, &PyList_Type, &starts_l, &PyList_Type, &ends_l, &PyList_Type, &tb->names,
                              &PyList_Type, &tb->triples, &tb->limit);
    Py_DECREF(head);
    if (!ok || (tb->segs = u64_list(segments, &tb->nseg)) == NULL || (tb->starts = u64_list(starts_l, &tb->nsec)) == NULL ||
        (tb->ends = u64_list(ends_l, &nend)) == NULL)
        return -1;
    if (tb->nseg % 3 || nend != tb->nsec || PyList_Size(tb->names) != tb->nsec || PyList_Size(tb->triples) != tb->nsec || tb->count < 0 ||
        tb->limit < 0) {
        PyErr_SetString(PyExc_ValueError, "tgtimg: inconsistent tables");
        return -1;
    }
    tb->nseg /= 3;
    if (PyObject_GetBuffer(obj, &tb->view, PyBUF_SIMPLE) < 0)
        return -1;
    tb->have_view = 1;
    if (table < 0 || table > tb->view.len || tb->count > (tb->view.len - table) / 16) {
        PyErr_SetString(PyExc_ValueError, "tgtimg: table outside the buffer");
        return -1;
    }
    if (PyObject_GetBuffer(addends, &tb->addends_view, PyBUF_SIMPLE) < 0)
        return -1;
    tb->have_addends = 1;
    if (tb->count > tb->addends_view.len / 16) {
        PyErr_SetString(PyExc_ValueError, "tgtimg: fewer addend records than entries");
        return -1;
    }
    tb->addends = tb->addends_view.buf;
    tb->t = (const uint8_t *)tb->view.buf + table;
    if (tb->lo < 0)
        tb->lo = 0;
    return 0;
}

enum { SLOT_NONE, SLOT_ADDEND, SLOT_PYTHON };

/* One slot's record: {u64 addend, u64 state}, little-endian as fs_u64 reads them. */
static void put_slot(uint8_t *r, uint64_t addend, uint64_t state) {
    for (int b = 0; b < 8; ++b)
        r[b] = (uint8_t)(addend >> 8 * b), r[8 + b] = (uint8_t)(state >> 8 * b);
}

PyDoc_STRVAR(slot_addends_doc, "slot_addends(relocs, slot, count) -> bytes\n\n"
                               "relocs (slot address -> RELATIVE addend) as count 16-byte records {u64 addend, u64 state}, one per\n"
                               "slot + 16 * i: state 0 no relocation, 1 the addend, 2 one the Python loop takes (not an int in\n"
                               "[0, 2**64 - 1)). One pass over the dict instead of a lookup per entry and per pass.");

static PyObject *slot_addends(PyObject *self, PyObject *args) {
    PyObject *relocs, *key, *value;
    unsigned long long slot;
    Py_ssize_t count, pos = 0;
    if (!PyArg_ParseTuple(args, "O!Kn", &PyDict_Type, &relocs, &slot, &count))
        return NULL;
    if (count < 0 || (size_t)count > PY_SSIZE_T_MAX / 16) {
        PyErr_SetString(PyExc_ValueError, "slot_addends: bad count");
        return NULL;
    }
    uint8_t *rec = PyMem_Calloc((size_t)count ? (size_t)count : 1, 16);
    if (rec == NULL)
        return PyErr_NoMemory();
    while (PyDict_Next(relocs, &pos, &key, &value)) {
        if (!PyLong_Check(key))
            continue;
        unsigned long long at = PyLong_AsUnsignedLongLong(key);
        if (at == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear(); /* negative or past 2**64: no slot's address */
            continue;
        }
        if (at < slot || (at - slot) % 16 || (at - slot) / 16 >= (unsigned long long)count)
            continue;
        uint8_t *r = rec + 16 * ((at - slot) / 16);
        uint64_t addend = PyLong_Check(value) ? PyLong_AsUnsignedLongLong(value) : (uint64_t)-1, state = SLOT_ADDEND;
        if (addend == (uint64_t)-1) {
            PyErr_Clear();
            addend = 0, state = SLOT_PYTHON;
        }
        put_slot(r, addend, state);
    }
    PyObject *out = PyBytes_FromStringAndSize((const char *)rec, count * 16);
    PyMem_Free(rec);
    return out;
}

/* PyArg_ParseTuple over args[12:], the arguments after the shared ones. */
static int tail_args(PyObject *args, const char *format, ...) {
    PyObject *tail = PyTuple_GetSlice(args, 12, PY_SSIZE_T_MAX);
    if (tail == NULL)
        return -1;
    va_list va;
    va_start(va, format);
    int ok = PyArg_VaParse(tail, format, va);
    va_end(va);
    Py_DECREF(tail);
    return ok ? 0 : -1;
}

enum { TG_OK, TG_EMPTY, TG_STOP };

/* Entry i as _tgtimg_images' loop resolves it: the address (the relocation's addend wins), the
 * file offset from the first PT_LOAD holding it, and the index of the section holding that offset
 * (-1: none). TG_EMPTY: an empty slot; TG_STOP: the Python loop must take it (no address, no
 * segment, past limit, an addend that is not a plain u64). No Python call: it sets no exception. */
static int tg_entry(const tg_table *tb, Py_ssize_t i, uint64_t *vaddr, uint64_t *off, uint64_t *size, Py_ssize_t *sec) {
    *vaddr = fs_u64(tb->t + 16 * i);
    *size = fs_u64(tb->t + 16 * i + 8);
    if ((unsigned __int128)tb->slot + 16 * (unsigned __int128)i > UINT64_MAX)
        return TG_STOP; /* a slot past 2**64: the Python loop */
    uint64_t state = fs_u64(tb->addends + 16 * i + 8);
    if (state == SLOT_ADDEND)
        *vaddr = fs_u64(tb->addends + 16 * i);
    else if (state != SLOT_NONE) /* negative, huge or not an int: the Python loop decides */
        return TG_STOP;
    if (*vaddr == 0)
        return *size == 0 ? TG_EMPTY : TG_STOP;
    unsigned __int128 o;
    if (!segment_offset(tb->segs, tb->nseg, *vaddr, *size, &o) || o + *size > (unsigned __int128)tb->limit)
        return TG_STOP;
    *off = (uint64_t)o;
    Py_ssize_t lo_s = 0, hi_s = tb->nsec; /* bisect_right(starts, off) - 1 */
    while (lo_s < hi_s) {
        Py_ssize_t mid = (lo_s + hi_s) / 2;
        if (*off < tb->starts[mid])
            hi_s = mid;
        else
            lo_s = mid + 1;
    }
    *sec = lo_s - 1 >= 0 && *off < tb->ends[lo_s - 1] ? lo_s - 1 : -1;
    return TG_OK;
}

/* The HostImage of resolved entry i, positional as the Python loop makes it; NULL with an exception. */
static PyObject *make_host(PyObject *host_cls, Py_ssize_t i, uint64_t off, uint64_t size, uint64_t vaddr, PyObject *name, PyObject *triple) {
    PyObject *o = PyLong_FromUnsignedLongLong(off), *sz = PyLong_FromUnsignedLongLong(size), *va = PyLong_FromUnsignedLongLong(vaddr);
    PyObject *entry = PyLong_FromSsize_t(i), *img = NULL;
    if (o && sz && va && entry)
        img = PyObject_CallFunctionObjArgs(host_cls, o, sz, va, name, triple, Py_None, Py_None, Py_None, Py_None, entry, NULL);
    Py_XDECREF(o);
    Py_XDECREF(sz);
    Py_XDECREF(va);
    Py_XDECREF(entry);
    return img;
}

PyDoc_STRVAR(tgtimg_doc, "tgtimg(buf, table, count, lo, addends, slot, segments, starts, ends, names, triples, limit, HostImage,\n"
                         "       defer=False) -> (images, next)\n\n"
                         "_tgtimg_images' loop from entry lo of the count {u64 vaddr, u64 size} entries at buf[table:]: the\n"
                         "address from addends (slot_addends) else the table, the file offset from the first PT_LOAD\n"
                         "in segments (flat [vaddr, offset, filesz, ...]), the section from the non-overlapping, sorted\n"
                         "starts/ends (names, triples). Stops before the first entry the Python loop must take (no address,\n"
                         "no segment, past limit); next is its index (count: none). defer: no HostImage for an entry whose\n"
                         "section has a triple (table_leaves walks those).");

static PyObject *tgtimg(PyObject *self, PyObject *args) {
    tg_table tb;
    PyObject *host_cls, *made = NULL;
    int defer = 0;
    Py_ssize_t i = 0;
    if (tg_open(&tb, args) < 0 || tail_args(args, "O|p", &host_cls, &defer) < 0)
        goto done;
    made = PyList_New(0);
    for (i = tb.lo; made && i < tb.count; ++i) {
        uint64_t vaddr, off, size;
        Py_ssize_t k;
        int rc = tg_entry(&tb, i, &vaddr, &off, &size, &k);
        if (rc == TG_EMPTY)
            continue;
        if (rc != TG_OK)
            break;
        PyObject *name = k >= 0 ? PyList_GetItem(tb.names, k) : Py_None, *triple = k >= 0 ? PyList_GetItem(tb.triples, k) : Py_None;
        if (defer && triple != Py_None)
            continue;
        PyObject *img = make_host(host_cls, i, off, size, vaddr, name, triple);
        if (img == NULL || PyList_Append(made, img) < 0)
            Py_CLEAR(made);
        Py_XDECREF(img);
    }
done:
    tg_close(&tb);
    return made == NULL ? NULL : Py_BuildValue("(Nn)", made, i);
}

/* Images <= 32 kB apart on average are packed: a run of up to this many is read ahead in one
 * sweep (inspector._read_ahead's rule, for the heads table_leaves reads with pread). */
#define TG_READAHEAD_ENTRIES 1024
#define TG_DENSE_BYTES_PER_IMAGE (32 << 10)
#define TG_HEAD_SPAN (64 << 10)

/* Whether the page holding buf[at] is in the page cache (mincore on the map; 0 when unsure). */
static int resident(const tg_table *tb, uint64_t at) {
#if defined(__linux__)
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || at >= (uint64_t)tb->view.len)
        return 0;
    uintptr_t addr = (uintptr_t)tb->view.buf + (uintptr_t)at;
    unsigned char vec = 0;
    return mincore((void *)(addr - addr % (uintptr_t)page), 1, &vec) == 0 && (vec & 1);
#else
    (void)tb, (void)at;
    return 0;
#endif
}

/* POSIX_FADV_WILLNEED over entries [i, the next multiple of TG_READAHEAD_ENTRIES) when their
 * images are densely packed: with an empty page cache one synchronous read per head made inspect
 * 5-15x slower than cat (advice only: never fails). */
static void tg_read_ahead(const tg_table *tb, Py_ssize_t i, int fd, Py_ssize_t start) {
#if !defined(_WIN32) && defined(POSIX_FADV_WILLNEED)
    Py_ssize_t end = i - i % TG_READAHEAD_ENTRIES + TG_READAHEAD_ENTRIES;
    if (end > tb->count)
        end = tb->count;
    uint64_t va, first, last, first_size, last_size;
    Py_ssize_t k, a = i, b = end - 1;
    while (a <= b && tg_entry(tb, a, &va, &first, &first_size, &k) != TG_OK)
        ++a;
    while (b > a && tg_entry(tb, b, &va, &last, &last_size, &k) != TG_OK)
        --b;
    if (a > b)
        return;
    if (a == b)
        last = first, last_size = first_size;
    uint64_t lo = (uint64_t)start + first, hi = (uint64_t)start + last + (last_size < TG_HEAD_SPAN ? last_size : TG_HEAD_SPAN);
    if (hi <= lo || hi - lo > (uint64_t)(end - i) * TG_DENSE_BYTES_PER_IMAGE)
        return;
    /* Both ends of the run already in the page cache: the advice would only walk ~2k cached
     * pages per run (4% of a warm inspect of mkl), so it is left out. mincore on the map asks
     * without reading (a preadv2 RWF_NOWAIT probe that missed started a one-page read that
     * made the advice after it 5x slower); where the kernel does not tell page-cache residency
     * (a file the caller may not write), it answers "not resident" and the advice is given. */
    if (resident(tb, start + first) && resident(tb, start + last))
        return;
    (void)posix_fadvise(fd, (off_t)lo, (off_t)(hi - lo), POSIX_FADV_WILLNEED);
#else
    (void)tb, (void)i, (void)fd, (void)start;
#endif
}

PyDoc_STRVAR(table_leaves_doc, "table_leaves(buf, table, count, lo, addends, slot, segments, starts, ends, names, triples, limit,\n"
                               "             start, base, index, Image, fd=-1, HostImage=None) -> (images, next, kinds, host)\n\n"
                               "tgtimg and leaves in one pass, no HostImage made: from entry lo, the Image of each entry in a\n"
                               "section with a triple that is a plain leaf (as leaves decides), numbered from index, up to the\n"
                               "first entry that is not (tgtimg would stop there, its section has no triple, or it is not a plain\n"
                               "leaf); next: that entry (count: none); kinds: the leaf kinds met, in first-seen order; host: that\n"
                               "entry's HostImage when it stopped at a resolved image that is not a plain leaf, else None. Offsets are\n"
                               "relative to start, the region's position in buf (base: in the file); with fd >= 0 (buf maps\n"
                               "that file from offset 0) heads are read with pread and densely packed runs are read ahead.");

static PyObject *table_leaves(PyObject *self, PyObject *args) {
    tg_table tb;
    PyObject *image_cls, *host_cls = Py_None, *made = NULL, *kinds = NULL, *host = NULL;
    Py_ssize_t start, base, index, i = 0;
    int fd = -1;
    if (tg_open(&tb, args) < 0 || tail_args(args, "nnnO|iO", &start, &base, &index, &image_cls, &fd, &host_cls) < 0)
        goto done;
    made = PyList_New(0);
    kinds = PyList_New(0);
    for (i = tb.lo; made && kinds && i < tb.count; ++i) {
        /* Each run of entries once, at its start: a call that starts inside a run continues one
         * an earlier call began (the scan starts at entry 0 and goes on where it stopped). */
        if (fd >= 0 && i % TG_READAHEAD_ENTRIES == 0)
            tg_read_ahead(&tb, i, fd, start);
        uint64_t vaddr, off, size;
        Py_ssize_t k;
        int rc = tg_entry(&tb, i, &vaddr, &off, &size, &k);
        if (rc == TG_EMPTY)
            continue;
        if (rc != TG_OK || k < 0)
            break;
        PyObject *triple = PyList_GetItem(tb.triples, k), *kind = NULL;
        if (triple == Py_None)
            break; /* its descriptor may name the triple: tgtimg made its HostImage */
        PyObject *name = PyList_GetItem(tb.names, k);
        PyObject *img = make_leaf(image_cls, tb.view.buf, tb.view.len, start, base, index + PyList_Size(made), fd, (Py_ssize_t)off,
                                  (Py_ssize_t)size, Py_None, triple, name, Py_None, Py_None, &kind);
        if (img == Py_None) { /* a fat binary, say: its HostImage, for the Python loop */
            Py_DECREF(img);
            if (host_cls != Py_None && (host = make_host(host_cls, i, off, size, vaddr, name, triple)) == NULL)
                Py_CLEAR(made);
            break;
        }
        if (keep_leaf(made, kinds, img, kind) < 0) {
            Py_CLEAR(made);
            break;
        }
    }
done:
    tg_close(&tb);
    if (made == NULL || kinds == NULL) {
        Py_XDECREF(made);
        Py_XDECREF(kinds);
        return NULL;
    }
    return Py_BuildValue("(NnNN)", made, i, kinds, host ? host : Py_NewRef(Py_None));
}

PyDoc_STRVAR(relative_records_doc, "relative_records(buf, table, lo, hi, first, end, stride, records) -> filled\n\n"
                                   "For rows lo..hi of the Elf64_Rela table at buf[table:]: each R_X86_64_RELATIVE relocation with\n"
                                   "first <= r_offset < end on a stride boundary is written into records (a bytearray of 16 bytes per\n"
                                   "slot first + stride * i, as slot_addends lays them out: u64 addend, u64 state 1, or 2 for a\n"
                                   "negative addend; a later row for the slot overwrites it). filled: slots that got their first record.");

static PyObject *relative_records(PyObject *self, PyObject *args) {
    PyObject *obj, *out;
    Py_ssize_t table, lo, hi, filled = 0;
    unsigned long long first, end, stride;
    Py_buffer view, rec;
    if (!PyArg_ParseTuple(args, "OnnnKKKO", &obj, &table, &lo, &hi, &first, &end, &stride, &out))
        return NULL;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(out, &rec, PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    int rc = 0;
    if (table < 0 || lo < 0 || hi < lo || table > view.len || hi > (view.len - table) / 24 || stride == 0 || end < first ||
        (end - first) / stride > (unsigned long long)(rec.len / 16)) {
        PyErr_SetString(PyExc_ValueError, "relative_records: rows outside the buffer, or fewer records than slots");
        rc = -1;
    }
    const uint8_t *t = (const uint8_t *)view.buf + table;
    uint8_t *records = rec.buf;
    for (Py_ssize_t i = lo; rc == 0 && i < hi; ++i) {
        const uint8_t *row = t + 24 * i;
        uint64_t r_offset = fs_u64(row), r_info = fs_u64(row + 8), addend = fs_u64(row + 16);
        if (r_offset < first || r_offset >= end || (r_offset - first) % stride || (r_info & 0xFFFFFFFFu) != 8)
            continue;
        uint8_t *r = records + 16 * ((r_offset - first) / stride);
        uint64_t state = addend >> 63 ? SLOT_PYTHON : SLOT_ADDEND; /* negative (Elf64_Sxword): the Python loop's */
        filled += fs_u64(r + 8) == SLOT_NONE;
        put_slot(r, addend, state);
    }
    PyBuffer_Release(&rec);
    PyBuffer_Release(&view);
    return rc < 0 ? NULL : PyLong_FromSsize_t(filled);
}


/* ---- NVIDIA fat binaries -------------------------------------------------------------------- */

#define FS_FLAG_ARCH_SPECIFIC 0x100000u
#define FS_FLAG_FAMILY_SPECIFIC 0x200000u
#define FS_FLAG_ZSTD 0x8000u

typedef struct {
    PyObject *entry_cls;          /* FatbinEntry (a tuple subclass) */
    newfunc tuple_new;            /* tuple.__new__: makes one from a row without its Python __new__ */
    PyObject *targets[2][256][3]; /* FatbinEntry.target by (ptx, arch, plain/a/f), made once per call */
    uint64_t base;                /* file offset of the buffer's first byte */
} fatbin_ctx;

/* FatbinEntry.target: compute_XY for PTX, else sm_XY; "a" when arch-specific, else "f" when
 * family-specific (a new reference). */
static PyObject *fatbin_target(fatbin_ctx *x, const fs_fatbin_entry *e) {
    int ptx = e->kind == 1, v = (e->flags & FS_FLAG_ARCH_SPECIFIC) ? 1 : (e->flags & FS_FLAG_FAMILY_SPECIFIC) ? 2 : 0;
    PyObject **slot = e->arch < 256 ? &x->targets[ptx][e->arch][v] : NULL;
    if (slot && *slot)
        return Py_NewRef(*slot);
    PyObject *t = PyUnicode_FromFormat("%s_%lu%s", ptx ? "compute" : "sm", (unsigned long)e->arch, v == 1 ? "a" : v == 2 ? "f" : "");
    if (t && slot)
        *slot = Py_NewRef(t);
    return t;
}

/* One FatbinEntry for the entry at rel (relative to the buffer's start), its header and payload
 * at h: the fields in its order, as fatbin._entries / _checked_entries make them. */
static PyObject *fatbin_entry(fatbin_ctx *x, const uint8_t *h, const fs_fatbin_entry *e, uint64_t rel, Py_ssize_t container) {
    PyObject *kind = e->kind == 1 ? s_ptx : e->kind == 2 ? s_cubin : e->kind == 8 ? s_ltoir : s_unknown;
    int compressed = (e->flags & FS_FATBIN_COMPRESSED) != 0;
    PyObject *compression = !compressed ? Py_None : (e->flags & FS_FLAG_ZSTD) ? s_zstd : s_lz4;
    const uint8_t *text;
    size_t n;
    PyObject *options = fs_fatbin_options(h, e, &text, &n) ? PyUnicode_DecodeASCII((const char *)text, (Py_ssize_t)n, NULL)
                                                            : Py_NewRef(Py_None);
    PyObject *name = fs_fatbin_name(h, e, &text, &n) ? PyUnicode_DecodeUTF8((const char *)text, (Py_ssize_t)n, "replace")
                                                     : Py_NewRef(Py_None);
    PyObject *target = fatbin_target(x, e), *row = NULL, *args = NULL, *out = NULL;
    uint64_t at = x->base + rel;
    if (options && name && target)
        row = Py_BuildValue("(KOHkOO(HH)KkKKKKOOOnO)", (unsigned long long)at, kind, e->kind, (unsigned long)e->arch,
                            (e->flags & FS_FLAG_ARCH_SPECIFIC) ? Py_True : Py_False, (e->flags & FS_FLAG_FAMILY_SPECIFIC) ? Py_True : Py_False,
                            e->major, e->minor, (unsigned long long)e->flags, (unsigned long)e->header_size,
                            (unsigned long long)(at + e->header_size), (unsigned long long)e->size,
                            (unsigned long long)(compressed ? e->csize : 0), (unsigned long long)(compressed ? e->dsize : 0), compression,
                            options, name, container, target);
    if (row)
        args = PyTuple_Pack(1, row);
    if (args)
        out = x->tuple_new((PyTypeObject *)x->entry_cls, args, NULL);
    Py_XDECREF(args);
    Py_XDECREF(row);
    Py_XDECREF(options);
    Py_XDECREF(name);
    Py_XDECREF(target);
    return out;
}

/* Appends container c's entries other than LTO IR (fatbin reads, checks and leaves those out:
 * nvJitLink input, never a module) to entries; -1 with an exception. */
static int fatbin_entries(fatbin_ctx *x, const uint8_t *p, const fs_fatbin *c, Py_ssize_t index, PyObject *entries) {
    fs_fatbin_entry e;
    for (uint64_t eo = 0; eo < c->fat_size; eo += e.header_size + e.size) { /* fs_fatbin_tiles checked every step */
        fs_fatbin_entry_at(p + c->body + eo, &e);
        if (e.kind == 8)
            continue;
        PyObject *entry = fatbin_entry(x, p + c->body + eo, &e, c->body + eo, index);
        int rc = entry == NULL ? -1 : PyList_Append(entries, entry);
        Py_XDECREF(entry);
        if (rc < 0)
            return -1;
    }
    return 0;
}

PyDoc_STRVAR(fatbin_doc, "fatbin(buf, start, size, base, strict, first_index, FatbinEntry) -> (entries, containers, rejected) | None\n\n"
                         "The NVIDIA fat binary containers in buf[start:start+size], whose first byte is at file offset base,\n"
                         "numbered from first_index: their entries (LTO IR left out) as FatbinEntry, in file order, and the\n"
                         "containers as native-endian u64 triples (offset, version, fat_size) in bytes. strict: as parse_fatbin\n"
                         "reads .nv_fatbin or a .fatbin file (containers and zero padding only; None where it raises); else\n"
                         "as scan_sections' scan: every magic match whose structure holds, and how many matches it rejected.");

static PyObject *fatbin(PyObject *self, PyObject *args) {
    PyObject *obj, *entry_cls;
    Py_ssize_t start, size, first;
    unsigned long long base;
    int strict;
    Py_buffer view;
    const uint8_t *p;
    if (!PyArg_ParseTuple(args, "OnnKpnO!", &obj, &start, &size, &base, &strict, &first, &PyType_Type, &entry_cls))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)entry_cls, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "FatbinEntry must be a tuple subclass");
        return NULL;
    }
    if (get_span(obj, start, size, &view, &p) < 0)
        return NULL;
    fatbin_ctx *x = PyMem_Calloc(1, sizeof *x);
    PyObject *entries = x ? PyList_New(0) : PyErr_NoMemory();
    uint64_t *spans = NULL, pos = 0, rejected = 0;
    size_t n = 0, cap = 0;
    int rc = FS_DONE;
    if (x) {
        x->entry_cls = entry_cls;
        x->tuple_new = (newfunc)PyType_GetSlot(&PyTuple_Type, Py_tp_new);
        x->base = (uint64_t)base;
    }
    fs_fatbin c;
    while (entries) {
        rc = strict ? fs_fatbin_next(p, (uint64_t)size, &pos, &c) : fs_fatbin_scan_next(p, (uint64_t)size, &pos, &c, &rejected);
        if (rc != FS_OK)
            break;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            uint64_t *grown = PyMem_Realloc(spans, cap * 3 * sizeof *spans);
            if (grown == NULL) {
                PyErr_NoMemory();
                Py_CLEAR(entries);
                break;
            }
            spans = grown;
        }
        spans[3 * n] = (uint64_t)base + c.offset;
        spans[3 * n + 1] = c.version;
        spans[3 * n + 2] = c.fat_size;
        if (fatbin_entries(x, p, &c, first + (Py_ssize_t)n, entries) < 0)
            Py_CLEAR(entries);
        ++n;
    }
    PyBuffer_Release(&view);
    if (x) {
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 256; ++j)
                for (int k = 0; k < 3; ++k)
                    Py_XDECREF(x->targets[i][j][k]);
        PyMem_Free(x);
    }
    PyObject *out = NULL;
    if (entries && rc == FS_DOUBT)
        out = Py_NewRef(Py_None);
    else if (entries)
        out = Py_BuildValue("(Oy#K)", entries, spans ? (const char *)spans : "", (Py_ssize_t)(n * 3 * sizeof *spans), (unsigned long long)rejected);
    Py_XDECREF(entries);
    PyMem_Free(spans);
    return out;
}


PyDoc_STRVAR(find_magics_doc, "find_magics(buf, start, size, needles, cap) -> [(position, index)]\n\n"
                              "Every match of the byte strings needles (at most 8, each 2-16 bytes) wholly inside\n"
                              "buf[start:start+size], as (position in buf, needle index) in position order (ties: the lowest\n"
                              "index), at most cap of them: aotwheel.carried's search for standalone device images.");

static PyObject *find_magics(PyObject *self, PyObject *args) {
    PyObject *obj, *needles;
    Py_ssize_t start, size, cap;
    Py_buffer view;
    const uint8_t *p;
    fs_needle nd[FS_MAX_NEEDLES];
    if (!PyArg_ParseTuple(args, "OnnO!n", &obj, &start, &size, &PyTuple_Type, &needles, &cap))
        return NULL;
    Py_ssize_t n = PyTuple_Size(needles);
    if (n < 1 || n > FS_MAX_NEEDLES) {
        PyErr_SetString(PyExc_ValueError, "find_magics takes 1 to 8 needles");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *b = PyTuple_GetItem(needles, i);
        if (b == NULL || !PyBytes_Check(b) || PyBytes_Size(b) < 2 || PyBytes_Size(b) > FS_MAX_NEEDLE) {
            PyErr_SetString(PyExc_ValueError, "find_magics: each needle is bytes of 2 to 16");
            return NULL;
        }
        nd[i].bytes = (const uint8_t *)PyBytes_AsString(b);
        nd[i].len = (size_t)PyBytes_Size(b);
    }
    if (get_span(obj, start, size, &view, &p) < 0)
        return NULL;
    PyObject *out = PyList_New(0);
    uint64_t pos = 0;
    while (out && PyList_Size(out) < cap) {
        int which = 0;
        uint64_t at;
        Py_BEGIN_ALLOW_THREADS
        at = fs_find_needles(p, (uint64_t)size, pos, nd, (int)n, &which);
        Py_END_ALLOW_THREADS
        if (at >= (uint64_t)size)
            break;
        PyObject *row = Py_BuildValue("(ni)", start + (Py_ssize_t)at, which);
        if (row == NULL || PyList_Append(out, row) < 0)
            Py_CLEAR(out);
        Py_XDECREF(row);
        pos = at + 1;
    }
    PyBuffer_Release(&view);
    return out;
}

PyDoc_STRVAR(spirv_size_doc, "spirv_size(buf, start, size) -> int\n\n"
                             "The bytes of the SPIR-V module at buf[start:start+size] (aotwheel.backends.intel.standalone.spirv_size's\n"
                             "rules: header, instructions up to the last OpFunctionEnd), 0 when there is none.");

static PyObject *spirv_size(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t start, size;
    Py_buffer view;
    const uint8_t *p;
    if (!PyArg_ParseTuple(args, "Onn", &obj, &start, &size))
        return NULL;
    if (get_span(obj, start, size, &view, &p) < 0)
        return NULL;
    uint64_t n = fs_spirv_extent(p, (uint64_t)size);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLongLong((unsigned long long)n);
}

static PyMethodDef methods[] = {
    {"relative_records", relative_records, METH_VARARGS, relative_records_doc},
    {"tgtimg", tgtimg, METH_VARARGS, tgtimg_doc},
    {"table_leaves", table_leaves, METH_VARARGS, table_leaves_doc},
    {"slot_addends", slot_addends, METH_VARARGS, slot_addends_doc},
    {"leaves", leaves, METH_VARARGS, leaves_doc},
    {"zebin_summary", zebin_summary, METH_VARARGS, zebin_summary_doc},
    {"fat_binary", fat_binary, METH_VARARGS, fat_binary_doc},
    {"tgtsym", tgtsym, METH_VARARGS, tgtsym_doc},
    {"fatbin", fatbin, METH_VARARGS, fatbin_doc},
    {"find_magics", find_magics, METH_VARARGS, find_magics_doc},
    {"spirv_size", spirv_size, METH_VARARGS, spirv_size_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastscan", "C scanning loops for aotwheel.inspector (see aotwheel.formats.fastscan).", -1, methods,
};

PyMODINIT_FUNC PyInit__fastscan(void) { return intern_all() < 0 ? NULL : PyModule_Create(&module); }
