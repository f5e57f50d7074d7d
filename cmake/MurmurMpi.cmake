# Optional MPI (the simulator spread over processes, sim/mpi/). MURMUR_MPI=AUTO
# uses it when find_package(MPI) finds an MPI (Debian: libopenmpi-dev), ON
# requires it, OFF never looks. Without it sim/mpi/ still builds, and
# `mpirun -np R murmur sim` with R > 1 says how to get it.
set(MURMUR_HAVE_MPI OFF)
if(NOT MURMUR_MPI STREQUAL "OFF")
  # Only MPI's C API is used, from C++: not the deprecated C++ bindings.
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI QUIET COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    set(MURMUR_HAVE_MPI ON)
    message(STATUS "murmur: MPI ${MPI_CXX_VERSION} found: mpirun murmur sim spreads nodes over ranks")
  elseif(MURMUR_MPI STREQUAL "ON")
    message(FATAL_ERROR "murmur: MURMUR_MPI=ON but no MPI was found (apt-get install libopenmpi-dev openmpi-bin)")
  else()
    message(STATUS "murmur: no MPI; murmur sim runs in one process (apt-get install libopenmpi-dev)")
  endif()
endif()
