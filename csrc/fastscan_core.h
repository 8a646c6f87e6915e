/* The pure-C core of aotwheel._fastscan, shared by the extension (csrc/_fastscan.c) and the
 * libFuzzer target (fuzz/fastscan_fuzzer.c). No Python, no allocation outside fs_tgtsym.
 *
 * Readers of headers take an fs_src: the bytes themselves, or a reader that fetches each piece
 * (the extension preads from the mapped file, as page faults on thousands of scattered headers map
 * and unmap far more than they read; the fuzzer hands out exact-size copies, so ASan sees any read
 * past a fetched piece).
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
 *   fs_leaf_kind           formats/sniff.py sniff, for the kinds inspect only notes (SPIR-V, bitcode, zstd)
 *   fs_zstd_facts          formats/zstd.py frame_facts (a compressed SYCL IR image's sizes)
 *   fs_fatbin_*            backends/nvidia/fatbin.py parse_fatbin (.nv_fatbin, strict) and scan_sections'
 *                          magic scan with _checked_container (containers in any data section)
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

/* ---- sources: a buffer, or any reader (pread in the extension, exact-size copies in the fuzzer) -- */

enum { FS_SLOT_HEADER, FS_SLOT_TABLE, FS_SLOT_STRTAB, FS_SLOT_NOTES, FS_SLOT_AR, FS_SLOT_NAMES, FS_SLOTS };
#define FS_MAX_FETCH (1u << 20) /* larger tables are the Python reader's */

typedef struct fs_src fs_src;
struct fs_src {
    const uint8_t *buf; /* the bytes, or NULL: ask read() */
    /* n bytes at absolute offset `at` into `slot`, valid until the slot's next read; NULL: failed */
    const uint8_t *(*read)(const fs_src *src, int slot, uint64_t at, size_t n);
    void *ctx;
    uint64_t base, size; /* this view: [base, base + size) */
};

static inline fs_src fs_buffer(const uint8_t *buf, size_t size) {
    fs_src s = {buf, NULL, NULL, 0, size};
    return s;
}

/* A view of n bytes at off of s (the caller checked that they lie inside it). */
static inline fs_src fs_sub(const fs_src *s, uint64_t off, uint64_t n) {
    fs_src sub = *s;
    sub.base += off;
    sub.size = n;
    return sub;
}

/* n bytes at off of the view, bounds-checked here; NULL when outside or unreadable (a doubt). */
static inline const uint8_t *fs_fetch(const fs_src *s, int slot, uint64_t off, uint64_t n) {
    if (!fs_fits(off, n, s->size) || n > FS_MAX_FETCH)
        return NULL;
    if (s->buf != NULL)
        return s->buf + s->base + off;
    return s->read(s, slot, s->base + off, (size_t)n);
}

#ifndef _WIN32
#include <unistd.h>

/* A source reading a file with pread: one growing buffer per slot. Two reads take a little more
 * than asked, as the layouts read here put the next piece there: an ar member header reads the
 * 256 bytes after it (an ocloc fat binary's 8-byte pad_ member, the next header and the member's
 * ELF header), a zebin's section table the 16 kB before it (its string table and notes) and the
 * 256 bytes after it (a zebin member ends with its section table: the next members' headers and
 * ELF header). A fetch inside either window is served from it instead of read (copied into the
 * fetching slot's buffer; from its own window, in place): a system call costs more than copying
 * a few kB. With both, one pread per zebin member of vllm-xpu-kernels' fat binaries, not three. */
#define FS_READ_AHEAD 256
#define FS_READ_BEHIND (16u << 10)

typedef struct {
    int fd;
    uint8_t *slot[FS_SLOTS];
    size_t cap[FS_SLOTS];
    uint64_t win_at[FS_SLOTS]; /* the file bytes the slot's buffer holds: [win_at, win_at + win_n) */
    size_t win_n[FS_SLOTS];
} fs_pread_ctx;

static inline uint8_t *fs_pread_room(fs_pread_ctx *c, int slot, size_t n) {
    if (n > c->cap[slot]) {
        size_t cap = n < 4096 ? 4096 : n;
        uint8_t *grown = realloc(c->slot[slot], cap);
        if (grown == NULL)
            return NULL;
        c->slot[slot] = grown;
        c->cap[slot] = cap;
    }
    c->win_n[slot] = 0;
    return c->slot[slot];
}

