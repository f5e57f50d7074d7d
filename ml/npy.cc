#include "ml/npy.h"

#include <zip.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include "core/float16.h"

namespace murmur::ml {

static_assert(std::endian::native == std::endian::little, "NumPy arrays are read as little-endian");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicBytes = 6;
// Deflate expands at most 1032:1; a member that claims more is lying.
constexpr std::uint64_t kMaxDeflateRatio = 1032;

// The header dictionary, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 28, 28), }:
// a Python literal of three keys, parsed by hand (no library reads it; the
// grammar is fixed by the format's specification).
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& what) : s_(text), what_(what) {}

  Result<NpyHeader> Parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    Skip();
    if (!Eat('{')) return Bad("the header is not a dictionary");
    while (true) {
      Skip();
      if (Eat('}')) break;
      MURMUR_ASSIGN_OR_RETURN(std::string key, String());
      Skip();
      if (!Eat(':')) return Bad("no ':' after key '" + key + "'");
      Skip();
      if (key == "descr") {
        if (Peek() == '[') return Bad("structured dtypes (a list of fields) are not supported");
        MURMUR_ASSIGN_OR_RETURN(std::string descr, String());
        MURMUR_ASSIGN_OR_RETURN(h.type, Type(descr));
        have_descr = true;
      } else if (key == "fortran_order") {
        if (Word("False")) {
        } else if (Word("True")) {
          return Bad("Fortran-order arrays are not supported (save np.ascontiguousarray(a))");
        } else {
          return Bad("fortran_order is neither True nor False");
        }
        have_order = true;
      } else if (key == "shape") {
        MURMUR_RETURN_IF_ERROR(Shape(h.shape));
        have_shape = true;
      } else {
        return Bad("unknown header key '" + key + "'");
      }
      Skip();
      if (Eat(',')) continue;
      Skip();
      if (Eat('}')) break;
      return Bad("expected ',' or '}' in the header");
    }
    if (!have_descr || !have_order || !have_shape)
      return Bad("the header lacks one of 'descr', 'fortran_order' and 'shape'");
    return h;
  }

 private:
  char Peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  bool Eat(char c) {
    if (Peek() != c) return false;
    ++i_;
    return true;
  }
  void Skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  Status Bad(const std::string& why) const {
    return Status::InvalidArgument(what_ + ": not a supported .npy array: " + why);
  }
  Result<std::string> String() {
    const char quote = Peek();
    if (quote != '\'' && quote != '"')
      return Bad("expected a quoted string at header offset " + std::to_string(i_));
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != quote) out += s_[i_++];
    if (!Eat(quote)) return Bad("unterminated string in the header");
    return out;
  }
  Status Shape(std::vector<std::int64_t>& shape) {
    if (!Eat('(')) return Bad("shape is not a tuple");
    while (true) {
      Skip();
      if (Eat(')')) return Status::Ok();
      std::int64_t v = 0;
      int digits = 0;
      while (std::isdigit(static_cast<unsigned char>(Peek()))) {
        if (++digits > 18) return Bad("a dimension of the shape is too large");
        v = v * 10 + (s_[i_++] - '0');
      }
      if (digits == 0) return Bad("shape holds something other than non-negative integers");
      if (shape.size() >= 32) return Bad("more than 32 dimensions");
      shape.push_back(v);
      Skip();
      if (Eat(',')) continue;
      Skip();
      if (Eat(')')) return Status::Ok();
      return Bad("expected ',' or ')' in the shape");
    }
  }
  Result<NpyType> Type(const std::string& d) {
    if (d.size() < 3) return Bad("dtype '" + d + "' is not supported");
    const char order = d[0];
    const std::string code = d.substr(1);
    if (order == '>' && code != "u1")
      return Bad("dtype '" + d + "' is big-endian (save a.astype(a.dtype.newbyteorder('<')))");
    if (order != '<' && order != '|' && order != '=' && order != '>')
      return Bad("dtype '" + d + "' is not supported");
    if (code == "u1") return NpyType::kUint8;
    if (code == "i4") return NpyType::kInt32;
    if (code == "i8") return NpyType::kInt64;
    if (code == "f2") return NpyType::kFloat16;
    if (code == "f4") return NpyType::kFloat32;
    if (code == "f8") return NpyType::kFloat64;
    return Bad("dtype '" + d + "' is not supported (uint8, int32, int64, float16, float32 or float64)");
  }

  std::string_view s_;
  const std::string& what_;
  std::size_t i_ = 0;
};

template <typename T>
T Load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using Zip = std::unique_ptr<zip_t, ZipCloser>;

Result<Zip> OpenZip(const std::string& path) {
  int error = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &error);
  if (z == nullptr) {
    zip_error_t e;
    zip_error_init_with_code(&e, error);
    std::string why = zip_error_strerror(&e);
    zip_error_fini(&e);
    return Status::InvalidArgument(path + ": not a readable .npz (zip) archive: " + why);
  }
  return Zip(z);
}

