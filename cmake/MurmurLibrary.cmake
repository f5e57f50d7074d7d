# murmur_add_library(NAME <dir> SRCS <files...> [CUDA_SRCS <files...>] DEPS <modules...>
#                    [LIBS <external targets...>])
#
# Declares the library target murmur_<dir> with alias murmur::<dir>. DEPS names
# other murmur modules (without the prefix); it is the architecture: the
# layering test (tests/layering) fails when a file in <dir> includes a module
# that is not <dir> itself or in DEPS. LIBS names external libraries.
define_property(GLOBAL PROPERTY MURMUR_LAYERING
  BRIEF_DOCS "module:dep1,dep2 entries" FULL_DOCS "Declared module dependencies")

function(murmur_add_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;CUDA_SRCS;DEPS;LIBS" ${ARGN})
  set(srcs ${ARG_SRCS})
  if(MURMUR_HAVE_CUDA AND ARG_CUDA_SRCS)
    list(APPEND srcs ${ARG_CUDA_SRCS})
  endif()
  add_library(murmur_${ARG_NAME} STATIC ${srcs})
  add_library(murmur::${ARG_NAME} ALIAS murmur_${ARG_NAME})
  target_include_directories(murmur_${ARG_NAME} PUBLIC
    ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  target_link_libraries(murmur_${ARG_NAME} PRIVATE murmur_options)
  foreach(dep IN LISTS ARG_DEPS)
    target_link_libraries(murmur_${ARG_NAME} PUBLIC murmur::${dep})
  endforeach()
  if(ARG_LIBS)
    target_link_libraries(murmur_${ARG_NAME} PUBLIC ${ARG_LIBS})
  endif()
  if(MURMUR_HAVE_CUDA AND ARG_CUDA_SRCS)
    target_compile_definitions(murmur_${ARG_NAME} PUBLIC MURMUR_HAVE_CUDA=1)
    set_target_properties(murmur_${ARG_NAME} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
  endif()
  string(REPLACE ";" "," deps_csv "${ARG_DEPS}")
  set_property(GLOBAL APPEND PROPERTY MURMUR_LAYERING "${ARG_NAME}:${deps_csv}")
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
endfunction()
