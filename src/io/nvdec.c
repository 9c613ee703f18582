/* NVDEC decoding through libnvcuvid (see nvdec.h).
 *
 * Design. cuvid's parser does the bitstream work: cuvidParseVideoData calls
 * back, on the calling thread, (1) on each sequence header: we (re)create
 * the hardware decoder with enough surfaces and the frame pool; (2) per
 * picture in decode order: cuvidDecodePicture queues it on the engine; (3)
 * per picture in display order: we map the decoded surface, copy it into a
 * pool frame on our stream, wait for the copy, unmap, and queue the frame
 * for receive(). Copying at display time (rather than queueing picture
 * indices for later) means a surface is never read after the parser has
 * reused it, whatever the caller does; the display delay keeps the engine a
 * few pictures ahead, so the wait for each copy overlaps with decoding.
 *
 * Context. All decoders of a device use its primary context, the one the
 * CUDA runtime makes current for cudaSetDevice, so frames, streams and
 * pools of the rest of pixflow are valid here. We create our pf_stream
 * first (this initialises the runtime's primary context on the device),
 * then retain the same context through the driver API
 * (cuDevicePrimaryCtxRetain) and push it around each batch of cuvid calls.
 * The retain makes us independent of what is current on the calling thread;
 * the context lock (cuvidCtxLock) lets the driver use the context from its
 * own threads while ours runs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "nvdec.h"

#define MAX_POOL 256
#define MAX_SURFACES 32

pf_nvdec_params pf_nvdec_params_default(void)
{
    pf_nvdec_params p;
    memset(&p, 0, sizeof p);
    p.codec = PF_ES_UNKNOWN;
    p.pool_size = 8;
    p.surfaces = 0;
    p.display_delay = 2;
    p.pool_timeout_us = -1;
    p.fps = (pf_rational){0, 0};
    p.time_base = (pf_rational){1, 90000};
    return p;
}

#ifdef PF_HAVE_NVDEC

#include <pthread.h>

#include "../pipeline/frame_pool.h"

/* The loader's messages ("Cannot load libnvcuvid.so.1") go into a buffer
 * that pf_nvdec_available reports, not to stderr. */
static char loader_msg[256];
static void loader_log(void *ctx, const char *fmt, ...) PF_PRINTF(2, 3);
static void loader_log(void *ctx, const char *fmt, ...)
{
    (void)ctx;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(loader_msg, sizeof loader_msg, fmt, ap);
    va_end(ap);
    size_t n = strlen(loader_msg);
    if (n > 0 && loader_msg[n - 1] == '\n') loader_msg[n - 1] = '\0';
}
#define FFNV_LOG_FUNC(logctx, msg, ...) loader_log((logctx), (msg), __VA_ARGS__)
#define FFNV_DEBUG_LOG_FUNC(logctx, msg, ...)

#include <ffnvcodec/dynlink_loader.h>

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static CudaFunctions *cu;
static CuvidFunctions *cv;
static char load_error[512];

static void load_libs(void)
{
    if (cuda_load_functions(&cu, NULL) != 0) {
        snprintf(load_error, sizeof load_error, "libcuda could not be loaded (%s)", loader_msg);
        return;
    }
    if (cuvid_load_functions(&cv, NULL) != 0) {
        snprintf(load_error, sizeof load_error,
                 "libnvcuvid (NVDEC) could not be loaded (%s): the driver's video decode "
                 "library is not installed",
                 loader_msg);
        cuda_free_functions(&cu);
        return;
    }
    CUresult r = cu->cuInit(0);
    if (r != CUDA_SUCCESS) {
        snprintf(load_error, sizeof load_error, "cuInit failed (CUresult %d)", (int)r);
        cuvid_free_functions(&cv);
        cuda_free_functions(&cu);
    }
}

bool pf_nvdec_available(char *detail, size_t detail_size)
{
    pthread_once(&load_once, load_libs);
    bool ok = cu && cv;
    if (detail && detail_size)
        snprintf(detail, detail_size, "%s", ok ? "libcuda + libnvcuvid loaded" : load_error);
    return ok;
}

