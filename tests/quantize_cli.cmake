# CLI tests of `pixflow model quantize|compare` (tests/cli_quantize.sh):
# the selfie model calibrated on Megamind frames (QDQ file checked, the
# simulated file's mask IoU vs FP32), vtest frames with minmax/entropy, and
# refusals. Included from tests/CMakeLists.txt.
if(PF_BUILD_TOOLS)
  foreach(case selfie vtest errors)
    add_test(NAME cli_quantize_${case}
      COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli_quantize.sh ${case} $<TARGET_FILE:pixflow_cli>
              ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/cli_quantize/${case})
    set_tests_properties(cli_quantize_${case} PROPERTIES LABELS cpu TIMEOUT 300
                         SKIP_RETURN_CODE 77 ENVIRONMENT "PIXFLOW_DEVICE=cpu")
  endforeach()
endif()
