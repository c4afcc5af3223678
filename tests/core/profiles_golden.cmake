# Golden profile generation: scenarios/profiles/make_public_profiles.py, run into a scratch
# folder, must reproduce the committed public profiles byte for byte (every sample is made by
# the script from its cited figures, none edited by hand).
# Usage: cmake -DPYTHON=<python3> -DPROFILES=<scenarios/profiles> -DOUT=<dir> -P profiles_golden.cmake
if(NOT PYTHON OR NOT PROFILES OR NOT OUT)
  message(FATAL_ERROR "pass -DPYTHON, -DPROFILES and -DOUT")
endif()
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND "${PYTHON}" "${PROFILES}/make_public_profiles.py" --out "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make_public_profiles.py failed (${rc}):\n${out}${err}")
endif()
foreach(name a100-sxm4-80gb-public.json h100-sxm5-80gb-public.json h200-sxm-141gb-public.json
             b200-sxm-180gb-public.json)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${OUT}/${name}" "${PROFILES}/${name}"
                  RESULT_VARIABLE diff)
  if(NOT diff EQUAL 0)
    message(FATAL_ERROR "${name}: the committed file is not what make_public_profiles.py writes; "
                        "run python3 scenarios/profiles/make_public_profiles.py and commit the result")
  endif()
endforeach()
message(STATUS "the public profiles are what make_public_profiles.py writes")
