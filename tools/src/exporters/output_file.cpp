#include "ringprof/tools/output_file.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <streambuf>
#include <vector>

namespace ringprof {

namespace {

// A streambuf over zlib's gz* API, buffered so each gzwrite gets a large block.
class GzStreamBuf final : public std::streambuf {
 public:
  explicit GzStreamBuf(gzFile gz) : gz_(gz), buf_(1 << 16) { setp(buf_.data(), buf_.data() + buf_.size()); }
  ~GzStreamBuf() override { close(); }

  bool close() {
    if (!gz_) return ok_;
    if (!flush_buffer()) ok_ = false;
    if (gzclose(gz_) != Z_OK) ok_ = false;
    gz_ = nullptr;
    return ok_;
  }

 protected:
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
    const std::ptrdiff_t n = pptr() - pbase();
    if (n > 0 && gz_) {
      if (gzwrite(gz_, pbase(), static_cast<unsigned>(n)) != static_cast<int>(n)) ok_ = false;
    }
    setp(buf_.data(), buf_.data() + buf_.size());
    return ok_;
  }

  gzFile gz_;
  std::vector<char> buf_;
  bool ok_ = true;
};

}  // namespace

struct OutputFile::Impl {
  std::string path;
  std::ofstream file;
  std::unique_ptr<GzStreamBuf> gzbuf;
  std::unique_ptr<std::ostream> gzstream;
  std::ostream* out = nullptr;
};

OutputFile::OutputFile() : impl_(std::make_unique<Impl>()) {}
OutputFile::~OutputFile() {
  std::string ignored;
  close(&ignored);
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
  if (is_gzip_path(path)) {
    gzFile gz = gzopen(path.c_str(), "wb6");
    if (!gz) {
      *error = "cannot create " + path + ": " + std::strerror(errno ? errno : EIO);
      return false;
    }
    impl_->gzbuf = std::make_unique<GzStreamBuf>(gz);
    impl_->gzstream = std::make_unique<std::ostream>(impl_->gzbuf.get());
    impl_->out = impl_->gzstream.get();
    return true;
  }
  impl_->file.open(path, std::ios::binary | std::ios::trunc);
  if (!impl_->file) {
    *error = "cannot create " + path + ": " + std::strerror(errno ? errno : EIO);
    return false;
  }
  impl_->out = &impl_->file;
  return true;
}

std::ostream& OutputFile::stream() { return *impl_->out; }

bool OutputFile::close(std::string* error) {
  if (!impl_->out) return true;
  bool ok = static_cast<bool>(impl_->out->flush());
  if (impl_->gzbuf) {
    ok = impl_->gzbuf->close() && ok;
    impl_->gzstream.reset();
    impl_->gzbuf.reset();
  } else if (impl_->file.is_open()) {
    impl_->file.close();
    ok = ok && !impl_->file.fail();
  }
  impl_->out = nullptr;
  if (!ok) *error = "write to " + impl_->path + " failed";
  return ok;
}

}  // namespace ringprof
