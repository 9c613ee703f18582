# `pixflow segment` with several inputs in one pipeline (issue 12):
# tests/segment_multi_cli.sh. Included from tests/CMakeLists.txt.
foreach(case files patterns index realtime live)
  add_test(NAME cli_segment_multi_${case}
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/segment_multi_cli.sh ${case}
            $<TARGET_FILE:pixflow_cli> ${CMAKE_CURRENT_BINARY_DIR}/segment_multi_cli/${case}
            ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli_segment_multi_${case} PROPERTIES LABELS cpu TIMEOUT 120
                       SKIP_RETURN_CODE 77)
endforeach()
