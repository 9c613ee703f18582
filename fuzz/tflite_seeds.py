"""Small TFLite seed models for fuzz_tflite: one operator each (1x8x8x3 NHWC
input, tiny weights), written by a minimal FlatBuffers writer, so the fuzzer
mutates models that load and run in microseconds instead of 1 MB MediaPipe
files. Usage: python3 fuzz/tflite_seeds.py OUTDIR (fuzz/make-corpus.sh)."""
import struct, os, sys
class Vec:
    def __init__(self, fmt, items): self.fmt, self.items = fmt, items
class Str:
    def __init__(self, s): self.s = s.encode()
class Tab:
    # fields: (id, struct format or 'o' for an offset to a child, value)
    def __init__(self, fields): self.fields = fields
def build(root):
    buf = bytearray(b'\0' * 8)  # root uoffset + pad
    queue = [(0, root)]
    def align(n):
        while len(buf) % n: buf.append(0)
    def emit(obj):
        if isinstance(obj, Str):
            align(4); pos = len(buf)
            buf.extend(struct.pack('<I', len(obj.s)) + obj.s + b'\0'); return pos
        if isinstance(obj, Vec):
            align(16 if obj.fmt == 'B' else 4)
            # length must sit right before the data; for bytes keep data 16-aligned
            if obj.fmt == 'B':
                buf.extend(b'\0' * 12)
            pos = len(buf)
            buf.extend(struct.pack('<I', len(obj.items)))
            for it in obj.items:
                if obj.fmt == 'o':
                    queue.append((len(buf), it)); buf.extend(b'\0' * 4)
                else:
                    buf.extend(struct.pack('<' + obj.fmt, it))
            return pos
        # table
        fields = sorted(obj.fields, key=lambda x: x[0])
        nf = (max(f[0] for f in fields) + 1) if fields else 0
        # layout table body: soffset then fields (4-byte aligned each for simplicity)
        body = []; off = 4
        for fid, fmt, v in fields:
            sz = 4 if fmt in 'oiIf' else (2 if fmt in 'hH' else 1)
            while off % sz: off += 1
            body.append((fid, fmt, v, off)); off += sz
        tsize = off
        while tsize % 4: tsize += 1
        align(2)
        vt = len(buf)
        vto = [0] * nf
        for fid, fmt, v, o in body: vto[fid] = o
        buf.extend(struct.pack('<HH', 4 + 2 * nf, tsize) + b''.join(struct.pack('<H', x) for x in vto))
        align(4)
        pos = len(buf)
        buf.extend(b'\0' * tsize)
        struct.pack_into('<i', buf, pos, pos - vt)
        for fid, fmt, v, o in body:
            if fmt == 'o': queue.append((pos + o, v))
            else: struct.pack_into('<' + fmt, buf, pos + o, v)
        return pos
    while queue:
        at, obj = queue.pop(0)
        p = emit(obj)
        struct.pack_into('<I', buf, at, p - at)
    struct.pack_into('4s', buf, 4, b'TFL3')
    return bytes(buf)

F32, I32, I64 = 0, 2, 4
def f32(vals): return Vec('B', list(struct.pack('<%df' % len(vals), *vals)))
def i32b(vals): return Vec('B', list(struct.pack('<%di' % len(vals), *vals)))
def tensor(name, shape, buf, t=F32, sig=None):
    f = [(0, 'o', Vec('i', shape)), (1, 'b', t), (2, 'I', buf), (3, 'o', Str(name))]
    if sig is not None: f.append((7, 'o', Vec('i', sig)))
    return Tab(f)
def model(ops, tensors, buffers, inputs, outputs, codes):
    # ops: (code_index, ins, outs, opt_type, opt_table)
    opcodes = [Tab([(0, 'b', min(c, 127)), (2, 'i', 1), (3, 'i', c)] + ([(1, 'o', Str(cc))] if cc else [])) for c, cc in codes]
    operators = []
    for ci, ins, outs, ot, otab in ops:
        f = [(0, 'I', ci), (1, 'o', Vec('i', ins)), (2, 'o', Vec('i', outs))]
        if ot: f += [(3, 'B', ot), (4, 'o', otab)]
        operators.append(Tab(f))
    sg = Tab([(0, 'o', Vec('o', tensors)), (1, 'o', Vec('i', inputs)), (2, 'o', Vec('i', outputs)), (3, 'o', Vec('o', operators)), (4, 'o', Str('main'))])
    bufs = [Tab([]) ] + [Tab([(0, 'o', b)]) if b is not None else Tab([]) for b in buffers]
    return build(Tab([(0, 'I', 3), (1, 'o', Vec('o', opcodes)), (2, 'o', Vec('o', [sg])), (3, 'o', Str('seed')), (4, 'o', Vec('o', bufs))]))