/* A failed driver call as a status: "<what>: <name> (<text>)". */
static pf_status cu_fail(CUresult r, const char *name, const char *what)
{
    const char *en = NULL, *es = NULL;
    if (cu->cuGetErrorName) cu->cuGetErrorName(r, &en);
    if (cu->cuGetErrorString) cu->cuGetErrorString(r, &es);
    /* 2 is CUDA_ERROR_OUT_OF_MEMORY (the ffnvcodec header names only a few codes) */
    pf_status st = (int)r == 2 ? PF_ERR_NOMEM : PF_ERR_DEVICE;
    return pf_set_error(st, "%s: %s failed: %s (%s)", name, what, en ? en : "?",
                        es ? es : "no description");
}

struct pf_nvdec {
    char *name;
    pf_nvdec_params p;
    pf_device *dev;
    pf_stream *stream;
    CUstream cstream;
    CUdevice cudev;
    CUcontext ctx;
    bool ctx_retained;
    CUvideoctxlock lock;
    CUvideoparser parser;
    CUvideodecoder dec;
    CUVIDDECODECREATEINFO ci;   /* of the current decoder */
    pf_es_codec codec;
    pf_frame_pool *pool;
    int pool_w, pool_h;
    pf_frame *ring;             /* frames waiting for receive() */
    int ring_cap, ring_head, ring_count;
    bool have_info;
    pf_nvdec_info info;
    pf_nvdec_stats stats;
    bool any_pts;               /* some packet came with a pts */
    int64_t display_index;
    bool flushed;
    pf_status fatal;            /* set by a callback; the decoder is unusable */
    pf_status busy;             /* a frame was dropped during this decode() */
};

static cudaVideoCodec cuvid_codec(pf_es_codec c)
{
    return c == PF_ES_HEVC ? cudaVideoCodec_HEVC : cudaVideoCodec_H264;
}

static pf_status push_ctx(pf_nvdec *d)
{
    CUresult r = cu->cuCtxPushCurrent(d->ctx);
    return r == CUDA_SUCCESS ? PF_OK : cu_fail(r, d->name, "cuCtxPushCurrent");
}

static void pop_ctx(void)
{
    CUcontext dummy = NULL;
    cu->cuCtxPopCurrent(&dummy);
}

/* Sequence callback --------------------------------------------------------------------- */

static pf_status check_format(pf_nvdec *d, const CUVIDEOFORMAT *f, int *engines)
{
    const char *cn = pf_es_codec_name(d->codec);
    if (f->chroma_format != cudaVideoChromaFormat_420)
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "%s: %s chroma format %d is not 4:2:0 (NVDEC output here is NV12)",
                            d->name, cn, (int)f->chroma_format);
    if (f->bit_depth_luma_minus8 || f->bit_depth_chroma_minus8)
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "%s: %s with %d-bit samples: only 8-bit video is decoded to NV12",
                            d->name, cn, 8 + f->bit_depth_luma_minus8);
    *engines = 0;
    if (!cv->cuvidGetDecoderCaps) return PF_OK;
    CUVIDDECODECAPS caps;
    memset(&caps, 0, sizeof caps);
    caps.eCodecType = f->codec;
    caps.eChromaFormat = f->chroma_format;
    caps.nBitDepthMinus8 = 0;
    CUresult r = cv->cuvidGetDecoderCaps(&caps);
    if (r != CUDA_SUCCESS) return cu_fail(r, d->name, "cuvidGetDecoderCaps");
    if (!caps.bIsSupported)
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: this GPU's NVDEC does not decode %s 4:2:0 "
                            "8-bit", d->name, cn);
    if (f->coded_width > caps.nMaxWidth || f->coded_height > caps.nMaxHeight ||
        f->coded_width < caps.nMinWidth || f->coded_height < caps.nMinHeight ||
        (f->coded_width >> 4) * (f->coded_height >> 4) > caps.nMaxMBCount)
        return pf_set_error(PF_ERR_UNSUPPORTED,
                            "%s: %s %ux%u is outside what NVDEC decodes here (%ux%u..%ux%u, "
                            "%u macroblocks)",
                            d->name, cn, f->coded_width, f->coded_height, caps.nMinWidth,
                            caps.nMinHeight, caps.nMaxWidth, caps.nMaxHeight, caps.nMaxMBCount);
    *engines = caps.nNumNVDECs;
    return PF_OK;
}

