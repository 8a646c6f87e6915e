/* The pure-C core of aotwheel._fastscan, shared by the extension (csrc/_fastscan.c) and the
 * libFuzzer target (fuzz/fastscan_fuzzer.c). No Python, no allocation outside fs_tgtsym.
 *
 * Each reader mirrors one Python reader for the layouts real binaries use and answers FS_DOUBT
 * for anything else: the caller then runs the Python reader, which gives the answer, warning or
 * error message. So every check here may be stricter than Python's, never looser, and every read
 * is bounds-checked against the buffer it was given (sizes from the input are never trusted).
 *
 *   fs_ar_open/fs_ar_next  formats/ar.py read_ar (GNU names and the '//' table; BSD names: doubt)
 *   fs_zebin_summary       backends/intel/zebin.py read_zebin_summary (+ sniff's "zebin" test)
 *   fs_ir_payload          backends/intel/legacy.py ir_payload of an IR-only ELF (generic_ir)
 *   fs_tgtsym              formats/elf.py read_host's .tgtsym split and _count_tgtsym
 *   fs_leaf_kind           formats/sniff.py sniff, for the kinds inspect only notes (SPIR-V, bitcode)
 */
#ifndef AOTWHEEL_FASTSCAN_CORE_H
#define AOTWHEEL_FASTSCAN_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FS_OK 1
#define FS_DONE 0
#define FS_DOUBT (-1)

static inline uint16_t fs_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t fs_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t fs_u64(const uint8_t *p) { return (uint64_t)fs_u32(p) | (uint64_t)fs_u32(p + 4) << 32; }

/* [off, off + n) lies inside a buffer of `size` bytes (no overflow for any inputs). */
static inline int fs_fits(uint64_t off, uint64_t n, uint64_t size) { return off <= size && n <= size - off; }

static inline int fs_ascii(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (p[i] >= 0x80)
            return 0;
    return 1;
}

/* ---- ar (ocloc fat binaries) ---------------------------------------------------------------- */

#define FS_AR_HEADER 60
#define FS_AR_MAX_MEMBERS 1000000 /* read_ar's guard */

typedef struct {
    const uint8_t *buf;
    size_t size, pos, count;
    const uint8_t *longnames;
    size_t longnames_n;
} fs_ar;

typedef struct {
    const uint8_t *name; /* ASCII, not NUL-terminated */
    size_t name_len, offset, size;
} fs_member;

static inline int fs_ar_open(fs_ar *ar, const uint8_t *buf, size_t size) {
    memset(ar, 0, sizeof *ar);
    ar->buf = buf;
    ar->size = size;
    ar->pos = 8;
    return size >= 8 && memcmp(buf, "!<arch>\n", 8) == 0 ? FS_OK : FS_DOUBT;
}

static inline int fs_eq(const uint8_t *p, size_t n, const char *s) { return n == strlen(s) && memcmp(p, s, n) == 0; }

/* The next listed member (FS_OK), the end (FS_DONE), or FS_DOUBT where read_ar would raise or
 * decode something other than plain ASCII. */
static inline int fs_ar_next(fs_ar *ar, fs_member *m) {
    while (ar->pos < ar->size) {
        const uint8_t *h = ar->buf + ar->pos;
        if (ar->pos + 1 == ar->size && h[0] == '\n')
            return FS_DONE; /* odd-sized last member's pad byte */
        if (ar->size - ar->pos < FS_AR_HEADER || h[58] != '`' || h[59] != '\n' || !fs_ascii(h, 16))
            return FS_DOUBT;
        /* Size: decimal digits between spaces (int() accepts more; anything else is a doubt). */
        size_t i = 48, end = 58, digits = 0;
        uint64_t msize = 0;
        while (i < end && h[i] == ' ')
            ++i;
        while (end > i && h[end - 1] == ' ')
            --end;
        for (; i < end; ++i, ++digits) {
            if (h[i] < '0' || h[i] > '9')
                return FS_DOUBT;
            msize = msize * 10 + (uint64_t)(h[i] - '0');
        }
        size_t body = ar->pos + FS_AR_HEADER;
        if (!fs_fits(body, msize, ar->size))
            return FS_DOUBT;
        size_t raw_len = 16;
        while (raw_len && h[raw_len - 1] == ' ')
            --raw_len;
        const uint8_t *name = h;
        size_t name_len = raw_len;
        if (fs_eq(h, raw_len, "//")) {
            ar->longnames = ar->buf + body;
            ar->longnames_n = (size_t)msize;
            name_len = 0;
        } else if (fs_eq(h, raw_len, "/") || fs_eq(h, raw_len, "/SYM64/") || fs_eq(h, raw_len, "__.SYMDEF") ||
                   fs_eq(h, raw_len, "__.SYMDEF SORTED")) {
            name_len = 0; /* symbol index */
        } else if (raw_len >= 3 && memcmp(h, "#1/", 3) == 0) {
            return FS_DOUBT; /* BSD long name: the Python reader */
        } else if (raw_len > 1 && h[0] == '/') {
            uint64_t start = 0;
            for (size_t k = 1; k < raw_len; ++k) {
                if (h[k] < '0' || h[k] > '9')
                    return FS_DOUBT; /* "/abc": read_ar keeps it as a name; rare enough to doubt */
                start = start * 10 + (uint64_t)(h[k] - '0');
            }
            if (start >= ar->longnames_n)
                return FS_DOUBT;
            const uint8_t *s = ar->longnames + start;
            const uint8_t *nl = memchr(s, '\n', ar->longnames_n - (size_t)start);
            size_t n = nl ? (size_t)(nl - s) : ar->longnames_n - (size_t)start;
            if (!fs_ascii(s, n))
                return FS_DOUBT;
            while (n && s[n - 1] == '/')
                --n;
            name = s;
            name_len = n;
        } else if (raw_len && h[raw_len - 1] == '/') {
            name_len = raw_len - 1;
        }
        ar->pos = body + (size_t)msize + (size_t)(msize & 1);
        if (name_len) {
            if (++ar->count > FS_AR_MAX_MEMBERS)
                return FS_DOUBT;
            m->name = name;
            m->name_len = name_len;
            m->offset = body;
            m->size = (size_t)msize;
            return FS_OK;
        }
    }
    return FS_DONE;
}

