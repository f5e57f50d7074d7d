// XmlStream: a file read as a stream of XML elements, a chunk at a time, so
// that a SUMO trace of gigabytes is never in memory whole. Expat
// (libexpat, Debian's libexpat1-dev) does the parsing; this class reads the
// file in 64 KiB chunks, hands each element's start and end to a handler,
// and names the file and line in every error, the parser's and the
// handler's. A document type declaration is refused: SUMO's files have none,
// and with none there are no entities to expand.
//
// Thread-safety: none; one reader per stream.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace murmur::sim {

class XmlStream {
 public:
  // An element's attributes as expat gives them: name, value, ..., null.
  using Attrs = const char* const*;
  class Handler {
   public:
    virtual ~Handler() = default;
    // An error stops the stream; Feed returns it with the file and line.
    virtual Status Start(std::string_view name, Attrs attrs) = 0;
    virtual Status End(std::string_view name) = 0;
  };

  // NotFound when the file cannot be opened. `handler` must outlive the stream.
  static Result<std::unique_ptr<XmlStream>> Open(const std::string& path, Handler* handler);
  ~XmlStream();
  XmlStream(const XmlStream&) = delete;
  XmlStream& operator=(const XmlStream&) = delete;

  // Parses the next chunk, calling the handler for each element in it.
  // Returns false once the whole file has been parsed; InvalidArgument
  // ("FILE:LINE: ...") for malformed XML or a handler's error.
  Result<bool> Feed();

  // "FILE:LINE" of the parser's current position.
  std::string Where() const;

  // The value of attribute `name`, or null.
  static const char* Find(Attrs attrs, std::string_view name);
  // Attribute `name` as a finite number (InvalidArgument naming it if absent
  // or not a number; absent and `optional`: NaN).
  static Result<double> Number(Attrs attrs, std::string_view element, std::string_view name,
                               bool optional = false);

 private:
  struct Parser;
  XmlStream(std::string path, Handler* handler, std::FILE* file);

  std::string path_;
  Handler* handler_;
  std::FILE* file_;
  std::unique_ptr<Parser> parser_;
  Status failed_;  // the handler's error that stopped the parser
  bool done_ = false;
};

}  // namespace murmur::sim
