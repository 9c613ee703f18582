# `pixflow segment` with several inputs in one pipeline (issue 12):
# tests/segment_multi_cli.sh. Included from tests/CMakeLists.txt.
# Under sanitizers (scripts/test runs the cpu tests again in a Debug ASan +
# UBSan build) the model runs ~50x slower: checks of speed (wall time,
# frames per second, stalls) are left out there (PF_TEST_SANITIZED=1).
if(PF_SANITIZE)
  set(pf_seg_sanitized PF_TEST_SANITIZED=1)
else()
  set(pf_seg_sanitized PF_TEST_SANITIZED=0)
endif()
foreach(case files patterns index realtime live late parallel)
  add_test(NAME cli_segment_multi_${case}
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/segment_multi_cli.sh ${case}
            $<TARGET_FILE:pixflow_cli> ${CMAKE_CURRENT_BINARY_DIR}/segment_multi_cli/${case}
            ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli_segment_multi_${case} PROPERTIES LABELS cpu TIMEOUT 120
                       SKIP_RETURN_CODE 77 ENVIRONMENT ${pf_seg_sanitized})
endforeach()

# Issue 12's multi-stream live test: 4 live streams from ffmpeg feeders on
# loopback (TCP and UDP) and 2 files in one run, one feeder killed and
# restarted (tests/segment_multi_live.sh; about 15 s).
add_test(NAME cli_segment_multi_live_streams
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/segment_multi_live.sh $<TARGET_FILE:pixflow_cli>
          ${CMAKE_CURRENT_BINARY_DIR}/segment_multi_live ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_segment_multi_live_streams PROPERTIES LABELS cpu TIMEOUT 90
                     SKIP_RETURN_CODE 77 ENVIRONMENT ${pf_seg_sanitized})

# The multi-stream YAML examples (examples/multistream.yaml, multistream_live.yaml)
# run by `pixflow run`, which needs libyaml (tests/multistream_yaml.sh).
if(PF_YAML_INCLUDE AND PF_YAML_LIB)
  foreach(case synthetic live)
    add_test(NAME cli_yaml_multistream_${case}
      COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/multistream_yaml.sh ${case}
              $<TARGET_FILE:pixflow_cli> ${CMAKE_CURRENT_BINARY_DIR}/multistream_yaml/${case}
              ${PROJECT_SOURCE_DIR})
    set_tests_properties(cli_yaml_multistream_${case} PROPERTIES LABELS cpu TIMEOUT 90
                         SKIP_RETURN_CODE 77)
  endforeach()
endif()
