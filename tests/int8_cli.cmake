# A QDQ INT8 model end to end through `pixflow model run` on the CPU (fusion,
# numpy's result, fast path = reference): see tests/int8_model_cli.sh.
# Included from tests/CMakeLists.txt.
if(PF_BUILD_TOOLS)
  add_test(NAME int8_model_cli
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/int8_model_cli.sh $<TARGET_FILE:pixflow_cli>
            ${CMAKE_CURRENT_SOURCE_DIR})
  set_tests_properties(int8_model_cli PROPERTIES LABELS cpu SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