/* ---- zebin ---------------------------------------------------------------------------------- */

enum { FS_NT_PRODUCT_FAMILY = 1, FS_NT_GFX_CORE = 2, FS_NT_ZEBIN_VERSION = 4, FS_NT_PRODUCT_CONFIG = 6 };

typedef struct {
    const uint8_t *desc[7]; /* by note type (1, 2, 4, 6 used); NULL when absent */
    size_t desc_n[7];
    int has_spirv;
} fs_zebin;

/* sniff() says "zebin": a 64-bit little-endian ELF (the only kind the summary reads) whose
 * e_type/e_machine mark Intel GPU code. */
static inline int fs_is_zebin(const uint8_t *p, size_t size) {
    if (size < 64 || memcmp(p, "\x7f" "ELF\x02\x01", 6) != 0)
        return 0;
    uint16_t e_type = fs_u16(p + 16), e_machine = fs_u16(p + 18);
    return e_type != 0xFF04 && e_type != 0xFF02 && (e_machine == 205 || e_type == 0xFF12);
}

static inline int fs_starts(const uint8_t *tab, size_t tab_n, uint32_t at, const char *s, size_t n) {
    return at <= tab_n && n <= tab_n - at && memcmp(tab + at, s, n) == 0;
}

/* read_zebin_summary's notes and has_spirv for a zebin (fs_is_zebin); FS_DOUBT wherever the
 * Python summary would hand over to read_zebin/read_notes or decode non-ASCII. */
static inline int fs_zebin_summary(const uint8_t *p, size_t size, fs_zebin *z) {
    memset(z, 0, sizeof *z);
    if (!fs_is_zebin(p, size))
        return FS_DOUBT;
    uint64_t shoff = fs_u64(p + 0x28);
    uint16_t phnum = fs_u16(p + 0x38), shentsize = fs_u16(p + 0x3A), shnum = fs_u16(p + 0x3C), shstrndx = fs_u16(p + 0x3E);
    if (phnum || shentsize != 64 || !shnum || !shoff || shstrndx >= shnum || !fs_fits(shoff, (uint64_t)shnum * 64, size))
        return FS_DOUBT;
    const uint8_t *table = p + shoff, *st = table + (size_t)shstrndx * 64;
    uint64_t st_off = fs_u64(st + 24), st_size = fs_u64(st + 32);
    if (!st_size || !fs_fits(st_off, st_size, size) || p[st_off + st_size - 1] != 0)
        return FS_DOUBT;
    const uint8_t *strtab = p + st_off;
    uint64_t note_off = 0, note_size = 0;
    int have_note = 0;
    for (size_t i = 0; i < shnum; ++i) {
        const uint8_t *sh = table + i * 64;
        uint32_t sh_name = fs_u32(sh), sh_type = fs_u32(sh + 4);
        uint64_t off = fs_u64(sh + 24), n = fs_u64(sh + 32);
        if (!fs_fits(off, n, size) || sh_type == 6 /* SHT_DYNAMIC */ || sh_name >= st_size)
            return FS_DOUBT;
        if (sh_type == 0xFF000009u || fs_starts(strtab, (size_t)st_size, sh_name, ".spv", 5))
            z->has_spirv = 1;
        if (!have_note && fs_starts(strtab, (size_t)st_size, sh_name, ".note.intelgt.compat", 21)) {
            have_note = 1;
            note_off = off;
            note_size = n;
        }
    }
    if (!have_note)
        return FS_OK;
    uint64_t pos = note_off, end = note_off + note_size; /* inside p: checked in the loop above */
    while (pos + 12 <= end) {
        uint32_t namesz = fs_u32(p + pos), descsz = fs_u32(p + pos + 4), type = fs_u32(p + pos + 8);
        uint64_t desc = pos + 12 + (((uint64_t)namesz + 3) & ~(uint64_t)3);
        uint64_t next = desc + (((uint64_t)descsz + 3) & ~(uint64_t)3);
        if (next > end)
            return FS_DOUBT; /* read_notes raises here, with its message */
        if (type == FS_NT_PRODUCT_FAMILY || type == FS_NT_GFX_CORE || type == FS_NT_ZEBIN_VERSION || type == FS_NT_PRODUCT_CONFIG) {
            const uint8_t *name = p + pos + 12;
            size_t n = namesz;
            while (n && name[n - 1] == 0)
                --n;
            if (n == 7 && memcmp(name, "IntelGT", 7) == 0) { /* the name, NULs stripped, is the owner */
                z->desc[type] = p + desc;
                z->desc_n[type] = descsz;
            }
        }
        pos = next;
    }
    const uint8_t *v = z->desc[FS_NT_ZEBIN_VERSION];
    if (v != NULL && !fs_ascii(v, z->desc_n[FS_NT_ZEBIN_VERSION]))
        return FS_DOUBT; /* decoded with "replace" in Python */
    return FS_OK;
}

