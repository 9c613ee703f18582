"""Small hand-made ONNX models for fuzz_onnx: hostile attributes and shapes
(huge, negative, zero-size, overflowing, out-of-range axes, bad broadcasts,
integer edge cases) written with a minimal protobuf encoder, so the fuzzer
starts from models that reach shape inference, folding and the kernels.
Usage: python3 fuzz/onnx_seeds.py OUTDIR (fuzz/make-corpus.sh)."""
import struct, sys, os
def varint(v):
    if v < 0: v += 1 << 64
    out = b''
    while True:
        b = v & 0x7f; v >>= 7
        if v: out += bytes([b | 0x80])
        else: return out + bytes([b])
def key(f, wt): return varint((f << 3) | wt)
def I(f, v): return key(f, 0) + varint(v)
def L(f, b):
    if isinstance(b, str): b = b.encode()
    return key(f, 2) + varint(len(b)) + b
def F(f, x): return key(f, 5) + struct.pack('<f', x)
FLOAT, INT64, INT32, BOOL = 1, 7, 6, 9
def tensor(name, dims, dt, raw=None, floats=None, ints=None):
    b = b''.join(I(1, d) for d in dims) + I(2, dt) + L(8, name)
    if raw is not None: b += L(9, raw)
    if floats is not None: b += b''.join(F(4, x) for x in floats)
    if ints is not None: b += b''.join(I(7, x) for x in ints)
    return b
def i64raw(vals): return b''.join(struct.pack('<q', v) for v in vals)
def f32raw(vals): return b''.join(struct.pack('<f', v) for v in vals)
def attr_i(n, v): return L(1, n) + I(3, v) + I(20, 2)
def attr_f(n, v): return L(1, n) + F(2, v) + I(20, 1)
def attr_s(n, v): return L(1, n) + L(4, v) + I(20, 3)
def attr_ints(n, vs): return L(1, n) + b''.join(I(8, v) for v in vs) + I(20, 7)
def attr_t(n, t): return L(1, n) + L(5, t) + I(20, 4)
def node(op, ins, outs, attrs=(), name=None):
    b = b''.join(L(1, i) for i in ins) + b''.join(L(2, o) for o in outs)
    b += L(3, name or (op.lower() + '0')) + L(4, op)
    b += b''.join(L(5, a) for a in attrs)
    return b
def vi(name, dt, dims):
    shape = b''.join(L(1, (I(1, d) if isinstance(d, int) else L(2, d))) for d in dims)
    return L(1, name) + L(2, L(1, I(1, dt) + L(2, shape)))
def vi_noshape(name, dt): return L(1, name) + L(2, L(1, I(1, dt)))
def model(nodes, inputs, outputs, inits=(), opset=13):
    g = b''.join(L(1, n) for n in nodes) + L(2, 'g')
    g += b''.join(L(5, t) for t in inits)
    g += b''.join(L(11, v) for v in inputs) + b''.join(L(12, v) for v in outputs)
    return I(1, 8) + L(8, L(1, '') + I(2, opset)) + L(7, g)

cases = {}
X = vi('x', FLOAT, [1, 3, 8, 8])
Y = vi_noshape('y', FLOAT)
def unary(op, attrs=(), x=X, inits=(), extra_in=()):
    return model([node(op, ['x'] + list(extra_in), ['y'], attrs)], [x], [Y], inits)
