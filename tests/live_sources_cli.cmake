# CLI tests of live sources (issue 12): `pixflow run` on URLs served by ffmpeg
# feeders on loopback (tests/live_sources_cli.sh). `run` needs libyaml.
# Included from tests/CMakeLists.txt.
if(PF_BUILD_TOOLS AND PF_YAML_INCLUDE AND PF_YAML_LIB)
  foreach(case tcp_reconnect udp mux segment dead srt http)
    add_test(NAME cli_live_${case}
      COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/live_sources_cli.sh ${case}
              $<TARGET_FILE:pixflow_cli> ${CMAKE_CURRENT_BINARY_DIR}/live_sources_cli/${case}
              ${PROJECT_SOURCE_DIR})
    set_tests_properties(cli_live_${case} PROPERTIES LABELS cpu TIMEOUT 90
                         SKIP_RETURN_CODE 77)
  endforeach()
endif()
