# `pixflow segment` keeps the input image's ICC profile (issue 13): a PNG and a JPEG with a
# profile (written by test_io_image_meta --write-icc) are segmented, and each output must hold
# the very same profile bytes (test_io_image_meta --same-icc). Skipped when the model is missing
# (npm ci installs it), like tests/segment_cli.cmake.
#
# Included from tests/CMakeLists.txt inside if(PF_BUILD_TOOLS); each test runs this file again
# in script mode (cmake -P) with -DCASE=....

if(NOT CMAKE_SCRIPT_MODE_FILE)
  foreach(_case png jpg)
    add_test(NAME segment_icc_${_case}
      COMMAND ${CMAKE_COMMAND} -DCASE=${_case} -DPIXFLOW=$<TARGET_FILE:pixflow_cli>
              -DMETA=$<TARGET_FILE:test_io_image_meta> -DSRC=${PROJECT_SOURCE_DIR}
              -DWORK=${CMAKE_CURRENT_BINARY_DIR}/segment_icc_${_case}
              -P ${CMAKE_CURRENT_LIST_FILE})
    set_tests_properties(segment_icc_${_case} PROPERTIES LABELS cpu TIMEOUT 120
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

execute_process(COMMAND ${META} --write-icc ${WORK} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "test_io_image_meta --write-icc failed (${rc})")
endif()
# The other container on output too: the profile crosses PNG <-> JPEG.
if(CASE STREQUAL "png")
  set(other jpg)
else()
  set(other png)
endif()
foreach(out out.${CASE} out.${other})
  execute_process(COMMAND ${PIXFLOW} segment ${WORK}/icc.${CASE} -o ${WORK}/${out}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pixflow segment icc.${CASE} -o ${out} -> ${rc}\n${o}${e}")
  endif()
  execute_process(COMMAND ${META} --same-icc ${WORK}/icc.${CASE} ${WORK}/${out}
                  RESULT_VARIABLE rc ERROR_VARIABLE e)
  message("${e}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the ICC profile of icc.${CASE} did not reach ${out}")
  endif()
endforeach()
