# Runs docs/adding-a-solver.md as a test (cmake -P). The page marks what is tested:
#   <!-- doc-test: file NAME -->         the fenced block after it is the file NAME: it must equal
#                                        PLUGIN_SOURCE_DIR/NAME, and it is written from the page
#   <!-- doc-test: build -->             a shell block needed to build the plugin
#   <!-- doc-test: use -->               a shell block that uses it (PHASE=all only)
#   <!-- doc-test: use, needs h5py -->   the same, skipped when python3 cannot import h5py
# The blocks become one bash script, run in WORK_DIR with SINKGRAD_PREFIX=PREFIX (an
# installation of the build under test) and its bin/ first on PATH, exactly as step 1 of the
# page leaves a user's shell.
#   -DDOC= -DPLUGIN_SOURCE_DIR= -DWORK_DIR= -DPREFIX= -DPHASE=build|all
#   -DGENERATOR= -DCXX_COMPILER= -DCXX_FLAGS= -DBUILD_TYPE=   (how the plugin is configured)
cmake_minimum_required(VERSION 3.25)

file(READ ${DOC} rest)
set(script "set -euo pipefail\n")
set(h5py_check "python3 -c 'import h5py, numpy' 2>/dev/null")
set(files 0)
while(TRUE)
  string(FIND "${rest}" "<!-- doc-test: " at)
  if(at EQUAL -1)
    break()
  endif()
  math(EXPR at "${at} + 15")
  string(SUBSTRING "${rest}" ${at} -1 rest)
  string(FIND "${rest}" " -->\n```" end)
  if(end EQUAL -1)
    message(FATAL_ERROR "${DOC}: a doc-test marker must be followed by a fenced block")
  endif()
  string(SUBSTRING "${rest}" 0 ${end} tag)
  math(EXPR end "${end} + 5")
  string(SUBSTRING "${rest}" ${end} -1 rest)
  string(FIND "${rest}" "\n" line_end)  # skip ```language
  math(EXPR line_end "${line_end} + 1")
  string(SUBSTRING "${rest}" ${line_end} -1 rest)
  string(FIND "${rest}" "\n```" close)
  math(EXPR close "${close} + 1")
  string(SUBSTRING "${rest}" 0 ${close} body)
  string(SUBSTRING "${rest}" ${close} -1 rest)

  if(tag MATCHES "^file (.+)$")
    set(name ${CMAKE_MATCH_1})
    file(READ ${PLUGIN_SOURCE_DIR}/${name} expected)
    if(NOT body STREQUAL expected)
      message(FATAL_ERROR "${DOC} shows a ${name} that differs from ${PLUGIN_SOURCE_DIR}/${name}; "
                          "the page must show the example plugin's files exactly")
    endif()
    math(EXPR files "${files} + 1")
    # Replaced only when changed, so that an unchanged plugin is not rebuilt.
    string(APPEND script "cat > '${name}.doc' <<'SINKGRAD_DOC_FILE'\n${body}SINKGRAD_DOC_FILE\n"
                         "cmp -s '${name}.doc' '${name}' && rm '${name}.doc' || mv '${name}.doc' '${name}'\n")
  elseif(tag STREQUAL "build")
    string(APPEND script "${body}")
  elseif(tag STREQUAL "use")
    if(PHASE STREQUAL "all")
      string(APPEND script "${body}")
    endif()
  elseif(tag STREQUAL "use, needs h5py")
    if(PHASE STREQUAL "all")
      string(APPEND script "if ${h5py_check}; then\n${body}else\n"
                           "  echo 'doc-test: python3 has no h5py, skipped a block'\nfi\n")
    endif()
  else()
    message(FATAL_ERROR "${DOC}: unknown doc-test marker '${tag}'")
  endif()
endwhile()

# Every file of the example plugin is on the page.
file(GLOB plugin_files RELATIVE ${PLUGIN_SOURCE_DIR} ${PLUGIN_SOURCE_DIR}/*)
list(LENGTH plugin_files expected_files)
if(NOT files EQUAL expected_files)
  message(FATAL_ERROR "${DOC} shows ${files} files, ${PLUGIN_SOURCE_DIR} has ${expected_files}: "
                      "${plugin_files}")
endif()

# The shell of a user after step 1; the plugin's build uses this build's compiler, generator
# and warnings (as errors).
set(ENV{SINKGRAD_PREFIX} ${PREFIX})
set(ENV{PATH} "${PREFIX}/bin:$ENV{PATH}")
set(ENV{CMAKE_GENERATOR} ${GENERATOR})
set(ENV{CMAKE_BUILD_TYPE} ${BUILD_TYPE})
set(ENV{CXX} ${CXX_COMPILER})
set(ENV{CXXFLAGS} "${CXX_FLAGS} -Werror")
set(ENV{OMP_NUM_THREADS} 2)
unset(ENV{SINKGRAD_PLUGIN_PATH})

file(MAKE_DIRECTORY ${WORK_DIR})
file(GLOB old_outputs ${WORK_DIR}/*/*.h5)  # `sinkgrad run` never overwrites a log
if(PHASE STREQUAL "all" AND old_outputs)
  file(REMOVE ${old_outputs})
endif()
file(WRITE ${WORK_DIR}/walkthrough-${PHASE}.sh "${script}")
execute_process(COMMAND bash ${WORK_DIR}/walkthrough-${PHASE}.sh WORKING_DIRECTORY ${WORK_DIR}
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT code EQUAL 0)
  message(FATAL_ERROR "the commands of ${DOC} failed (exit code ${code}); script: "
                      "${WORK_DIR}/walkthrough-${PHASE}.sh")
endif()

if(PHASE STREQUAL "all")
  # The plugin was listed, and its runs are in the experiment's log.
  if(NOT out MATCHES "truncated_unrolled\n    truncated back-propagation")
    message(FATAL_ERROR "'sinkgrad solvers --plugin ...' did not list truncated_unrolled")
  endif()
  file(GLOB logs ${WORK_DIR}/*/truncated_vs_unrolled.h5)
  if(NOT logs)
    message(FATAL_ERROR "'sinkgrad run' wrote no log")
  endif()
  file(STRINGS ${logs} solver_names REGEX "truncated_unrolled")
  if(NOT solver_names)
    message(FATAL_ERROR "the log ${logs} has no run of truncated_unrolled")
  endif()
endif()