static const uint8_t *fs_pread_read(const fs_src *src, int slot, uint64_t at, size_t n) {
    fs_pread_ctx *c = src->ctx;
    if (n == 0)
        return (const uint8_t *)"";
    static const int windows[2] = {FS_SLOT_AR, FS_SLOT_TABLE};
    for (int k = 0; k < 2; ++k) {
        int w = windows[k];
        if (c->win_n[w] && at >= c->win_at[w] && at - c->win_at[w] <= c->win_n[w] && n <= c->win_n[w] - (at - c->win_at[w])) {
            if (w == slot) /* this slot's own window: the bytes are already in its buffer */
                return c->slot[w] + (at - c->win_at[w]);
            uint8_t *dst = fs_pread_room(c, slot, n);
            if (dst == NULL)
                return NULL;
            memcpy(dst, c->slot[w] + (at - c->win_at[w]), n);
            return dst;
        }
    }
    uint64_t start = at, before = 0;
    size_t want = n;
    if (slot == FS_SLOT_AR)
        want = n + FS_READ_AHEAD;
    else if (slot == FS_SLOT_TABLE) {
        before = at < FS_READ_BEHIND ? at : FS_READ_BEHIND;
        start = at - before;
        want = n + (size_t)before + FS_READ_AHEAD;
    }
    uint8_t *dst = fs_pread_room(c, slot, want);
    if (dst == NULL)
        return NULL;
    size_t got = 0;
    while (got < want) {
        ssize_t r = pread(c->fd, dst + got, want - got, (off_t)(start + got));
        if (r < 0)
            return NULL;
        if (r == 0)
            break; /* end of file: the read-ahead may find less than it hoped */
        got += (size_t)r;
    }
    if (got < before + n)
        return NULL; /* a doubt: the Python reader reads the map */
    c->win_at[slot] = start;
    c->win_n[slot] = got;
    return dst + before;
}

static inline void fs_pread_free(fs_pread_ctx *c) {
    for (int i = 0; i < FS_SLOTS; ++i)
        free(c->slot[i]);
    memset(c, 0, sizeof *c);
}
#endif

/* ---- ar (ocloc fat binaries) ---------------------------------------------------------------- */

#define FS_AR_HEADER 60
#define FS_AR_MAX_MEMBERS 1000000 /* read_ar's guard */

typedef struct {
    fs_src src;
    uint64_t pos, count;
    const uint8_t *longnames; /* in FS_SLOT_NAMES */
    size_t longnames_n;
} fs_ar;

typedef struct {
    const uint8_t *name; /* ASCII, not NUL-terminated; valid until the next fs_ar_next */
    size_t name_len;
    uint64_t offset, size;
} fs_member;

static inline int fs_ar_open(fs_ar *ar, const fs_src *src) {
    memset(ar, 0, sizeof *ar);
    ar->src = *src;
    ar->pos = 8;
    const uint8_t *magic = fs_fetch(src, FS_SLOT_AR, 0, 8);
    return magic != NULL && memcmp(magic, "!<arch>\n", 8) == 0 ? FS_OK : FS_DOUBT;
}

static inline int fs_eq(const uint8_t *p, size_t n, const char *s) { return n == strlen(s) && memcmp(p, s, n) == 0; }

/* The next listed member (FS_OK), the end (FS_DONE), or FS_DOUBT where read_ar would raise or
 * decode something other than plain ASCII. */
