/* TEMPORARY placeholders so the library links while this part is written;
 * the owner deletes this file when the real code lands. */
#include <stdarg.h>
#include "import.h"
#include "../core/error.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

pf_status pf_ir_from_onnx(const pf_onnx_model *m, pf_ir_graph **out)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_from_onnx");
}

pf_status pf_ir_from_tflite(const pf_tflite *m, pf_ir_graph **out)
{
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: not built yet", "pf_ir_from_tflite");
}
