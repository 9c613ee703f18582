# Damaged video (tests/video_damage.sh): generated clips of five codecs,
# damaged deterministically, decoded by pf_video_reader in child processes
# (tests/video_damage_check.c) and run through the CLI; no crash, no hang,
# frames with counted damage or a clean error naming the file.
# Included from tests/CMakeLists.txt: include(video_damage.cmake)
if(PF_BUILD_TOOLS)
  add_executable(video_damage_check ${CMAKE_CURRENT_LIST_DIR}/video_damage_check.c)
  target_compile_options(video_damage_check PRIVATE ${PF_C_WARNINGS})
  target_compile_definitions(video_damage_check PRIVATE _POSIX_C_SOURCE=200809L)
  target_link_libraries(video_damage_check PRIVATE pixflow_static)
  foreach(case reader cli)
    add_test(NAME video_damage_${case}
      COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/video_damage.sh ${case}
              $<TARGET_FILE:pixflow_cli> $<TARGET_FILE:video_damage_check>
              ${CMAKE_CURRENT_BINARY_DIR}/video_damage/${case})
    set_tests_properties(video_damage_${case} PROPERTIES LABELS cpu TIMEOUT 300
                         SKIP_RETURN_CODE 77)
  endforeach()
  # Inputs the jobs must read (tests/read_inputs.sh): a Y4M cut mid-frame,
  # FIFOs, /dev/stdin and /dev/fd/N, single damaged images.
  foreach(case y4m_cut special single_file)
    add_test(NAME read_inputs_${case}
      COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/read_inputs.sh ${case}
              $<TARGET_FILE:pixflow_cli> ${CMAKE_CURRENT_BINARY_DIR}/read_inputs/${case})
    set_tests_properties(read_inputs_${case} PROPERTIES LABELS cpu TIMEOUT 300
                         SKIP_RETURN_CODE 77)
  endforeach()
endif()
