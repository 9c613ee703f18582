# CLI tests of network outputs (issue 12): `pixflow segment -o udp://|tcp://|
# srt://|rtsp://|rtmp://...` into ffmpeg receivers on loopback (tests/net_output_cli.sh).
# Included from tests/CMakeLists.txt; FFmpeg in the build is required.
# Under sanitizers the model runs ~50x slower: the stall case's time bound,
# counted from the connect, covers the frames that fill the socket buffers
# first, so it is looser there (PF_TEST_SANITIZED=1).
if(PF_SANITIZE)
  set(pf_net_sanitized PF_TEST_SANITIZED=1)
else()
  set(pf_net_sanitized PF_TEST_SANITIZED=0)
endif()
if(PF_BUILD_TOOLS AND PF_FFMPEG_FOUND)
  foreach(case tcp udp rtsp rtmp srt dead stall multi refused)
    add_test(NAME cli_net_output_${case}
      COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/net_output_cli.sh ${case}
              $<TARGET_FILE:pixflow_cli> ${CMAKE_CURRENT_BINARY_DIR}/net_output_cli/${case}
              ${PROJECT_SOURCE_DIR})
    set_tests_properties(cli_net_output_${case} PROPERTIES LABELS cpu TIMEOUT 90
                         SKIP_RETURN_CODE 77 ENVIRONMENT ${pf_net_sanitized})
  endforeach()
  if(PF_YAML_INCLUDE AND PF_YAML_LIB)
    add_test(NAME cli_net_output_yaml
      COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/net_output_cli.sh yaml
              $<TARGET_FILE:pixflow_cli> ${CMAKE_CURRENT_BINARY_DIR}/net_output_cli/yaml
              ${PROJECT_SOURCE_DIR})
    set_tests_properties(cli_net_output_yaml PROPERTIES LABELS cpu TIMEOUT 90
                         SKIP_RETURN_CODE 77)
  endif()
endif()
