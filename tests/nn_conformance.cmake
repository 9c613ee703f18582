# ONNX conformance (libonnx-testdata) through `pixflow model test`, with a
# pass-count floor and a list of known failures: see tests/onnx_conformance.sh.
# Included from tests/CMakeLists.txt.
if(PF_BUILD_TOOLS)
  add_test(NAME onnx_conformance
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/onnx_conformance.sh $<TARGET_FILE:pixflow_cli>
            ${CMAKE_CURRENT_SOURCE_DIR})
  set_tests_properties(onnx_conformance PROPERTIES LABELS cpu SKIP_RETURN_CODE 77 TIMEOUT 1800)
endif()