static pf_status make_pool(pf_nvdec *d, int w, int h)
{
    if (d->pool && d->pool_w == w && d->pool_h == h) return PF_OK;
    /* frames out (and queued in the ring) keep the old pool alive */
    pf_frame_pool_destroy(&d->pool);
    pf_frame_pool_params pp = {.format = PF_PIXFMT_NV12,
                               .width = w,
                               .height = h,
                               .count = d->p.pool_size,
                               .device = d->dev,
                               .domain = PF_MEM_DEVICE,
                               .name = d->name};
    pf_status st = pf_frame_pool_create(&pp, &d->pool);
    if (st != PF_OK) return st;
    d->pool_w = w;
    d->pool_h = h;
    return PF_OK;
}

/* VUI colour code 2 is "unspecified", which pf_color_info spells 0. */
static int unspec2(int code) { return code == 2 ? 0 : code; }

static pf_status on_sequence(pf_nvdec *d, CUVIDEOFORMAT *f, int *surfaces_out)
{
    int engines = 0;
    pf_status st = check_format(d, f, &engines);
    if (st != PF_OK) return st;
    int w = f->display_area.right - f->display_area.left;
    int h = f->display_area.bottom - f->display_area.top;
    if (w <= 0 || h <= 0 || w > (int)f->coded_width || h > (int)f->coded_height)
        return pf_set_error(PF_ERR_FORMAT, "%s: display area %d,%d..%d,%d does not fit %ux%u",
                            d->name, f->display_area.left, f->display_area.top,
                            f->display_area.right, f->display_area.bottom, f->coded_width,
                            f->coded_height);
    int min = f->min_num_decode_surfaces > 0 ? f->min_num_decode_surfaces : 8;
    int surfaces = d->p.surfaces > 0 ? d->p.surfaces : min + 4;
    if (surfaces < min) surfaces = min;
    if (surfaces > MAX_SURFACES) surfaces = MAX_SURFACES < min ? min : MAX_SURFACES;

    CUVIDDECODECREATEINFO ci;
    memset(&ci, 0, sizeof ci);
    ci.ulWidth = f->coded_width;
    ci.ulHeight = f->coded_height;
    ci.ulNumDecodeSurfaces = (tcu_ulong)surfaces;
    ci.CodecType = f->codec;
    ci.ChromaFormat = f->chroma_format;
    ci.ulCreationFlags = cudaVideoCreate_PreferCUVID;
    ci.bitDepthMinus8 = 0;
    ci.ulMaxWidth = f->coded_width;
    ci.ulMaxHeight = f->coded_height;
    ci.display_area.left = (short)f->display_area.left;
    ci.display_area.top = (short)f->display_area.top;
    ci.display_area.right = (short)f->display_area.right;
    ci.display_area.bottom = (short)f->display_area.bottom;
    ci.OutputFormat = cudaVideoSurfaceFormat_NV12;
    ci.DeinterlaceMode = f->progressive_sequence ? cudaVideoDeinterlaceMode_Weave
                                                 : cudaVideoDeinterlaceMode_Adaptive;
    ci.ulTargetWidth = (tcu_ulong)w;
    ci.ulTargetHeight = (tcu_ulong)h;
    ci.ulNumOutputSurfaces = 2;
    ci.vidLock = d->lock;

    bool same = d->dec && ci.ulWidth == d->ci.ulWidth && ci.ulHeight == d->ci.ulHeight &&
                ci.ulNumDecodeSurfaces == d->ci.ulNumDecodeSurfaces &&
                ci.CodecType == d->ci.CodecType && ci.DeinterlaceMode == d->ci.DeinterlaceMode &&
                memcmp(&ci.display_area, &d->ci.display_area, sizeof ci.display_area) == 0;
    if (!same) {
        if (d->dec) {
            PF_LOGI("%s: new sequence %ux%u (was %lux%lu): recreating the decoder", d->name,
                    f->coded_width, f->coded_height, (unsigned long)d->ci.ulWidth,
                    (unsigned long)d->ci.ulHeight);
            cv->cuvidDestroyDecoder(d->dec);
            d->dec = NULL;
        }
        CUresult r = cv->cuvidCreateDecoder(&d->dec, &ci);
        if (r != CUDA_SUCCESS) {
            d->dec = NULL;
            return cu_fail(r, d->name, "cuvidCreateDecoder");
        }
        d->ci = ci;
        st = make_pool(d, w, h);
        if (st != PF_OK) return st;
    }
    d->info.codec = d->codec;
    d->info.width = w;
    d->info.height = h;
    d->info.coded_width = (int)f->coded_width;
    d->info.coded_height = (int)f->coded_height;
    d->info.fps = (pf_rational){(int32_t)f->frame_rate.numerator,
                                (int32_t)f->frame_rate.denominator};
    if (f->frame_rate.numerator == 0 || f->frame_rate.denominator == 0 ||
        f->frame_rate.numerator > INT32_MAX || f->frame_rate.denominator > INT32_MAX)
        d->info.fps = (pf_rational){0, 0};
    d->info.progressive = f->progressive_sequence != 0;
    /* H.273 code points, with 2 ("unspecified" in the VUI) as 0, as the
     * FFmpeg path reports them. The flag is 0 both for "limited" and for
     * "not signalled" (the spec's inferred value): left unspecified, which
     * converts as limited. */
    d->info.color.range = f->video_signal_description.video_full_range_flag
                              ? PF_COLOR_RANGE_FULL
                              : PF_COLOR_RANGE_UNSPECIFIED;
    d->info.color.matrix = unspec2(f->video_signal_description.matrix_coefficients);
    d->info.color.primaries = unspec2(f->video_signal_description.color_primaries);
    d->info.color.transfer = unspec2(f->video_signal_description.transfer_characteristics);
    d->info.surfaces = surfaces;
    d->info.min_surfaces = min;
    d->info.engines = engines;
    d->info.pool_size = d->p.pool_size;
    d->have_info = true;
    *surfaces_out = surfaces;
    return PF_OK;
}

