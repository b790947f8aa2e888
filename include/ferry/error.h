// ferry::Error: the one exception type ferry throws. Every failure a user can cause carries a code
// and a message that names what went wrong and what to change.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace ferry {

// unavailable: other processes this one works with (ferry/distributed.h) stopped taking part or
// failed, and the work that needed them cannot finish.
enum class ErrorCode { invalid_argument, resource_exhausted, unimplemented, internal, unavailable };

// "INVALID_ARGUMENT", ... as printed at the front of every message.
std::string_view error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const { return code_; }
  // The message without the "CODE: " prefix that what() carries.
  const std::string& message() const { return message_; }

 private:
  ErrorCode code_;
  std::string message_;
};

}  // namespace ferry
