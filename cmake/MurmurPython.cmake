# Optional Python package (python/, pybind11). MURMUR_PYTHON=AUTO builds it
# when pybind11 and the Python headers are found, ON requires them, OFF never
# looks. The interpreter is Debian's /usr/bin/python3 unless
# MURMUR_PYTHON_EXECUTABLE names another (a venv's python built from it
# shares its ABI).
#
# The extension is a shared object linking murmur's static libraries, so with
# Python on every library is compiled position-independent. -fPIC alone would
# keep GCC from inlining or cloning exported functions within their own file
# (semantic interposition); -fno-semantic-interposition gives that back, so
# the code is what -fPIE executables get.
set(MURMUR_HAVE_PYTHON OFF)
if(NOT MURMUR_PYTHON STREQUAL "OFF")
  if(NOT MURMUR_PYTHON_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(MURMUR_PYTHON_EXECUTABLE /usr/bin/python3)
  endif()
  if(MURMUR_PYTHON_EXECUTABLE)
    set(Python3_EXECUTABLE "${MURMUR_PYTHON_EXECUTABLE}")
  endif()
  find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
  if(Python3_FOUND)
    find_package(pybind11 2.10 CONFIG QUIET)
  endif()
  if(Python3_FOUND AND pybind11_FOUND)
    set(MURMUR_HAVE_PYTHON ON)
    set(CMAKE_POSITION_INDEPENDENT_CODE ON)
    target_compile_options(murmur_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-fno-semantic-interposition>)
    message(STATUS "murmur: Python package enabled (${Python3_EXECUTABLE}, pybind11 ${pybind11_VERSION})")
  elseif(MURMUR_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "murmur: MURMUR_PYTHON=ON but pybind11 or the Python headers were not found "
                        "(apt-get install pybind11-dev python3-dev)")
  else()
    message(STATUS "murmur: no pybind11 or Python headers; the Python package is not built "
                   "(apt-get install pybind11-dev python3-dev)")
  endif()
endif()
