# CLI regressions of the core (issue 13): environment variables that every command honours.
# Included from tests/CMakeLists.txt inside if(PF_BUILD_TOOLS). Each runs through sh so that the
# exit status is part of the output the regex checks.

# An unknown PIXFLOW_LOG is a warning, never a crash (it once recursed until the stack overflowed).
add_test(NAME cli_log_invalid
         COMMAND sh -c "PIXFLOW_LOG=verbose \"$0\" info 2>&1 >/dev/null; echo \"exit status $?\""
                 $<TARGET_FILE:pixflow_cli>)
set_tests_properties(cli_log_invalid PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "^pixflow: warn: ignoring PIXFLOW_LOG='verbose' \\(expected quiet\\|error\\|warn\\|info\\|debug\\|trace\\); using 'warn'\nexit status 0\n$")

# PIXFLOW_DEVICE naming a device that is not there fails `run` (where the file says auto) and
# `model run`, naming the device, as `segment` does (both once ignored it). cuda:99 is absent on
# every machine we have, with or without CUDA.
# `run` needs YAML (libyaml; the GPU machine has none).
if(PF_YAML_INCLUDE AND PF_YAML_LIB)
add_test(NAME cli_run_env_device
         COMMAND sh -c "PIXFLOW_DEVICE=cuda:99 \"$0\" run \"$1\" --count 1 --quiet 2>&1; echo \"exit status $?\""
                 $<TARGET_FILE:pixflow_cli> ${PROJECT_SOURCE_DIR}/examples/latency.yaml)
set_tests_properties(cli_run_env_device PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "latency.yaml:10: device 'cuda:99' \\(from PIXFLOW_DEVICE\\): [^\n]*\nexit status 1\n$")
endif()
add_test(NAME cli_model_run_env_device
         COMMAND sh -c "PIXFLOW_DEVICE=cuda:99 \"$0\" model run \"$1\" --input x.npy --output-dir out 2>&1; echo \"exit status $?\""
                 $<TARGET_FILE:pixflow_cli> ${PROJECT_SOURCE_DIR}/tests/fuzz-regress)
set_tests_properties(cli_model_run_env_device PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "^pixflow model run: device 'cuda:99' \\(from PIXFLOW_DEVICE\\): [^\n]*\nexit status 1\n$")
# --device still wins over the environment.
if(PF_YAML_INCLUDE AND PF_YAML_LIB)
add_test(NAME cli_run_device_over_env
         COMMAND sh -c "PIXFLOW_DEVICE=cuda:99 \"$0\" run \"$1\" --count 2 --quiet --device cpu >/dev/null 2>&1; echo \"exit status $?\""
                 $<TARGET_FILE:pixflow_cli> ${PROJECT_SOURCE_DIR}/examples/latency.yaml)
set_tests_properties(cli_run_device_over_env PROPERTIES LABELS cpu
  PASS_REGULAR_EXPRESSION "^exit status 0\n$")
endif()

# `pixflow bench model|ops` (issue 18): JSON keys, sweep, plots, profile, usage errors.
add_test(NAME cli_bench
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/bench_cli.sh $<TARGET_FILE:pixflow_cli>
                 ${PROJECT_SOURCE_DIR}/node_modules/@mediapipe/selfie_segmentation/selfie_segmentation.tflite)
set_tests_properties(cli_bench PROPERTIES LABELS cpu SKIP_RETURN_CODE 77 TIMEOUT 300)

# `pixflow bench segment|reproject` (issue 18): the jobs measured through the
# job API on the sample clip and images: JSON keys, cold/warm start, plots, bad input.
add_test(NAME cli_bench_jobs
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_bench_jobs.sh $<TARGET_FILE:pixflow_cli>
                 ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_bench_jobs PROPERTIES LABELS cpu SKIP_RETURN_CODE 77 TIMEOUT 300)
