// A site mounted beside the SQS API in `spool serve` (the console): plain
// request and response values, so what a site does is written and tested
// without the HTTP library.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace spool::serve {

struct http_request {
  std::string method;                               // GET, POST, …
  std::string path;                                 // decoded, without the query
  std::multimap<std::string, std::string> query;    // decoded parameters
  std::multimap<std::string, std::string> headers;  // names in lower case
  std::string body;
  bool tls = false;  // the request came over HTTPS

  // The first value of a header (name in lower case) or of a parameter; empty when absent.
  [[nodiscard]] std::string header(const std::string& name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
  [[nodiscard]] std::string param(const std::string& name) const {
    const auto it = query.find(name);
    return it == query.end() ? std::string() : it->second;
  }
};

struct http_response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Serves every request under the site's prefix. Called from the server's
// request threads at once: must be thread-safe. May throw: the server
// answers 500 without the exception's text.
using site_handler = std::function<http_response(const http_request&)>;

}  // namespace spool::serve
