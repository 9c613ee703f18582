/* A minimal protobuf writer for crafting ONNX models in tests (test_nn_import.c's small graphs,
 * test_nn_large_graph.c's 100k-node chain). Aborts when out of memory: tests only. */
#ifndef PF_TEST_ONNX_PB_H
#define PF_TEST_ONNX_PB_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct pb {
    unsigned char *b;
    size_t n, cap;
} pb;

static void pb_raw(pb *p, const void *d, size_t n)
{
    if (!n) return;
    if (p->n + n > p->cap) {
        p->cap = (p->n + n) * 2 + 64;
        p->b = realloc(p->b, p->cap);
        if (!p->b) abort();
    }
    memcpy(p->b + p->n, d, n);
    p->n += n;
}

static void pb_varint(pb *p, uint64_t v)
{
    unsigned char t[10];
    int n = 0;
    do {
        t[n] = (unsigned char)(v & 127);
        v >>= 7;
        if (v) t[n] |= 128;
        n++;
    } while (v);
    pb_raw(p, t, (size_t)n);
}

static void pb_int(pb *p, int field, uint64_t v)
{
    pb_varint(p, (uint64_t)field << 3);
    pb_varint(p, v);
}

static void pb_bytes(pb *p, int field, const void *d, size_t n)
{
    pb_varint(p, ((uint64_t)field << 3) | 2);
    pb_varint(p, n);
    pb_raw(p, d, n);
}

static void pb_str(pb *p, int field, const char *s) { pb_bytes(p, field, s, strlen(s)); }

static void pb_msg(pb *p, int field, pb *sub)
{
    pb_bytes(p, field, sub->b, sub->n);
    free(sub->b);
    memset(sub, 0, sizeof *sub);
}

/* ValueInfoProto of a float tensor; dims < 0 take the symbol syms[i]. */
static void pb_value_info(pb *p, int field, const char *name, int nd, const int64_t *dims,
                          const char *const *syms)
{
    pb vi = {0}, tp = {0}, tt = {0}, sh = {0};
    for (int i = 0; i < nd; i++) {
        pb d = {0};
        if (dims[i] >= 0) pb_int(&d, 1, (uint64_t)dims[i]);
        else pb_str(&d, 2, syms[i]);
        pb_msg(&sh, 1, &d);
    }
    pb_int(&tt, 1, 1); /* FLOAT */
    pb_msg(&tt, 2, &sh);
    pb_msg(&tp, 1, &tt);
    pb_str(&vi, 1, name);
    pb_msg(&vi, 2, &tp);
    pb_msg(p, field, &vi);
}

#endif
