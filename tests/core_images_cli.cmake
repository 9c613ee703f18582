# `pixflow segment` end to end, issue 13:
# - icc_png, icc_jpg: the input image's ICC profile is kept: a PNG and a JPEG with a profile
#   (written by test_io_image_meta --write-icc) are segmented, and each output must hold the
#   very same profile bytes (test_io_image_meta --same-icc).
# - smooth_cut: temporal smoothing starts over at a scene cut. A Y4M of two shots made with
#   ffmpeg (8 frames of astronaut.png, a person: mask mean 0.54; then 8 frames of a plain
#   colour: mask 0) is segmented with --smooth 0.6 and with --smooth 1 (off); every mask must be
#   the same file, the ones after the cut included (before the fix they held 40%, 16%, ... of
#   the astronaut: a fading ghost).
# Skipped when the model (npm ci), astronaut.png (scripts/fetch-media.sh) or ffmpeg is missing,
# like tests/segment_cli.cmake.
#
# Included from tests/CMakeLists.txt inside if(PF_BUILD_TOOLS); each test runs this file again
# in script mode (cmake -P) with -DCASE=....

if(NOT CMAKE_SCRIPT_MODE_FILE)
  foreach(_case icc_png icc_jpg smooth_cut)
    add_test(NAME segment_${_case}
      COMMAND ${CMAKE_COMMAND} -DCASE=${_case} -DPIXFLOW=$<TARGET_FILE:pixflow_cli>
              -DMETA=$<TARGET_FILE:test_io_image_meta> -DSRC=${PROJECT_SOURCE_DIR}
              -DWORK=${CMAKE_CURRENT_BINARY_DIR}/segment_${_case}
              -P ${CMAKE_CURRENT_LIST_FILE})
    set_tests_properties(segment_${_case} PROPERTIES LABELS cpu TIMEOUT 120
                         SKIP_REGULAR_EXPRESSION "SKIP: ")
  endforeach()
  return()
endif()

set(model ${SRC}/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite)
if(NOT EXISTS ${model})
  message("SKIP: ${model} is missing (npm ci installs it)")
  return()
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(ENV{PIXFLOW_MODELS} ${SRC})
set(ENV{PIXFLOW_DEVICE} cpu)

if(CASE STREQUAL "smooth_cut")
  set(astronaut ${SRC}/.data/astronaut.png)
  find_program(FFMPEG ffmpeg)
  if(NOT EXISTS ${astronaut} OR NOT FFMPEG)
    message("SKIP: needs ${astronaut} (scripts/fetch-media.sh) and ffmpeg")
    return()
  endif()
  execute_process(COMMAND ${FFMPEG} -v error -loop 1 -framerate 10 -t 0.8 -i ${astronaut}
                          -f lavfi -i color=c=0x2060a0:s=256x256:r=10:d=0.8
                          -filter_complex "[0]scale=256:256,format=yuv420p,setsar=1[a];[1]format=yuv420p,setsar=1[b];[a][b]concat=n=2:v=1[v]"
                          -map [v] ${WORK}/cut.y4m
                  RESULT_VARIABLE rc ERROR_VARIABLE e)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ffmpeg could not make the two-shot video: ${e}")
  endif()
  foreach(run smooth:0.6 raw:1)
    string(REPLACE ":" ";" run ${run})
    list(GET run 0 dir)
    list(GET run 1 a)
    execute_process(COMMAND ${PIXFLOW} segment ${WORK}/cut.y4m -o null --mask-out ${WORK}/${dir}/
                            --smooth ${a}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "pixflow segment --smooth ${a} -> ${rc}\n${o}${e}")
    endif()
  endforeach()
  file(GLOB masks RELATIVE ${WORK}/raw ${WORK}/raw/*.png)
  list(LENGTH masks n)
  if(NOT n EQUAL 16)
    message(FATAL_ERROR "expected 16 masks, got ${n}")
  endif()
  foreach(m ${masks})
    file(SHA256 ${WORK}/raw/${m} want)
    file(SHA256 ${WORK}/smooth/${m} got)
    if(NOT want STREQUAL got)
      message(FATAL_ERROR "smoothed ${m} differs from the unsmoothed one (frames 8..15 follow the cut)")
    endif()
  endforeach()
  message("16 smoothed masks equal the unsmoothed ones")
  return()
endif()

execute_process(COMMAND ${META} --write-icc ${WORK} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "test_io_image_meta --write-icc failed (${rc})")
endif()
# The other container on output too: the profile crosses PNG <-> JPEG.
if(CASE STREQUAL "icc_png")
  set(ext png)
  set(other jpg)
else()
  set(ext jpg)
  set(other png)
endif()
foreach(out out.${ext} out.${other})
  execute_process(COMMAND ${PIXFLOW} segment ${WORK}/icc.${ext} -o ${WORK}/${out}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pixflow segment icc.${ext} -o ${out} -> ${rc}\n${o}${e}")
  endif()
  execute_process(COMMAND ${META} --same-icc ${WORK}/icc.${ext} ${WORK}/${out}
                  RESULT_VARIABLE rc ERROR_VARIABLE e)
  message("${e}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the ICC profile of icc.${ext} did not reach ${out}")
  endif()
endforeach()
