# Video fidelity end to end (issue 13): `pixflow segment` and the YAML video
# sink keep colour, audio, aspect, rotation and timing, take odd sizes and the
# encoder/trim options. tests/video_cli.sh makes its inputs with the ffmpeg
# tool and checks outputs with ffprobe. Included from tests/CMakeLists.txt.
if(PF_BUILD_TOOLS)
  set(PF_VIDEO_CLI_CASES color audio aspect_rotation odd_size encoder trim bad_options yaml_sink)
  foreach(case ${PF_VIDEO_CLI_CASES})
    add_test(NAME cli_video_${case}
      COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/video_cli.sh ${case} $<TARGET_FILE:pixflow_cli>
              ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/video_cli/${case})
    set_tests_properties(cli_video_${case} PROPERTIES LABELS cpu TIMEOUT 300
                         SKIP_RETURN_CODE 77)
  endforeach()
endif()
