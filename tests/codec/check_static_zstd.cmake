# cmake -P script: fails if any of BINARIES (a ;-separated list) loads the shared libzstd. codec uses zstd's
# experimental API and so must run against the static libzstd it was compiled with (codec/src/zstd_internal.h);
# a binary that also linked libzstd.so would bind codec's zstd calls to the shared library instead.
foreach(binary IN LISTS BINARIES)
  if(binary STREQUAL "")
    continue()
  endif()
  execute_process(COMMAND ${READELF} -d ${binary} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${READELF} -d ${binary} failed (${rc}): ${err}")
  endif()
  if(out MATCHES "NEEDED[^\n]*libzstd")
    message(FATAL_ERROR "${binary} loads the shared libzstd; link zstd only through memtrack::codec (zstd::libzstd_static)")
  endif()
  message(STATUS "${binary}: no shared libzstd")
endforeach()
