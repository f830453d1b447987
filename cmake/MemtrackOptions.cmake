# Warnings and sanitizers as interface targets, applied per target with memtrack_target_defaults().
add_library(memtrack_build_flags INTERFACE)
target_compile_options(memtrack_build_flags INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
if(MEMTRACK_WERROR)
  target_compile_options(memtrack_build_flags INTERFACE -Werror)
endif()
if(MEMTRACK_SANITIZE)
  string(REPLACE ";" "," _memtrack_san "${MEMTRACK_SANITIZE}")
  target_compile_options(memtrack_build_flags INTERFACE -fsanitize=${_memtrack_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(memtrack_build_flags INTERFACE -fsanitize=${_memtrack_san})
endif()

function(memtrack_target_defaults target)
  target_link_libraries(${target} PRIVATE $<BUILD_INTERFACE:memtrack_build_flags>)
endfunction()

# MEMTRACK_FUZZ: the libFuzzer binaries in tests/fuzz. As OSS-Fuzz builds, every target of this build is
# compiled with coverage instrumentation (fuzzer-no-link) and ASan + UBSan, so libFuzzer is guided by the
# codec's branches, not just the target's; the fuzz binaries add -fsanitize=fuzzer (libFuzzer's main).
if(MEMTRACK_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MEMTRACK_FUZZ=ON needs clang (libFuzzer); configure with the 'fuzz' preset")
  endif()
  if(MEMTRACK_SANITIZE)
    message(FATAL_ERROR "MEMTRACK_FUZZ=ON brings its own sanitizers (address;undefined); leave MEMTRACK_SANITIZE empty")
  endif()
  target_compile_options(memtrack_build_flags INTERFACE -fsanitize=fuzzer-no-link,address,undefined
                         -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(memtrack_build_flags INTERFACE -fsanitize=fuzzer-no-link,address,undefined)
endif()