/* ---- IR-only ELF (generic_ir) ----------------------------------------------------------------- */

/* sniff() says "ir-elf" (and the ELF is 64-bit little-endian, the only layout read here). */
static inline int fs_is_ir_elf(const uint8_t *p, size_t size) {
    return size >= 64 && memcmp(p, "\x7f" "ELF\x02\x01", 6) == 0 && fs_u16(p + 16) == 0xFF02;
}

/* ir_payload's section: open_elf's checks for the plain layout (no program headers, no extended
 * numbering, no .dynamic), then the first section named "SPIRV Object". FS_OK with *n = 0 when
 * there is none (or it is empty); FS_DOUBT where open_elf could raise or reads differently. */
static inline int fs_ir_payload(const uint8_t *p, size_t size, size_t *off, size_t *n) {
    *off = *n = 0;
    if (!fs_is_ir_elf(p, size))
        return FS_DOUBT;
    uint64_t shoff = fs_u64(p + 0x28);
    uint16_t phnum = fs_u16(p + 0x38), shentsize = fs_u16(p + 0x3A), shnum = fs_u16(p + 0x3C), shstrndx = fs_u16(p + 0x3E);
    if (phnum || shentsize != 64 || !shnum || !shoff || shstrndx >= shnum || !fs_fits(shoff, (uint64_t)shnum * 64, size))
        return FS_DOUBT;
    const uint8_t *table = p + shoff;
    uint64_t strtab = fs_u64(table + (size_t)shstrndx * 64 + 24); /* open_elf reads names up to the region's end */
    int found = 0;
    for (size_t i = 0; i < shnum; ++i) {
        const uint8_t *sh = table + i * 64;
        uint32_t sh_name = fs_u32(sh), sh_type = fs_u32(sh + 4);
        uint64_t s_off = fs_u64(sh + 24), s_size = fs_u64(sh + 32);
        if (sh_type == 6 /* SHT_DYNAMIC */ || (sh_type == 8 /* SHT_NOBITS */ && s_size))
            return FS_DOUBT;
        if (s_size && !fs_fits(s_off, s_size, size))
            return FS_DOUBT; /* open_elf raises */
        if (!found && strtab < size && sh_name < size - strtab && fs_fits(strtab + sh_name, 13, size) &&
            memcmp(p + strtab + sh_name, "SPIRV Object", 13) == 0) {
            found = 1;
            *off = (size_t)s_off;
            *n = (size_t)s_size;
        }
    }
    return FS_OK;
}

/* ---- image heads ------------------------------------------------------------------------------ */

enum { FS_LEAF_NONE = 0, FS_LEAF_SPIRV = 1, FS_LEAF_LLVMBC = 2 };

/* sniff()'s answer for an image of `size` bytes at p when it is "spirv" or "llvmbc" (the kinds
 * the default mode notes without walking into); FS_LEAF_NONE for everything else. */
