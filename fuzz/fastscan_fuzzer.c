/* libFuzzer target for the C core of aotwheel._fastscan (csrc/fastscan_core.h): the same scanning
 * code the extension runs, on arbitrary bytes, through both kinds of source it uses: the bytes
 * themselves (libFuzzer hands over an exactly-sized heap copy), and a reader standing in for
 * pread that hands out an exactly-sized heap copy of each piece fetched, so that AddressSanitizer
 * sees any read past what the code asked for; and the extension's own pread reader (with its
 * read-ahead/read-behind windows) over a memfd holding the input; and the NVIDIA fat binary readers
 * (strict walk and magic scan) over the input itself. UBSan reports undefined arithmetic; the asserts
 * check what the extension relies on: every span it reports lies inside the input, and both
 * sources give the same answers.
 *
 *   clang-15 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *       -Icsrc fuzz/fastscan_fuzzer.c -o fastscan_fuzzer
 *
 * tests/_fastscan_util.py builds it and the seed corpus (real ocloc fat binaries); the short run is
 * tests/test_fuzz_fastscan.py, the long one fuzz/fastscan_long.py. */
#define _GNU_SOURCE /* memfd_create */
#include <assert.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fastscan_core.h"

typedef struct {
    const uint8_t *data;
    size_t size;
    uint8_t *slot[FS_SLOTS];
} copies;

static const uint8_t *copy_read(const fs_src *src, int slot, uint64_t at, size_t n) {
    copies *c = src->ctx;
    assert(at <= c->size && n <= c->size - at); /* fs_fetch checked the view; views lie inside the input */
    free(c->slot[slot]);
    c->slot[slot] = malloc(n ? n : 1);
    if (c->slot[slot] == NULL)
        return NULL;
    memcpy(c->slot[slot], c->data + at, n);
    return c->slot[slot];
}

/* The zebin answer as plain values (pointers differ between sources). */
typedef struct {
    int rc, has_spirv;
    size_t n[7];
    uint8_t head[7][8];
} zebin_answer;

static zebin_answer zebin(const fs_src *s) {
    zebin_answer a;
    fs_zebin z;
    memset(&a, 0, sizeof a);
    a.rc = fs_zebin_summary(s, &z);
    if (a.rc != FS_OK)
        return a;
    a.has_spirv = z.has_spirv;
    for (int t = 0; t < 7; ++t) {
        if (z.desc[t] == NULL)
            continue;
        a.n[t] = z.desc_n[t] + 1;
        memcpy(a.head[t], z.desc[t], z.desc_n[t] < 8 ? z.desc_n[t] : 8);
    }
    return a;
}

static void both(const fs_src *mem, const fs_src *rd) {
    zebin_answer a = zebin(mem), b = zebin(rd);
    assert(memcmp(&a, &b, sizeof a) == 0);
    uint64_t off1, n1, off2, n2;
    int r1 = fs_ir_payload(mem, &off1, &n1), r2 = fs_ir_payload(rd, &off2, &n2);
    assert(r1 == r2 && (r1 != FS_OK || (off1 == off2 && n1 == n2 && fs_fits(off1, n1, mem->size))));
}

/* The ar walk over two sources: the same members, the same answers for each. */
static void ar_alike(const uint8_t *data, size_t size, const fs_src *mem, const fs_src *rd) {
    fs_ar a1, a2;
    fs_member m1, m2;
    int r1 = fs_ar_open(&a1, mem), r2 = fs_ar_open(&a2, rd);
    assert(r1 == r2);
    while (r1 == FS_OK) {
        r1 = fs_ar_next(&a1, &m1);
        r2 = fs_ar_next(&a2, &m2);
        assert(r1 == r2);
        if (r1 != FS_OK)
            break;
        assert(m1.offset == m2.offset && m1.size == m2.size && m1.name_len == m2.name_len && m1.name_len > 0);
        assert(memcmp(m1.name, m2.name, m1.name_len) == 0 && fs_fits(m1.offset, m1.size, size));
        assert(m1.name >= data && m1.name + m1.name_len <= data + size);
        fs_src b1 = fs_sub(mem, m1.offset, m1.size), b2 = fs_sub(rd, m2.offset, m2.size);
        both(&b1, &b2);
    }
    both(mem, rd);
}

/* An entry's options and name as the extension reads them: inside the entry (header, or header
 * and payload), which lies inside its container's body. */
static void fatbin_entries(const uint8_t *data, size_t size, const fs_fatbin *c) {
    fs_fatbin_entry e;
    uint32_t n = 0;
    assert(fs_fits(c->offset, 16, size) && c->body >= c->offset + 16 && fs_fits(c->body, c->fat_size, size));
    for (uint64_t eo = 0; eo < c->fat_size; eo += e.header_size + e.size, ++n) {
        assert(fs_fits(eo, FS_FATBIN_ENTRY, c->fat_size));
        const uint8_t *h = data + c->body + eo;
        fs_fatbin_entry_at(h, &e);
        assert(e.header_size >= FS_FATBIN_ENTRY && fs_fits(eo, (uint64_t)e.header_size + e.size, c->fat_size));
        const uint8_t *text;
        size_t k;
        if (fs_fatbin_options(h, &e, &text, &k))
            assert(text >= h && k > 0 && text + k <= h + e.header_size);
        if (fs_fatbin_name(h, &e, &text, &k))
            assert(text >= h && text + k <= h + e.header_size + e.size);
    }
    assert(n == c->entries && n <= FS_FATBIN_MAX_ENTRIES);
}

