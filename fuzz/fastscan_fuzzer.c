/* libFuzzer target for the C core of aotwheel._fastscan (csrc/fastscan_core.h): the same scanning
 * code the extension runs, on arbitrary bytes. Built with ASan + UBSan, so any read outside the
 * input (libFuzzer hands over an exactly-sized heap copy) or undefined arithmetic is a finding;
 * the asserts check what the extension relies on: every span it reports lies inside the input.
 *
 *   clang-15 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *       -Icsrc fuzz/fastscan_fuzzer.c -o fastscan_fuzzer
 *
 * tests/_fastscan_util.py builds it and the seed corpus (real ocloc fat binaries); the short run is
 * tests/test_fuzz_fastscan.py, the long one fuzz/fastscan_long.py. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "fastscan_core.h"

static void zebin(const uint8_t *p, size_t n) {
    fs_zebin z;
    if (fs_zebin_summary(p, n, &z) != FS_OK)
        return;
    for (int t = 0; t < 7; ++t)
        if (z.desc[t] != NULL)
            assert(z.desc[t] >= p && z.desc_n[t] <= n && (size_t)(z.desc[t] - p) <= n - z.desc_n[t]);
}

static void ir(const uint8_t *p, size_t n) {
    size_t off, len;
    if (fs_ir_payload(p, n, &off, &len) == FS_OK)
        assert(fs_fits(off, len, n));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fs_ar ar;
    fs_member m;
    if (fs_ar_open(&ar, data, size) == FS_OK) {
        while (fs_ar_next(&ar, &m) == FS_OK) {
            assert(fs_fits(m.offset, m.size, size) && m.name_len > 0);
            assert(m.name >= data && m.name + m.name_len <= data + size);
            zebin(data + m.offset, m.size);
            ir(data + m.offset, m.size);
        }
    }
    zebin(data, size);
    ir(data, size);
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
    return 0;
}