cases = {}
X = lambda: tensor('x', [1, 8, 8, 3], 0, sig=[-1, 8, 8, 3])
def single(code, ot, otab, extra=(), out_shape=(1, 8, 8, 3), custom=None):
    # extra: list of (name, shape, data_vec, type)
    tensors = [X(), tensor('y', list(out_shape), 0)]
    buffers = []
    ins = [0]
    for nm, shp, data, t in extra:
        buffers.append(data); tensors.append(tensor(nm, shp, len(buffers), t)); ins.append(len(tensors) - 1)
    return model([(0, ins, [1], ot, otab)], tensors, buffers, [0], [1], [(code, custom)])
conv_opts = lambda pad=0, s=1, act=0, d=1: Tab([(0, 'b', pad), (1, 'i', s), (2, 'i', s), (3, 'b', act), (4, 'i', d), (5, 'i', d)])
cases['conv_same'] = single(3, 1, conv_opts(0, 1, 1), [('w', [4, 3, 3, 3], f32([0.1] * 108), F32), ('b', [4], f32([0.5] * 4), F32)], (1, 8, 8, 4))
cases['conv_valid_s2'] = single(3, 1, conv_opts(1, 2, 3), [('w', [4, 3, 3, 3], f32([0.1] * 108), F32), ('b', [4], f32([0.5] * 4), F32)], (1, 3, 3, 4))
cases['conv_dil'] = single(3, 1, conv_opts(0, 1, 0, 2), [('w', [2, 3, 3, 3], f32([0.1] * 54), F32), ('b', [2], f32([0.5] * 2), F32)], (1, 8, 8, 2))
cases['dwconv'] = single(4, 2, Tab([(0, 'b', 0), (1, 'i', 1), (2, 'i', 1), (3, 'i', 1), (4, 'b', 1), (5, 'i', 1), (6, 'i', 1)]), [('w', [1, 3, 3, 3], f32([0.1] * 27), F32), ('b', [3], f32([0.5] * 3), F32)])
cases['tconv'] = model([(0, [2, 3, 0], [1], 49, Tab([(0, 'b', 0), (1, 'i', 2), (2, 'i', 2)]))], [X(), tensor('y', [1, 16, 16, 2], 0), tensor('os', [4], 1, I32), tensor('w', [2, 3, 3, 3], 2)], [i32b([1, 16, 16, 2]), f32([0.1] * 54)], [0], [1], [(67, None)])
cases['maxpool'] = single(17, 5, Tab([(0, 'b', 1), (1, 'i', 2), (2, 'i', 2), (3, 'i', 2), (4, 'i', 2)]), (), (1, 4, 4, 3))
cases['avgpool'] = single(1, 5, Tab([(0, 'b', 0), (1, 'i', 2), (2, 'i', 2), (3, 'i', 3), (4, 'i', 3)]), (), (1, 4, 4, 3))
cases['add_const'] = single(0, 11, Tab([(0, 'b', 1)]), [('b', [3], f32([1, 2, 3]), F32)])
cases['mul_const'] = single(18, 21, Tab([]), [('b', [1, 1, 1, 3], f32([1, 2, 3]), F32)])
cases['sub_const'] = single(41, 28, Tab([]), [('b', [3], f32([1, 2, 3]), F32)])
cases['div_const'] = single(42, 29, Tab([]), [('b', [3], f32([1, 2, 3]), F32)])
for nm, code in [('relu', 19), ('relu6', 21), ('logistic', 14), ('tanh', 28), ('hswish', 117)]:
    cases[nm] = single(code, 91 if code == 117 else 0, Tab([]) if code == 117 else None)
