// The SQS errors `spool serve` answers with: the code of the JSON protocol,
// the legacy code of the query protocol (and of the JSON protocol's
// x-amzn-query-error header), the HTTP status, and who is at fault.
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/CommonErrors.html
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace spool::serve::sqs {

struct error_kind {
  std::string_view code;         // "QueueDoesNotExist"
  std::string_view legacy_code;  // "AWS.SimpleQueueService.NonExistentQueue"
  int status = 400;
  bool sender = true;  // Sender (the client's fault) or Receiver
};

// The kind of a code; an unknown code is a Receiver error with status 500,
// so a typo here shows as a server fault, never as the client's. Pure.
[[nodiscard]] error_kind kind_of(std::string_view code) noexcept;

// An SQS error raised while serving one request (or one batch entry).
// Thread safety: a plain value.
// message as an answer may carry it: valid UTF-8 without control characters
// (XML 1.0 allows none, even escaped), since messages may quote request bytes.
[[nodiscard]] std::string printable(std::string_view message);

class error : public std::runtime_error {
 public:
  error(std::string code, const std::string& message)
      : std::runtime_error(printable(message)), code_(std::move(code)) {}
  [[nodiscard]] const std::string& code() const noexcept { return code_; }
  [[nodiscard]] error_kind kind() const noexcept { return kind_of(code_); }

 private:
  std::string code_;
};

}  // namespace spool::serve::sqs
