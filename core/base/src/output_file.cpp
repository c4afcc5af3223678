#include "stepsim/base/output_file.hpp"

#include <zlib.h>

#include <array>
#include <fstream>
#include <limits>
#include <memory>
#include <streambuf>

namespace stepsim {

namespace {

// A write-only streambuf that deflates into a gzip stream on `sink`.
class GzipBuf : public std::streambuf {
 public:
  explicit GzipBuf(std::ostream& sink) : sink_(sink) {
    // windowBits 15 + 16: a gzip wrapper with a default header (no name, time 0, OS
    // "unknown"), so the bytes depend only on the content.
    ok_ = deflateInit2(&z_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                       Z_DEFAULT_STRATEGY) == Z_OK;
    setp(in_.data(), in_.data() + in_.size());
  }
  GzipBuf(const GzipBuf&) = delete;
  GzipBuf& operator=(const GzipBuf&) = delete;
  ~GzipBuf() override { deflateEnd(&z_); }

  /// Flushes the rest and writes the gzip trailer; false when anything failed.
  bool finish() {
    ok_ = ok_ && deflate_pending(Z_FINISH);
    return ok_ && static_cast<bool>(sink_);
  }

 protected:
  int_type overflow(int_type ch) override {
    if (!ok_ || !deflate_pending(Z_NO_FLUSH)) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }

 private:
  // Deflates the put area (and, with Z_FINISH, ends the stream), then empties it.
  bool deflate_pending(int flush) {
    z_.next_in = reinterpret_cast<Bytef*>(pbase());
    z_.avail_in = static_cast<uInt>(pptr() - pbase());
    int rc = Z_OK;
    do {
      z_.next_out = reinterpret_cast<Bytef*>(out_.data());
      z_.avail_out = static_cast<uInt>(out_.size());
      rc = deflate(&z_, flush);
      if (rc == Z_STREAM_ERROR) return false;
      const std::size_t have = out_.size() - z_.avail_out;
      if (have > 0 && !sink_.write(out_.data(), static_cast<std::streamsize>(have))) return false;
    } while (z_.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
    setp(in_.data(), in_.data() + in_.size());
    return true;
  }

  std::ostream& sink_;
  z_stream z_{};
  bool ok_ = false;
  std::array<char, 1 << 18> in_{};
  std::array<char, 1 << 18> out_{};
};

}  // namespace

bool is_gzip_path(std::string_view path) { return path.ends_with(".gz"); }

Status write_output_file(const std::string& path,
                         const std::function<void(std::ostream&)>& write) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return Error{path, "", "cannot create the file", ErrorKind::kRuntime};
  if (is_gzip_path(path)) {
    auto buf = std::make_unique<GzipBuf>(file);
    std::ostream out(buf.get());
    write(out);
    if (!out || !buf->finish()) {
      return Error{path, "", "writing the compressed file failed", ErrorKind::kRuntime};
    }
  } else {
    write(file);
  }
  if (!file.flush()) return Error{path, "", "writing the file failed", ErrorKind::kRuntime};
  return ok_status();
}

bool looks_gzipped(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

Result<std::string> gunzip(std::string_view data, const std::string& file, std::size_t max_bytes) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) {
    return Error{file, "", "cannot start decompressing (zlib)", ErrorKind::kRuntime};
  }
  std::string out;
  std::array<char, 1 << 18> chunk{};
  std::size_t left = data.size();
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (z.avail_in == 0 && left > 0) {
      const std::size_t take = std::min<std::size_t>(left, std::numeric_limits<uInt>::max());
      z.avail_in = static_cast<uInt>(take);
      left -= take;
    }
    z.next_out = reinterpret_cast<Bytef*>(chunk.data());
    z.avail_out = static_cast<uInt>(chunk.size());
    rc = inflate(&z, Z_NO_FLUSH);
    const std::size_t have = chunk.size() - z.avail_out;
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      return Error{file, "",
                   std::string("is not valid gzip data: ") + (z.msg != nullptr ? z.msg : "truncated")};
    }
    if (out.size() + have > max_bytes) {
      inflateEnd(&z);
      return Error{file, "",
                   "decompresses to more than " + std::to_string(max_bytes) + " bytes (the limit)"};
    }
    out.append(chunk.data(), have);
    if (rc == Z_OK && have == 0 && z.avail_in == 0 && left == 0) {
      inflateEnd(&z);
      return Error{file, "", "is not valid gzip data: it ends before the gzip stream does"};
    }
  }
  inflateEnd(&z);
  return out;
}

}  // namespace stepsim