cases['leaky'] = single(98, 75, Tab([(0, 'f', 0.2)]))
cases['softmax'] = single(25, 9, Tab([(0, 'f', 1.0)]))
cases['reshape'] = single(22, 17, Tab([(0, 'o', Vec('i', [1, 192]))]), [('s', [2], i32b([1, 192]), I32)], (1, 192))
cases['fc'] = model([(0, [2, 3, 4], [1], 8, Tab([(0, 'b', 1)]))], [tensor('x', [1, 12], 0), tensor('y', [1, 4], 0), tensor('w', [4, 12], 1), tensor('b', [4], 2), tensor('r', [1, 12], 0)], [f32([0.1] * 48), f32([0.0] * 4)], [0], [1], [(9, None)])
cases['concat'] = model([(0, [0, 0], [1], 10, Tab([(0, 'i', 3)]))], [X(), tensor('y', [1, 8, 8, 6], 0)], [], [0], [1], [(2, None)])
cases['mean'] = single(40, 27, Tab([(0, 'B', 1)]), [('a', [2], i32b([1, 2]), I32)], (1, 1, 1, 3))
cases['sum'] = single(74, 27, Tab([]), [('a', [1], i32b([3]), I32)], (1, 8, 8))
cases['rmax'] = single(82, 27, Tab([]), [('a', [1], i32b([1]), I32)], (1, 8, 3))
cases['pad'] = single(34, 22, Tab([]), [('p', [4, 2], i32b([0, 0, 1, 1, 2, 2, 0, 0]), I32)], (1, 10, 12, 3))
cases['resize_bl'] = single(23, 15, Tab([(3, 'B', 1)]), [('s', [2], i32b([16, 16]), I32)], (1, 16, 16, 3))
cases['resize_nn'] = single(97, 74, Tab([(0, 'B', 1)]), [('s', [2], i32b([5, 5]), I32)], (1, 5, 5, 3))
cases['dequant'] = model([(0, [2], [3], 38, Tab([])), (1, [0, 3], [1], 11, Tab([]))], [X(), tensor('y', [1, 8, 8, 3], 0), tensor('h', [3], 1, 1), tensor('hf', [3], 0)], [Vec('B', list(struct.pack('<3H', 0x3c00, 0x4000, 0x4200)))], [0], [1], [(6, None), (0, None)])
cases['c2dtb'] = model([(0, [0, 2, 3], [1], 0, None)], [X(), tensor('y', [1, 16, 16, 2], 0), tensor('w', [2, 3, 3, 3], 1), tensor('b', [2], 2)], [f32([0.1] * 54), f32([0.0] * 2)], [0], [1], [(32, 'Convolution2DTransposeBias')])
# Hostile variants: bad shapes, indices, options and custom options.
X = lambda shp=(1, 8, 8, 3), sig=None: tensor('x', list(shp), 0, sig=sig)
def single(code, ot, otab, extra=(), out_shape=(1, 8, 8, 3), x=None, custom=None, ins_override=None, custom_opts=None):
    tensors = [x or X(), tensor('y', list(out_shape), 0)]
    buffers = []; ins = [0]
    for nm, shp, data, t in extra:
        buffers.append(data); tensors.append(tensor(nm, list(shp), len(buffers), t)); ins.append(len(tensors) - 1)
    if ins_override is not None: ins = ins_override
    return model([(0, ins, [1], ot, otab)], tensors, buffers, [0], [1], [(code, custom)])
