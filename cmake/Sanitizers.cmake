# NINFER_SANITIZE: every target of the build instrumented with the named sanitizers (presets asan and tsan,
# docs/security.md "Sanitizers"). Any report fails the process that made it, so a test with one fails.
if(NINFER_SANITIZE)
  if(MSVC)
    message(FATAL_ERROR "NINFER_SANITIZE: the asan/tsan presets are for GCC or clang")
  endif()
  if(NINFER_SANITIZE MATCHES "thread" AND NINFER_SANITIZE MATCHES "address")
    message(FATAL_ERROR "NINFER_SANITIZE='${NINFER_SANITIZE}': thread and address cannot be combined")
  endif()
  set(_ninfer_san "-fsanitize=${NINFER_SANITIZE}")
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_ninfer_san};-fno-sanitize-recover=all;-fno-omit-frame-pointer>")
  add_link_options(${_ninfer_san})
  message(STATUS "ninfer: sanitizers ${NINFER_SANITIZE}")
endif()
