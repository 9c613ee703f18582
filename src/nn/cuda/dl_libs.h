/* Private to src/nn/cuda: cuDNN and cuBLAS loaded at run time.
 *
 * libpixflow is never linked against libcudnn or libcublas, so a CUDA build
 * loads and runs (CPU work, CUDA ops, everything but the CUDA nn executor)
 * on a machine that lacks them. The libraries are opened with dlopen when
 * the CUDA nn executor first needs them (pf_cux_libs_require) or when
 * pixflow info asks (pf_nn_libraries), once per process, by the soname of
 * the major version the headers are (libcudnn.so.9, libcublas.so.13). The
 * functions pixflow calls are resolved by name into one table per library.
 *
 * The call sites stay as they were: after this header, the name of every
 * function in the table is a macro for its slot (cudnnCreate ->
 * pf_cudnn.cudnnCreate; cuBLAS's own _v2 macros expand first, so
 * cublasCreate -> cublasCreate_v2 -> pf_cublas.cublasCreate_v2). Each slot
 * takes its type from the header's declaration (__typeof__), so the table
 * cannot drift from the prototypes. A function that is not in the lists
 * below fails to link (there is no -lcudnn): add it to the list, then to
 * the macros.
 *
 * Before pf_cux_libs_require() returns PF_OK every slot is NULL; the
 * executor calls it first thing when it makes a context, and every call
 * site runs on a handle made after that. */
#ifndef PF_NN_CUDA_DL_LIBS_H
#define PF_NN_CUDA_DL_LIBS_H

#include <cublas_v2.h>
#include <cudnn.h>

#include "pixflow/core.h"

/* X(function) for every function called through the tables. */
#define PF_CUDNN_FUNCS(X) \
    X(cudnnGetVersion) \
    X(cudnnGetErrorString) \
    X(cudnnCreate) \
    X(cudnnDestroy) \
    X(cudnnSetStream) \
    X(cudnnGetStream) \
    X(cudnnBackendCreateDescriptor) \
    X(cudnnBackendDestroyDescriptor) \
    X(cudnnBackendSetAttribute) \
    X(cudnnBackendGetAttribute) \
    X(cudnnBackendFinalize) \
    X(cudnnBackendExecute) \
    X(cudnnCreateTensorDescriptor) \
    X(cudnnDestroyTensorDescriptor) \
    X(cudnnSetTensor4dDescriptor) \
    X(cudnnSetTensor4dDescriptorEx) \
    X(cudnnCreateFilterDescriptor) \
    X(cudnnDestroyFilterDescriptor) \
    X(cudnnSetFilter4dDescriptor) \
    X(cudnnCreateConvolutionDescriptor) \
    X(cudnnDestroyConvolutionDescriptor) \
    X(cudnnSetConvolution2dDescriptor) \
    X(cudnnSetConvolutionGroupCount) \
    X(cudnnSetConvolutionMathType) \
    X(cudnnCreateActivationDescriptor) \
    X(cudnnDestroyActivationDescriptor) \
    X(cudnnSetActivationDescriptor) \
    X(cudnnGetConvolutionForwardAlgorithm_v7) \
    X(cudnnFindConvolutionForwardAlgorithm) \
    X(cudnnGetConvolutionForwardWorkspaceSize) \
    X(cudnnConvolutionForward) \
    X(cudnnConvolutionBiasActivationForward) \
    X(cudnnGetConvolutionBackwardDataAlgorithm_v7) \
    X(cudnnGetConvolutionBackwardDataWorkspaceSize) \
    X(cudnnConvolutionBackwardData)

#define PF_CUBLAS_FUNCS(X) \
    X(cublasGetProperty) \
    X(cublasGetVersion) \
    X(cublasGetStatusString) \
    X(cublasCreate) \
    X(cublasDestroy) \
    X(cublasSetStream) \
    X(cublasSetWorkspace) \
    X(cublasSetMathMode) \
    X(cublasGemmEx) \
    X(cublasGemmStridedBatchedEx)

/* cuBLASLt: libcublas needs it (NEEDED); pixflow only reads its version.
 * Its slot is declared by hand below: cublasLt.h has an old-style
 * declaration that -Wstrict-prototypes rejects. */
#define PF_CUBLASLT_FUNCS(X) X(cublasLtGetVersion)

/* One slot per function, named as the symbol (cuBLAS's macros expand here:
 * the slot for cublasCreate is cublasCreate_v2, the exported name). */
#define PF_CUX_DL_SLOT(f) __typeof__(&f) f;
typedef struct pf_cudnn_fns { PF_CUDNN_FUNCS(PF_CUX_DL_SLOT) } pf_cudnn_fns;
typedef struct pf_cublas_fns { PF_CUBLAS_FUNCS(PF_CUX_DL_SLOT) } pf_cublas_fns;
typedef struct pf_cublaslt_fns {
    size_t (*cublasLtGetVersion)(void); /* major * 10000 + minor * 100 + patch */
} pf_cublaslt_fns;

extern pf_cudnn_fns pf_cudnn;
extern pf_cublas_fns pf_cublas;
extern pf_cublaslt_fns pf_cublaslt;

