# stepsim_warnings: an interface target carrying the project's warning flags.
add_library(stepsim_warnings INTERFACE)
target_compile_options(stepsim_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wconversion -Wsign-conversion
    -Wdouble-promotion -Wimplicit-fallthrough>)
# GCC 12 at -O3 reports false positives inside libstdc++ for std::string concatenation
# (-Wrestrict, GCC bug 105329) and std::vector growth (-Wnull-dereference); the latter is
# therefore not enabled and the former is kept off for GCC.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(stepsim_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
endif()
if(STEPSIM_WERROR)
  target_compile_options(stepsim_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
