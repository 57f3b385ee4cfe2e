# Header-only forms of the libraries the Linux build takes from Debian's shared libraries, for the MinGW-w64 cross build
# (preset windows-mingw): scripts/windows-mingw.sh links Debian's headers into NINFER_MINGW_DEPS/include, and puts
# cpp-httplib's single header there from Debian's source package; compiled into each target, under the target names
# Dependencies.cmake gives otherwise.
set(_ninfer_ho_include "${NINFER_MINGW_DEPS}/include")
foreach(_h nlohmann/json.hpp fmt/format.h spdlog/spdlog.h CLI/CLI.hpp httplib.h xxhash.h)
  if(NOT EXISTS "${_ninfer_ho_include}/${_h}")
    message(FATAL_ERROR "${_ninfer_ho_include}/${_h} missing: run scripts/windows-mingw.sh deps")
  endif()
endforeach()

function(_ninfer_header_only name)
  add_library(${name} INTERFACE IMPORTED GLOBAL)
  set_target_properties(${name} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_ninfer_ho_include}" ${ARGN})
endfunction()

_ninfer_header_only(nlohmann_json::nlohmann_json)
_ninfer_header_only(fmt::fmt INTERFACE_COMPILE_DEFINITIONS FMT_HEADER_ONLY=1)
# Debian's spdlog is configured for an external fmt (tweakme.h); without SPDLOG_COMPILED_LIB it is header-only.
_ninfer_header_only(spdlog::spdlog INTERFACE_LINK_LIBRARIES fmt::fmt)
_ninfer_header_only(CLI11::CLI11)
# cpp-httplib on Winsock: ws2_32 (sockets), crypt32 and mswsock as its Windows build asks for.
_ninfer_header_only(ninfer_httplib INTERFACE_LINK_LIBRARIES "ws2_32;crypt32;mswsock")
set(NINFER_HTTPLIB_TARGET ninfer_httplib)
_ninfer_header_only(ninfer_xxhash INTERFACE_COMPILE_DEFINITIONS XXH_INLINE_ALL=1)
set(NINFER_XXHASH_TARGET ninfer_xxhash)
