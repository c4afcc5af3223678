# The open accuracy table predict quotes (scenarios/published/accuracy-by-profile.json) must be
# what the current code and data give: the accuracy_report test writes it afresh into the build
# folder (FIXTURES), this compares the two byte for byte.
# Usage: cmake -DFRESH=<written by the test> -DCOMMITTED=<scenarios/published/...>
#          -P accuracy_by_profile.cmake
if(NOT FRESH OR NOT COMMITTED)
  message(FATAL_ERROR "pass -DFRESH and -DCOMMITTED")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${FRESH}" "${COMMITTED}"
                RESULT_VARIABLE diff)
if(NOT diff EQUAL 0)
  file(READ "${FRESH}" fresh)
  message(FATAL_ERROR "${COMMITTED} is not what `stepsim accuracy --by-profile` writes now "
                      "(predictions or profiles moved): run sh tests/golden/regenerate.sh, which "
                      "rewrites it and the predict goldens that quote it. Now:\n${fresh}")
endif()
message(STATUS "the open accuracy table is current")