static int CUDAAPI cb_sequence(void *user, CUVIDEOFORMAT *f)
{
    pf_nvdec *d = user;
    int surfaces = 0;
    pf_status st = on_sequence(d, f, &surfaces);
    if (st != PF_OK) {
        d->fatal = st; /* the message is set; decode() returns it */
        return 0;
    }
    return surfaces; /* > 1: the parser cycles through this many surfaces */
}

/* Decode callback ------------------------------------------------------------------------ */

static int CUDAAPI cb_decode(void *user, CUVIDPICPARAMS *pic)
{
    pf_nvdec *d = user;
    if (!d->dec || pic->CurrPicIdx < 0 || pic->CurrPicIdx >= (int)d->ci.ulNumDecodeSurfaces) {
        d->stats.decode_errors++;
        return 1; /* skip the picture, keep parsing */
    }
    CUresult r = cv->cuvidDecodePicture(d->dec, pic);
    if (r != CUDA_SUCCESS) {
        d->stats.decode_errors++;
        return 1;
    }
    d->stats.pictures++;
    return 1;
}

/* Display callback ------------------------------------------------------------------------ */

static pf_status drop(pf_nvdec *d, const char *why)
{
    d->stats.dropped++;
    d->busy = pf_set_error(PF_ERR_BUSY, "%s: frame %lld dropped: %s", d->name,
                           (long long)d->display_index, why);
    d->display_index++;
    return d->busy;
}

static pf_status get_frame(pf_nvdec *d, pf_frame *f)
{
    pf_status st = pf_frame_pool_acquire(d->pool, 0, f);
    if (st == PF_OK) return PF_OK;
    d->stats.pool_waits++;
    if (d->ring_count >= d->p.pool_size)
        return drop(d, "every pool frame is waiting in the decoder (receive() frames after "
                       "each decode(), feed smaller pieces or raise pool_size)");
    if (d->p.pool_timeout_us == 0)
        return drop(d, "the frame pool is empty (pool_timeout_us = 0)");
    st = pf_frame_pool_acquire(d->pool, d->p.pool_timeout_us, f);
    if (st == PF_OK) return PF_OK;
    return drop(d, "no pool frame came back in time (frames still referenced)");
}

static pf_status copy_plane(pf_nvdec *d, CUdeviceptr src, unsigned src_pitch, uint8_t *dst,
                            size_t dst_pitch, size_t width, size_t rows)
{
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = src;
    c.srcPitch = src_pitch;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = (CUdeviceptr)(uintptr_t)dst;
    c.dstPitch = dst_pitch;
    c.WidthInBytes = width;
    c.Height = rows;
    CUresult r = cu->cuMemcpy2DAsync(&c, d->cstream);
    return r == CUDA_SUCCESS ? PF_OK : cu_fail(r, d->name, "cuMemcpy2DAsync");
}