copt = lambda pad=0, s=1, act=0, d=1: Tab([(0, 'b', pad), (1, 'i', s), (2, 'i', s), (3, 'b', act), (4, 'i', d), (5, 'i', d)])
W = lambda o, kh, kw, i: ('w', [o, kh, kw, i], f32([0.1] * (o * kh * kw * i)), F32)
B = lambda n: ('b', [n], f32([0.0] * n), F32)
cases['bad_conv_w_cin'] = single(3, 1, copt(), [W(4, 3, 3, 5), B(4)], (1, 8, 8, 4))
cases['bad_conv_w_short'] = single(3, 1, copt(), [('w', [4, 3, 3, 3], f32([0.1] * 10), F32), B(4)], (1, 8, 8, 4))
cases['bad_conv_w_rank3'] = single(3, 1, copt(), [('w', [4, 3, 9], f32([0.1] * 108), F32), B(4)], (1, 8, 8, 4))
cases['bad_conv_bias_bad'] = single(3, 1, copt(), [W(4, 3, 3, 3), B(7)], (1, 8, 8, 4))
cases['bad_conv_k_big'] = single(3, 1, copt(1), [W(1, 20, 20, 3), B(1)], (1, 1, 1, 1))
cases['bad_conv_stride_huge'] = single(3, 1, copt(0, 1 << 30), [W(1, 3, 3, 3), B(1)], (1, 1, 1, 1))
cases['bad_conv_dil_huge'] = single(3, 1, copt(0, 1, 0, 1 << 30), [W(1, 3, 3, 3), B(1)], (1, 8, 8, 1))
cases['bad_conv_x_rank2'] = single(3, 1, copt(), [W(1, 3, 3, 3), B(1)], (1, 8, 8, 1), x=X((8, 3)))
cases['bad_conv_x_0'] = single(3, 1, copt(), [W(1, 3, 3, 3), B(1)], (1, 0, 8, 1), x=X((1, 0, 8, 3)))
cases['bad_conv_no_bias'] = single(3, 1, copt(), [W(2, 3, 3, 3)], (1, 8, 8, 2))
cases['bad_conv_bias_neg1'] = single(3, 1, copt(), [W(2, 3, 3, 3)], (1, 8, 8, 2), ins_override=[0, 2, -1])
cases['bad_conv_in_oob'] = single(3, 1, copt(), [W(2, 3, 3, 3)], (1, 8, 8, 2), ins_override=[0, 99])
cases['bad_conv_in_self'] = single(3, 1, copt(), [W(2, 3, 3, 3)], (1, 8, 8, 2), ins_override=[1, 2])
cases['bad_conv_w_is_x'] = single(3, 1, copt(), [], (1, 8, 8, 2), ins_override=[0, 0])
cases['bad_dw_mult0'] = single(4, 2, Tab([(0, 'b', 0), (1, 'i', 1), (2, 'i', 1), (3, 'i', 0)]), [W(1, 3, 3, 3), B(3)])
cases['bad_dw_mult_mis'] = single(4, 2, Tab([(0, 'b', 0), (1, 'i', 1), (2, 'i', 1), (3, 'i', 2)]), [W(1, 3, 3, 3), B(3)])
cases['bad_dw_w_bad'] = single(4, 2, Tab([(0, 'b', 0), (1, 'i', 1), (2, 'i', 1), (3, 'i', 1)]), [W(2, 3, 3, 3), B(3)])
cases['bad_tconv_os_huge'] = model([(0, [2, 3, 0], [1], 49, Tab([(0, 'b', 0), (1, 'i', 2), (2, 'i', 2)]))], [X(), tensor('y', [1, 16, 16, 2], 0), tensor('os', [4], 1, I32), tensor('w', [2, 3, 3, 3], 2)], [i32b([1, 1 << 30, 1 << 30, 2]), f32([0.1] * 54)], [0], [1], [(67, None)])
cases['bad_tconv_os_neg'] = model([(0, [2, 3, 0], [1], 49, Tab([(0, 'b', 0), (1, 'i', 2), (2, 'i', 2)]))], [X(), tensor('y', [1, 16, 16, 2], 0), tensor('os', [4], 1, I32), tensor('w', [2, 3, 3, 3], 2)], [i32b([1, -16, 16, 2]), f32([0.1] * 54)], [0], [1], [(67, None)])
cases['bad_tconv_os_short'] = model([(0, [2, 3, 0], [1], 49, Tab([(0, 'b', 0), (1, 'i', 2), (2, 'i', 2)]))], [X(), tensor('y', [1, 16, 16, 2], 0), tensor('os', [2], 1, I32), tensor('w', [2, 3, 3, 3], 2)], [i32b([16, 16]), f32([0.1] * 54)], [0], [1], [(67, None)])
cases['bad_tconv_os_mis'] = model([(0, [2, 3, 0], [1], 49, Tab([(0, 'b', 0), (1, 'i', 2), (2, 'i', 2)]))], [X(), tensor('y', [1, 16, 16, 2], 0), tensor('os', [4], 1, I32), tensor('w', [2, 3, 3, 3], 2)], [i32b([1, 16, 16, 7]), f32([0.1] * 54)], [0], [1], [(67, None)])
cases['bad_tconv_os_small'] = model([(0, [2, 3, 0], [1], 49, Tab([(0, 'b', 1), (1, 'i', 2), (2, 'i', 2)]))], [X(), tensor('y', [1, 2, 2, 2], 0), tensor('os', [4], 1, I32), tensor('w', [2, 3, 3, 3], 2)], [i32b([1, 2, 2, 2]), f32([0.1] * 54)], [0], [1], [(67, None)])
cases['bad_tconv_os_f32'] = model([(0, [2, 3, 0], [1], 49, Tab([(0, 'b', 0), (1, 'i', 2), (2, 'i', 2)]))], [X(), tensor('y', [1, 16, 16, 2], 0), tensor('os', [4], 1, F32), tensor('w', [2, 3, 3, 3], 2)], [f32([1, 16, 16, 2]), f32([0.1] * 54)], [0], [1], [(67, None)])
cases['bad_pool_big'] = single(17, 5, Tab([(0, 'b', 1), (1, 'i', 1), (2, 'i', 1), (3, 'i', 100), (4, 'i', 100)]), (), (1, 1, 1, 3))
cases['bad_pool_same_big'] = single(1, 5, Tab([(0, 'b', 0), (1, 'i', 1), (2, 'i', 1), (3, 'i', 1 << 28), (4, 'i', 1 << 28)]), (), (1, 8, 8, 3))
cases['bad_pool_stride_huge'] = single(1, 5, Tab([(0, 'b', 0), (1, 'i', (1 << 31) - 1), (2, 'i', (1 << 31) - 1), (3, 'i', 2), (4, 'i', 2)]), (), (1, 1, 1, 3))
cases['bad_l2pool'] = single(12, 5, Tab([(0, 'b', 0), (1, 'i', 1), (2, 'i', 1), (3, 'i', 2), (4, 'i', 2)]), (), (1, 8, 8, 3))
cases['bad_add_bcast_bad'] = single(0, 11, Tab([]), [('b', [5], f32([1] * 5), F32)])
cases['bad_add_i32'] = single(0, 11, Tab([]), [('b', [3], i32b([1, 2, 3]), I32)])
cases['bad_add_1in'] = single(0, 11, Tab([]), [])
cases['bad_reshape_opt_mis'] = single(22, 17, Tab([(0, 'o', Vec('i', [7, -1]))]), [], (7, 1))
cases['bad_reshape_2neg'] = single(22, 17, Tab([(0, 'o', Vec('i', [-1, -1]))]), [], (1, 192))
cases['bad_reshape_zero'] = single(22, 17, Tab([(0, 'o', Vec('i', [0, -1]))]), [], (1, 192))
cases['bad_reshape_big'] = single(22, 17, Tab([(0, 'o', Vec('i', [1 << 30, 1 << 30, 1 << 30]))]), [], (1, 192))
cases['bad_reshape_9d'] = single(22, 17, Tab([(0, 'o', Vec('i', [1] * 6 + [8, 8, 3]))]), [], (1, 192))
cases['bad_reshape_t_i64'] = single(22, 17, Tab([]), [('s', [2], Vec('B', list(struct.pack('<2q', 1, 192))), I64)], (1, 192))
cases['bad_reshape_t_f32'] = single(22, 17, Tab([]), [('s', [2], f32([1, 192]), F32)], (1, 192))
cases['bad_reshape_t_2d'] = single(22, 17, Tab([]), [('s', [1, 2], i32b([1, 192]), I32)], (1, 192))
cases['bad_reshape_empty_t'] = single(22, 17, Tab([]), [('s', [0], Vec('B', []), I32)], (1, 192))
cases['bad_reshape_noshape'] = single(22, 0, None, [], (1, 192))
cases['bad_concat_axis'] = model([(0, [0, 0], [1], 10, Tab([(0, 'i', 9)]))], [X(), tensor('y', [1, 8, 8, 6], 0)], [], [0], [1], [(2, None)])
cases['bad_concat_axis_neg'] = model([(0, [0, 0], [1], 10, Tab([(0, 'i', -(1 << 31))]))], [X(), tensor('y', [1, 8, 8, 6], 0)], [], [0], [1], [(2, None)])
cases['bad_concat_0in'] = model([(0, [], [1], 10, Tab([(0, 'i', 0)]))], [X(), tensor('y', [1, 8, 8, 6], 0)], [], [0], [1], [(2, None)])
cases['bad_mean_axes_oob'] = single(40, 27, Tab([(0, 'B', 1)]), [('a', [2], i32b([1, 99]), I32)], (1, 1, 1, 3))
cases['bad_mean_axes_neg'] = single(40, 27, Tab([(0, 'B', 1)]), [('a', [2], i32b([-(1 << 31), 2]), I32)], (1, 1, 1, 3))
cases['bad_mean_axes_dup'] = single(40, 27, Tab([(0, 'B', 0)]), [('a', [3], i32b([1, 1, -3]), I32)], (1, 3))
cases['bad_mean_axes_f32'] = single(40, 27, Tab([]), [('a', [1], f32([1]), F32)], (1, 8, 3))
cases['bad_mean_axes_2d'] = single(40, 27, Tab([]), [('a', [1, 1], i32b([1]), I32)], (1, 8, 3))
cases['bad_mean_axes_empty'] = single(40, 27, Tab([]), [('a', [0], Vec('B', []), I32)], (1, 8, 8, 3))
cases['bad_rany'] = single(91, 27, Tab([]), [('a', [1], i32b([1]), I32)], (1, 8, 3))
cases['bad_pad_neg'] = single(34, 22, Tab([]), [('p', [4, 2], i32b([0, 0, -100, 1, 2, 2, 0, 0]), I32)], (1, 10, 12, 3))
cases['bad_pad_huge'] = single(34, 22, Tab([]), [('p', [4, 2], i32b([0, 0, (1 << 31) - 1, (1 << 31) - 1, 2, 2, 0, 0]), I32)], (1, 10, 12, 3))
cases['bad_pad_shape_bad'] = single(34, 22, Tab([]), [('p', [3, 2], i32b([0, 0, 1, 1, 2, 2]), I32)], (1, 10, 12, 3))
cases['bad_pad_shape_1d'] = single(34, 22, Tab([]), [('p', [8], i32b([0, 0, 1, 1, 2, 2, 0, 0]), I32)], (1, 10, 12, 3))
cases['bad_pad_i64'] = single(34, 22, Tab([]), [('p', [4, 2], Vec('B', list(struct.pack('<8q', 0, 0, 1, 1, 2, 2, 0, 0))), I64)], (1, 10, 12, 3))
cases['bad_pad_val'] = model([(0, [0, 2, 3], [1], 22, Tab([]))], [X(), tensor('y', [1, 10, 12, 3], 0), tensor('p', [4, 2], 1, I32), tensor('v', [1], 2)], [i32b([0, 0, 1, 1, 2, 2, 0, 0]), f32([5])], [0], [1], [(60, None)])
cases['bad_resize_0'] = single(23, 15, Tab([]), [('s', [2], i32b([0, 0]), I32)], (1, 0, 0, 3))
cases['bad_resize_neg'] = single(23, 15, Tab([]), [('s', [2], i32b([-4, 4]), I32)], (1, 4, 4, 3))
cases['bad_resize_huge'] = single(97, 74, Tab([]), [('s', [2], i32b([(1 << 31) - 1, (1 << 31) - 1]), I32)], (1, 4, 4, 3))
cases['bad_resize_short'] = single(97, 74, Tab([]), [('s', [1], i32b([4]), I32)], (1, 4, 4, 3))
cases['bad_resize_ac'] = single(23, 15, Tab([(2, 'B', 1)]), [('s', [2], i32b([1, 1]), I32)], (1, 1, 1, 3))
cases['bad_resize_ac_nn'] = single(97, 74, Tab([(0, 'B', 1)]), [('s', [2], i32b([1, 1]), I32)], (1, 1, 1, 3))
cases['bad_resize_runtime'] = model([(0, [0, 2], [1], 15, Tab([]))], [X(), tensor('y', [1, 4, 4, 3], 0), tensor('s', [2], 0, I32)], [], [0, 2], [1], [(23, None)])
cases['bad_softmax_beta0'] = single(25, 9, Tab([(0, 'f', 0.0)]))
cases['bad_softmax_beta_inf'] = single(25, 9, Tab([(0, 'f', float('inf'))]))
cases['bad_softmax_0d'] = single(25, 9, Tab([(0, 'f', 1.0)]), x=X(()), out_shape=())
cases['bad_leaky_nan'] = single(98, 75, Tab([(0, 'f', float('nan'))]))
cases['bad_fc_w_mis'] = model([(0, [0, 2, 3], [1], 8, Tab([]))], [tensor('x', [1, 12], 0), tensor('y', [1, 4], 0), tensor('w', [4, 11], 1), tensor('b', [4], 2)], [f32([0.1] * 44), f32([0.0] * 4)], [0], [1], [(9, None)])
cases['bad_fc_ok'] = model([(0, [0, 2, 3], [1], 8, Tab([]))], [tensor('x', [1, 12], 0), tensor('y', [1, 4], 0), tensor('w', [4, 12], 1), tensor('b', [4], 2)], [f32([0.1] * 48), f32([0.0] * 4)], [0], [1], [(9, None)])
cases['bad_fc_x4d'] = model([(0, [0, 2, 3], [1], 8, Tab([]))], [X(), tensor('y', [1, 4], 0), tensor('w', [4, 192], 1), tensor('b', [4], 2)], [f32([0.1] * 768), f32([0.0] * 4)], [0], [1], [(9, None)])
cases['bad_fc_x4d_bad'] = model([(0, [0, 2, 3], [1], 8, Tab([]))], [X(), tensor('y', [1, 4], 0), tensor('w', [4, 7], 1), tensor('b', [4], 2)], [f32([0.1] * 28), f32([0.0] * 4)], [0], [1], [(9, None)])
cases['bad_fc_bias_bad'] = model([(0, [0, 2, 3], [1], 8, Tab([]))], [tensor('x', [1, 12], 0), tensor('y', [1, 4], 0), tensor('w', [4, 12], 1), tensor('b', [9], 2)], [f32([0.1] * 48), f32([0.0] * 9)], [0], [1], [(9, None)])
cases['bad_fc_keep'] = model([(0, [0, 2, 3], [1], 8, Tab([(2, 'B', 1)]))], [tensor('x', [1, 12], 0), tensor('y', [1, 4], 0), tensor('w', [4, 12], 1), tensor('b', [4], 2)], [f32([0.1] * 48), f32([0.0] * 4)], [0], [1], [(9, None)])
cases['bad_dequant_i8'] = model([(0, [2], [3], 38, Tab([])), (1, [0, 3], [1], 11, Tab([]))], [X(), tensor('y', [1, 8, 8, 3], 0), tensor('h', [3], 1, 9), tensor('hf', [3], 0)], [Vec('B', [1, 2, 3])], [0], [1], [(6, None), (0, None)])
cases['bad_dequant_rt'] = model([(0, [0], [1], 38, Tab([]))], [tensor('x', [1, 8, 8, 3], 0, t=1), tensor('y', [1, 8, 8, 3], 0)], [], [0], [1], [(6, None)])
cases['bad_dequant_rt_mis'] = model([(0, [0], [1], 38, Tab([]))], [tensor('x', [1, 8, 8, 3], 0, t=1), tensor('y', [1, 4, 4, 3], 0)], [], [0], [1], [(6, None)])
cases['bad_dequant_f16_short'] = model([(0, [2], [3], 38, Tab([])), (1, [0, 3], [1], 11, Tab([]))], [X(), tensor('y', [1, 8, 8, 3], 0), tensor('h', [3], 1, 1), tensor('hf', [3], 0)], [Vec('B', [0, 0x3c])], [0], [1], [(6, None), (0, None)])
c2o = lambda pad, sw, sh: list(struct.pack('<3i', pad, sw, sh))
# Convolution2DTransposeBias keeps its options in custom_options (operator
# field 5): padding, stride_w, stride_h as int32.
def c2dtb_full(w_shape, cust, bias_n=2, y=(1, 16, 16, 2), x=(1, 8, 8, 3)):
    nw = 1
    for d in w_shape: nw *= d
    op = Tab([(0, 'I', 0), (1, 'o', Vec('i', [0, 2, 3])), (2, 'o', Vec('i', [1])), (5, 'o', Vec('B', cust))])
    tensors = [tensor('x', list(x), 0), tensor('y', list(y), 0), tensor('w', list(w_shape), 1), tensor('b', [bias_n], 2)]
    sg = Tab([(0, 'o', Vec('o', tensors)), (1, 'o', Vec('i', [0])), (2, 'o', Vec('i', [1])), (3, 'o', Vec('o', [op])), (4, 'o', Str('main'))])
    opc = Tab([(0, 'b', 32), (1, 'o', Str('Convolution2DTransposeBias')), (2, 'i', 1), (3, 'i', 32)])
    bufs = [Tab([]), Tab([(0, 'o', f32([0.1] * nw))]), Tab([(0, 'o', f32([0.0] * bias_n))])]
    return build(Tab([(0, 'I', 3), (1, 'o', Vec('o', [opc])), (2, 'o', Vec('o', [sg])), (4, 'o', Vec('o', bufs))]))
