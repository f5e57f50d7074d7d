# Optional METIS (the graph partition that places a simulation's nodes on its
# ranks, sim/metis/). MURMUR_METIS=AUTO uses it when metis.h and libmetis are
# found (Debian: libmetis-dev), ON requires it, OFF never looks. Without it
# sim/metis/ still builds, partitioned runs place nodes in contiguous id
# blocks, and asking for `placement: graph` says how to get METIS.
set(MURMUR_HAVE_METIS OFF)
if(NOT MURMUR_METIS STREQUAL "OFF")
  find_path(METIS_INCLUDE_DIR metis.h)
  find_library(METIS_LIBRARY metis)
  if(METIS_INCLUDE_DIR AND METIS_LIBRARY)
    set(MURMUR_HAVE_METIS ON)
    add_library(murmur_metis_dep UNKNOWN IMPORTED)
    set_target_properties(murmur_metis_dep PROPERTIES IMPORTED_LOCATION "${METIS_LIBRARY}"
                                                      INTERFACE_INCLUDE_DIRECTORIES "${METIS_INCLUDE_DIR}")
    message(STATUS "murmur: METIS found (${METIS_LIBRARY}): partitioned simulations place nodes by graph partition")
  elseif(MURMUR_METIS STREQUAL "ON")
    message(FATAL_ERROR "murmur: MURMUR_METIS=ON but METIS was not found (apt-get install libmetis-dev)")
  else()
    message(STATUS "murmur: no METIS; partitioned simulations place nodes in id blocks (apt-get install libmetis-dev)")
  endif()
endif()