static pf_status on_display(pf_nvdec *d, const CUVIDPARSERDISPINFO *di)
{
    if (!d->dec || !d->pool) return PF_OK;
    CUVIDGETDECODESTATUS ds;
    memset(&ds, 0, sizeof ds);
    if (cv->cuvidGetDecodeStatus(d->dec, di->picture_index, &ds) == CUDA_SUCCESS &&
        (ds.decodeStatus == cuvidDecodeStatus_Error ||
         ds.decodeStatus == cuvidDecodeStatus_Error_Concealed)) {
        d->stats.decode_errors++;
        if (ds.decodeStatus == cuvidDecodeStatus_Error) {
            d->display_index++; /* not concealed: skip it */
            return PF_OK;
        }
    }
    if (d->ring_count >= d->ring_cap)
        return drop(d, "the decoder's output queue is full (receive() frames)");
    pf_frame f = {0};
    pf_status st = get_frame(d, &f);
    if (st != PF_OK) return st;

    CUVIDPROCPARAMS pp;
    memset(&pp, 0, sizeof pp);
    pp.progressive_frame = di->progressive_frame;
    pp.top_field_first = di->top_field_first;
    pp.unpaired_field = di->repeat_first_field < 0;
    pp.output_stream = d->cstream;
    CUdeviceptr src = 0;
    unsigned pitch = 0;
    CUresult r = cv->cuvidMapVideoFrame(d->dec, di->picture_index, &src, &pitch, &pp);
    if (r != CUDA_SUCCESS) {
        pf_frame_unref(&f);
        d->stats.decode_errors++;
        d->display_index++;
        return PF_OK; /* a picture the engine could not produce: skip, counted */
    }
    size_t w = (size_t)d->info.width, h = (size_t)d->info.height;
    size_t surf_h = (size_t)((d->ci.ulTargetHeight + 1) & ~(tcu_ulong)1);
    st = copy_plane(d, src, pitch, f.data[0], f.stride[0], w, h);
    if (st == PF_OK)
        st = copy_plane(d, src + (CUdeviceptr)pitch * surf_h, pitch, f.data[1], f.stride[1],
                        2 * ((w + 1) / 2), (h + 1) / 2);
    /* the surface must not be unmapped (and reused) before the copy read it */
    if (st == PF_OK) {
        r = cu->cuStreamSynchronize(d->cstream);
        if (r != CUDA_SUCCESS) st = cu_fail(r, d->name, "cuStreamSynchronize");
    }
    cv->cuvidUnmapVideoFrame(d->dec, src);
    if (st != PF_OK) {
        pf_frame_unref(&f);
        return st;
    }
    if (d->any_pts) {
        f.pts = di->timestamp;
        f.time_base = d->p.time_base;
    } else {
        pf_rational fps = d->p.fps.num > 0   ? d->p.fps
                          : d->info.fps.num > 0 ? d->info.fps
                                                : (pf_rational){30, 1};
        f.pts = d->display_index;
        f.time_base = (pf_rational){fps.den, fps.num};
    }
    f.index = d->display_index++;
    f.color = d->info.color;
    d->ring[(d->ring_head + d->ring_count) % d->ring_cap] = f;
    d->ring_count++;
    return PF_OK;
}

static int CUDAAPI cb_display(void *user, CUVIDPARSERDISPINFO *di)
{
    pf_nvdec *d = user;
    if (!di) return 1; /* end-of-stream notification */
    pf_status st = on_display(d, di);
    if (st < 0 && st != PF_ERR_BUSY) {
        d->fatal = st;
        return 0;
    }
    return 1;
}

/* Lifecycle --------------------------------------------------------------------------------- */

static pf_status check_params(const pf_nvdec_params *p, const char *name)
{
    if (!p->device || pf_device_get_type(p->device) != PF_DEVICE_CUDA)
        return pf_set_error(PF_ERR_INVALID, "pf_nvdec_create: %s: device must be a CUDA device "
                            "(got %s)", name, p->device ? pf_device_spec(p->device) : "NULL");
    if (p->codec != PF_ES_UNKNOWN && p->codec != PF_ES_H264 && p->codec != PF_ES_HEVC)
        return pf_set_error(PF_ERR_INVALID, "pf_nvdec_create: %s: codec %d", name, (int)p->codec);
    if (p->pool_size < 1 || p->pool_size > MAX_POOL)
        return pf_set_error(PF_ERR_INVALID, "pf_nvdec_create: %s: pool_size %d is out of 1..%d",
                            name, p->pool_size, MAX_POOL);
    if (p->surfaces < 0 || p->surfaces > MAX_SURFACES)
        return pf_set_error(PF_ERR_INVALID, "pf_nvdec_create: %s: surfaces %d is out of 0..%d",
                            name, p->surfaces, MAX_SURFACES);
    if (p->display_delay < 0 || p->display_delay > 4)
        return pf_set_error(PF_ERR_INVALID, "pf_nvdec_create: %s: display_delay %d is out of 0..4",
                            name, p->display_delay);
    bool fps_auto = p->fps.num == 0 && p->fps.den == 0;
    if ((!fps_auto && (p->fps.num <= 0 || p->fps.den <= 0)) || p->time_base.num <= 0 ||
        p->time_base.den <= 0)
        return pf_set_error(PF_ERR_INVALID,
                            "pf_nvdec_create: %s: fps %d/%d ({0,0} = auto) and time_base %d/%d "
                            "must be positive",
                            name, p->fps.num, p->fps.den, p->time_base.num, p->time_base.den);
    return PF_OK;
}