cases['bad_c2dtb_ok'] = c2dtb_full([2, 3, 3, 3], c2o(1, 2, 2))
cases['bad_c2dtb_ok_valid'] = c2dtb_full([2, 3, 3, 3], c2o(2, 2, 2), y=(1, 17, 17, 2))
cases['bad_c2dtb_bad_pad'] = c2dtb_full([2, 3, 3, 3], c2o(7, 2, 2))
cases['bad_c2dtb_stride0'] = c2dtb_full([2, 3, 3, 3], c2o(1, 0, 2))
cases['bad_c2dtb_stride_huge'] = c2dtb_full([2, 3, 3, 3], c2o(1, (1 << 31) - 1, (1 << 31) - 1))
cases['bad_c2dtb_short'] = c2dtb_full([2, 3, 3, 3], c2o(1, 2, 2)[:8])
cases['bad_c2dtb_w_cin'] = c2dtb_full([2, 3, 3, 5], c2o(1, 2, 2))
cases['bad_c2dtb_bias'] = c2dtb_full([2, 3, 3, 3], c2o(1, 2, 2), bias_n=5)
cases['bad_c2dtb_k_big'] = c2dtb_full([2, 40, 40, 3], c2o(1, 1, 1))
cases['bad_c2dtb_x0'] = c2dtb_full([2, 3, 3, 3], c2o(1, 2, 2), x=(1, 0, 8, 3))
cases['bad_x_sig_many'] = single(19, 0, None, x=X((1, 8, 8, 3), sig=[-1, -1, 8, 3]))
cases['bad_x_sig_short'] = single(19, 0, None, x=X((1, 8, 8, 3), sig=[-1, 8]))
cases['bad_x_sig_mis'] = single(19, 0, None, x=X((1, 8, 8, 3), sig=[-1, 9, 8, 3]))
cases['bad_x_neg'] = single(19, 0, None, x=X((1, -8, 8, 3)))
cases['bad_x_huge'] = single(19, 0, None, x=X((1 << 30, 1 << 30, 1 << 30, 3)))
cases['bad_x_9d'] = single(19, 0, None, x=X((1,) * 9))
cases['bad_x_0d'] = single(19, 0, None, x=X(()))
cases['bad_x_i64'] = model([(0, [0], [1], 0, None)], [tensor('x', [2, 3], 0, t=I64), tensor('y', [2, 3], 0, t=I64)], [], [0], [1], [(19, None)])
cases['bad_x_u8'] = model([(0, [0], [1], 0, None)], [tensor('x', [2, 3], 0, t=3), tensor('y', [2, 3], 0, t=3)], [], [0], [1], [(19, None)])
cases['bad_out_is_in'] = model([], [X()], [], [0], [0], [])
cases['bad_out_const'] = model([], [X(), tensor('c', [2], 1)], [f32([1, 2])], [0], [1], [])
cases['bad_out_undef'] = model([], [X(), tensor('c', [2], 0)], [], [0], [1], [])
cases['bad_two_writers'] = model([(0, [0], [1], 0, None), (0, [0], [1], 0, None)], [X(), tensor('y', [1, 8, 8, 3], 0)], [], [0], [1], [(19, None)])
cases['bad_cycle'] = model([(0, [1], [2], 0, None), (0, [2], [1], 0, None)], [X(), tensor('y', [1, 8, 8, 3], 0), tensor('z', [1, 8, 8, 3], 0)], [], [0], [1], [(19, None)])
cases['bad_write_input'] = model([(0, [0], [0], 0, None)], [X()], [], [0], [0], [(19, None)])
cases['bad_write_const'] = model([(0, [0], [2], 0, None), (0, [2], [1], 0, None)], [X(), tensor('y', [1, 8, 8, 3], 0), tensor('c', [1, 8, 8, 3], 1)], [f32([0.0] * 192)], [0], [1], [(19, None), (19, None)])
cases['bad_opcode_oob'] = model([(5, [0], [1], 0, None)], [X(), tensor('y', [1, 8, 8, 3], 0)], [], [0], [1], [(19, None)])
cases['bad_sub_mis_opts'] = single(41, 11, Tab([]), [('b', [3], f32([1, 2, 3]), F32)])
cases['bad_buf_oob'] = model([(0, [0, 2], [1], 11, Tab([]))], [X(), tensor('y', [1, 8, 8, 3], 0), tensor('b', [3], 77)], [], [0], [1], [(0, None)])
cases['bad_const_short'] = single(0, 11, Tab([]), [('b', [3], f32([1]), F32)])
cases['bad_const_long'] = single(0, 11, Tab([]), [('b', [3], f32([1, 2, 3, 4, 5]), F32)])
os.makedirs(sys.argv[1], exist_ok=True)
for k, v in cases.items(): open(os.path.join(sys.argv[1], 'seed_' + k + '.tflite'), 'wb').write(v)

