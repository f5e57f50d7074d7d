#include "sim/vehicles/xml_stream.h"

#include <expat.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <vector>

namespace murmur::sim {

namespace {
constexpr std::size_t kChunkBytes = 64 * 1024;
}  // namespace

struct XmlStream::Parser {
  XML_Parser p = nullptr;
  ~Parser() {
    if (p != nullptr) XML_ParserFree(p);
  }
};

XmlStream::XmlStream(std::string path, Handler* handler, std::FILE* file)
    : path_(std::move(path)), handler_(handler), file_(file), parser_(std::make_unique<Parser>()) {
  parser_->p = XML_ParserCreate(nullptr);
  XML_SetUserData(parser_->p, this);
  XML_SetElementHandler(
      parser_->p,
      [](void* data, const XML_Char* name, const XML_Char** attrs) {
        auto* self = static_cast<XmlStream*>(data);
        if (!self->failed_.ok()) return;
        Status s = self->handler_->Start(name, attrs);
        if (!s.ok()) {
          self->failed_ = std::move(s);
          XML_StopParser(self->parser_->p, XML_FALSE);
        }
      },
      [](void* data, const XML_Char* name) {
        auto* self = static_cast<XmlStream*>(data);
        if (!self->failed_.ok()) return;
        Status s = self->handler_->End(name);
        if (!s.ok()) {
          self->failed_ = std::move(s);
          XML_StopParser(self->parser_->p, XML_FALSE);
        }
      });
  XML_SetStartDoctypeDeclHandler(
      parser_->p, [](void* data, const XML_Char*, const XML_Char*, const XML_Char*, int) {
        auto* self = static_cast<XmlStream*>(data);
        if (!self->failed_.ok()) return;
        self->failed_ = Status::InvalidArgument("a document type declaration (SUMO's files have none)");
        XML_StopParser(self->parser_->p, XML_FALSE);
      });
}

XmlStream::~XmlStream() {
  if (file_ != nullptr) std::fclose(file_);
}

Result<std::unique_ptr<XmlStream>> XmlStream::Open(const std::string& path, Handler* handler) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::NotFound(path + ": cannot open: " + std::strerror(errno));
  return std::unique_ptr<XmlStream>(new XmlStream(path, handler, f));
}

std::string XmlStream::Where() const {
  return path_ + ":" + std::to_string(XML_GetCurrentLineNumber(parser_->p));
}

Result<bool> XmlStream::Feed() {
  if (done_) return false;
  void* buf = XML_GetBuffer(parser_->p, kChunkBytes);
  if (buf == nullptr) return Status::ResourceExhausted(Where() + ": out of memory for the XML parser");
  const std::size_t got = std::fread(buf, 1, kChunkBytes, file_);
  if (got < kChunkBytes && std::ferror(file_))
    return Status::InvalidArgument(path_ + ": read error: " + std::strerror(errno));
  const bool last = got < kChunkBytes;
  if (XML_ParseBuffer(parser_->p, static_cast<int>(got), last ? XML_TRUE : XML_FALSE) != XML_STATUS_OK) {
    done_ = true;
    if (!failed_.ok()) return failed_.WithContext(Where());
    return Status::InvalidArgument(Where() +
                                   ": malformed XML: " + XML_ErrorString(XML_GetErrorCode(parser_->p)));
  }
  if (last) done_ = true;
  return !done_;
}

const char* XmlStream::Find(Attrs attrs, std::string_view name) {
  for (std::size_t i = 0; attrs[i] != nullptr; i += 2)
    if (name == attrs[i]) return attrs[i + 1];
  return nullptr;
}

Result<double> XmlStream::Number(Attrs attrs, std::string_view element, std::string_view name,
                                 bool optional) {
  const char* v = Find(attrs, name);
  std::string where;  // "<element> attribute name"; appended piecewise (GCC 12 warns on a + chain here)
  where.append("<").append(element).append("> ");
  if (v == nullptr) {
    if (optional) return std::nan("");
    return Status::InvalidArgument(where.append("without attribute ").append(name));
  }
  double x = 0;
  const std::string_view text(v);
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(x)) {
    where.append("attribute ").append(name).append("=\"").append(text.substr(0, 40));
    return Status::InvalidArgument(where.append("\" is not a finite number"));
  }
  return x;
}

}  // namespace murmur::sim