/* The driver's device for the runtime's index, checked by PCI address (the
 * two APIs number devices the same way unless something is badly off). */
static pf_status find_cudev(pf_nvdec *d)
{
    const pf_device_props *props = pf_device_props_get(d->dev);
    CUresult r = cu->cuDeviceGet(&d->cudev, props->index);
    if (r != CUDA_SUCCESS) return cu_fail(r, d->name, "cuDeviceGet");
    int dom = 0, bus = 0, slot = 0;
    unsigned pd = 0, pb = 0, ps = 0;
    if (sscanf(props->pci_bus_id, "%x:%x:%x", &pd, &pb, &ps) == 3 &&
        cu->cuDeviceGetAttribute(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d->cudev) ==
            CUDA_SUCCESS &&
        cu->cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d->cudev) ==
            CUDA_SUCCESS &&
        cu->cuDeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d->cudev) ==
            CUDA_SUCCESS &&
        ((unsigned)dom != pd || (unsigned)bus != pb || (unsigned)slot != ps))
        return pf_set_error(PF_ERR_DEVICE,
                            "%s: driver device %d is at %04x:%02x:%02x but %s is at %s", d->name,
                            props->index, dom, bus, slot, pf_device_spec(d->dev),
                            props->pci_bus_id);
    return PF_OK;
}

pf_status pf_nvdec_create(const pf_nvdec_params *p, pf_nvdec **out)
{
    PF_CHECK_ARG(out, "pf_nvdec_create", "out is NULL");
    *out = NULL;
    PF_CHECK_ARG(p, "pf_nvdec_create", "params are NULL");
    const char *name = p->name && p->name[0] ? p->name : "nvdec";
    pf_status st = check_params(p, name);
    if (st != PF_OK) return st;
    char why[512];
    if (!pf_nvdec_available(why, sizeof why))
        return pf_set_error(PF_ERR_UNSUPPORTED, "%s: NVDEC is not available: %s", name, why);

    int64_t t0 = pf_time_ns();
    pf_nvdec *d = calloc(1, sizeof *d);
    if (!d) return pf_set_error(PF_ERR_NOMEM, "pf_nvdec_create: out of host memory");
    d->p = *p;
    d->p.name = NULL;
    d->dev = p->device;
    d->codec = p->codec;
    d->name = strdup(name);
    d->ring_cap = 2 * p->pool_size;
    d->ring = calloc((size_t)d->ring_cap, sizeof *d->ring);
    if (!d->name || !d->ring) st = pf_set_error(PF_ERR_NOMEM, "pf_nvdec_create: out of host memory");
    if (st == PF_OK) {
        pf_stream_params sp = pf_stream_params_default();
        sp.device = d->dev;
        st = pf_stream_create(&sp, &d->stream);
    }
    if (st == PF_OK) {
        PF_LOGD("%s: CUDA stream (the context, on the process's first use) in %.1f ms", name,
                (double)(pf_time_ns() - t0) / 1e6);
        d->cstream = (CUstream)pf_stream_native(d->stream);
        st = find_cudev(d);
    }
    if (st == PF_OK) {
        CUresult r = cu->cuDevicePrimaryCtxRetain(&d->ctx, d->cudev);
        if (r != CUDA_SUCCESS) st = cu_fail(r, d->name, "cuDevicePrimaryCtxRetain");
        else d->ctx_retained = true;
    }
    if (st == PF_OK) {
        CUresult r = cv->cuvidCtxLockCreate(&d->lock, d->ctx);
        if (r != CUDA_SUCCESS) {
            d->lock = NULL;
            st = cu_fail(r, d->name, "cuvidCtxLockCreate");
        }
    }
    if (st != PF_OK) {
        pf_nvdec_destroy(&d);
        return st;
    }
    *out = d;
    return PF_OK;
}

