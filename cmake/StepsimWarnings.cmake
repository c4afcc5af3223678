# stepsim_warnings: an interface target carrying the project's warning flags.
add_library(stepsim_warnings INTERFACE)
target_compile_options(stepsim_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wconversion -Wsign-conversion
    -Wnull-dereference -Wdouble-promotion -Wimplicit-fallthrough>)
if(STEPSIM_WERROR)
  target_compile_options(stepsim_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
