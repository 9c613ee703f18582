# CLI tests of data safety (issue 13): outputs that are inputs, inputs whose
# outputs share a name, -y/-n, a model that is not a segmenter, and a double
# SIGINT during segment. tests/data_safety_cli.sh runs each case on inputs it
# generates with ffmpeg. Included from tests/CMakeLists.txt.
if(PF_BUILD_TOOLS)
  set(PF_DATA_SAFETY_CASES same_file same_stem overwrite model signal concurrent full_disk)
  foreach(case ${PF_DATA_SAFETY_CASES})
    add_test(NAME cli_data_safety_${case}
      COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/data_safety_cli.sh ${case}
              $<TARGET_FILE:pixflow_cli> ${PROJECT_SOURCE_DIR}
              ${CMAKE_CURRENT_BINARY_DIR}/data_safety_cli/${case})
    set_tests_properties(cli_data_safety_${case} PROPERTIES LABELS cpu TIMEOUT 120
                         SKIP_RETURN_CODE 77)
  endforeach()
endif()