void pf_nvdec_destroy(pf_nvdec **pd)
{
    if (!pd || !*pd) return;
    pf_nvdec *d = *pd;
    *pd = NULL;
    if (d->ctx_retained && push_ctx(d) == PF_OK) {
        if (d->parser) cv->cuvidDestroyVideoParser(d->parser);
        if (d->dec) cv->cuvidDestroyDecoder(d->dec);
        pop_ctx();
    }
    for (int i = 0; i < d->ring_count; i++)
        pf_frame_unref(&d->ring[(d->ring_head + i) % d->ring_cap]);
    pf_frame_pool_destroy(&d->pool);
    if (d->lock) cv->cuvidCtxLockDestroy(d->lock);
    if (d->ctx_retained) cu->cuDevicePrimaryCtxRelease(d->cudev);
    pf_stream_destroy(&d->stream);
    free(d->ring);
    free(d->name);
    free(d);
}

static pf_status make_parser(pf_nvdec *d, const uint8_t *data, size_t size)
{
    if (d->codec == PF_ES_UNKNOWN) d->codec = pf_es_probe(data, size);
    if (d->codec == PF_ES_UNKNOWN)
        return pf_set_error(PF_ERR_FORMAT,
                            "%s: the first bytes are neither an H.264 nor an HEVC Annex B "
                            "stream (set the codec, or feed from a start code)",
                            d->name);
    CUVIDPARSERPARAMS pp;
    memset(&pp, 0, sizeof pp);
    pp.CodecType = cuvid_codec(d->codec);
    pp.ulMaxNumDecodeSurfaces = 1; /* the sequence callback returns the real number */
    pp.ulClockRate = 0;
    pp.ulErrorThreshold = 0;
    pp.ulMaxDisplayDelay = (unsigned)d->p.display_delay;
    pp.pUserData = d;
    pp.pfnSequenceCallback = cb_sequence;
    pp.pfnDecodePicture = cb_decode;
    pp.pfnDisplayPicture = cb_display;
    CUresult r = cv->cuvidCreateVideoParser(&d->parser, &pp);
    if (r != CUDA_SUCCESS) {
        d->parser = NULL;
        return cu_fail(r, d->name, "cuvidCreateVideoParser");
    }
    return PF_OK;
}

/* One packet through the parser with the context pushed; the callbacks'
 * failures come back through d->fatal and d->busy. */
static pf_status parse(pf_nvdec *d, CUVIDSOURCEDATAPACKET *pkt)
{
    pf_status st = push_ctx(d);
    if (st != PF_OK) return st;
    d->busy = PF_OK;
    CUresult r = cv->cuvidParseVideoData(d->parser, pkt);
    pop_ctx();
    if (d->fatal != PF_OK) return d->fatal; /* message set by the callback */
    if (r != CUDA_SUCCESS) d->stats.decode_errors++; /* rejected data: skipped */
    return d->busy;
}

pf_status pf_nvdec_decode(pf_nvdec *d, const void *data, size_t size, int64_t pts)
{
    PF_CHECK_ARG(d, "pf_nvdec_decode", "decoder is NULL");
    PF_CHECK_ARG(data || size == 0, "pf_nvdec_decode", "data is NULL");
    if (d->fatal != PF_OK)
        return pf_set_error(d->fatal, "%s: the decoder failed earlier and cannot go on", d->name);
    if (d->flushed)
        return pf_set_error(PF_ERR_CLOSED, "%s: decode() after flush()", d->name);
    if (size == 0) return PF_OK;
    if (size > 0xffffffffu)
        return pf_set_error(PF_ERR_INVALID, "%s: %zu bytes in one call (at most 4 GiB)", d->name,
                            size);
    if (!d->parser) {
        pf_status st = make_parser(d, data, size);
        if (st != PF_OK) {
            if (st == PF_ERR_FORMAT) d->stats.decode_errors++;
            return st;
        }
    }
    CUVIDSOURCEDATAPACKET pkt;
    memset(&pkt, 0, sizeof pkt);
    pkt.payload = data;
    pkt.payload_size = (tcu_ulong)size;
    if (pts != PF_NOPTS) {
        pkt.flags |= CUVID_PKT_TIMESTAMP;
        pkt.timestamp = pts;
        d->any_pts = true;
    }
    d->stats.packets++;
    d->stats.bytes += size;
    return parse(d, &pkt);
}