static inline int fs_ar_next(fs_ar *ar, fs_member *m) {
    const uint64_t size = ar->src.size;
    while (ar->pos < size) {
        if (ar->pos + 1 == size) {
            const uint8_t *pad = fs_fetch(&ar->src, FS_SLOT_AR, ar->pos, 1);
            /* odd-sized last member's pad byte (GNU ar writes '\n', compute-runtime's ArEncoder a NUL), as read_ar */
            return pad != NULL && (pad[0] == '\n' || pad[0] == '\0') ? FS_DONE : FS_DOUBT;
        }
        const uint8_t *h = fs_fetch(&ar->src, FS_SLOT_AR, ar->pos, FS_AR_HEADER);
        if (h == NULL || h[58] != '`' || h[59] != '\n' || !fs_ascii(h, 16))
            return FS_DOUBT;
        /* Size: decimal digits between spaces (int() accepts more; anything else is a doubt). */
        size_t i = 48, end = 58;
        uint64_t msize = 0;
        while (i < end && h[i] == ' ')
            ++i;
        while (end > i && h[end - 1] == ' ')
            --end;
        for (; i < end; ++i) {
            if (h[i] < '0' || h[i] > '9')
                return FS_DOUBT;
            msize = msize * 10 + (uint64_t)(h[i] - '0');
        }
        uint64_t body = ar->pos + FS_AR_HEADER;
        if (!fs_fits(body, msize, size))
            return FS_DOUBT;
        size_t raw_len = 16;
        while (raw_len && h[raw_len - 1] == ' ')
            --raw_len;
        const uint8_t *name = h;
        size_t name_len = raw_len;
        if (fs_eq(h, raw_len, "//")) {
            ar->longnames = fs_fetch(&ar->src, FS_SLOT_NAMES, body, msize);
            if (ar->longnames == NULL)
                return FS_DOUBT;
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
        ar->pos = body + msize + (msize & 1);
        if (name_len) {
            if (++ar->count > FS_AR_MAX_MEMBERS)
                return FS_DOUBT;
            m->name = name;
            m->name_len = name_len;
            m->offset = body;
            m->size = msize;
            return FS_OK;
        }
    }
    return FS_DONE;
}

/* ---- zebin ---------------------------------------------------------------------------------- */

enum { FS_NT_PRODUCT_FAMILY = 1, FS_NT_GFX_CORE = 2, FS_NT_ZEBIN_VERSION = 4, FS_NT_PRODUCT_CONFIG = 6 };

typedef struct {
    const uint8_t *desc[7]; /* by note type (1, 2, 4, 6 used), in FS_SLOT_NOTES; NULL when absent */
    size_t desc_n[7];
    int has_spirv;
} fs_zebin;

/* The ELF header fields both readers below use, for a 64-bit little-endian ELF of e_type `type`
 * (any type: -1) with the plain layout: no program headers, 64-byte section headers, no extended
 * numbering, the name table's index inside the table. 0: not that (a doubt). */
typedef struct {
    uint16_t e_type, e_machine, shnum, shstrndx;
    uint64_t shoff;
} fs_elf;

static inline int fs_plain_elf(const fs_src *s, fs_elf *e) {
    const uint8_t *h = fs_fetch(s, FS_SLOT_HEADER, 0, 64);
    if (h == NULL || memcmp(h, "\x7f" "ELF\x02\x01", 6) != 0)
        return 0;
    e->e_type = fs_u16(h + 16);
    e->e_machine = fs_u16(h + 18);
    e->shoff = fs_u64(h + 0x28);
    e->shnum = fs_u16(h + 0x3C);
    e->shstrndx = fs_u16(h + 0x3E);
    return !fs_u16(h + 0x38) && fs_u16(h + 0x3A) == 64 && e->shnum && e->shoff && e->shstrndx < e->shnum &&
           fs_fits(e->shoff, (uint64_t)e->shnum * 64, s->size);
}

static inline int fs_starts(const uint8_t *tab, size_t tab_n, uint32_t at, const char *s, size_t n) {
    return at <= tab_n && n <= tab_n - at && memcmp(tab + at, s, n) == 0;
}

/* read_zebin_summary's notes and has_spirv for what Intel's ELF_KINDS (backends/intel/kinds.py) call a zebin (e_machine EM_INTELGT or
 * e_type 0xFF12, not 0xFF02/0xFF04); FS_DOUBT wherever the Python summary would hand over to
 * read_zebin/read_notes, or decode non-ASCII, or for any other layout. */
static inline int fs_zebin_summary(const fs_src *s, fs_zebin *z) {
    memset(z, 0, sizeof *z);
    fs_elf e;
    if (!fs_plain_elf(s, &e) || e.e_type == 0xFF04 || e.e_type == 0xFF02 || !(e.e_machine == 205 || e.e_type == 0xFF12))
        return FS_DOUBT;
    const uint8_t *table = fs_fetch(s, FS_SLOT_TABLE, e.shoff, (uint64_t)e.shnum * 64);
    if (table == NULL)
        return FS_DOUBT;
    const uint8_t *st = table + (size_t)e.shstrndx * 64;
    uint64_t st_off = fs_u64(st + 24), st_size = fs_u64(st + 32);
    const uint8_t *strtab = st_size ? fs_fetch(s, FS_SLOT_STRTAB, st_off, st_size) : NULL;
    if (strtab == NULL || strtab[st_size - 1] != 0)
        return FS_DOUBT;
    uint64_t note_off = 0, note_size = 0;
    int have_note = 0;
    for (size_t i = 0; i < e.shnum; ++i) {
        const uint8_t *sh = table + i * 64;
        uint32_t sh_name = fs_u32(sh), sh_type = fs_u32(sh + 4);
        uint64_t off = fs_u64(sh + 24), n = fs_u64(sh + 32);
        if (!fs_fits(off, n, s->size) || sh_type == 6 /* SHT_DYNAMIC */ || sh_name >= st_size)
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
    const uint8_t *notes = fs_fetch(s, FS_SLOT_NOTES, note_off, note_size);
    if (notes == NULL)
        return FS_DOUBT;
    uint64_t pos = 0, end = note_size;
    while (pos + 12 <= end) {
        uint32_t namesz = fs_u32(notes + pos), descsz = fs_u32(notes + pos + 4), type = fs_u32(notes + pos + 8);
        uint64_t desc = pos + 12 + (((uint64_t)namesz + 3) & ~(uint64_t)3);
        uint64_t next = desc + (((uint64_t)descsz + 3) & ~(uint64_t)3);
        if (next > end)
            return FS_DOUBT; /* read_notes raises here, with its message */
        if (type == FS_NT_PRODUCT_FAMILY || type == FS_NT_GFX_CORE || type == FS_NT_ZEBIN_VERSION || type == FS_NT_PRODUCT_CONFIG) {
            const uint8_t *name = notes + pos + 12;
            size_t n = namesz;
            while (n && name[n - 1] == 0)
                --n;
            if (n == 7 && memcmp(name, "IntelGT", 7) == 0) { /* the name, NULs stripped, is the owner */
                z->desc[type] = notes + desc;
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

/* ir_payload's section: open_elf's checks for the plain layout (and no .dynamic), then the first
 * section named "SPIRV Object". FS_OK with *n = 0 when there is none (or it is empty); FS_DOUBT
 * where open_elf could raise or read differently, or sniff() would not say "ir-elf". */
static inline int fs_ir_payload(const fs_src *s, uint64_t *off, uint64_t *n) {
    *off = *n = 0;
    fs_elf e;
    if (!fs_plain_elf(s, &e) || e.e_type != 0xFF02)
        return FS_DOUBT;
    const uint8_t *table = fs_fetch(s, FS_SLOT_TABLE, e.shoff, (uint64_t)e.shnum * 64);
    if (table == NULL)
        return FS_DOUBT;
    uint64_t strtab = fs_u64(table + (size_t)e.shstrndx * 64 + 24); /* open_elf reads names up to the region's end */
    int found = 0;
    for (size_t i = 0; i < e.shnum; ++i) {
        const uint8_t *sh = table + i * 64;
        uint32_t sh_name = fs_u32(sh), sh_type = fs_u32(sh + 4);
        uint64_t s_off = fs_u64(sh + 24), s_size = fs_u64(sh + 32);
        if (sh_type == 6 /* SHT_DYNAMIC */ || (sh_type == 8 /* SHT_NOBITS */ && s_size))
            return FS_DOUBT;
        if (s_size && !fs_fits(s_off, s_size, s->size))
            return FS_DOUBT; /* open_elf raises */
        if (!found && strtab < s->size && sh_name < s->size - strtab && fs_fits(strtab + sh_name, 13, s->size)) {
            const uint8_t *name = fs_fetch(s, FS_SLOT_STRTAB, strtab + sh_name, 13);
            if (name == NULL)
                return FS_DOUBT;
            if (memcmp(name, "SPIRV Object", 13) == 0) { /* the first of the name decides, empty or not */
                found = 1;
                *off = s_size ? s_off : 0; /* an empty one may claim any offset: no payload */
                *n = s_size;
            }
        }
    }
    return FS_OK;
}

/* ---- image heads ------------------------------------------------------------------------------ */

enum { FS_LEAF_NONE = 0, FS_LEAF_SPIRV = 1, FS_LEAF_LLVMBC = 2, FS_LEAF_ZSTD = 3 };

/* sniff()'s answer for an image of `size` bytes at p when it is "spirv" or "llvmbc" (the kinds
 * the default mode notes without walking into) or "zstd" (a leaf when it is SYCL IR and its frame
 * headers are plain: fs_zstd_facts); FS_LEAF_NONE for everything else. */
static inline int fs_leaf_kind(const uint8_t *p, size_t size) {
    if (size < 4)
        return FS_LEAF_NONE;
    if (memcmp(p, "\x03\x02\x23\x07", 4) == 0 || memcmp(p, "\x07\x23\x02\x03", 4) == 0)
        return FS_LEAF_SPIRV;
    if (memcmp(p, "\xde\xc0\x17\x0b", 4) == 0 || memcmp(p, "BC\xc0\xde", 4) == 0)
        return FS_LEAF_LLVMBC;
    if (memcmp(p, "\x28\xb5\x2f\xfd", 4) == 0)
        return FS_LEAF_ZSTD;
    return FS_LEAF_NONE;
}

/* ---- zstd frames (compressed SYCL IR images) --------------------------------------------- */

/* zstd.frame_facts: the stored size of the zstd frame that starts the view and its declared
 * content size (*has_declared 0: the header declares none), from the frame and block headers
 * alone; FS_DOUBT whenever anything is unusual (not a zstd frame, reserved bits, a window past
 * zstd's maximum, an "unknown"/"error" size, a header or block past the view), for Python's
 * Region-based readers to decide and word. */
static inline int fs_zstd_facts(const fs_src *s, uint64_t *stored, int *has_declared, uint64_t *declared) {
    static const uint8_t dict_id_bytes[4] = {0, 1, 2, 4}, size_bytes[4] = {0, 2, 4, 8};
    uint64_t end = s->size;
    if (end < 6)
        return FS_DOUBT;
    const uint8_t *h = fs_fetch(s, FS_SLOT_HEADER, 0, end < 32 ? end : 32);
    if (h == NULL || memcmp(h, "\x28\xb5\x2f\xfd", 4) != 0)
        return FS_DOUBT;
    uint8_t fhd = h[4];
    unsigned single_segment = (fhd >> 5) & 1;
    if ((fhd & 0x08) || (!single_segment && (h[5] >> 3) + 10 > 31))
        return FS_DOUBT;
    uint64_t pos = 5 + (single_segment ? 0 : 1) + dict_id_bytes[fhd & 3];
    unsigned fcs = (fhd >> 6) == 0 ? single_segment : size_bytes[fhd >> 6];
    if (pos + fcs > end)
        return FS_DOUBT;
    *has_declared = fcs != 0;
    if (fcs) {
        const uint8_t *f = fs_fetch(s, FS_SLOT_NOTES, pos, fcs);
        if (f == NULL)
            return FS_DOUBT;
        uint64_t v = 0;
        for (unsigned i = 0; i < fcs; ++i)
            v |= (uint64_t)f[i] << (8 * i);
        if (fcs == 2)
            v += 256;
        if (v >= UINT64_MAX - 1)
            return FS_DOUBT;
        *declared = v;
    }
    pos += fcs;
    for (;;) {
        if (pos + 3 > end)
            return FS_DOUBT;
        const uint8_t *b = fs_fetch(s, FS_SLOT_NOTES, pos, 3);
        if (b == NULL)
            return FS_DOUBT;
        uint32_t header = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16;
        unsigned block_type = (header >> 1) & 3;
        if (block_type == 3)
            return FS_DOUBT;
        pos += 3 + (block_type == 1 ? 1 : header >> 3);
        if (header & 1)
            break;
    }
    pos += (fhd & 4) ? 4 : 0;
    if (pos > end)
        return FS_DOUBT;
    *stored = pos;
    return FS_OK;
}

/* ---- .tgtsym -------------------------------------------------------------------------------- */

typedef struct {
    const uint8_t *p;
    size_t n, count;
    uint64_t h; /* fs_hash(p, n): probes and growth compare and place by it, not by the key's bytes */
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

/* The slot for key (p, n), inserted if new (*added set); NULL on allocation failure. Each slot
 * keeps its key's hash: with mkl's 26k names, re-reading keys scattered over 5.5 MB to rehash on
 * growth, or to compare them on every probe, was most of the time (cache misses). */
static inline fs_key *fs_set_put(fs_set *s, const uint8_t *p, size_t n, int *added) {
    if (2 * (s->used + 1) > s->cap) {
        size_t cap = s->cap ? 4 * s->cap : 64;
        fs_key *slots = calloc(cap, sizeof *slots);
        if (slots == NULL)
            return NULL;
        for (size_t i = 0; i < s->cap; ++i) {
            if (s->slots[i].p == NULL)
                continue;
            size_t j = s->slots[i].h & (cap - 1);
            while (slots[j].p != NULL)
                j = (j + 1) & (cap - 1);
            slots[j] = s->slots[i];
        }
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    uint64_t h = fs_hash(p, n);
    size_t j = h & (s->cap - 1);
    while (s->slots[j].p != NULL) {
        if (s->slots[j].h == h && s->slots[j].n == n && memcmp(s->slots[j].p, p, n) == 0) {
            *added = 0;
            return &s->slots[j];
        }
        j = (j + 1) & (s->cap - 1);
    }
    s->slots[j].p = p; /* never NULL: keys point into the input */
    s->slots[j].n = n;
    s->slots[j].count = 0;
    s->slots[j].h = h;
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
            out->prefixes[out->n_prefixes].h = k->h;
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

/* ---- NVIDIA fat binaries ------------------------------------------------------------------- */

/* backends/nvidia/fatbin.py: containers {u32 magic; u16 version; u16 header_size; u64 fat_size}
 * followed by fat_size bytes of entries, each a header of at least 64 bytes then its payload.
 * These read a plain buffer (the map; the fuzzer's exact-size copy): the magic scan reads every
 * byte between containers anyway, and an entry header lies next to its container's. */
#define FS_FATBIN_ENTRY 64
#define FS_FATBIN_MAX_ENTRIES 65536u /* per container: fatbin._MAX_ENTRIES */
#define FS_FATBIN_MAX_ARCH 255u      /* fatbin._MAX_ARCH */
#define FS_FATBIN_COMPRESSED 0xA000u /* FLAG_COMPRESSED_LZ4 | FLAG_COMPRESSED_ZSTD */

static const uint8_t fs_fatbin_magic[4] = {0x50, 0xED, 0x55, 0xBA}; /* 0xBA55ED50, little-endian */

typedef struct {
    uint16_t kind, minor, major;
    uint32_t header_size, csize, opt_off, arch, name_off, name_len;
    uint64_t size, flags, dsize;
} fs_fatbin_entry;

/* The 64-byte entry header at h ("<HHIQIIHHIIIQQQ"). */
static inline void fs_fatbin_entry_at(const uint8_t *h, fs_fatbin_entry *e) {
    e->kind = fs_u16(h);
    e->header_size = fs_u32(h + 4);
    e->size = fs_u64(h + 8);
    e->csize = fs_u32(h + 16);
    e->opt_off = fs_u32(h + 20);
    e->minor = fs_u16(h + 24);
    e->major = fs_u16(h + 26);
    e->arch = fs_u32(h + 28);
    e->name_off = fs_u32(h + 32);
    e->name_len = fs_u32(h + 36);
    e->flags = fs_u64(h + 40);
    e->dsize = fs_u64(h + 56);
}

/* Whether the entries of the body [body, body + fat_size) of p (inside p, the caller checked) tile
 * it exactly: every header at least 64 bytes, header and payload inside the body, a compressed
 * size within the payload, at most FS_FATBIN_MAX_ENTRIES (fatbin._entries' checks: FS_OK with
 * *count, else FS_DOUBT where it raises). checked: also what _checked_container asks of a match
 * found by magic: a known kind (PTX, cubin, LTO IR) and 0 < arch <= 255. */
static inline int fs_fatbin_tiles(const uint8_t *p, uint64_t body, uint64_t fat_size, int checked, uint32_t *count) {
    uint64_t eo = 0;
    uint32_t n = 0;
    fs_fatbin_entry e;
    while (eo < fat_size) {
        if (fat_size - eo < FS_FATBIN_ENTRY || n >= FS_FATBIN_MAX_ENTRIES)
            return FS_DOUBT;
        fs_fatbin_entry_at(p + body + eo, &e);
        if (e.header_size < FS_FATBIN_ENTRY)
            return FS_DOUBT;
        if (checked && (!(e.kind == 1 || e.kind == 2 || e.kind == 8) || e.arch == 0 || e.arch > FS_FATBIN_MAX_ARCH))
            return FS_DOUBT;
        uint64_t room = fat_size - eo;
        if (e.header_size > room || e.size > room - e.header_size)
            return FS_DOUBT;
        if ((e.flags & FS_FATBIN_COMPRESSED) && e.csize > e.size)
            return FS_DOUBT;
        eo += e.header_size + e.size;
        ++n;
    }
    *count = n;
    return FS_OK;
}

/* _checked_container: FS_OK and *fat_size when a container scan_sections keeps starts at off of
 * the size bytes at p (version 1, a 16-byte header, at least one entry, all inside), else
 * FS_DOUBT (a chance match of the magic). The magic itself is the caller's (the scan found it). */
static inline int fs_fatbin_checked(const uint8_t *p, uint64_t size, uint64_t off, uint64_t *fat_size) {
    uint32_t n;
    if (!fs_fits(off, 16, size))
        return FS_DOUBT;
    const uint8_t *h = p + off;
    uint64_t fs = fs_u64(h + 8);
    if (fs_u16(h + 4) != 1 || fs_u16(h + 6) != 16 || fs < FS_FATBIN_ENTRY || fs > size - off - 16 ||
        fs_fatbin_tiles(p, off + 16, fs, 1, &n) != FS_OK)
        return FS_DOUBT;
    *fat_size = fs;
    return FS_OK;
}

#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#endif

/* The offset of the first magic wholly inside [pos, size) of p; size when there is none. SSE2
 * compares 16 positions at a time by the magic's first and last bytes (0x50 alone is common in
 * data), then the whole word; elsewhere memchr for the first byte. */
static inline uint64_t fs_fatbin_find(const uint8_t *p, uint64_t size, uint64_t pos) {
    if (size < 4 || pos > size - 4)
        return size;
#if defined(__SSE2__) && defined(__GNUC__)
    const __m128i first = _mm_set1_epi8(0x50), last = _mm_set1_epi8((char)0xBA);
    for (; size - pos >= 19; pos += 16) { /* 16 starts, and the 3 bytes after the last one */
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(p + pos));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + pos + 3));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last)));
        for (; m; m &= m - 1) {
            uint64_t at = pos + (uint64_t)__builtin_ctz(m);
            if (memcmp(p + at, fs_fatbin_magic, 4) == 0)
                return at;
        }
    }
    for (; size - pos >= 4; ++pos)
        if (memcmp(p + pos, fs_fatbin_magic, 4) == 0)
            return pos;
    return size;
#else
    while (size - pos >= 4) {
        const uint8_t *q = memchr(p + pos, 0x50, (size_t)(size - pos - 3));
        if (q == NULL)
            return size;
        pos = (uint64_t)(q - p);
        if (memcmp(q, fs_fatbin_magic, 4) == 0)
            return pos;
        ++pos;
    }
    return size;
#endif
}

typedef struct {
    uint64_t offset, body, fat_size; /* the header's offset, the entries' (offset + header_size) */
    uint16_t version;
    uint32_t entries;
} fs_fatbin;

/* parse_fatbin's next container at or after *pos (zero bytes between containers skipped): FS_OK
 * with *c and *pos past it, FS_DONE at the end, FS_DOUBT where parse_fatbin raises. */
static inline int fs_fatbin_next(const uint8_t *p, uint64_t size, uint64_t *pos, fs_fatbin *c) {
    uint64_t at = *pos;
    while (at < size && p[at] == 0)
        ++at;
    *pos = at;
    if (at >= size)
        return FS_DONE;
    if (!fs_fits(at, 16, size) || memcmp(p + at, fs_fatbin_magic, 4) != 0)
        return FS_DOUBT;
    uint16_t header_size = fs_u16(p + at + 6);
    uint64_t fat_size = fs_u64(p + at + 8);
    if (header_size < 16 || !fs_fits(at + header_size, fat_size, size) ||
        fs_fatbin_tiles(p, at + header_size, fat_size, 0, &c->entries) != FS_OK)
        return FS_DOUBT;
    c->offset = at;
    c->body = at + header_size;
    c->fat_size = fat_size;
    c->version = fs_u16(p + at + 4);
    *pos = at + header_size + fat_size;
    return FS_OK;
}

/* scan_sections' next container at or after *pos: the next magic whose structure holds
 * (fs_fatbin_checked); FS_DONE when there is none. *rejected counts the matches skipped. */
static inline int fs_fatbin_scan_next(const uint8_t *p, uint64_t size, uint64_t *pos, fs_fatbin *c, uint64_t *rejected) {
    for (uint64_t at = fs_fatbin_find(p, size, *pos); at < size; at = fs_fatbin_find(p, size, at + 4)) {
        uint64_t fat_size;
        if (fs_fatbin_checked(p, size, at, &fat_size) != FS_OK) {
            ++*rejected; /* the magic cannot overlap itself: the next can start 4 bytes on */
            continue;
        }
        c->offset = at;
        c->body = at + 16;
        c->fat_size = fat_size;
        c->version = 1;
        fs_fatbin_tiles(p, at + 16, fat_size, 1, &c->entries);
        *pos = at + 16 + fat_size;
        return FS_OK;
    }
    *pos = size;
    return FS_DONE;
}

/* The options string an entry records (fatbin._options: the block {u32; u32 length; char[length]}
 * inside the header): *n bytes at *text, trailing NULs and spaces stripped; 0 when there is none
 * or it is not printable ASCII (Python: None). h: the entry header, all header_size bytes. */
static inline int fs_fatbin_options(const uint8_t *h, const fs_fatbin_entry *e, const uint8_t **text, size_t *n) {
    if (!e->opt_off || (uint64_t)e->opt_off + 8 > e->header_size)
        return 0;
    uint32_t length = fs_u32(h + e->opt_off + 4);
    if (!length || (uint64_t)e->opt_off + 8 + length > e->header_size)
        return 0;
    const uint8_t *s = h + e->opt_off + 8;
    size_t k = length;
    while (k && (s[k - 1] == 0 || s[k - 1] == ' '))
        --k;
    if (!k)
        return 0;
    for (size_t i = 0; i < k; ++i)
        if (s[i] < 0x20 || s[i] > 0x7E) /* str.isprintable() of ASCII; anything else is no option string */
            return 0;
    *text = s;
    *n = k;
    return 1;
}

/* The object name an entry records (fatbin._name): *n bytes at *name, trailing NULs stripped
 * (possibly none left: Python's ""); 0 when there is none. h: the entry, header and payload. */
static inline int fs_fatbin_name(const uint8_t *h, const fs_fatbin_entry *e, const uint8_t **name, size_t *n) {
    if (!e->name_off || !e->name_len || (uint64_t)e->name_off + e->name_len > (uint64_t)e->header_size + e->size)
        return 0;
    size_t k = e->name_len;
    while (k && h[e->name_off + k - 1] == 0)
        --k;
    *name = h + e->name_off;
    *n = k;
    return 1;
}


/* ---- Several magic numbers at once (aotwheel.carried: standalone device images in data) ---- */

#define FS_MAX_NEEDLES 8
#define FS_MAX_NEEDLE 16

typedef struct {
    const uint8_t *bytes;
    size_t len; /* 2 .. FS_MAX_NEEDLE */
} fs_needle;

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
/* fs_find_needles' vector loop with AVX2, 32 starts a step (run only where the CPU has AVX2):
 * advances *pos past the blocks it cleared; a candidate's whole needle is compared as in SSE2. */
__attribute__((target("avx2"))) static uint64_t fs_find_needles_avx2(const uint8_t *p, uint64_t size, uint64_t *pos, const fs_needle *nd,
                                                                      int n, size_t longest, int *which) {
    __m256i first[FS_MAX_NEEDLES], last[FS_MAX_NEEDLES];
    for (int i = 0; i < n; ++i) {
        first[i] = _mm256_set1_epi8((char)nd[i].bytes[0]);
        last[i] = _mm256_set1_epi8((char)nd[i].bytes[nd[i].len - 1]);
    }
    uint64_t at0 = *pos;
    for (; size >= longest && at0 <= size - longest && size - at0 - longest >= 32; at0 += 32) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(p + at0));
        unsigned m = 0;
        for (int i = 0; i < n; ++i) {
            __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(p + at0 + nd[i].len - 1));
            m |= (unsigned)_mm256_movemask_epi8(_mm256_and_si256(_mm256_cmpeq_epi8(a, first[i]), _mm256_cmpeq_epi8(b, last[i])));
        }
        for (; m; m &= m - 1) {
            uint64_t at = at0 + (uint64_t)__builtin_ctz(m);
            for (int i = 0; i < n; ++i)
                if (memcmp(p + at, nd[i].bytes, nd[i].len) == 0) {
                    *which = i;
                    *pos = at0;
                    return at;
                }
        }
    }
    *pos = at0;
    return size;
}
#endif

