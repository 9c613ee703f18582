# GPU parity of the jobs: tests/jobs_gpu.sh runs `pixflow segment` and
# `pixflow reproject` on cuda:0 and on the CPU over the same inputs and
# compares the outputs with tests/job_compare.c within stated tolerances.
# Label cuda: skipped (77) where there is no GPU, as in CI.
# Included from tests/CMakeLists.txt after reproject_cli.cmake (needs reproject_cli_ref).
if(PF_BUILD_TOOLS)
  add_executable(job_compare ${CMAKE_CURRENT_LIST_DIR}/job_compare.c)
  target_compile_options(job_compare PRIVATE ${PF_C_WARNINGS})
  target_link_libraries(job_compare PRIVATE pixflow_static m)
  foreach(case segment_image segment_video segment_nvdec segment_mp4 reproject_image reproject_video)
    add_test(NAME jobs_gpu_${case}
      COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/jobs_gpu.sh ${case}
              $<TARGET_FILE:pixflow_cli> $<TARGET_FILE:job_compare>
              $<TARGET_FILE:reproject_cli_ref> ${PROJECT_SOURCE_DIR}
              ${CMAKE_CURRENT_BINARY_DIR}/jobs_gpu/${case})
    set_tests_properties(jobs_gpu_${case} PROPERTIES LABELS cuda TIMEOUT 600
                         SKIP_RETURN_CODE 77)
  endforeach()
endif()

# Segment over two GPUs (skips with fewer): tests/segment_multigpu.sh.
if(PF_BUILD_TOOLS)
  add_test(NAME segment_multigpu
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/segment_multigpu.sh $<TARGET_FILE:pixflow_cli>
            $<TARGET_FILE:job_compare> ${PROJECT_SOURCE_DIR}
            ${CMAKE_CURRENT_BINARY_DIR}/segment_multigpu)
  set_tests_properties(segment_multigpu PROPERTIES LABELS cuda TIMEOUT 600 SKIP_RETURN_CODE 77)
endif()
