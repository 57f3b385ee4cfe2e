# Cross toolchain for the windows-mingw preset: Windows x86-64 with Debian's MinGW-w64 (posix threads variant, which
# std::thread needs). Dependencies come from NINFER_MINGW_DEPS (scripts/windows-mingw.sh builds it): PCRE2 and
# GoogleTest built for the target, and the header-only libraries under include/ (docs/windows.md).
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)

# NINFER_MINGW_DEPS (the preset sets it) reaches CMake's own try_compile projects too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES NINFER_MINGW_DEPS)
set(NINFER_HEADER_ONLY_DEPS ON)
set(PCRE2_USE_STATIC_LIBS ON)  # libpcre2-8.a with PCRE2_STATIC (pcre2-config.cmake)
# pkg-config (the fallback of Dependencies.cmake) sees only the target prefix, never Linux .pc files.
set(ENV{PKG_CONFIG_LIBDIR} "${NINFER_MINGW_DEPS}/lib/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# Search the target's prefixes only: never a Linux library or header from /usr.
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32 "${NINFER_MINGW_DEPS}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Static runtime: the .exe files run under Wine (and on Windows) without the MinGW DLLs beside them.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static -static-libgcc -static-libstdc++")
set(CMAKE_CROSSCOMPILING_EMULATOR wine)
