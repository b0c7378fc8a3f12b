// Uses only Spool's public headers and library, as an installed consumer would: a message must
// survive encode -> decode, spool::error must carry its code, and the outbox's webhook sink (its
// cpp-httplib a private dependency) must validate its URL. Exit 0 only if all hold.
#include <iostream>
#include <spool/error.hpp>
#include <spool/mq/message.hpp>
#include <spool/ops/op.hpp>
#include <spool/outbox/sink.hpp>

int main() {
  spool::mq::message m;
  m.id = "0HN0CONSUMER000001";
  m.pool_code = "default";
  m.mediation_type = "HTTP";
  m.mediation_target = "https://example.invalid/hook";
  m.message_group_id = "group-1";
  m.high_priority = true;
  m.dispatch_mode = "IMMEDIATE";

  const std::string wire = spool::mq::encode(m);
  std::cout << "encoded: " << wire << "\n";
  const spool::mq::decode_result back = spool::mq::decode(wire);
  if (!back.ok()) {
    std::cerr << "install consumer: decode failed: " << back.error << "\n";
    return 1;
  }
  if (!(*back.value == m)) {
    std::cerr << "install consumer: decoded message differs from the one encoded\n";
    return 1;
  }
  std::cout << "decoded: id=" << back.value->id << " pool=" << back.value->pool_code << "\n";

  try {
    throw spool::error(spool::errc::not_found, "no such queue");
  } catch (const spool::error& e) {
    if (e.code() != spool::errc::not_found || e.reason() != "not_found" || e.retryable()) {
      std::cerr << "install consumer: spool::error lost its code (" << spool::to_string(e.code()) << ")\n";
      return 1;
    }
    std::cout << "error: " << spool::to_string(e.code()) << ": " << e.what() << "\n";
  }
  // The op model's JSON form (nlohmann::json is a public dependency).
  spool::ops::op o;
  o.id = "op-1";
  o.type = "thumb";
  o.enqueued_at = spool::ops::parse_time("2024-05-01T15:00:00+03:00");
  if (spool::ops::to_json(o)["enqueued_at"] != "2024-05-01T12:00:00Z") {
    std::cerr << "install consumer: op JSON lost its UTC time\n";
    return 1;
  }
  // Constructing the webhook sink sends nothing; a non-http(s) URL is invalid_argument.
  if (!spool::outbox::make_http_sink({.url = "http://127.0.0.1:9/hook", .secret = "k"})) return 1;
  try {
    (void)spool::outbox::make_http_sink({.url = "ftp://example.invalid/x", .secret = "k"});
    std::cerr << "install consumer: the webhook sink accepted an ftp:// URL\n";
    return 1;
  } catch (const spool::error& e) {
    if (e.code() != spool::errc::invalid_argument) return 1;
    std::cout << "webhook sink: " << e.what() << "\n";
  }
  std::cout << "install consumer: OK\n";
  return 0;
}