/* The offset of the first match of any of the n needles wholly inside [pos, size) of p (ties: the
 * lowest index, in *which); size when there is none. AVX2 (where the CPU has it) or SSE2 compares
 * 32 or 16 starts at a time by each needle's first and last bytes, then the whole needle at the
 * candidates; elsewhere byte by byte. */
static inline uint64_t fs_find_needles(const uint8_t *p, uint64_t size, uint64_t pos, const fs_needle *nd, int n, int *which) {
    size_t longest = 0, shortest = SIZE_MAX;
    for (int i = 0; i < n; ++i) {
        if (nd[i].len > longest)
            longest = nd[i].len;
        if (nd[i].len < shortest)
            shortest = nd[i].len;
    }
    if (n <= 0 || shortest == 0 || size < shortest || pos > size - shortest)
        return size; /* (a shorter needle may fit where the longest does not) */
#if defined(__GNUC__) && defined(__x86_64__)
    if (__builtin_cpu_supports("avx2")) {
        uint64_t at = fs_find_needles_avx2(p, size, &pos, nd, n, longest, which);
        if (at < size)
            return at;
    }
#endif
#if defined(__SSE2__) && defined(__GNUC__)
    __m128i first[FS_MAX_NEEDLES], last[FS_MAX_NEEDLES];
    for (int i = 0; i < n; ++i) {
        first[i] = _mm_set1_epi8((char)nd[i].bytes[0]);
        last[i] = _mm_set1_epi8((char)nd[i].bytes[nd[i].len - 1]);
    }
    for (; size >= longest && pos <= size - longest && size - pos - longest >= 16; pos += 16) { /* every load stays inside p */
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(p + pos));
        unsigned m = 0;
        for (int i = 0; i < n; ++i) {
            __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + pos + nd[i].len - 1));
            m |= (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, first[i]), _mm_cmpeq_epi8(b, last[i])));
        }
        for (; m; m &= m - 1) {
            uint64_t at = pos + (uint64_t)__builtin_ctz(m);
            for (int i = 0; i < n; ++i)
                if (memcmp(p + at, nd[i].bytes, nd[i].len) == 0) {
                    *which = i;
                    return at;
                }
        }
    }
