# CLI tests of `pixflow faces` (tests/faces_cli.sh): JSON Lines on an image
# and on a short video of the astronaut moving (made with ffmpeg), stable
# ids, the -o drawing, messi5 with the full-range detector, a blank frame,
# a wrong model refused, two streams batched and in latency mode (summary,
# --stats, --trace). Included from tests/CMakeLists.txt.
if(PF_BUILD_TOOLS)
  foreach(case image video messi blank streams bad_model)
    add_test(NAME cli_faces_${case}
      COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/faces_cli.sh ${case} $<TARGET_FILE:pixflow_cli>
              ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/faces_cli/${case})
    set_tests_properties(cli_faces_${case} PROPERTIES LABELS cpu TIMEOUT 300
                         SKIP_RETURN_CODE 77 ENVIRONMENT "PIXFLOW_DEVICE=cpu")
  endforeach()
endif()