// Reads exactly out.size() bytes of an open member.
Status ReadMember(zip_file_t* f, std::span<std::byte> out, const std::string& what) {
  std::size_t done = 0;
  while (done < out.size()) {
    zip_int64_t n = zip_fread(f, out.data() + done, out.size() - done);
    if (n < 0) return Status::DataLoss(what + ": " + zip_file_strerror(f));
    if (n == 0) return Status::DataLoss(what + ": the member ends before its stated size");
    done += static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

// An array of the header's type and shape, its data sized but not yet read.
NpyArray Allocate(NpyHeader& h) {
  NpyArray a;
  a.type = h.type;
  a.shape = std::move(h.shape);
  a.data.resize(h.data_bytes);
  return a;
}

}  // namespace

std::size_t NpyItemSize(NpyType type) {
  switch (type) {
    case NpyType::kUint8: return 1;
    case NpyType::kFloat16: return 2;
    case NpyType::kInt32:
    case NpyType::kFloat32: return 4;
    case NpyType::kInt64:
    case NpyType::kFloat64: return 8;
  }
  return 1;
}

std::string NpyShapeText(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::string NpyNamesText(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& s : names) list += (list.empty() ? "" : ", ") + s;
  return list.empty() ? "none" : list;
}

const char* NpyTypeName(NpyType type) {
  switch (type) {
    case NpyType::kUint8: return "uint8";
    case NpyType::kInt32: return "int32";
    case NpyType::kInt64: return "int64";
    case NpyType::kFloat16: return "float16";
    case NpyType::kFloat32: return "float32";
    case NpyType::kFloat64: return "float64";
  }
  return "?";
}

std::int64_t NpyArray::count() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

double NpyArray::At(std::int64_t i) const {
  const std::byte* p = data.data() + static_cast<std::size_t>(i) * NpyItemSize(type);
  switch (type) {
    case NpyType::kUint8: return static_cast<double>(std::to_integer<std::uint8_t>(*p));
    case NpyType::kInt32: return Load<std::int32_t>(p);
    case NpyType::kInt64: return static_cast<double>(Load<std::int64_t>(p));
    case NpyType::kFloat16: return HalfToFloat(Load<std::uint16_t>(p));
    case NpyType::kFloat32: return Load<float>(p);
    case NpyType::kFloat64: return Load<double>(p);
  }
  return 0;
}

Result<NpyHeader> ParseNpyHeader(std::span<const std::byte> prefix, std::size_t total_bytes,
                                 const std::string& what) {
  auto byte = [&](std::size_t i) { return std::to_integer<std::uint32_t>(prefix[i]); };
  if (prefix.size() < kMagicBytes + 4 || std::memcmp(prefix.data(), kMagic, kMagicBytes) != 0)
    return Status::InvalidArgument(what + ": not a .npy array (no \\x93NUMPY magic)");
  const std::uint32_t major = byte(6);
  std::size_t start = 0, length = 0;
  if (major == 1) {
    start = 10;
    length = byte(8) | byte(9) << 8;
  } else if (major == 2 || major == 3) {
    if (prefix.size() < 12) return Status::InvalidArgument(what + ": the .npy header is truncated");
    start = 12;
    length = byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
  } else {
    return Status::InvalidArgument(what + ": .npy format version " + std::to_string(major) +
                                   " is not supported (1, 2 or 3)");
  }
  if (length > kMaxNpyHeaderBytes)
    return Status::InvalidArgument(what + ": the .npy header claims " + std::to_string(length) +
                                   " bytes (at most " + std::to_string(kMaxNpyHeaderBytes) + ")");
  if (prefix.size() < start + length || total_bytes < start + length)
    return Status::InvalidArgument(what + ": the .npy header is truncated");
  std::string_view text(reinterpret_cast<const char*>(prefix.data()) + start, length);
  MURMUR_ASSIGN_OR_RETURN(NpyHeader h, HeaderParser(text, what).Parse());
  h.header_bytes = start + length;
  // count * itemsize, refused when it overflows or differs from what the file holds.
  std::size_t bytes = NpyItemSize(h.type);
  for (std::int64_t d : h.shape) {
    const auto ud = static_cast<std::size_t>(d);
    if (ud != 0 && bytes > std::numeric_limits<std::size_t>::max() / ud)
      return Status::InvalidArgument(what + ": shape " + NpyShapeText(h.shape) + " overflows");
    bytes *= ud;
  }
  if (bytes != total_bytes - h.header_bytes)
    return Status::InvalidArgument(what + ": shape " + NpyShapeText(h.shape) + " of " + NpyTypeName(h.type) +
                                   " needs " + std::to_string(bytes) + " bytes of data, the array holds " +
                                   std::to_string(total_bytes - h.header_bytes));
  h.data_bytes = bytes;
  return h;
}

Result<NpyArray> ParseNpy(std::span<const std::byte> bytes, const std::string& what) {
  MURMUR_ASSIGN_OR_RETURN(NpyHeader h, ParseNpyHeader(bytes, bytes.size(), what));
  NpyArray a = Allocate(h);
  std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(h.header_bytes), a.data.size(), a.data.begin());
  return a;
}

