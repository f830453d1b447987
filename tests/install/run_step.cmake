# run_step(COMMAND...): runs it, fails the script with its output unless it exits 0; its stdout in step_out.
function(run_step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
  set(step_out "${out}" PARENT_SCOPE)
endfunction()
