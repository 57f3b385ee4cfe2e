#include "engine/artifact/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include "engine/core/error.h"

#ifdef _WIN32
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace ninfer {

std::filesystem::path path_from_utf8(const std::string& utf8) {
  // char8_t view of the bytes: std::filesystem converts UTF-8 to the native (wide on Windows) encoding.
  std::u8string u8(utf8.begin(), utf8.end());
  return std::filesystem::path(u8);
}

std::string path_to_utf8(const std::filesystem::path& path) {
  std::u8string u8 = path.u8string();
  return std::string(u8.begin(), u8.end());
}

#ifdef _WIN32

namespace {
std::string last_error_text() {
  DWORD code = GetLastError();
  char buf[512] = {0};
  FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr, code, 0, buf,
                 sizeof(buf), nullptr);
  return fmt::format("{} (Windows error {})", buf, code);
}
}  // namespace

MappedFile MappedFile::open(const std::string& utf8_path) {
  MappedFile f;
  f.path_ = utf8_path;
  std::wstring wide = path_from_utf8(utf8_path).wstring();
  HANDLE h = CreateFileW(wide.c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr, OPEN_EXISTING,
                         FILE_ATTRIBUTE_NORMAL | FILE_FLAG_SEQUENTIAL_SCAN, nullptr);
  if (h == INVALID_HANDLE_VALUE) {
    DWORD code = GetLastError();
    ErrorKind kind = (code == ERROR_FILE_NOT_FOUND || code == ERROR_PATH_NOT_FOUND) ? ErrorKind::kNotFound
                                                                                     : ErrorKind::kIo;
    fail(kind, "{}: cannot open: {}", utf8_path, last_error_text());
  }
  f.file_ = h;
  LARGE_INTEGER size;
  if (!GetFileSizeEx(h, &size)) fail(ErrorKind::kIo, "{}: cannot stat: {}", utf8_path, last_error_text());
  f.size_ = static_cast<uint64_t>(size.QuadPart);
  if (f.size_ == 0) return f;
  HANDLE m = CreateFileMappingW(h, nullptr, PAGE_READONLY, 0, 0, nullptr);
  if (!m) fail(ErrorKind::kIo, "{}: cannot map: {}", utf8_path, last_error_text());
  f.mapping_ = m;
  void* p = MapViewOfFile(m, FILE_MAP_READ, 0, 0, 0);
  if (!p) fail(ErrorKind::kIo, "{}: cannot map view: {}", utf8_path, last_error_text());
  f.data_ = static_cast<const std::byte*>(p);
  return f;
}

void MappedFile::release() noexcept {
  if (data_) UnmapViewOfFile(data_);
  if (mapping_) CloseHandle(mapping_);
  if (file_) CloseHandle(file_);
  data_ = nullptr;
  mapping_ = nullptr;
  file_ = nullptr;
  size_ = 0;
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : path_(std::move(o.path_)), data_(o.data_), size_(o.size_), file_(o.file_), mapping_(o.mapping_) {
  o.data_ = nullptr;
  o.size_ = 0;
  o.file_ = nullptr;
  o.mapping_ = nullptr;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    release();
    path_ = std::move(o.path_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    file_ = std::exchange(o.file_, nullptr);
    mapping_ = std::exchange(o.mapping_, nullptr);
  }
  return *this;
}

#else  // POSIX

MappedFile MappedFile::open(const std::string& utf8_path) {
  MappedFile f;
  f.path_ = utf8_path;
  int fd = ::open(utf8_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    fail(e == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo, "{}: cannot open: {}", utf8_path,
         std::strerror(e));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    fail(ErrorKind::kIo, "{}: cannot stat: {}", utf8_path, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorKind::kIo, "{}: not a regular file", utf8_path);
  }
  f.size_ = static_cast<uint64_t>(st.st_size);
  if (f.size_ > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(f.size_), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      fail(ErrorKind::kIo, "{}: cannot mmap {} bytes: {}", utf8_path, f.size_, std::strerror(e));
    }
    f.data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);  // the mapping keeps the file alive
  return f;
}

void MappedFile::release() noexcept {
  if (data_) ::munmap(const_cast<std::byte*>(data_), static_cast<size_t>(size_));
  data_ = nullptr;
  size_ = 0;
}

MappedFile::MappedFile(MappedFile&& o) noexcept : path_(std::move(o.path_)), data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    release();
    path_ = std::move(o.path_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

#endif

MappedFile::~MappedFile() { release(); }

}  // namespace ninfer
