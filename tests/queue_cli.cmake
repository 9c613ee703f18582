# CLI tests of `pixflow queue` and `pixflow worker` on a real redis-server
# (started by tests/queue_cli.sh on a free loopback port, AOF on, in the
# case's work directory, and stopped at the end): exactly-once results with
# 4 workers, workers killed mid-job, a Redis restart, poison and malformed
# entries, SIGTERM hand-back. Skipped (77) without redis-server or hiredis.
# Included from tests/CMakeLists.txt: include(queue_cli.cmake)
if(PF_BUILD_TOOLS AND TARGET reproject_cli_ref)
  set(PF_QUEUE_CLI_CASES cli exactly_once kill9 restart poison malformed sigterm)
  foreach(case ${PF_QUEUE_CLI_CASES})
    add_test(NAME cli_queue_${case}
      COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/queue_cli.sh ${case}
              $<TARGET_FILE:pixflow_cli> $<TARGET_FILE:reproject_cli_ref>
              ${CMAKE_CURRENT_BINARY_DIR}/queue_cli/${case})
    set_tests_properties(cli_queue_${case} PROPERTIES LABELS cpu TIMEOUT 300
                         SKIP_RETURN_CODE 77 ENVIRONMENT "PIXFLOW_DEVICE=cpu")
  endforeach()
  # Three and four workers each run a job process at once: on CI's two cores
  # they would starve the timing-sensitive live-source tests scheduled beside
  # them (test_io_live, cli_live_mux failed that way under ctest -j2 on a
  # loaded machine), so these two run alone.
  set_tests_properties(cli_queue_exactly_once cli_queue_kill9 PROPERTIES RUN_SERIAL TRUE)
endif()
