/* libFuzzer target for the C core of aotwheel._fastscan (csrc/fastscan_core.h): the same scanning
 * code the extension runs, on arbitrary bytes, through both kinds of source it uses: the bytes
 * themselves (libFuzzer hands over an exactly-sized heap copy), and a reader standing in for
 * pread that hands out an exactly-sized heap copy of each piece fetched, so that AddressSanitizer
 * sees any read past what the code asked for; and the extension's own pread reader (with its
 * read-ahead/read-behind windows) over a memfd holding the input. UBSan reports undefined arithmetic; the asserts
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
    for (int i = 0; i < FS_SLOTS; ++i)
        free(c.slot[i]);
    return 0;
}
