#include "ringprof/tools/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <streambuf>
#include <vector>

namespace ringprof {

namespace {

// A streambuf that hands its 64 KiB buffer to write_block() when full, on
// sync and at close(): what differs between a plain file and a gzip one is
// only how a block is written and how the file is let go.
class BlockStreamBuf : public std::streambuf {
 public:
  BlockStreamBuf() : buf_(1 << 16) { setp(buf_.data(), buf_.data() + buf_.size()); }

  // Writes what is buffered and lets the file go, once; false if any write
  // (or letting go) failed. Subclasses' destructors call it.
  bool close() {
    if (released_) return ok_;
    if (!flush_buffer()) ok_ = false;
    if (!release()) ok_ = false;
    released_ = true;
    return ok_;
  }

 protected:
  virtual bool write_block(const char* p, size_t n) = 0;
  virtual bool release() = 0;

  int_type overflow(int_type ch) override {
    if (!flush_buffer()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override { return flush_buffer() ? 0 : -1; }

 private:
  bool flush_buffer() {
    const size_t n = static_cast<size_t>(pptr() - pbase());
    if (n > 0 && ok_ && !released_ && !write_block(pbase(), n)) ok_ = false;
    setp(buf_.data(), buf_.data() + buf_.size());
    return ok_;
  }

  std::vector<char> buf_;
  bool ok_ = true;
  bool released_ = false;  // the file is let go: nothing more is written
};

// zlib's gz* API over the buffer: each gzwrite gets a large block.
class GzStreamBuf final : public BlockStreamBuf {
 public:
  explicit GzStreamBuf(gzFile gz) : gz_(gz) {}
  ~GzStreamBuf() override { close(); }

 private:
  bool write_block(const char* p, size_t n) override {
    return gzwrite(gz_, p, static_cast<unsigned>(n)) == static_cast<int>(n);
  }
  bool release() override { return gzclose(gz_) == Z_OK; }

  gzFile gz_;
};

// A file descriptor it owns.
class FdStreamBuf final : public BlockStreamBuf {
 public:
  explicit FdStreamBuf(int fd) : fd_(fd) {}
  ~FdStreamBuf() override { close(); }

 private:
  bool write_block(const char* p, size_t n) override {
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }
  bool release() override { return ::close(fd_) == 0; }

  int fd_;
};

// The temporary name the output is written under until it is whole: in the
// same directory (so the rename cannot cross file systems), hidden, unique.
std::string temporary_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + name + ".part-" + std::to_string(getpid());
}

}  // namespace

struct OutputFile::Impl {
  std::string path;       // the name the output gets once whole
  std::string temporary;  // where it is written until then ("" for stdout)
  std::unique_ptr<BlockStreamBuf> buf;
  std::unique_ptr<std::ostream> stream;
  std::ostream* out = nullptr;
};

OutputFile::OutputFile() : impl_(std::make_unique<Impl>()) {}
// Without close() (an exception unwinding past the writer) the output is
// not whole: the temporary file goes, and the name keeps what it had.
OutputFile::~OutputFile() {
  impl_->stream.reset();
  impl_->buf.reset();
  if (!impl_->temporary.empty()) ::unlink(impl_->temporary.c_str());
}

bool OutputFile::is_gzip_path(const std::string& path) {
  return path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
}

bool OutputFile::open(const std::string& path, std::string* error) {
  impl_->path = path;
  if (path == "-") {
    impl_->out = &std::cout;
    return true;
  }
  // A new file, or a plain file with one name, is written under a temporary
  // name and renamed at close(): a command killed halfway leaves no truncated
  // file under the name asked for, and an older file of that name stays whole
  // until the new one is (it keeps its permissions). Anything else (a device
  // such as /dev/null or /dev/stdout, a FIFO, a symbolic link, a file with
  // other hard links) is written in place, as a rename would replace it.
  struct stat st {};
  const bool exists = ::lstat(path.c_str(), &st) == 0;
  const bool in_place = exists && (!S_ISREG(st.st_mode) || st.st_nlink > 1);
  int fd = -1;
  if (in_place) {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  } else {
    impl_->temporary = temporary_name(path);
    ::unlink(impl_->temporary.c_str());  // our own leftover: the name holds our pid
    fd = ::open(impl_->temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0 && exists) (void)::fchmod(fd, st.st_mode & 07777);
  }
  if (fd < 0) {
    *error = "cannot create " + path + ": " + std::strerror(errno);
    impl_->temporary.clear();
    return false;
  }
  if (is_gzip_path(path)) {
    gzFile gz = gzdopen(fd, "wb6");
    if (!gz) {
      const int err = errno ? errno : EIO;
      ::close(fd);  // gzdopen leaves it open when it fails
      if (!impl_->temporary.empty()) ::unlink(impl_->temporary.c_str());
      impl_->temporary.clear();
      *error = "cannot create " + path + ": " + std::strerror(err);
      return false;
    }
    impl_->buf = std::make_unique<GzStreamBuf>(gz);
  } else {
    impl_->buf = std::make_unique<FdStreamBuf>(fd);
  }
  impl_->stream = std::make_unique<std::ostream>(impl_->buf.get());
  impl_->out = impl_->stream.get();
  return true;
}

std::ostream& OutputFile::stream() { return *impl_->out; }

bool OutputFile::close(std::string* error) {
  if (!impl_->out) return true;
  bool ok = static_cast<bool>(impl_->out->flush());
  if (impl_->buf) ok = impl_->buf->close() && ok;
  impl_->stream.reset();
  impl_->buf.reset();
  impl_->out = nullptr;
  if (!impl_->temporary.empty()) {
    if (ok && ::rename(impl_->temporary.c_str(), impl_->path.c_str()) != 0) {
      *error = "cannot rename the output into " + impl_->path + ": " + std::strerror(errno);
      ::unlink(impl_->temporary.c_str());
      impl_->temporary.clear();
      return false;
    }
    if (!ok) ::unlink(impl_->temporary.c_str());
    impl_->temporary.clear();
  }
  if (!ok) *error = "write to " + impl_->path + " failed";
  return ok;
}

}  // namespace ringprof
