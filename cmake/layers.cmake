# The layers of src/ as CMake object libraries, one per folder, combined into the one installed
# library (ferry::ferry). Each layer's objects see only the headers of its own folder and of the
# layers below it (DESIGN.md, "Layers"; tools/check_layers.sh says the same as a test): the build
# gives each layer an include root of its own, build/layers/<layer>/, holding links to just those
# folders, so an include of a layer above does not compile.
set(FERRY_LAYERS ir prims plan trace transforms compiler runtime io driver)
set(FERRY_LAYER_DEPS_ir "")
set(FERRY_LAYER_DEPS_prims "ir")
set(FERRY_LAYER_DEPS_plan "ir")
set(FERRY_LAYER_DEPS_trace "ir;prims")
set(FERRY_LAYER_DEPS_transforms "ir;prims;trace")
set(FERRY_LAYER_DEPS_compiler "ir;prims;plan")
set(FERRY_LAYER_DEPS_runtime "ir;prims;plan")
set(FERRY_LAYER_DEPS_io "ir")
set(FERRY_LAYER_DEPS_driver "ir;prims;plan;trace;transforms;compiler;runtime;io")

# The include root of `layer`: links to its own folder and its dependencies'.
function(ferry_layer_include_root layer out)
  set(root ${PROJECT_BINARY_DIR}/layers/${layer})
  file(MAKE_DIRECTORY ${root})
  foreach(dir ${layer} ${FERRY_LAYER_DEPS_${layer}})
    if(NOT EXISTS ${root}/${dir})
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${dir} ${root}/${dir} SYMBOLIC)
    endif()
  endforeach()
  set(${out} ${root} PARENT_SCOPE)
endfunction()