big = 1 << 31
cases['cos_huge'] = model([node('ConstantOfShape', ['s'], ['y'])], [], [Y], [tensor('s', [2], INT64, i64raw([1 << 31, 1 << 31]))])
cases['cos_overflow'] = model([node('ConstantOfShape', ['s'], ['y'])], [], [Y], [tensor('s', [3], INT64, i64raw([1 << 40, 1 << 40, 1 << 40]))])
cases['cos_neg'] = model([node('ConstantOfShape', ['s'], ['y'])], [], [Y], [tensor('s', [2], INT64, i64raw([-5, 3]))])
cases['conv_k0'] = unary('Conv', [attr_ints('kernel_shape', [0, 0])], extra_in=['w'], inits=[tensor('w', [4, 3, 0, 0], FLOAT, raw=b'')])
cases['conv_stride0'] = unary('Conv', [attr_ints('strides', [0, 0])], extra_in=['w'], inits=[tensor('w', [4, 3, 3, 3], FLOAT, raw=f32raw([0.0] * 108))])
cases['conv_dil_huge'] = unary('Conv', [attr_ints('dilations', [1 << 62, 1 << 62])], extra_in=['w'], inits=[tensor('w', [4, 3, 3, 3], FLOAT, raw=f32raw([0.0] * 108))])
cases['conv_pad_neg'] = unary('Conv', [attr_ints('pads', [-100, -100, -100, -100])], extra_in=['w'], inits=[tensor('w', [4, 3, 3, 3], FLOAT, raw=f32raw([0.0] * 108))])
cases['conv_pad_huge'] = unary('Conv', [attr_ints('pads', [1 << 62, 1 << 62, 1 << 62, 1 << 62])], extra_in=['w'], inits=[tensor('w', [4, 3, 3, 3], FLOAT, raw=f32raw([0.0] * 108))])
cases['conv_group0'] = unary('Conv', [attr_i('group', 0)], extra_in=['w'], inits=[tensor('w', [4, 3, 3, 3], FLOAT, raw=f32raw([0.0] * 108))])
cases['conv_groupneg'] = unary('Conv', [attr_i('group', -3)], extra_in=['w'], inits=[tensor('w', [4, 3, 3, 3], FLOAT, raw=f32raw([0.0] * 108))])
cases['conv_group3_badw'] = unary('Conv', [attr_i('group', 3)], extra_in=['w'], inits=[tensor('w', [4, 1, 3, 3], FLOAT, raw=f32raw([0.0] * 36))])
cases['convT_outpad'] = unary('ConvTranspose', [attr_ints('output_padding', [100, 100]), attr_ints('strides', [2, 2])], extra_in=['w'], inits=[tensor('w', [3, 4, 3, 3], FLOAT, raw=f32raw([0.0] * 108))])
cases['convT_outshape'] = unary('ConvTranspose', [attr_ints('output_shape', [1 << 40, 1 << 40])], extra_in=['w'], inits=[tensor('w', [3, 4, 3, 3], FLOAT, raw=f32raw([0.0] * 108))])
cases['convT_outshape_neg'] = unary('ConvTranspose', [attr_ints('output_shape', [-7, 2])], extra_in=['w'], inits=[tensor('w', [3, 4, 3, 3], FLOAT, raw=f32raw([0.0] * 108))])
cases['maxpool_big'] = unary('MaxPool', [attr_ints('kernel_shape', [100, 100])])
cases['maxpool_k0'] = unary('MaxPool', [attr_ints('kernel_shape', [0, 0])])
cases['maxpool_kneg'] = unary('MaxPool', [attr_ints('kernel_shape', [-1, -1])])
cases['maxpool_k1d'] = unary('MaxPool', [attr_ints('kernel_shape', [3])])
cases['maxpool_ceil_pad'] = unary('MaxPool', [attr_ints('kernel_shape', [3, 3]), attr_ints('pads', [9, 9, 9, 9]), attr_i('ceil_mode', 1)])
cases['avgpool_ceil'] = unary('AveragePool', [attr_ints('kernel_shape', [3, 3]), attr_ints('strides', [5, 5]), attr_ints('pads', [2, 2, 2, 2]), attr_i('ceil_mode', 1)])
cases['maxpool_dil_huge'] = unary('MaxPool', [attr_ints('kernel_shape', [3, 3]), attr_ints('dilations', [1 << 61, 1 << 61])])
cases['reshape_2neg'] = unary('Reshape', extra_in=['s'], inits=[tensor('s', [2], INT64, i64raw([-1, -1]))])
cases['reshape_big'] = unary('Reshape', extra_in=['s'], inits=[tensor('s', [3], INT64, i64raw([1 << 40, 1 << 40, 0]))])
cases['reshape_zero_oob'] = unary('Reshape', extra_in=['s'], inits=[tensor('s', [6], INT64, i64raw([0, 0, 0, 0, 0, 1]))])
cases['reshape_bad'] = unary('Reshape', extra_in=['s'], inits=[tensor('s', [2], INT64, i64raw([7, -1]))])
cases['reshape_neg5'] = unary('Reshape', extra_in=['s'], inits=[tensor('s', [2], INT64, i64raw([-5, 192]))])
cases['reshape_ndim20'] = unary('Reshape', extra_in=['s'], inits=[tensor('s', [20], INT64, i64raw([1] * 17 + [3, 8, 8]))])
cases['transpose_dup'] = unary('Transpose', [attr_ints('perm', [0, 0, 1, 2])])
cases['transpose_oob'] = unary('Transpose', [attr_ints('perm', [0, 1, 2, 99])])
cases['transpose_neg'] = unary('Transpose', [attr_ints('perm', [0, 1, 2, -1])])
cases['transpose_short'] = unary('Transpose', [attr_ints('perm', [0, 1])])
cases['softmax_axis'] = unary('Softmax', [attr_i('axis', 99)])
cases['softmax_axis_min'] = unary('Softmax', [attr_i('axis', -(1 << 63))])
cases['concat_axis'] = model([node('Concat', ['x', 'x'], ['y'], [attr_i('axis', -(1 << 63))])], [X], [Y])
cases['concat_axis2'] = model([node('Concat', ['x', 'x'], ['y'], [attr_i('axis', 7)])], [X], [Y])
cases['concat_none'] = model([node('Concat', [], ['y'], [attr_i('axis', 0)])], [X], [Y])
cases['flatten_axis'] = unary('Flatten', [attr_i('axis', 1 << 40)])
cases['gather_oob_const'] = model([node('Gather', ['d', 'i'], ['y'], [attr_i('axis', 0)])], [], [Y], [tensor('d', [4], FLOAT, raw=f32raw([1, 2, 3, 4])), tensor('i', [2], INT64, i64raw([1 << 40, -(1 << 40)]))])
cases['gather_oob_run'] = model([node('Gather', ['x', 'i'], ['y'], [attr_i('axis', 1)])], [X], [Y], [tensor('i', [2], INT64, i64raw([5, -9]))])
cases['gather_axis'] = model([node('Gather', ['x', 'i'], ['y'], [attr_i('axis', 9)])], [X], [Y], [tensor('i', [2], INT64, i64raw([0, 0]))])
cases['slice_minstep'] = unary('Slice', extra_in=['st', 'en', 'ax', 'sp'], inits=[tensor('st', [1], INT64, i64raw([1 << 62])), tensor('en', [1], INT64, i64raw([-(1 << 63)])), tensor('ax', [1], INT64, i64raw([2])), tensor('sp', [1], INT64, i64raw([-(1 << 63)]))])
cases['slice_step0'] = unary('Slice', extra_in=['st', 'en', 'ax', 'sp'], inits=[tensor('st', [1], INT64, i64raw([0])), tensor('en', [1], INT64, i64raw([5])), tensor('ax', [1], INT64, i64raw([2])), tensor('sp', [1], INT64, i64raw([0]))])
cases['slice_axdup'] = unary('Slice', extra_in=['st', 'en', 'ax'], inits=[tensor('st', [2], INT64, i64raw([0, 1])), tensor('en', [2], INT64, i64raw([5, 2])), tensor('ax', [2], INT64, i64raw([2, 2]))])
cases['slice_axoob'] = unary('Slice', extra_in=['st', 'en', 'ax'], inits=[tensor('st', [1], INT64, i64raw([0])), tensor('en', [1], INT64, i64raw([5])), tensor('ax', [1], INT64, i64raw([-(1 << 63)]))])
cases['slice_len_mismatch'] = unary('Slice', extra_in=['st', 'en', 'ax'], inits=[tensor('st', [3], INT64, i64raw([0, 0, 0])), tensor('en', [1], INT64, i64raw([5])), tensor('ax', [2], INT64, i64raw([1, 2]))])
cases['pad_huge'] = unary('Pad', extra_in=['p'], inits=[tensor('p', [8], INT64, i64raw([0, 0, 1 << 40, 1 << 40, 0, 0, 1 << 40, 1 << 40]))])
cases['pad_neg'] = unary('Pad', extra_in=['p'], inits=[tensor('p', [8], INT64, i64raw([0, 0, -100, 0, 0, 0, 0, 0]))])
cases['pad_reflect_big'] = unary('Pad', [attr_s('mode', 'reflect')], extra_in=['p'], inits=[tensor('p', [8], INT64, i64raw([0, 0, 20, 20, 0, 0, 20, 20]))])
cases['pad_edge_empty'] = unary('Pad', [attr_s('mode', 'edge')], extra_in=['p'], inits=[tensor('p', [8], INT64, i64raw([0, 0, -8, 0, 0, 0, 2, 0]))])
cases['pad_short'] = unary('Pad', extra_in=['p'], inits=[tensor('p', [3], INT64, i64raw([1, 1, 1]))])
cases['tile_huge'] = unary('Tile', extra_in=['r'], inits=[tensor('r', [4], INT64, i64raw([1 << 20, 1 << 20, 1 << 20, 1]))])
cases['tile_neg'] = unary('Tile', extra_in=['r'], inits=[tensor('r', [4], INT64, i64raw([-1, 1, 1, 1]))])
cases['expand_huge'] = unary('Expand', extra_in=['s'], inits=[tensor('s', [4], INT64, i64raw([1 << 30, 3, 8, 8]))])
cases['expand_neg'] = unary('Expand', extra_in=['s'], inits=[tensor('s', [4], INT64, i64raw([-1, 3, 8, 8]))])
cases['expand_rank9'] = unary('Expand', extra_in=['s'], inits=[tensor('s', [9], INT64, i64raw([1] * 9))])
cases['resize_scale_huge'] = unary('Resize', extra_in=['', 'sc'], inits=[tensor('sc', [4], FLOAT, raw=f32raw([1, 1, 1e30, 1e30]))])
cases['resize_scale_nan'] = unary('Resize', extra_in=['', 'sc'], inits=[tensor('sc', [4], FLOAT, raw=f32raw([1, 1, float('nan'), 2]))])
cases['resize_scale_neg'] = unary('Resize', extra_in=['', 'sc'], inits=[tensor('sc', [4], FLOAT, raw=f32raw([1, 1, -2, 2]))])
cases['resize_scale_0'] = unary('Resize', extra_in=['', 'sc'], inits=[tensor('sc', [4], FLOAT, raw=f32raw([1, 1, 0, 0]))])
cases['resize_sizes_huge'] = unary('Resize', extra_in=['', '', 'sz'], inits=[tensor('sz', [4], INT64, i64raw([1, 3, 1 << 40, 1 << 40]))])
cases['resize_sizes_neg'] = unary('Resize', extra_in=['', '', 'sz'], inits=[tensor('sz', [4], INT64, i64raw([1, 3, -4, 4]))])
cases['resize_cubic'] = unary('Resize', [attr_s('mode', 'cubic')], extra_in=['', 'sc'], inits=[tensor('sc', [4], FLOAT, raw=f32raw([1, 1, 2, 2]))])
cases['resize_tiny'] = unary('Resize', [attr_s('mode', 'linear')], extra_in=['', 'sc'], inits=[tensor('sc', [4], FLOAT, raw=f32raw([1, 1, 1e-30, 1e-30]))])
cases['upsample_bad'] = model([node('Upsample', ['x', 'sc'], ['y'])], [X], [Y], [tensor('sc', [4], FLOAT, raw=f32raw([1, 1, 3e9, 3e9]))], opset=9)
cases['split_neg'] = model([node('Split', ['x', 's'], ['y', 'z'], [attr_i('axis', 2)])], [X], [Y, vi_noshape('z', FLOAT)], [tensor('s', [2], INT64, i64raw([-4, 12]))])
cases['split_sum'] = model([node('Split', ['x', 's'], ['y', 'z'], [attr_i('axis', 2)])], [X], [Y, vi_noshape('z', FLOAT)], [tensor('s', [2], INT64, i64raw([1, 1]))])
cases['split_many'] = model([node('Split', ['x'], ['y', 'z'], [attr_i('axis', 99)])], [X], [Y, vi_noshape('z', FLOAT)])
cases['split_more_outs'] = model([node('Split', ['x'], ['y'] + ['o%d' % i for i in range(20)], [attr_i('axis', 2)])], [X], [Y])
cases['reduce_axes_oob'] = unary('ReduceSum', extra_in=['a'], inits=[tensor('a', [1], INT64, i64raw([1 << 40]))])
cases['reduce_axes_dup'] = unary('ReduceMean', [attr_ints('axes', [1, 1, -3])], ) 
cases['reduce_axes_oob11'] = model([node('ReduceMax', ['x'], ['y'], [attr_ints('axes', [9])])], [X], [Y], opset=11)
cases['squeeze_non1'] = unary('Squeeze', extra_in=['a'], inits=[tensor('a', [1], INT64, i64raw([1]))])
cases['unsqueeze_oob'] = unary('Unsqueeze', extra_in=['a'], inits=[tensor('a', [1], INT64, i64raw([1 << 40]))])
cases['unsqueeze_many'] = unary('Unsqueeze', extra_in=['a'], inits=[tensor('a', [6], INT64, i64raw([0, 1, 2, 3, 4, 5]))])
cases['d2s_bad'] = unary('DepthToSpace', [attr_i('blocksize', 2)])
cases['d2s_0'] = unary('DepthToSpace', [attr_i('blocksize', 0)])
cases['d2s_neg'] = unary('DepthToSpace', [attr_i('blocksize', -2)])
cases['s2d_big'] = unary('SpaceToDepth', [attr_i('blocksize', 1 << 33)])
cases['s2d_bad'] = unary('SpaceToDepth', [attr_i('blocksize', 3)])
cases['gemm_mismatch'] = model([node('Gemm', ['a', 'b'], ['y'], [attr_i('transB', 1)])], [vi('a', FLOAT, [2, 3])], [Y], [tensor('b', [4, 5], FLOAT, raw=f32raw([0] * 20))])
cases['gemm_1d'] = model([node('Gemm', ['a', 'b'], ['y'])], [vi('a', FLOAT, [3])], [Y], [tensor('b', [3, 5], FLOAT, raw=f32raw([0] * 15))])
cases['matmul_0d'] = model([node('MatMul', ['a', 'b'], ['y'])], [vi('a', FLOAT, [])], [Y], [tensor('b', [], FLOAT, raw=f32raw([0]))])
cases['matmul_mismatch'] = model([node('MatMul', ['a', 'b'], ['y'])], [vi('a', FLOAT, [2, 3])], [Y], [tensor('b', [4, 5], FLOAT, raw=f32raw([0] * 20))])
cases['matmul_bcast'] = model([node('MatMul', ['a', 'b'], ['y'])], [vi('a', FLOAT, [2, 1, 2, 3])], [Y], [tensor('b', [3, 1, 3, 5], FLOAT, raw=f32raw([0] * 45))])
cases['add_bcast_bad'] = model([node('Add', ['x', 'b'], ['y'])], [X], [Y], [tensor('b', [5], FLOAT, raw=f32raw([0] * 5))])
cases['input_huge'] = unary('Relu', x=vi('x', FLOAT, [1 << 40, 1 << 40]))
cases['input_neg'] = unary('Relu', x=vi('x', FLOAT, [-5, 3]))
cases['input_rank9'] = unary('Relu', x=vi('x', FLOAT, [1] * 9))
cases['input_rank0'] = unary('Relu', x=vi('x', FLOAT, []))
cases['input_zero'] = unary('Relu', x=vi('x', FLOAT, [0, 3]))
cases['input_2sym'] = unary('Relu', x=vi('x', FLOAT, ['N', 'M']))
cases['input_sym_notfirst'] = unary('Relu', x=vi('x', FLOAT, [1, 'M']))
cases['input_str'] = unary('Relu', x=vi('x', 8, [1, 3]))
cases['input_i64'] = model([node('Cast', ['x'], ['y'], [attr_i('to', 1)])], [vi('x', INT64, [2, 3])], [Y])
cases['cast_to_bad'] = unary('Cast', [attr_i('to', 999)])
cases['cast_to_str'] = unary('Cast', [attr_i('to', 8)])
cases['init_short_raw'] = unary('Add', extra_in=['b'], inits=[tensor('b', [4], FLOAT, raw=f32raw([1]))])
cases['init_float_data_short'] = unary('Add', extra_in=['b'], inits=[tensor('b', [4], FLOAT, floats=[1.0])])
cases['init_dims_neg'] = unary('Add', extra_in=['b'], inits=[tensor('b', [-1], FLOAT, raw=b'')])
cases['init_dims_overflow'] = unary('Add', extra_in=['b'], inits=[tensor('b', [1 << 32, 1 << 32, 16], FLOAT, raw=b'')])
cases['constant_empty'] = model([node('Constant', [], ['y'], [])], [], [Y])
cases['constant_2val'] = model([node('Constant', [], ['y'], [attr_f('value_float', 1.0), attr_ints('value_ints', [1, 2])])], [], [Y])
cases['clip_minmax'] = unary('Clip', extra_in=['lo', 'hi'], inits=[tensor('lo', [], FLOAT, raw=f32raw([5])), tensor('hi', [], FLOAT, raw=f32raw([-5]))])
cases['clip_vec'] = unary('Clip', extra_in=['lo'], inits=[tensor('lo', [3], FLOAT, raw=f32raw([5, 1, 2]))])
cases['bn_mismatch'] = unary('BatchNormalization', extra_in=['s', 'b', 'm', 'v'], inits=[tensor(n, [2], FLOAT, raw=f32raw([1, 1])) for n in 'sbmv'])
cases['bn_negvar'] = unary('BatchNormalization', [attr_f('epsilon', -10.0)], extra_in=['s', 'b', 'm', 'v'], inits=[tensor(n, [3], FLOAT, raw=f32raw([1, 1, 0])) for n in 'sbmv'])
cases['prelu_bad'] = unary('PRelu', extra_in=['s'], inits=[tensor('s', [7], FLOAT, raw=f32raw([1] * 7))])
cases['argmax_axis'] = unary('ArgMax', [attr_i('axis', 50)])
cases['self_loop'] = model([node('Relu', ['y'], ['y'])], [X], [Y])
cases['dup_output'] = model([node('Relu', ['x'], ['y']), node('Relu', ['x'], ['y'], name='r2')], [X], [Y])
cases['undefined_in'] = model([node('Relu', ['q'], ['y'])], [X], [Y])
cases['out_is_input'] = model([], [X], [vi_noshape('x', FLOAT)])
cases['out_is_init'] = model([], [], [vi_noshape('c', FLOAT)], [tensor('c', [2], FLOAT, raw=f32raw([1, 2]))])
cases['no_outputs'] = model([node('Relu', ['x'], ['y'])], [X], [])
cases['where_bcast'] = model([node('Where', ['c', 'x', 'b'], ['y'])], [X], [Y], [tensor('c', [1], BOOL, raw=b'\x01'), tensor('b', [2], FLOAT, raw=f32raw([0, 0]))])
cases['mod_int0'] = model([node('Mod', ['a', 'b'], ['y'])], [], [Y], [tensor('a', [2], INT64, i64raw([5, -(1 << 63)])), tensor('b', [2], INT64, i64raw([0, -1]))])
cases['div_int0'] = model([node('Div', ['a', 'b'], ['y'])], [], [Y], [tensor('a', [2], INT64, i64raw([5, -(1 << 63)])), tensor('b', [2], INT64, i64raw([0, -1]))])
cases['div_int_run'] = model([node('Div', ['a', 'b'], ['y'])], [vi('a', INT64, [2])], [Y], [tensor('b', [2], INT64, i64raw([0, -1]))])
cases['mod_int_run'] = model([node('Mod', ['a', 'b'], ['y'])], [vi('a', INT64, [2])], [Y], [tensor('b', [2], INT64, i64raw([0, -1]))])
cases['mul_int_ovf'] = model([node('Mul', ['a', 'b'], ['y'])], [], [Y], [tensor('a', [1], INT64, i64raw([1 << 62])), tensor('b', [1], INT64, i64raw([1 << 62]))])
cases['add_int_ovf'] = model([node('Add', ['a', 'b'], ['y'])], [], [Y], [tensor('a', [1], INT64, i64raw([(1 << 63) - 1])), tensor('b', [1], INT64, i64raw([1]))])
cases['neg_int_min'] = model([node('Neg', ['a'], ['y'])], [], [Y], [tensor('a', [1], INT64, i64raw([-(1 << 63)]))])
cases['abs_int_min'] = model([node('Abs', ['a'], ['y'])], [], [Y], [tensor('a', [1], INT64, i64raw([-(1 << 63)]))])
cases['pow_int'] = model([node('Pow', ['a', 'b'], ['y'])], [], [Y], [tensor('a', [1], INT64, i64raw([3])), tensor('b', [1], INT64, i64raw([1 << 40]))])
cases['cast_f2i_huge'] = model([node('Cast', ['a'], ['y'], [attr_i('to', INT64)])], [], [Y], [tensor('a', [3], FLOAT, raw=f32raw([1e30, float('nan'), -1e30]))])
cases['cast_f2i32_huge'] = model([node('Cast', ['a'], ['y'], [attr_i('to', INT32)])], [], [Y], [tensor('a', [3], FLOAT, raw=f32raw([1e30, float('nan'), -1e30]))])
cases['cast_f2u8'] = model([node('Cast', ['a'], ['y'], [attr_i('to', 2)])], [], [Y], [tensor('a', [3], FLOAT, raw=f32raw([1e30, float('nan'), -1e30]))])
cases['range_huge'] = model([node('Range', ['a', 'b', 'c'], ['y'])], [], [Y], [tensor('a', [], INT64, i64raw([0])), tensor('b', [], INT64, i64raw([1 << 62])), tensor('c', [], INT64, i64raw([1]))])
cases['shape_slice'] = model([node('Shape', ['x'], ['s'], [attr_i('start', -(1 << 63)), attr_i('end', 1 << 62)]), node('Cast', ['s'], ['y'], [attr_i('to', 1)])], [X], [Y], opset=15)
cases['topk'] = model([node('TopK', ['x', 'k'], ['y', 'i'])], [X], [Y], [tensor('k', [1], INT64, i64raw([1 << 40]))])
cases['lrn'] = unary('LRN', [attr_i('size', 0)])
cases['instnorm'] = unary('InstanceNormalization', extra_in=['s', 'b'], inits=[tensor(n, [2], FLOAT, raw=f32raw([1, 1])) for n in 'sb'])
cases['einsum'] = model([node('Einsum', ['x'], ['y'], [attr_s('equation', 'ii->i')])], [X], [Y])
cases['opset_huge'] = model([node('Relu', ['x'], ['y'])], [X], [Y], opset=1 << 62)
cases['opset_neg'] = model([node('Relu', ['x'], ['y'])], [X], [Y], opset=-1)
cases['gap_1d'] = unary('GlobalAveragePool', x=vi('x', FLOAT, [1, 3]))
cases['conv_1d_input'] = unary('Conv', extra_in=['w'], x=vi('x', FLOAT, [3]), inits=[tensor('w', [4, 3, 3, 3], FLOAT, raw=f32raw([0.0] * 108))])
cases['conv_bias_bad'] = unary('Conv', extra_in=['w', 'b'], inits=[tensor('w', [4, 3, 3, 3], FLOAT, raw=f32raw([0.0] * 108)), tensor('b', [2], FLOAT, raw=f32raw([0, 0]))])
cases['conv_w_1d'] = unary('Conv', extra_in=['w'], inits=[tensor('w', [108], FLOAT, raw=f32raw([0.0] * 108))])
cases['conv_3d'] = unary('Conv', extra_in=['w'], x=vi('x', FLOAT, [1, 3, 4, 4, 4]), inits=[tensor('w', [4, 3, 3, 3, 3], FLOAT, raw=f32raw([0.0] * 324))])
cases['conv_w_input'] = model([node('Conv', ['x', 'w'], ['y'])], [X, vi('w', FLOAT, [4, 3, 3, 3])], [Y])
cases['conv_w_input_nodim'] = model([node('Conv', ['x', 'w'], ['y'])], [X, vi_noshape('w', FLOAT)], [Y])
cases['autopad_same'] = unary('Conv', [attr_s('auto_pad', 'SAME_UPPER'), attr_ints('strides', [3, 3]), attr_ints('dilations', [4, 4])], extra_in=['w'], inits=[tensor('w', [4, 3, 3, 3], FLOAT, raw=f32raw([0.0] * 108))])
cases['autopad_bad'] = unary('Conv', [attr_s('auto_pad', 'WHATEVER')], extra_in=['w'], inits=[tensor('w', [4, 3, 3, 3], FLOAT, raw=f32raw([0.0] * 108))])
cases['lsm_axis'] = unary('LogSoftmax', [attr_i('axis', -5)])
cases['hardmax'] = unary('Hardmax')
W = lambda c: tensor('w', [4, c, 3, 3], FLOAT, raw=f32raw([0.0] * (36 * c)))
for nm, dims in [('h0', [1, 3, 0, 8]), ('c0', [1, 0, 8, 8]), ('n0', [0, 3, 8, 8]), ('w1', [1, 3, 1, 1])]:
    x = vi('x', FLOAT, dims)
    def u(op, attrs=(), extra_in=(), inits=(), nout=1):
        outs = ['y'] + ['o%d' % i for i in range(1, nout)]
        return model([node(op, ['x'] + list(extra_in), outs, attrs)], [x], [Y] + [vi_noshape(o, FLOAT) for o in outs[1:]], inits)
    cs = {
        'conv': u('Conv', extra_in=['w'], inits=[W(dims[1] if dims[1] else 1)]),
        'conv_pad': u('Conv', [attr_ints('pads', [1, 1, 1, 1])], extra_in=['w'], inits=[W(dims[1] if dims[1] else 1)]),
        'convT': u('ConvTranspose', [attr_ints('strides', [2, 2])], extra_in=['w'], inits=[tensor('w', [dims[1], 2, 3, 3], FLOAT, raw=f32raw([0.0] * (18 * dims[1])))]),
        'maxpool': u('MaxPool', [attr_ints('kernel_shape', [1, 1])]),
        'maxpool_pad': u('MaxPool', [attr_ints('kernel_shape', [3, 3]), attr_ints('pads', [1, 1, 1, 1])]),
        'avgpool_pad': u('AveragePool', [attr_ints('kernel_shape', [3, 3]), attr_ints('pads', [2, 2, 2, 2]), attr_i('count_include_pad', 0)]),
        'gap': u('GlobalAveragePool'), 'gmp': u('GlobalMaxPool'),
        'softmax': u('Softmax', [attr_i('axis', 2)]), 'lsm': u('LogSoftmax', [attr_i('axis', 1)]),
        'redmax': u('ReduceMax', [attr_ints('axes', [2])], ), 'redmean': u('ReduceMean', [attr_ints('axes', [1, 2])]),
        'redmin_all': u('ReduceMin'), 'redl2': u('ReduceL2', [attr_ints('axes', [2])]), 'redprod': u('ReduceProd'),
        'argmax': u('ArgMax', [attr_i('axis', 2)]), 'argmin1': u('ArgMin', [attr_i('axis', 1), attr_i('select_last_index', 1)]),
        'resize': u('Resize', [attr_s('mode', 'linear')], extra_in=['', 'sc'], inits=[tensor('sc', [4], FLOAT, raw=f32raw([1, 1, 2, 2]))]),
        'resize_nn': u('Resize', [attr_s('mode', 'nearest')], extra_in=['', '', 'sz'], inits=[tensor('sz', [4], INT64, i64raw([max(dims[0],1), max(dims[1],1), 4, 4]))]),
        'resize_cubic': u('Resize', [attr_s('mode', 'cubic')], extra_in=['', '', 'sz'], inits=[tensor('sz', [4], INT64, i64raw([max(dims[0],1), max(dims[1],1), 4, 4]))]),
        'resize_lin_sz': u('Resize', [attr_s('mode', 'linear'), attr_s('coordinate_transformation_mode', 'align_corners')], extra_in=['', '', 'sz'], inits=[tensor('sz', [4], INT64, i64raw([max(dims[0],1), max(dims[1],1), 4, 4]))]),
        'resize_tfcrop': u('Resize', [attr_s('mode', 'linear'), attr_s('coordinate_transformation_mode', 'tf_crop_and_resize')], extra_in=['roi', '', 'sz'], inits=[tensor('roi', [8], FLOAT, raw=f32raw([0, 0, -5, -5, 1, 1, 9, 9])), tensor('sz', [4], INT64, i64raw([max(dims[0],1), max(dims[1],1), 4, 4]))]),
        'pad_edge': u('Pad', [attr_s('mode', 'edge')], extra_in=['p'], inits=[tensor('p', [8], INT64, i64raw([0, 0, 1, 1, 0, 0, 1, 1]))]),
        'pad_reflect': u('Pad', [attr_s('mode', 'reflect')], extra_in=['p'], inits=[tensor('p', [8], INT64, i64raw([0, 0, 1, 1, 0, 0, 1, 1]))]),
        'gather': u('Gather', [attr_i('axis', 2)], extra_in=['i'], inits=[tensor('i', [1], INT64, i64raw([0]))]),
        'gather_neg': u('Gather', [attr_i('axis', 2)], extra_in=['i'], inits=[tensor('i', [1], INT64, i64raw([-1]))]),
        'slice': u('Slice', extra_in=['st', 'en', 'ax', 'sp'], inits=[tensor('st', [1], INT64, i64raw([-1])), tensor('en', [1], INT64, i64raw([-(1 << 63)])), tensor('ax', [1], INT64, i64raw([2])), tensor('sp', [1], INT64, i64raw([-1]))]),
        'd2s': u('DepthToSpace', [attr_i('blocksize', 1)]),
        'bn': u('BatchNormalization', extra_in=['s', 'b', 'm', 'v'], inits=[tensor(n, [dims[1]], FLOAT, raw=f32raw([1] * dims[1])) for n in 'sbmv']),
        'inorm': u('InstanceNormalization', extra_in=['s', 'b'], inits=[tensor(n, [dims[1]], FLOAT, raw=f32raw([1] * dims[1])) for n in 'sb']),
        'flatten_mm': model([node('Flatten', ['x'], ['f']), node('MatMul', ['f', 'w'], ['y'])], [x], [Y], [tensor('w', [dims[1]*dims[2]*dims[3], 2], FLOAT, raw=f32raw([0.0] * (2*dims[1]*dims[2]*dims[3])))]),
        'gemm': model([node('Flatten', ['x'], ['f']), node('Gemm', ['f', 'w', 'b'], ['y'], [attr_i('transB', 1)])], [x], [Y], [tensor('w', [2, dims[1]*dims[2]*dims[3]], FLOAT, raw=f32raw([0.0] * (2*dims[1]*dims[2]*dims[3]))), tensor('b', [2], FLOAT, raw=f32raw([0, 0]))]),
        'split': u('Split', [attr_i('axis', 2)], nout=2),
        'tile': u('Tile', extra_in=['r'], inits=[tensor('r', [4], INT64, i64raw([2, 2, 2, 2]))]),
        'transpose': u('Transpose', [attr_ints('perm', [3, 2, 1, 0])]),
        'concat_self': model([node('Concat', ['x', 'x'], ['y'], [attr_i('axis', 2)])], [x], [Y]),
        'expand': u('Expand', extra_in=['s'], inits=[tensor('s', [5], INT64, i64raw([2, 1, 1, 1, 1]))]),
        'prelu': u('PRelu', extra_in=['s'], inits=[tensor('s', [1], FLOAT, raw=f32raw([0.1]))]),
        's2d': u('SpaceToDepth', [attr_i('blocksize', 1)]),
        'reshape': u('Reshape', extra_in=['s'], inits=[tensor('s', [2], INT64, i64raw([0, -1]))]),
        'reshape_m1': u('Reshape', extra_in=['s'], inits=[tensor('s', [2], INT64, i64raw([-1, 5]))]),
        'hardmax': u('Hardmax'),
        'shape_cos': model([node('Shape', ['x'], ['s']), node('ConstantOfShape', ['s'], ['y'])], [x], [Y]),
    }
    for k, v in cs.items(): cases['zero_' + nm + '_' + k] = v
os.makedirs(sys.argv[1], exist_ok=True)
for k, v in cases.items():
    open(os.path.join(sys.argv[1], k + '.onnx'), 'wb').write(v)