/* PF_OK once cuDNN and cuBLAS (and cuBLASLt) are loaded with every symbol
 * above; else PF_ERR_UNSUPPORTED with a message naming the library that is
 * missing and why (the dlopen error, or the symbol it lacks). The first
 * call loads; later calls return the same outcome. Thread-safe. */
pf_status pf_cux_libs_require(void);

/* Tests only: forgets what was loaded (the libraries stay mapped) and loads
 * the given sonames instead (NULL: the defaults), so a test can see the
 * executor refuse when a library is missing and then restore it. Not for
 * use while an executor exists. */
void pf_cux_libs_testing_reload(const char *cudnn, const char *cublas, const char *cublaslt);

/* The call sites' names -> the slots. dl_libs.c, which fills the tables,
 * sees the real names. */
#ifndef PF_CUX_DL_NO_MACROS
#define cudnnGetVersion pf_cudnn.cudnnGetVersion
#define cudnnGetErrorString pf_cudnn.cudnnGetErrorString
#define cudnnCreate pf_cudnn.cudnnCreate
#define cudnnDestroy pf_cudnn.cudnnDestroy
#define cudnnSetStream pf_cudnn.cudnnSetStream
#define cudnnGetStream pf_cudnn.cudnnGetStream
#define cudnnBackendCreateDescriptor pf_cudnn.cudnnBackendCreateDescriptor
#define cudnnBackendDestroyDescriptor pf_cudnn.cudnnBackendDestroyDescriptor
#define cudnnBackendSetAttribute pf_cudnn.cudnnBackendSetAttribute
#define cudnnBackendGetAttribute pf_cudnn.cudnnBackendGetAttribute
#define cudnnBackendFinalize pf_cudnn.cudnnBackendFinalize
#define cudnnBackendExecute pf_cudnn.cudnnBackendExecute
#define cudnnCreateTensorDescriptor pf_cudnn.cudnnCreateTensorDescriptor
#define cudnnDestroyTensorDescriptor pf_cudnn.cudnnDestroyTensorDescriptor
#define cudnnSetTensor4dDescriptor pf_cudnn.cudnnSetTensor4dDescriptor
#define cudnnSetTensor4dDescriptorEx pf_cudnn.cudnnSetTensor4dDescriptorEx
#define cudnnCreateFilterDescriptor pf_cudnn.cudnnCreateFilterDescriptor
#define cudnnDestroyFilterDescriptor pf_cudnn.cudnnDestroyFilterDescriptor
#define cudnnSetFilter4dDescriptor pf_cudnn.cudnnSetFilter4dDescriptor
#define cudnnCreateConvolutionDescriptor pf_cudnn.cudnnCreateConvolutionDescriptor
#define cudnnDestroyConvolutionDescriptor pf_cudnn.cudnnDestroyConvolutionDescriptor
#define cudnnSetConvolution2dDescriptor pf_cudnn.cudnnSetConvolution2dDescriptor
#define cudnnSetConvolutionGroupCount pf_cudnn.cudnnSetConvolutionGroupCount
#define cudnnSetConvolutionMathType pf_cudnn.cudnnSetConvolutionMathType
#define cudnnCreateActivationDescriptor pf_cudnn.cudnnCreateActivationDescriptor
#define cudnnDestroyActivationDescriptor pf_cudnn.cudnnDestroyActivationDescriptor
#define cudnnSetActivationDescriptor pf_cudnn.cudnnSetActivationDescriptor
#define cudnnGetConvolutionForwardAlgorithm_v7 pf_cudnn.cudnnGetConvolutionForwardAlgorithm_v7
#define cudnnFindConvolutionForwardAlgorithm pf_cudnn.cudnnFindConvolutionForwardAlgorithm
#define cudnnGetConvolutionForwardWorkspaceSize pf_cudnn.cudnnGetConvolutionForwardWorkspaceSize
#define cudnnConvolutionForward pf_cudnn.cudnnConvolutionForward
#define cudnnConvolutionBiasActivationForward pf_cudnn.cudnnConvolutionBiasActivationForward
#define cudnnGetConvolutionBackwardDataAlgorithm_v7 \
    pf_cudnn.cudnnGetConvolutionBackwardDataAlgorithm_v7
#define cudnnGetConvolutionBackwardDataWorkspaceSize \
    pf_cudnn.cudnnGetConvolutionBackwardDataWorkspaceSize
#define cudnnConvolutionBackwardData pf_cudnn.cudnnConvolutionBackwardData

#define cublasGetProperty pf_cublas.cublasGetProperty
#define cublasGetVersion_v2 pf_cublas.cublasGetVersion_v2
#define cublasGetStatusString pf_cublas.cublasGetStatusString
#define cublasCreate_v2 pf_cublas.cublasCreate_v2
#define cublasDestroy_v2 pf_cublas.cublasDestroy_v2
#define cublasSetStream_v2 pf_cublas.cublasSetStream_v2
#define cublasSetWorkspace_v2 pf_cublas.cublasSetWorkspace_v2
#define cublasSetMathMode pf_cublas.cublasSetMathMode
#define cublasGemmEx pf_cublas.cublasGemmEx
#define cublasGemmStridedBatchedEx pf_cublas.cublasGemmStridedBatchedEx

#define cublasLtGetVersion pf_cublaslt.cublasLtGetVersion
#endif

#endif