pf_status pf_nvdec_flush(pf_nvdec *d)
{
    PF_CHECK_ARG(d, "pf_nvdec_flush", "decoder is NULL");
    if (d->flushed) return PF_OK;
    d->flushed = true;
    if (!d->parser || d->fatal != PF_OK) return PF_OK;
    CUVIDSOURCEDATAPACKET pkt;
    memset(&pkt, 0, sizeof pkt);
    pkt.flags = CUVID_PKT_ENDOFSTREAM;
    return parse(d, &pkt);
}

pf_status pf_nvdec_receive(pf_nvdec *d, pf_frame *out)
{
    PF_CHECK_ARG(d && out, "pf_nvdec_receive", "NULL argument");
    memset(out, 0, sizeof *out);
    if (d->ring_count == 0) return d->flushed || d->fatal != PF_OK ? PF_EOF : PF_AGAIN;
    *out = d->ring[d->ring_head];
    memset(&d->ring[d->ring_head], 0, sizeof d->ring[0]);
    d->ring_head = (d->ring_head + 1) % d->ring_cap;
    d->ring_count--;
    d->stats.frames++;
    return PF_OK;
}

pf_status pf_nvdec_get_info(const pf_nvdec *d, pf_nvdec_info *out)
{
    PF_CHECK_ARG(d && out, "pf_nvdec_get_info", "NULL argument");
    memset(out, 0, sizeof *out);
    if (!d->have_info) return PF_AGAIN;
    *out = d->info;
    return PF_OK;
}

pf_status pf_nvdec_get_stats(const pf_nvdec *d, pf_nvdec_stats *out)
{
    PF_CHECK_ARG(d && out, "pf_nvdec_get_stats", "NULL argument");
    *out = d->stats;
    return PF_OK;
}

#else /* !PF_HAVE_NVDEC */

#ifdef PF_HAVE_CUDA
#define NO_NVDEC "built without the ffnvcodec headers (install libffmpeg-nvenc-dev and rebuild)"
#else
#define NO_NVDEC "built without CUDA (configure with -DPF_CUDA=on)"
#endif

bool pf_nvdec_available(char *detail, size_t detail_size)
{
    if (detail && detail_size) snprintf(detail, detail_size, "%s", NO_NVDEC);
    return false;
}

pf_status pf_nvdec_create(const pf_nvdec_params *p, pf_nvdec **out)
{
    PF_CHECK_ARG(out, "pf_nvdec_create", "out is NULL");
    *out = NULL;
    const char *name = p && p->name && p->name[0] ? p->name : "nvdec";
    return pf_set_error(PF_ERR_UNSUPPORTED, "%s: NVDEC is not available: " NO_NVDEC, name);
}

void pf_nvdec_destroy(pf_nvdec **d)
{
    if (d) *d = NULL;
}

/* No decoder can exist in this build: the calls below only see NULL. */
pf_status pf_nvdec_decode(pf_nvdec *d, const void *data, size_t size, int64_t pts)
{
    return pf_set_error(PF_ERR_INVALID, "pf_nvdec_decode: decoder is NULL (" NO_NVDEC ")");
}

pf_status pf_nvdec_flush(pf_nvdec *d)
{
    return pf_set_error(PF_ERR_INVALID, "pf_nvdec_flush: decoder is NULL (" NO_NVDEC ")");
}

pf_status pf_nvdec_receive(pf_nvdec *d, pf_frame *out)
{
    if (out) memset(out, 0, sizeof *out);
    return pf_set_error(PF_ERR_INVALID, "pf_nvdec_receive: decoder is NULL (" NO_NVDEC ")");
}

pf_status pf_nvdec_get_info(const pf_nvdec *d, pf_nvdec_info *out)
{
    return pf_set_error(PF_ERR_INVALID, "pf_nvdec_get_info: decoder is NULL (" NO_NVDEC ")");
}

pf_status pf_nvdec_get_stats(const pf_nvdec *d, pf_nvdec_stats *out)
{
    return pf_set_error(PF_ERR_INVALID, "pf_nvdec_get_stats: decoder is NULL (" NO_NVDEC ")");
}

#endif
