# murmur_add_library(NAME <dir> SRCS <files...> [CUDA_SRCS <files...>] DEPS <modules...>
#                    [LIBS <external targets...>])
#
# Declares the library target murmur_<dir> with alias murmur::<dir>; a module
# in a subfolder (NAME node/transport, sources relative to that folder) is the
# target murmur_node_transport, alias murmur::node_transport. DEPS names other
# murmur modules by folder (without the prefix); it is the architecture: the
# layering test (tools/check_layering.cmake) fails when a file in <dir>
# includes a module that is not <dir> itself or in DEPS, or when a DEP is
# never included. LIBS names external libraries.
define_property(GLOBAL PROPERTY MURMUR_LAYERING
  BRIEF_DOCS "module:dep1,dep2 entries" FULL_DOCS "Declared module dependencies")

function(murmur_add_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;CUDA_SRCS;DEPS;LIBS" ${ARGN})
  string(REPLACE "/" "_" target "${ARG_NAME}")
  # Sources are named relative to the module's folder.
  file(RELATIVE_PATH here "${CMAKE_CURRENT_SOURCE_DIR}" "${PROJECT_SOURCE_DIR}/${ARG_NAME}")
  set(srcs "")
  foreach(src IN LISTS ARG_SRCS)
    if(here STREQUAL "")
      list(APPEND srcs ${src})
    else()
      list(APPEND srcs ${here}/${src})
    endif()
  endforeach()
  if(MURMUR_HAVE_CUDA AND ARG_CUDA_SRCS)
    list(APPEND srcs ${ARG_CUDA_SRCS})
  endif()
  add_library(murmur_${target} STATIC ${srcs})
  add_library(murmur::${target} ALIAS murmur_${target})
  target_include_directories(murmur_${target} PUBLIC
    ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_link_libraries(murmur_${target} PRIVATE murmur_options)
  foreach(dep IN LISTS ARG_DEPS)
    string(REPLACE "/" "_" dep_target "${dep}")
    target_link_libraries(murmur_${target} PUBLIC murmur::${dep_target})
  endforeach()
  if(ARG_LIBS)
    target_link_libraries(murmur_${target} PUBLIC ${ARG_LIBS})
  endif()
  if(MURMUR_HAVE_CUDA AND ARG_CUDA_SRCS)
    target_compile_definitions(murmur_${target} PUBLIC MURMUR_HAVE_CUDA=1)
    set_target_properties(murmur_${target} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
  endif()
  string(REPLACE ";" "," deps_csv "${ARG_DEPS}")
  set_property(GLOBAL APPEND PROPERTY MURMUR_LAYERING "${ARG_NAME}:${deps_csv}")
  set_property(GLOBAL PROPERTY MURMUR_PATH_${target} "${ARG_NAME}")
endfunction()

# murmur_layering(PATH <folder> LINKS <targets...>)
# Declares for the layering check what the programs in <folder> (tests/x,
# apps/murmur, bench, fuzz) link: of LINKS, the murmur:: libraries. Their
# files may include those modules and what those depend on, and each one
# linked must be included somewhere in <folder>.
function(murmur_layering)
  cmake_parse_arguments(ARG "" "PATH" "LINKS" ${ARGN})
  set(paths "")
  foreach(link IN LISTS ARG_LINKS)
    if(link MATCHES "^murmur::(.+)$")
      get_property(path GLOBAL PROPERTY MURMUR_PATH_${CMAKE_MATCH_1})
      if(path)
        list(APPEND paths ${path})
      endif()
    endif()
  endforeach()
  list(REMOVE_DUPLICATES paths)
  string(REPLACE ";" "," csv "${paths}")
  set_property(GLOBAL APPEND PROPERTY MURMUR_LAYERING "${ARG_PATH}=${csv}")
endfunction()

# murmur_add_test(MODULE <dir> SRCS <files...> DEPS <targets...>)
# One doctest executable per module; each TEST_CASE becomes its own CTest
# entry, and doctest test suites become CTest labels (the suite "slow" is
# left out of the default run by `ctest -LE slow`).
function(murmur_add_test)
  cmake_parse_arguments(ARG "" "MODULE" "SRCS;DEPS" ${ARGN})
  set(target ${ARG_MODULE}_test)
  add_executable(${target} ${ARG_SRCS} ${PROJECT_SOURCE_DIR}/tests/test_main.cc)
  target_link_libraries(${target} PRIVATE murmur_options doctest::doctest ${ARG_DEPS})
  target_compile_definitions(${target} PRIVATE
    MURMUR_SOURCE_DIR="${PROJECT_SOURCE_DIR}" MURMUR_TESTDATA_DIR="${PROJECT_SOURCE_DIR}/tests/data")
  doctest_discover_tests(${target} TEST_PREFIX "${ARG_MODULE}/" ADD_LABELS 1
    PROPERTIES TIMEOUT 600)
  # The discovery reads a case's suite (its label) from a list that a ',' in
  # the case's name breaks: such a case loses its "slow" label and runs in the
  # default suite. Fail on any case of a named suite whose name has one.
  add_test(NAME ${ARG_MODULE}/suite_test_names_have_no_commas
    COMMAND sh -c "! '$<TARGET_FILE:${target}>' --list-test-cases '--test-suite=?*' | grep -v '^\\[doctest\\]' | grep ','")
  murmur_layering(PATH tests/${ARG_MODULE} LINKS ${ARG_DEPS})
endfunction()
