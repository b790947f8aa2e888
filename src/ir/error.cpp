#include "ferry/error.h"

namespace ferry {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument: return "INVALID_ARGUMENT";
    case ErrorCode::resource_exhausted: return "RESOURCE_EXHAUSTED";
    case ErrorCode::unimplemented: return "UNIMPLEMENTED";
    case ErrorCode::internal: return "INTERNAL";
    case ErrorCode::unavailable: return "UNAVAILABLE";
  }
  return "UNKNOWN";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(std::string(error_code_name(code)) + ": " + message), code_(code), message_(message) {}

}  // namespace ferry
