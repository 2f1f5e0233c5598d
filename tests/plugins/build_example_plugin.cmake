# Test fixture (cmake -P): builds the example plugin exactly as docs/adding-a-solver.md tells a
# user to: install sinkgrad into a prefix, copy the plugin's files into an empty directory,
# configure that directory as a project of its own against the prefix, build it.
#   -DSINKGRAD_BUILD_DIR=  this build tree (installed from)
#   -DWORK_DIR=            where the prefix, the plugin sources and its build go
#   -DPLUGIN_SOURCE_DIR=   solvers/plugins/truncated_unrolled
#   -DGENERATOR= -DCXX_COMPILER= -DCXX_FLAGS= -DBUILD_TYPE=
cmake_minimum_required(VERSION 3.25)

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${what} failed (${code}):\n${out}")
  endif()
  message(STATUS "${what}: ok")
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(source ${WORK_DIR}/truncated_unrolled)
set(build ${WORK_DIR}/truncated_unrolled-build)

# 1. cmake --install <build> --prefix <prefix>
run_step("install sinkgrad" ${CMAKE_COMMAND} --install ${SINKGRAD_BUILD_DIR} --prefix ${prefix})

# 2. The plugin's files in a directory outside the repository (file(COPY) keeps timestamps, so
#    an unchanged plugin is not rebuilt).
file(GLOB plugin_files LIST_DIRECTORIES false ${PLUGIN_SOURCE_DIR}/*)
file(MAKE_DIRECTORY ${source})
file(COPY ${plugin_files} DESTINATION ${source})

# 3. Configure and build against the installed package only.
run_step("configure the plugin"
         ${CMAKE_COMMAND} -S ${source} -B ${build} -G ${GENERATOR}
         -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
         -DCMAKE_BUILD_TYPE=${BUILD_TYPE} "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
         -DCMAKE_COMPILE_WARNING_AS_ERROR=ON)
run_step("build the plugin" ${CMAKE_COMMAND} --build ${build})
