# Two `pixflow run` processes exchanging frames through ipc.sink/ipc.source
# (examples/ipc_producer.yaml, ipc_consumer.yaml): tests/ipc_cli.sh.
# Included from tests/CMakeLists.txt.
if(PF_BUILD_TOOLS)
  foreach(case pair consumer_killed producer_killed)
    add_test(NAME cli_ipc_${case}
      COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/ipc_cli.sh ${case} $<TARGET_FILE:pixflow_cli>
              ${CMAKE_CURRENT_BINARY_DIR}/ipc_cli/${case} ${PROJECT_SOURCE_DIR})
    set_tests_properties(cli_ipc_${case} PROPERTIES LABELS cpu TIMEOUT 90 SKIP_RETURN_CODE 77)
  endforeach()
  # The same pair on a GPU (device frames, VMM slots): skipped without one.
  add_test(NAME cli_ipc_pair_cuda
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/ipc_cli.sh pair $<TARGET_FILE:pixflow_cli>
            ${CMAKE_CURRENT_BINARY_DIR}/ipc_cli/pair_cuda ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli_ipc_pair_cuda PROPERTIES LABELS cuda TIMEOUT 90 SKIP_RETURN_CODE 77
                       ENVIRONMENT PF_IPC_DEVICE=cuda)
endif()
