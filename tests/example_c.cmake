# Runs examples/c/segment_file on the sample image (cmake -P, from the
# top-level CMakeLists.txt): exit 0, its summary line and its output; a
# missing input fails with a message naming it.
set(astronaut ${SRC}/.data/astronaut.png)
set(model ${SRC}/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite)
if(NOT EXISTS ${astronaut} OR NOT EXISTS ${model})
  message("SKIP: needs ${astronaut} and ${model}")
  return()
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(ENV{PIXFLOW_DEVICE} cpu)
execute_process(COMMAND ${EXAMPLE} ${astronaut} ${WORK}/green.png "#00ff00"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "segment_file exited ${rc}")
endif()
if(NOT out MATCHES "astronaut.png -> .*green.png: done, 1 frames, .* fps on cpu")
  message(FATAL_ERROR "unexpected summary: ${out}")
endif()
if(NOT EXISTS ${WORK}/green.png)
  message(FATAL_ERROR "green.png was not written")
endif()
# The model is found without PIXFLOW_MODELS (the source tree of the program).
execute_process(COMMAND ${EXAMPLE} ${WORK}/missing.png ${WORK}/x.png
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "missing.png")
  message(FATAL_ERROR "a missing input: exit ${rc}, ${err}")
endif()
