# `cmake --install`: libsinkgrad, the headers a solver plugin compiles against, the command-line
# tool, the C ABI libsinkgrad_c with the Python package over it, and the CMake package that lets an outside project write
#     find_package(sinkgrad 0.1 REQUIRED)
#     target_link_libraries(my_plugin PRIVATE sinkgrad::sinkgrad)
# Included once from the top-level CMakeLists.txt, after every target is defined.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The public headers (include/sinkgrad/*: sinkgrad.hpp, plugin.hpp, plugin_cuda.cuh) go to
# include/sinkgrad; the layers they include keep their repository layout ("core/...",
# "kernels/...", "kernels/...", "forward/...") under include/sinkgrad too. Both include/ and
# include/sinkgrad are INSTALL_INTERFACE include directories of the sinkgrad target; plugins
# include only "sinkgrad/...".
set(SINKGRAD_INSTALL_INCLUDEDIR include/sinkgrad)
set(SINKGRAD_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/sinkgrad)

# Installed binaries find libsinkgrad next to them and keep the paths of libraries outside the
# system directories (CUDA runtime, HDF5) that they were linked against.
set_target_properties(sinkgrad PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS sinkgrad EXPORT sinkgradTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/sinkgrad DESTINATION include
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.cuh")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/core ${PROJECT_SOURCE_DIR}/kernels
                  ${PROJECT_SOURCE_DIR}/forward
        DESTINATION ${SINKGRAD_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.cuh")

# The command-line tool, when this build has it (it loads plugins with --plugin).
if(TARGET sinkgrad_cli)
  set_target_properties(sinkgrad_cli PROPERTIES
    INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}" INSTALL_RPATH_USE_LINK_PATH TRUE)
  install(TARGETS sinkgrad_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# Where the package looks for the CUDA toolkit first (the one this build used).
set(SINKGRAD_CUDA_TOOLKIT_ROOT "")
if(SINKGRAD_WITH_CUDA)
  get_filename_component(SINKGRAD_CUDA_TOOLKIT_ROOT "${CUDAToolkit_BIN_DIR}" DIRECTORY)
endif()

install(EXPORT sinkgradTargets NAMESPACE sinkgrad:: DESTINATION ${SINKGRAD_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/sinkgradConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/cmake/sinkgradConfig.cmake
                              INSTALL_DESTINATION ${SINKGRAD_INSTALL_CMAKEDIR}
                              PATH_VARS SINKGRAD_INSTALL_INCLUDEDIR)
# 0.x releases: only the same minor version is compatible (the plugin ABI may change).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/sinkgradConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/sinkgradConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/sinkgradConfigVersion.cmake
        DESTINATION ${SINKGRAD_INSTALL_CMAKEDIR})

# ---- The C ABI: libsinkgrad_c and its header ------------------------------------------------
# For ctypes and other languages' FFIs; the library finds libsinkgrad next to it.
if(TARGET sinkgrad_c)
  set_target_properties(sinkgrad_c PROPERTIES
    INSTALL_RPATH "$ORIGIN" INSTALL_RPATH_USE_LINK_PATH TRUE)
  install(TARGETS sinkgrad_c LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/include/sinkgrad/sinkgrad_c.h
          DESTINATION ${SINKGRAD_INSTALL_INCLUDEDIR})
endif()

# ---- share/sinkgrad: the bundled studies and the plotting script ----------------------------
#   share/sinkgrad/studies/*.ini   the definitions of experiments/ (`sinkgrad run` names them)
#   share/sinkgrad/data/           the logit files they read (file(../data/...))
#   share/sinkgrad/plot.py         pictures of a study log (and its modules plot_*.py)
set(SINKGRAD_INSTALL_SHAREDIR ${CMAKE_INSTALL_DATADIR}/sinkgrad)
file(GLOB SINKGRAD_BUNDLED_STUDIES ${PROJECT_SOURCE_DIR}/experiments/*.ini)
install(FILES ${SINKGRAD_BUNDLED_STUDIES} DESTINATION ${SINKGRAD_INSTALL_SHAREDIR}/studies)
install(FILES ${PROJECT_SOURCE_DIR}/data/logits.h5 ${PROJECT_SOURCE_DIR}/data/README.md
        DESTINATION ${SINKGRAD_INSTALL_SHAREDIR}/data)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/experiments/plot.py
                 ${PROJECT_SOURCE_DIR}/experiments/compare_with_seeds.py
        DESTINATION ${SINKGRAD_INSTALL_SHAREDIR})
install(FILES ${PROJECT_SOURCE_DIR}/experiments/plot_style.py
              ${PROJECT_SOURCE_DIR}/experiments/plot_figures.py
              ${PROJECT_SOURCE_DIR}/experiments/plot_forwards.py
              ${PROJECT_SOURCE_DIR}/experiments/compare_selftest.py
              ${PROJECT_SOURCE_DIR}/experiments/compare_torch.py
              ${PROJECT_SOURCE_DIR}/experiments/system_python.py
        DESTINATION ${SINKGRAD_INSTALL_SHAREDIR})  # the scripts' modules, found next to them

# ---- Python ---------------------------------------------------------------------------------
# The sinkgrad package (the one ctypes binding, sinkgrad._capi, and the PyTorch layer) goes to
# SINKGRAD_PYTHON_INSTALL_DIR (share/sinkgrad/python by default; put it on PYTHONPATH):
# python/CMakeLists.txt.