static inline int fs_leaf_kind(const uint8_t *p, size_t size) {
    if (size < 4)
        return FS_LEAF_NONE;
    if (memcmp(p, "\x03\x02\x23\x07", 4) == 0 || memcmp(p, "\x07\x23\x02\x03", 4) == 0)
        return FS_LEAF_SPIRV;
    if (memcmp(p, "\xde\xc0\x17\x0b", 4) == 0 || memcmp(p, "BC\xc0\xde", 4) == 0)
        return FS_LEAF_LLVMBC;
    return FS_LEAF_NONE;
}

/* ---- .tgtsym -------------------------------------------------------------------------------- */

typedef struct {
    const uint8_t *p;
    size_t n, count;
} fs_key;

typedef struct {
    fs_key *slots;
    size_t cap, used;
} fs_set;

/* Eight bytes a step (a byte-wise FNV-1a spent ~10 ms on mkl's 5.5 MB of names); quality
 * only matters for speed, never for answers (keys are compared in full). */
static inline uint64_t fs_hash(const uint8_t *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n, w;
    for (; n >= 8; p += 8, n -= 8) {
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ h >> 29;
}

/* The slot for key (p, n), inserted if new (*added set); NULL on allocation failure. */
static inline fs_key *fs_set_put(fs_set *s, const uint8_t *p, size_t n, int *added) {
    if (2 * (s->used + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        fs_key *slots = calloc(cap, sizeof *slots);
        if (slots == NULL)
            return NULL;
        for (size_t i = 0; i < s->cap; ++i) {
            if (s->slots[i].p == NULL)
                continue;
            size_t j = fs_hash(s->slots[i].p, s->slots[i].n) & (cap - 1);
            while (slots[j].p != NULL)
                j = (j + 1) & (cap - 1);
            slots[j] = s->slots[i];
        }
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    size_t j = fs_hash(p, n) & (s->cap - 1);
    while (s->slots[j].p != NULL) {
        if (s->slots[j].n == n && memcmp(s->slots[j].p, p, n) == 0) {
            *added = 0;
            return &s->slots[j];
        }
        j = (j + 1) & (s->cap - 1);
    }
    s->slots[j].p = p; /* never NULL: keys point into the input */
    s->slots[j].n = n;
    s->slots[j].count = 0;
    s->used++;
    *added = 1;
    return &s->slots[j];
}

typedef struct {
    fs_key *prefixes; /* distinct prefixes in first-seen order, with their name counts */
    size_t n_prefixes, kernels, names;
} fs_tgtsym_out;

/* Split NUL-separated names (empty ones skipped, as bytes.split + filter); count names per prefix
 * (before the first '.', the whole name without one) and distinct kernels (after the first '.',
 * or the whole name without one). FS_DOUBT only when memory runs out; free with fs_tgtsym_free. */
static inline int fs_tgtsym(const uint8_t *p, size_t size, fs_tgtsym_out *out) {
    fs_set prefixes = {0}, kernels = {0};
    memset(out, 0, sizeof *out);
    size_t order_cap = 0;
    int ok = 1;
    for (size_t at = 0; at < size && ok;) {
        const uint8_t *z = memchr(p + at, 0, size - at);
        size_t n = z ? (size_t)(z - (p + at)) : size - at;
        const uint8_t *name = p + at;
        at += n + 1;
        if (!n)
            continue;
        out->names++;
        const uint8_t *dot = memchr(name, '.', n);
        size_t head = dot ? (size_t)(dot - name) : n;
        int added;
        /* an empty prefix (".x") must still be a distinct, non-NULL key: point it at the name */
        fs_key *k = fs_set_put(&prefixes, name, head, &added);
        if (k == NULL) {
            ok = 0;
            break;
        }
        if (added) {
            if (out->n_prefixes == order_cap) {
                size_t cap = order_cap ? 2 * order_cap : 8;
                fs_key *grown = realloc(out->prefixes, cap * sizeof *grown);
                if (grown == NULL) {
                    ok = 0;
                    break;
                }
                out->prefixes = grown;
                order_cap = cap;
            }
            out->prefixes[out->n_prefixes].p = name;
            out->prefixes[out->n_prefixes].n = head;
            out->prefixes[out->n_prefixes].count = 0;
            k->count = out->n_prefixes++; /* the set's count field holds the position in order */
        }
        out->prefixes[k->count].count++;
        const uint8_t *key = dot ? dot + 1 : name;
        size_t key_n = dot ? n - head - 1 : n;
        if (fs_set_put(&kernels, key, key_n, &added) == NULL)
            ok = 0;
    }
    out->kernels = kernels.used;
    free(prefixes.slots);
    free(kernels.slots);
    if (!ok) {
        free(out->prefixes);
        memset(out, 0, sizeof *out);
        return FS_DOUBT;
    }
    return FS_OK;
}

static inline void fs_tgtsym_free(fs_tgtsym_out *out) {
    free(out->prefixes);
    memset(out, 0, sizeof *out);
}

#endif
