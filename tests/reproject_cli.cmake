# CLI tests of `pixflow reproject`: tests/reproject_cli.sh runs the command on
# small generated equirects (512x256) and compares what it wrote with the
# library run directly by tests/reproject_cli_ref.c (byte-exact for PNG), plus
# naming, geometry, bad inputs and the output directory checks.
# Included from tests/CMakeLists.txt: include(reproject_cli.cmake)
if(PF_BUILD_TOOLS)
  add_executable(reproject_cli_ref ${CMAKE_CURRENT_LIST_DIR}/reproject_cli_ref.c)
  target_compile_options(reproject_cli_ref PRIVATE ${PF_C_WARNINGS})
  target_link_libraries(reproject_cli_ref PRIVATE pixflow_static)
  set(PF_REPROJECT_CLI_CASES exact views cubemap bad_inputs outdir usage json video list)
  foreach(case ${PF_REPROJECT_CLI_CASES})
    add_test(NAME cli_reproject_${case}
      COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/reproject_cli.sh ${case}
              $<TARGET_FILE:pixflow_cli> $<TARGET_FILE:reproject_cli_ref>
              ${CMAKE_CURRENT_BINARY_DIR}/reproject_cli/${case})
    set_tests_properties(cli_reproject_${case} PROPERTIES LABELS cpu TIMEOUT 300
                         SKIP_RETURN_CODE 77 ENVIRONMENT "PIXFLOW_DEVICE=cpu")
  endforeach()
endif()