/* parse_fatbin's strict walk and scan_sections' magic scan over the whole input (an exact-size
 * heap copy: ASan sees any read past it); the scan finds every magic the naive search finds,
 * as a container or a rejected match, in order. */
static void fatbin(const uint8_t *data, size_t size) {
    fs_fatbin c;
    uint64_t pos = 0, last = 0;
    int rc;
    while ((rc = fs_fatbin_next(data, size, &pos, &c)) == FS_OK) {
        assert(c.offset >= last && pos == c.body + c.fat_size && pos <= size);
        fatbin_entries(data, size, &c);
        last = pos;
    }
    assert(rc == FS_DONE || rc == FS_DOUBT);
    uint64_t rejected = 0, seen = 0, naive = 0, from = 0;
    pos = 0;
    while (fs_fatbin_scan_next(data, size, &pos, &c, &rejected) == FS_OK) {
        assert(c.version == 1 && c.body == c.offset + 16 && c.entries > 0 && pos == c.body + c.fat_size && pos <= size);
        fatbin_entries(data, size, &c);
        for (uint64_t at = from; at + 4 <= c.offset + 4; ++at) /* matches before and at this container */
            naive += memcmp(data + at, fs_fatbin_magic, 4) == 0;
        from = pos;
        ++seen;
    }
    for (uint64_t at = from; at + 4 <= size; ++at)
        naive += memcmp(data + at, fs_fatbin_magic, 4) == 0;
    assert(seen + rejected == naive); /* every match outside the accepted containers: found, kept or rejected */
}

/* fs_find_needles against the plain definition: the first position where any needle matches
 * (ties: the lowest index), from each match on, for the magic numbers aotwheel.carried looks for. */
static void needles(const uint8_t *data, size_t size) {
    static const uint8_t elf[] = {0x7f, 'E', 'L', 'F'}, spv[] = {0x03, 0x02, 0x23, 0x07};
    static const char ver[] = ".version ";
    const fs_needle nd[3] = {{elf, 4}, {(const uint8_t *)ver, 9}, {spv, 4}};
    uint64_t pos = 0;
    for (int k = 0; k < 64 && pos <= size; ++k) {
        int which = -1, plain_which = -1;
        uint64_t at = fs_find_needles(data, size, pos, nd, 3, &which), plain = size;
        for (uint64_t q = pos; q < size && plain == size; ++q)
            for (int i = 0; i < 3; ++i)
                if (nd[i].len <= size - q && memcmp(data + q, nd[i].bytes, nd[i].len) == 0) {
                    plain = q;
                    plain_which = i;
                    break;
                }
        assert(at == plain && (at == size || which == plain_which));
        if (at >= size)
            break;
        pos = at + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    copies c = {data, size, {NULL}};
    fs_src mem = fs_buffer(data, size), rd = {NULL, copy_read, &c, 0, size};
    ar_alike(data, size, &mem, &rd);
    int fd = memfd_create("fastscan", 0);
    if (fd >= 0) {
        if (write(fd, data, size) == (ssize_t)size) {
            fs_pread_ctx ctx;
            memset(&ctx, 0, sizeof ctx);
            ctx.fd = fd;
            fs_src file = {NULL, fs_pread_read, &ctx, 0, size};
            ar_alike(data, size, &mem, &file);
            fs_pread_free(&ctx);
        }
        close(fd);
    }
    uint64_t stored1 = 0, stored2 = 0, declared1 = 0, declared2 = 0;
    int has1 = 0, has2 = 0;
    int z1 = fs_zstd_facts(&mem, &stored1, &has1, &declared1), z2 = fs_zstd_facts(&rd, &stored2, &has2, &declared2);
    assert(z1 == z2 && (z1 != FS_OK || (stored1 == stored2 && stored1 <= size && has1 == has2 && declared1 == declared2)));
    int leaf = fs_leaf_kind(data, size);
    assert(leaf == FS_LEAF_NONE || size >= 4);
    fs_tgtsym_out t;
    if (fs_tgtsym(data, size, &t) == FS_OK) {
        size_t total = 0;
        for (size_t i = 0; i < t.n_prefixes; ++i)
            total += t.prefixes[i].count;
        assert(total == t.names && t.kernels <= t.names && t.n_prefixes <= t.names);
        fs_tgtsym_free(&t);
    }
    fatbin(data, size);
    needles(data, size);
    uint64_t spv = fs_spirv_extent(data, size);
    assert(spv == 0 || (spv % 4 == 0 && spv >= 28 && spv <= size));
    for (int i = 0; i < FS_SLOTS; ++i)
        free(c.slot[i]);
    return 0;
}
