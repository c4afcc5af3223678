# stepsim_add_layer(NAME SOURCES ... [DEPS ...] [PRIVATE_DEPS ...]): one library target per
# folder, `stepsim_<NAME>` with the alias `stepsim::<NAME>`. Public headers live under the
# folder's include/stepsim/<NAME>/, sources and private headers under src/. DEPS are the lower
# layers the folder's public headers use; docs/architecture.md draws the allowed arrows and
# tests/arch/check_layers.py enforces them. Position-independent: the Python module and the
# CUDA plugin link these libraries into shared objects.
function(stepsim_add_layer name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(stepsim_${name} ${ARG_SOURCES})
  add_library(stepsim::${name} ALIAS stepsim_${name})
  target_include_directories(stepsim_${name}
    PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_link_libraries(stepsim_${name} PUBLIC ${ARG_DEPS} PRIVATE stepsim_warnings ${ARG_PRIVATE_DEPS})
  set_target_properties(stepsim_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
