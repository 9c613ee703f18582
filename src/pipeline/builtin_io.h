/* Private: constructors of the io built-in stages (builtin_io.c), with the
 * signature of the registry in builtin.c (bi_ctor).
 *
 * Registry entries (builtin.c types[]):
 *   {"io.video_source", PF_BUILTIN_SOURCE, bi_video_source_create},
 *   {"io.image_source", PF_BUILTIN_SOURCE, bi_image_source_create},
 *   {"io.video_sink", PF_BUILTIN_SINK, bi_video_sink_create},
 *   {"io.image_sink", PF_BUILTIN_SINK, bi_image_sink_create},
 *
 * Text for pipeline.h "Built-in stages":
 *   io.video_source    frames of a video file or stream (pf_video_reader: Y4M,
 *     raw, or any FFmpeg container), from the reader's pool; the input is
 *     opened when the stage is made. path (required; "-" = stdin) | format
 *     nv12|i420|rgb24|bgr24|rgba|gray8 (i420) | loop false (reopen at the
 *     end; not for "-") | pool 8 (1..1024) | pool_timeout_ms -1 (wait) |
 *     source 0 | memory host|pinned (pinned on a CUDA stage) | fps 0 | count 0
 *     | container | raw_width, raw_height, raw_format (container raw)
 *   io.image_source    PNG/JPEG images in path order. path (required: files,
 *     directories (their .png/.jpg/.jpeg, sorted) and globs, comma-separated)
 *     | format rgb24|bgr24|rgba|gray8 (rgb24) | loop false | pool 4 (frames of
 *     the first image's size; other sizes are decoded outside the pool) |
 *     pool_timeout_ms -1 | source 0 | memory host|pinned | fps 0 | count 0
 *   io.video_sink      encodes frames into one file (pf_video_writer), on one
 *     thread in arrival order; size and input format come from the first
 *     frame. path (required; "-" = Y4M on stdout) | fps 30 | codec libx264 |
 *     crf 23 (-1..63) | preset | gop 0 | bitrate 0 | codec_threads 0 |
 *     container | codec_pixfmt
 *   io.image_sink      writes each frame as an image (pf_image_write). path
 *     (required; {seq} and {index} become 6-digit numbers, {source} the
 *     source id) | format auto|png|jpeg (auto: the extension) | quality 90
 *     (1..100) | compression 6 (0..9) | chroma444 false */
#ifndef PF_PIPELINE_BUILTIN_IO_H
#define PF_PIPELINE_BUILTIN_IO_H

#include "builtin_impl.h"

pf_status bi_video_source_create(bi_args *a, pf_stage_desc *d);
pf_status bi_image_source_create(bi_args *a, pf_stage_desc *d);
pf_status bi_video_sink_create(bi_args *a, pf_stage_desc *d);
pf_status bi_image_sink_create(bi_args *a, pf_stage_desc *d);

#endif