Result<NpyArray> LoadNpy(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return Status::NotFound(path + ": " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot be opened");
  std::vector<std::byte> prefix(std::min<std::uintmax_t>(size, 12 + kMaxNpyHeaderBytes));
  if (!in.read(reinterpret_cast<char*>(prefix.data()), static_cast<std::streamsize>(prefix.size())))
    return Status::DataLoss(path + ": read failed");
  MURMUR_ASSIGN_OR_RETURN(NpyHeader h, ParseNpyHeader(prefix, static_cast<std::size_t>(size), path));
  NpyArray a = Allocate(h);
  in.seekg(static_cast<std::streamoff>(h.header_bytes));
  if (!in.read(reinterpret_cast<char*>(a.data.data()), static_cast<std::streamsize>(a.data.size())))
    return Status::DataLoss(path + ": the file ends inside the array's data");
  return a;
}

Result<std::vector<std::string>> ListNpz(const std::string& path) {
  MURMUR_ASSIGN_OR_RETURN(Zip z, OpenZip(path));
  std::vector<std::string> names;
  const zip_int64_t n = zip_get_num_entries(z.get(), 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(z.get(), static_cast<zip_uint64_t>(i), 0);
    if (name == nullptr) continue;
    std::string s = name;
    if (s.size() > 4 && s.ends_with(".npy")) names.push_back(s.substr(0, s.size() - 4));
  }
  return names;
}

Result<NpyArray> LoadNpzArray(const std::string& path, const std::string& name) {
  std::error_code ec;
  const std::uintmax_t archive_bytes = std::filesystem::file_size(path, ec);
  if (ec) return Status::NotFound(path + ": " + ec.message());
  MURMUR_ASSIGN_OR_RETURN(Zip z, OpenZip(path));
  const std::string what = path + ":" + name;
  const zip_int64_t index = zip_name_locate(z.get(), (name + ".npy").c_str(), 0);
  if (index < 0) {
    MURMUR_ASSIGN_OR_RETURN(std::vector<std::string> names, ListNpz(path));
    return Status::NotFound(path + " has no array '" + name + "' (it holds: " + NpyNamesText(names) + ")");
  }
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(z.get(), static_cast<zip_uint64_t>(index), 0, &st) != 0 ||
      (st.valid & (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD)) !=
          (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD))
    return Status::InvalidArgument(what + ": the archive does not state the member's sizes");
  if (st.comp_size > archive_bytes)
    return Status::InvalidArgument(what + ": the member claims more bytes than the archive holds");
  if (st.comp_method == ZIP_CM_STORE) {
    if (st.size != st.comp_size)
      return Status::InvalidArgument(what + ": a stored member whose sizes differ");
  } else if (st.comp_method == ZIP_CM_DEFLATE) {
    if (st.size / kMaxDeflateRatio > st.comp_size)
      return Status::InvalidArgument(what + ": the member claims " + std::to_string(st.size) +
                                     " bytes from " + std::to_string(st.comp_size) + " deflated");
  } else {
    return Status::InvalidArgument(what + ": compression method " + std::to_string(st.comp_method) +
                                   " is not supported (stored or deflated, as numpy writes)");
  }
  std::unique_ptr<zip_file_t, ZipFileCloser> f(zip_fopen_index(z.get(), static_cast<zip_uint64_t>(index), 0));
  if (f == nullptr) return Status::DataLoss(what + ": " + zip_strerror(z.get()));
  std::vector<std::byte> prefix(std::min<zip_uint64_t>(st.size, 12 + kMaxNpyHeaderBytes));
  MURMUR_RETURN_IF_ERROR(ReadMember(f.get(), prefix, what));
  MURMUR_ASSIGN_OR_RETURN(NpyHeader h, ParseNpyHeader(prefix, static_cast<std::size_t>(st.size), what));
  NpyArray a = Allocate(h);
  // The prefix read past the header: its tail is the data's start.
  const std::size_t have = std::min(prefix.size() - h.header_bytes, a.data.size());
  std::copy_n(prefix.begin() + static_cast<std::ptrdiff_t>(h.header_bytes), have, a.data.begin());
  MURMUR_RETURN_IF_ERROR(ReadMember(f.get(), std::span(a.data).subspan(have), what));
  return a;
}

}  // namespace murmur::ml
