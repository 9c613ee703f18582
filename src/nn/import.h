/* Private: model files -> pf_ir_graph.
 *
 * Both importers produce ONNX-semantics graphs (see ir.h) with shapes
 * inferred as far as the symbolic batch allows, constants moved into attrs
 * where an op needs them constant (Reshape shape, Slice bounds, Resize
 * scales/sizes, Pad pads, Clip bounds, Tile repeats, Expand shape, Squeeze/
 * Unsqueeze axes, ReduceX axes, Split sizes, TopK-free), and every
 * unsupported op or attribute value refused with PF_ERR_UNSUPPORTED naming
 * the file, the node (index, name, op type) and the attribute/value. When a
 * "must be constant" input is computed by a subgraph (Shape -> Gather ->
 * Concat ...), the importer keeps it as an input and pf_ir_fold_constants /
 * pf_ir_specialize resolve it once shapes are known.
 *
 * ONNX: opsets 7..17 of the default domain; each op's attributes and input
 * conventions per the opset the model imports (Softmax legacy before 13,
 * Clip attrs before 11, Pad/Slice/Resize/Upsample/Squeeze/ReduceSum inputs vs
 * attrs by version). Dropout/Identity become IDENTITY.
 *
 * TFLite: subgraph 0; NHWC activations. The importer adds TRANSPOSE nodes
 * from the NHWC model inputs to NCHW and back at the outputs, so the graph's
 * inputs and outputs keep the file's NHWC shapes and names; weights become
 * ONNX layouts (CONV_2D [O,kh,kw,I] -> [O,I,kh,kw]; DEPTHWISE [1,kh,kw,C*m]
 * -> [C*m,1,kh,kw] with group C; TRANSPOSE_CONV / Convolution2DTransposeBias
 * [O,kh,kw,I] -> [I,O,kh,kw]); SAME padding as TFLite computes it (extra pad at
 * the end); DEQUANTIZE of FLOAT16 constants folded to F32 constants; fused
 * activations become node->act; axis-bearing ops (CONCATENATION, MEAN,
 * SOFTMAX, RESHAPE) are rewritten for NCHW (RESHAPE of a 4D NHWC value
 * transposes back to NHWC first, reshapes, and the result stays in the file's
 * layout). */
#ifndef PF_NN_IMPORT_H
#define PF_NN_IMPORT_H

#include "ir.h"
#include "onnx_reader.h"
#include "tflite_reader.h"

PF_BEGIN_DECLS

pf_status pf_ir_from_onnx(const pf_onnx_model *m, pf_ir_graph **out);
pf_status pf_ir_from_tflite(const pf_tflite *m, pf_ir_graph **out);

PF_END_DECLS

#endif