#endif
    for (; pos < size; ++pos)
        for (int i = 0; i < n; ++i)
            if (nd[i].len <= size - pos && memcmp(p + pos, nd[i].bytes, nd[i].len) == 0) {
                *which = i;
                return pos;
            }
    return size;
}


/* ---- SPIR-V module extent (aotwheel.backends.intel.standalone.spirv_size, same rules) ---- */

/* The bytes of the SPIR-V module at p (little-endian words): the five-word header (magic, version
 * 1.0-1.6 as 0x00MMmm00, generator, a bound in 1..2^24, schema 0), then instructions (word count
 * << 16 | opcode) while they can be instructions (a word count >= 1 inside the data, an opcode <=
 * 0x3FFF, not another module's magic), the first an OpCapability (17) and an OpMemoryModel (14)
 * before any OpFunction (54); it ends after its last OpFunctionEnd (56). 0 when not a module. */
static inline uint64_t fs_spirv_extent(const uint8_t *p, uint64_t size) {
    if (size < 28)
        return 0;
    uint32_t version = fs_u32(p + 4), bound = fs_u32(p + 12);
    if (fs_u32(p) != 0x07230203u || (version & 0xFF0000FFu) || (version >> 16) != 1 || ((version >> 8) & 0xFF) > 6 || bound == 0 ||
        bound > (1u << 24) || fs_u32(p + 16) != 0)
        return 0;
    uint64_t words = size / 4, pos = 5, end = 0;
    if (words > (1ull << 28))
        words = 1ull << 28;
    int memory_model = 0, first = 1;
    while (pos < words) {
        uint32_t word = fs_u32(p + 4 * pos), count = word >> 16, opcode = word & 0xFFFF;
        if (count == 0 || count > words - pos || opcode > 0x3FFF || word == 0x07230203u)
            break;
        if (first && opcode != 17)
            return 0;
        first = 0;
        if (opcode == 14)
            memory_model = 1;
        else if (opcode == 54 && !memory_model)
            return 0;
        pos += count;
        if (opcode == 56)
            end = pos;
    }
    return end && memory_model ? 4 * end : 0;
}

#endif
