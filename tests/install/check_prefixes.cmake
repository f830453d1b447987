# cmake -P script: for each of /usr/local and /usr, install BUILD_DIR into a DESTDIR under WORK_DIR with that
# prefix, record PROGRAM with the installed memtrack (no MEMTRACK_PRELOAD: it must find the installed preload
# under LIBDIR), decode the artifact, then take the installed preload away and check that record fails
# naming where it looked.
file(REMOVE_RECURSE ${WORK_DIR})
include(${CMAKE_CURRENT_LIST_DIR}/run_step.cmake)
foreach(prefix /usr/local /usr)
  set(dest ${WORK_DIR}/destdir${prefix})
  set(root ${dest}${prefix})
  run_step(${CMAKE_COMMAND} -E env DESTDIR=${dest} ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
  set(preload ${root}/${LIBDIR}/libmemtrack-preload.so)
  if(NOT EXISTS ${preload} OR NOT EXISTS ${root}/bin/memtrack)
    message(FATAL_ERROR "prefix ${prefix}: no ${root}/bin/memtrack or ${preload} after the install")
  endif()
  string(REPLACE "/" "_" artifact_name ${prefix})
  set(artifact ${WORK_DIR}/tiny${artifact_name}.mt)
  run_step(${CMAKE_COMMAND} -E env --unset=MEMTRACK_PRELOAD ${root}/bin/memtrack record -q -o ${artifact} -- ${PROGRAM})
  run_step(${root}/bin/memtrack decode ${artifact})
  string(REGEX MATCHALL "\"type\":\"Malloc\",\"size\":4096" kept "${step_out}")
  if(NOT kept)
    message(FATAL_ERROR "prefix ${prefix}: the recording of ${PROGRAM} has no malloc of 4096 B:\n${step_out}")
  endif()
  file(RENAME ${preload} ${preload}.away)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=MEMTRACK_PRELOAD
                    ${root}/bin/memtrack record -q -o ${artifact} -- ${PROGRAM}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  string(FIND "${err}" "${LIBDIR}/libmemtrack-preload.so" at)
  if(rc EQUAL 0 OR at EQUAL -1)
    message(FATAL_ERROR "prefix ${prefix}: without its installed preload, record gave ${rc}, expected a failure "
                        "naming ${LIBDIR}/libmemtrack-preload.so:\n${err}")
  endif()
  message(STATUS "prefix ${prefix}: ${root}/bin/memtrack recorded ${PROGRAM} with ${preload}")
endforeach()
