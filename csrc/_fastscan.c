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

static int intern_all(void) {
    struct { PyObject **slot; const char *text; } names[] = {
        {&s_offset, "offset"}, {&s_size, "size"}, {&s_triple, "triple"}, {&s_section, "section"}, {&s_listed_size, "listed_size"},
        {&s_compile_options, "compile_options"}, {&s_link_options, "link_options"}, {&s_spirv, "spirv"}, {&s_llvmbc, "llvmbc"}, {&s_zstd, "zstd"},
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

/* One leaf Image, as _walk_host makes it; NULL with an exception, or Py_None: not a plain leaf.
 * SPIR-V and bitcode images without a listed size (the Python loop adds that warning), and
 * zstd-compressed SYCL IR images whose frame headers are plain (kind "zstd", compressed, content
 * "spirv", the declared size, and listed_size as the Python loop sets it). */
static PyObject *leaf_image(PyObject *host, PyObject *image_cls, const uint8_t *buf, Py_ssize_t len, Py_ssize_t start, Py_ssize_t base,
                            Py_ssize_t index, int fd, PyObject **kind) {
    Py_ssize_t off = get_ssize(host, s_offset), size = get_ssize(host, s_size);
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
    PyObject *listed = PyObject_GetAttr(host, s_listed_size), *triple = listed ? PyObject_GetAttr(host, s_triple) : NULL;
    if (triple == NULL) {
        Py_XDECREF(listed);
        return NULL;
    }
    uint64_t stored = (uint64_t)size, declared = 0;
    int has_declared = 0, plain;
    if (leaf == FS_LEAF_ZSTD) {
        head_or_map ctx = {head, buf + start + off, (size_t)n};
        fs_src frame = {NULL, read_head_or_map, &ctx, 0, (uint64_t)size};
        /* size > avail: the Python loop reads such an image as far as the map goes */
        plain = size <= avail && is_sycl_ir(triple) && fs_zstd_facts(&frame, &stored, &has_declared, &declared) == FS_OK;
    } else
        plain = listed == Py_None; /* else the Python loop adds the cut-image warning */
    if (!plain) {
        Py_DECREF(listed);
        Py_DECREF(triple);
        Py_RETURN_NONE;
    }
    int zstd = leaf == FS_LEAF_ZSTD;
    *kind = leaf == FS_LEAF_LLVMBC ? s_llvmbc : s_spirv; /* what joins the report's ir list */
    PyObject *section = PyObject_GetAttr(host, s_section);
    PyObject *args[3] = {PyLong_FromSsize_t(index), PyLong_FromSsize_t(base + off), PyLong_FromUnsignedLongLong(stored)};
    PyObject *decl = zstd && has_declared ? PyLong_FromUnsignedLongLong(declared) : Py_NewRef(Py_None);
    PyObject *img = NULL;
    if (args[0] && args[1] && args[2] && decl && triple && section) { /* positional, as _walk_host calls it */
        if (zstd)
            img = PyObject_CallFunctionObjArgs(image_cls, args[0], args[1], args[2], s_zstd, triple, Py_True, section, s_spirv,
                                               decl, NULL);
        else
            img = PyObject_CallFunctionObjArgs(image_cls, args[0], args[1], args[2], *kind, triple, Py_False, section, NULL);
    }
    for (int i = 0; i < 3; ++i)
        Py_XDECREF(args[i]);
    Py_XDECREF(decl);
    Py_DECREF(triple);
    Py_XDECREF(section);
    if (img == NULL) {
        Py_DECREF(listed);
        return NULL;
    }
    PyObject *copt = PyObject_GetAttr(host, s_compile_options), *lopt = copt ? PyObject_GetAttr(host, s_link_options) : NULL;
    int rc = copt && lopt ? 0 : -1;
    if (rc == 0 && (copt != Py_None || lopt != Py_None))
        rc = PyObject_SetAttr(img, s_compile_options, copt) < 0 || PyObject_SetAttr(img, s_link_options, lopt) < 0 ? -1 : 0;
    if (rc == 0 && zstd && (listed != Py_None || stored != (uint64_t)size)) { /* the size the table claims */
        PyObject *claim = listed != Py_None ? Py_NewRef(listed) : PyLong_FromSsize_t(size);
        rc = claim == NULL || PyObject_SetAttr(img, s_listed_size, claim) < 0 ? -1 : 0;
        Py_XDECREF(claim);
    }
    Py_XDECREF(copt);
    Py_XDECREF(lopt);
    Py_DECREF(listed);
    if (rc < 0)
        Py_CLEAR(img);
    return img;
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
        int known = img == NULL ? -1 : PySequence_Contains(kinds, kind);
        if (img == NULL || known < 0 || PyList_Append(made, img) < 0 || (known == 0 && PyList_Append(kinds, kind) < 0)) {
            Py_XDECREF(img);
            Py_CLEAR(made);
            break;
        }
        Py_DECREF(img);
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

PyDoc_STRVAR(tgtimg_doc, "tgtimg(buf, table, count, lo, relocs, slot, segments, starts, ends, names, triples, limit, HostImage)\n"
                         "    -> (images, next)\n\n"
                         "_tgtimg_images' loop from entry lo of the count {u64 vaddr, u64 size} entries at buf[table:]: the\n"
                         "address from relocs (slot address -> addend) else the table, the file offset from the first PT_LOAD\n"
                         "in segments (flat [vaddr, offset, filesz, ...]), the section from the non-overlapping, sorted\n"
                         "starts/ends (names, triples). Stops before the first entry the Python loop must take (no address,\n"
                         "no segment, past limit); next is its index (count: none).");

static PyObject *tgtimg(PyObject *self, PyObject *args) {
    PyObject *obj, *relocs, *segments, *starts_l, *ends_l, *names, *triples, *host_cls;
    Py_ssize_t table, count, lo, limit;
    unsigned long long slot;
    if (!PyArg_ParseTuple(args, "OnnnO!KO!O!O!O!O!nO", &obj, &table, &count, &lo, &PyDict_Type, &relocs, &slot, &PyList_Type, &segments,
                          &PyList_Type, &starts_l, &PyList_Type, &ends_l, &PyList_Type, &names, &PyList_Type, &triples, &limit, &host_cls))
        return NULL;
    Py_ssize_t nseg, nsec, nend;
    uint64_t *segs = u64_list(segments, &nseg), *starts = segs ? u64_list(starts_l, &nsec) : NULL, *ends = starts ? u64_list(ends_l, &nend) : NULL;
    Py_buffer view;
    int have_view = 0;
    PyObject *made = NULL;
    Py_ssize_t i = lo < 0 ? 0 : lo;
    if (ends == NULL)
        goto done;
    if (nseg % 3 || nend != nsec || PyList_Size(names) != nsec || PyList_Size(triples) != nsec || count < 0 || limit < 0) {
        PyErr_SetString(PyExc_ValueError, "tgtimg: inconsistent tables");
        goto done;
    }
    nseg /= 3;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0)
        goto done;
    have_view = 1;
    if (table < 0 || table > view.len || count > (view.len - table) / 16) {
        PyErr_SetString(PyExc_ValueError, "tgtimg: table outside the buffer");
        goto done;
    }
    made = PyList_New(0);
    const uint8_t *t = (const uint8_t *)view.buf + table;
    for (; made && i < count; ++i) {
        uint64_t vaddr = fs_u64(t + 16 * i), size = fs_u64(t + 16 * i + 8);
        if ((unsigned __int128)slot + 16 * (unsigned __int128)i > UINT64_MAX)
            break; /* a slot past 2**64: the Python loop */
        PyObject *key = PyLong_FromUnsignedLongLong(slot + 16 * (unsigned long long)i);
        if (key == NULL) {
            Py_CLEAR(made); /* out of memory: NULL with the exception */
            break;
        }
        PyObject *addend = PyDict_GetItemWithError(relocs, key);
        Py_DECREF(key);
        if (addend == NULL && PyErr_Occurred()) {
            Py_CLEAR(made);
            break;
        }
        if (addend != NULL) {
            vaddr = PyLong_Check(addend) ? PyLong_AsUnsignedLongLong(addend) : (uint64_t)-1;
            if (vaddr == (uint64_t)-1) { /* negative, huge or not an int: the Python loop decides */
                PyErr_Clear();
                break;
            }
        }
        if (vaddr == 0) {
            if (size == 0)
                continue; /* empty slot */
            break;
        }
        unsigned __int128 off;
        if (!segment_offset(segs, nseg, vaddr, size, &off) || off + size > (unsigned __int128)limit)
            break;
        Py_ssize_t lo_s = 0, hi_s = nsec; /* bisect_right(starts, off) - 1 */
        while (lo_s < hi_s) {
            Py_ssize_t mid = (lo_s + hi_s) / 2;
            if (off < starts[mid])
                hi_s = mid;
            else
                lo_s = mid + 1;
        }
        Py_ssize_t k = lo_s - 1;
        PyObject *name = Py_None, *triple = Py_None;
        if (k >= 0 && off < ends[k]) {
            name = PyList_GetItem(names, k);
            triple = PyList_GetItem(triples, k);
        }
        PyObject *o = PyLong_FromUnsignedLongLong((uint64_t)off), *sz = PyLong_FromUnsignedLongLong(size), *va = PyLong_FromUnsignedLongLong(vaddr);
        PyObject *img = NULL;
        if (o && sz && va)
            img = PyObject_CallFunctionObjArgs(host_cls, o, sz, va, name, triple, Py_None, Py_None, NULL);
        Py_XDECREF(o);
        Py_XDECREF(sz);
        Py_XDECREF(va);
        if (img == NULL || PyList_Append(made, img) < 0)
            Py_CLEAR(made);
        Py_XDECREF(img);
    }
done:
    if (have_view)
        PyBuffer_Release(&view);
    PyMem_Free(segs);
    PyMem_Free(starts);
    PyMem_Free(ends);
    return made == NULL ? NULL : Py_BuildValue("(Nn)", made, i);
}

PyDoc_STRVAR(relative_doc, "relative(buf, table, lo, hi, first, end, stride, found)\n\n"
                           "For rows lo..hi of the Elf64_Rela table at buf[table:]: each R_X86_64_RELATIVE relocation with\n"
                           "first <= r_offset < end on a stride boundary sets found[r_offset] = addend (signed), as\n"
                           "_slot_relocs' loop does.");

static PyObject *relative(PyObject *self, PyObject *args) {
    PyObject *obj, *found;
    Py_ssize_t table, lo, hi;
    unsigned long long first, end, stride;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "OnnnKKKO!", &obj, &table, &lo, &hi, &first, &end, &stride, &PyDict_Type, &found))
        return NULL;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    int rc = 0;
    if (table < 0 || lo < 0 || hi < lo || table > view.len || hi > (view.len - table) / 24 || stride == 0) {
        PyErr_SetString(PyExc_ValueError, "relative: rows outside the buffer");
        rc = -1;
    }
    const uint8_t *t = (const uint8_t *)view.buf + table;
    for (Py_ssize_t i = lo; rc == 0 && i < hi; ++i) {
        const uint8_t *row = t + 24 * i;
        uint64_t r_offset = fs_u64(row), r_info = fs_u64(row + 8);
        if (r_offset < first || r_offset >= end || (r_offset - first) % stride || (r_info & 0xFFFFFFFFu) != 8)
            continue;
        PyObject *k = PyLong_FromUnsignedLongLong(r_offset), *v = PyLong_FromLongLong((long long)fs_u64(row + 16));
        rc = k && v ? PyDict_SetItem(found, k, v) : -1;
        Py_XDECREF(k);
        Py_XDECREF(v);
    }
    PyBuffer_Release(&view);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"relative", relative, METH_VARARGS, relative_doc},
    {"tgtimg", tgtimg, METH_VARARGS, tgtimg_doc},
    {"leaves", leaves, METH_VARARGS, leaves_doc},
    {"zebin_summary", zebin_summary, METH_VARARGS, zebin_summary_doc},
    {"fat_binary", fat_binary, METH_VARARGS, fat_binary_doc},
    {"tgtsym", tgtsym, METH_VARARGS, tgtsym_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastscan", "C scanning loops for aotwheel.inspector (see aotwheel.formats.fastscan).", -1, methods,
};

PyMODINIT_FUNC PyInit__fastscan(void) { return intern_all() < 0 ? NULL : PyModule_Create(&module); }
