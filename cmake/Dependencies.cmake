# Third-party dependencies: Debian packages (or vcpkg on Windows), found, never downloaded.
find_package(Threads REQUIRED)
if(NINFER_HEADER_ONLY_DEPS)
  # The MinGW-w64 cross build (cmake/mingw-w64-x86_64.toolchain.cmake): JSON, fmt, spdlog, CLI11, cpp-httplib and
  # xxHash as headers from NINFER_MINGW_DEPS/include, under the target names the rest of the build links to.
  include(cmake/HeaderOnlyDeps.cmake)
else()
  find_package(nlohmann_json 3.10 REQUIRED)
  find_package(fmt REQUIRED)
  find_package(spdlog REQUIRED)
  find_package(CLI11 REQUIRED)

  # cpp-httplib: Debian ships a pkg-config file and a shared library; vcpkg ships a CMake config.
  find_package(httplib CONFIG QUIET)
  if(TARGET httplib::httplib)
    set(NINFER_HTTPLIB_TARGET httplib::httplib)
  else()
    find_package(PkgConfig REQUIRED)
    pkg_check_modules(CPPHTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
    set(NINFER_HTTPLIB_TARGET PkgConfig::CPPHTTPLIB)
  endif()

  # xxHash (XXH3-64): tensor checksums in the artifact. Debian: libxxhash-dev; vcpkg: xxhash.
  find_package(xxHash CONFIG QUIET)
  if(TARGET xxHash::xxhash)
    set(NINFER_XXHASH_TARGET xxHash::xxhash)
  else()
    find_package(PkgConfig REQUIRED)
    pkg_check_modules(LIBXXHASH REQUIRED IMPORTED_TARGET libxxhash)
    set(NINFER_XXHASH_TARGET PkgConfig::LIBXXHASH)
  endif()
endif()

# PCRE2 (8-bit, UTF + UCP, JIT): the tokenizer's Split pre-tokenizer regexes (engine/tokenizer/regex_split.h,
# docs/tokenizer.md). Debian: libpcre2-dev; vcpkg: pcre2.
find_package(PCRE2 CONFIG QUIET COMPONENTS 8BIT)
if(TARGET PCRE2::8BIT)
  set(NINFER_PCRE2_TARGET PCRE2::8BIT)
else()
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(LIBPCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
  set(NINFER_PCRE2_TARGET PkgConfig::LIBPCRE2)
endif()

# Gloo: the collectives of multi-process tensor parallelism between CPU ranks (engine/parallel/gloo_group.h,
# docs/parallel.md). Debian: libgloo-dev. Not packaged for Windows: there the build says it has none.
if(WIN32)
  option(NINFER_GLOO "Multi-process tensor parallelism over Gloo (libgloo-dev)" OFF)
else()
  option(NINFER_GLOO "Multi-process tensor parallelism over Gloo (libgloo-dev)" ON)
endif()
if(NINFER_GLOO)
  find_package(Gloo CONFIG REQUIRED)
endif()

if(NINFER_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
