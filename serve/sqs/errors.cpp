#include "serve/sqs/errors.hpp"

#include <array>

#include "common/text/utf8.hpp"

namespace spool::serve::sqs {

namespace {
constexpr std::array kinds{
    error_kind{"QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", 400, true},
    error_kind{"QueueNameExists", "QueueAlreadyExists", 400, true},
    error_kind{"QueueDeletedRecently", "AWS.SimpleQueueService.QueueDeletedRecently", 400, true},
    error_kind{"PurgeQueueInProgress", "AWS.SimpleQueueService.PurgeQueueInProgress", 403, true},
    error_kind{"ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid", 400, true},
    error_kind{"MessageNotInflight", "AWS.SimpleQueueService.MessageNotInflight", 400, true},
    error_kind{"InvalidParameterValue", "InvalidParameterValue", 400, true},
    error_kind{"InvalidParameterCombination", "InvalidParameterCombination", 400, true},
    error_kind{"MissingParameter", "MissingParameter", 400, true},
    error_kind{"InvalidAttributeName", "InvalidAttributeName", 400, true},
    error_kind{"InvalidAttributeValue", "InvalidAttributeValue", 400, true},
    error_kind{"InvalidMessageContents", "InvalidMessageContents", 400, true},
    error_kind{"InvalidIdFormat", "InvalidIdFormat", 400, true},
    error_kind{"TooManyEntriesInBatchRequest", "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", 400,
               true},
    error_kind{"BatchEntryIdsNotDistinct", "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", 400, true},
    error_kind{"EmptyBatchRequest", "AWS.SimpleQueueService.EmptyBatchRequest", 400, true},
    error_kind{"InvalidBatchEntryId", "AWS.SimpleQueueService.InvalidBatchEntryId", 400, true},
    error_kind{"BatchRequestTooLong", "AWS.SimpleQueueService.BatchRequestTooLong", 400, true},
    error_kind{"UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation", 400, true},
    error_kind{"InvalidAction", "InvalidAction", 400, true},
    error_kind{"OverLimit", "OverLimit", 403, true},
    error_kind{"ResourceNotFoundException", "ResourceNotFoundException", 404, true},
    error_kind{"SerializationException", "SerializationException", 400, true},
    error_kind{"InvalidSecurity", "AWS.SimpleQueueService.InvalidSecurity", 403, true},
    error_kind{"MissingAuthenticationToken", "MissingAuthenticationToken", 403, true},
    error_kind{"IncompleteSignature", "IncompleteSignature", 400, true},
    error_kind{"InvalidClientTokenId", "InvalidClientTokenId", 403, true},
    error_kind{"SignatureDoesNotMatch", "SignatureDoesNotMatch", 403, true},
    error_kind{"RequestExpired", "RequestExpired", 400, true},
    error_kind{"RequestEntityTooLarge", "RequestEntityTooLarge", 413, true},
    error_kind{"ServiceUnavailable", "ServiceUnavailable", 503, false},
    error_kind{"InternalError", "InternalError", 500, false},
};
}  // namespace

error_kind kind_of(std::string_view code) noexcept {
  for (const auto& k : kinds) {
    if (k.code == code) return k;
  }
  return {code, code, 500, false};
}

std::string printable(std::string_view message) {
  std::string out = spool::detail::utf8_repair(message, /*drop_nul=*/true);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t' && c != '\n') || u == 0x7f) c = '?';
  }
  return out;
}

}  // namespace spool::serve::sqs
